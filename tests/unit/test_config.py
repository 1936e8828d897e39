import pytest

import darwin as dw
from darwin.errors import ConfigError


def test_defaults_live_in_one_frozen_object():
    c = dw.Config()
    assert (c.mode, c.target, c.state, c.parallelism) == ("compiled", "host", "memory", 1)
    with pytest.raises(AttributeError):
        c.mode = "interpreted"


def test_yaml_overrides_only_what_it_sets(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("mode: interpreted\nbatch_size: 128\n")
    c = dw.Config.from_yaml(p)
    assert (c.mode, c.batch_size, c.target) == ("interpreted", 128, "host")


def test_documented_default_file_is_the_default():
    c = dw.Config.from_yaml("configs/local.yaml")
    assert c == dw.Config(cache_dir=c.cache_dir)


@pytest.mark.parametrize("text, fragment", [
    ("modee: compiled\n", "unknown config key(s) ['modee']"),
    ("mode: fast\n", "'mode': expected one of"),
    ("batch_size: -1\n", "'batch_size': expected an integer >= 1"),
    ("max_delay: soon\n", "cannot read 'soon' as a duration"),
    ("- a\n- b\n", "expected a mapping"),
    ("mode: [unclosed\n", "not valid YAML"),
    ("state: cassandra\n", "'state': expected one of"),
    ("state: mmap\nstate_path: 5\n", "'state_path': expected a path"),
    ("checkpoint_dir: true\n", "'checkpoint_dir': expected a path"),
    ("cache_dir: ''\n", "'cache_dir': expected a path"),
    ("cache_dir: [a]\n", "'cache_dir': expected a path"),
    ("mode: 1\n", "'mode': expected one of"),
    ("batch_size: true\n", "'batch_size': expected an integer"),
    ("prefetch: 1.5\n", "'prefetch': expected an integer"),
    ("max_delay: .nan\n", "'max_delay'"),
    ("max_delay: [1]\n", "'max_delay'"),
])
def test_bad_config_files_name_the_problem(tmp_path, text, fragment):
    p = tmp_path / "bad.yaml"
    p.write_text(text)
    with pytest.raises(ConfigError) as e:
        dw.Config.from_yaml(p)
    assert fragment in str(e.value)
    assert str(p) in str(e.value)


def test_yaml_is_loaded_safely(tmp_path):
    p = tmp_path / "evil.yaml"
    p.write_text("mode: !!python/object/apply:os.system ['echo pwned']\n")
    with pytest.raises(ConfigError, match=r"evil\.yaml, line 1: config key 'mode': the YAML tag "
                                          r"'!!python/object/apply:os\.system' is not supported"):
        dw.Config.from_yaml(p)


@pytest.mark.parametrize("text, message", [
    ("parallelism: 1\nstate: memory\nparallelism: 2\n",
     "line 3: config key 'parallelism': set twice (first on line 1)"),
    ("engine: spark\nspark:\n  master: 'spark://prod:7077'\n  master: 'local[1]'\n",
     "line 4: config key 'spark.master': set twice (first on line 3)"),
    ("spark:\n  conf: {spark.a: 1, spark.a: 2}\n",
     "line 2: config key 'spark.conf.spark.a': set twice (first on line 2)"),
    ("state: !env STATE\n", "line 1: config key 'state': the YAML tag '!env' is not supported"),
    ("parallelism: !!int two\n",
     "line 1: config key 'parallelism': the value 'two' is not what its YAML tag '!!int' says"),
    ("max_delay: !!timestamp soon\n", "line 1: config key 'max_delay': the value 'soon' is not what its YAML tag"),
])
def test_a_key_set_twice_or_a_tag_is_refused_with_its_line(tmp_path, text, message):
    p = tmp_path / "engine.yaml"
    p.write_text(text)
    with pytest.raises(ConfigError) as e:
        dw.Config.from_yaml(p)
    assert str(e.value).startswith(f"{p}, {message}")


def test_merge_keys_still_merge(tmp_path):
    p = tmp_path / "engine.yaml"
    p.write_text("spark: &base\n  master: 'local[1]'\n  conf: {a: 1}\n")
    assert dw.Config.from_yaml(p).spark_master == "local[1]"


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config file"):
        dw.Config.from_yaml(tmp_path / "nope.yaml")


def test_detect_reports_the_machine():
    info = dw.Config.detect()
    assert info.cores >= 1 and info.memory_bytes > 0
    assert info.cpu_name and isinstance(info.cpu_features, tuple)
    assert "cpu:" in info.describe()


def test_prefetch_errors_reach_the_caller_and_early_stops_end_the_reader():
    import pyarrow as pa

    import darwin as dw

    schema = pa.schema([("x", pa.int64())])

    def broken():
        yield pa.record_batch([pa.array([1, 2])], schema=schema)
        raise OSError("disk went away")

    t = dw.from_batches(schema, broken)
    with pytest.raises(OSError, match="disk went away"):
        t.collect(dw.Config(prefetch=2))
    many = dw.from_batches(schema, lambda: (pa.record_batch([pa.array([i])], schema=schema) for i in range(10**6)))
    first = next(iter(many.iter_batches(dw.Config(prefetch=2, batch_size=1))))
    assert first.num_rows == 1  # the generator closes and the reader thread stops


# -- every key type-checked when the Config is built; YAML errors name the key and its line ----------

def test_paths_may_be_path_objects_and_are_kept_as_strings(tmp_path):
    c = dw.Config(state="mmap", state_path=tmp_path / "s", checkpoint_dir=tmp_path / "c", cache_dir=tmp_path)
    assert (c.state_path, c.checkpoint_dir, c.cache_dir) == (str(tmp_path / "s"), str(tmp_path / "c"), str(tmp_path))
    with pytest.raises(ConfigError, match="'checkpoint_dir': expected a path"):
        dw.Config(checkpoint_dir=b"/tmp/chk")


def test_yaml_errors_name_the_line_of_the_key(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("# a comment\nmode: compiled\n\nstate: mmap\nstate_path: 5\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml.*line 5.*'state_path'"):
        dw.Config.from_yaml(p)
    p.write_text("mode: compiled\nbatch_sise: 10\nprefetchh: 1\n")
    with pytest.raises(ConfigError, match=r"lines 2, 3: unknown config key\(s\) \[.batch_sise., .prefetchh.\]"):
        dw.Config.from_yaml(p)
    p.write_text("mode: compiled\nstate: rocksdb\n")  # the missing state_path is blamed on 'state'
    with pytest.raises(ConfigError, match=r"line 2.*'state_path'"):
        dw.Config.from_yaml(p)


def test_a_config_file_that_is_not_text_is_a_config_error(tmp_path):
    p = tmp_path / "binary.yaml"
    p.write_bytes(b"mode: \xff\xfe\n")
    with pytest.raises(ConfigError, match="binary.yaml"):
        dw.Config.from_yaml(p)


# -- checkpoint_interval says its unit: a duration or a count of input batches ----------------------

@pytest.mark.parametrize("value, every", [
    ("10s", ("ms", 10_000)), ("500ms", ("ms", 500)), ("2min", ("ms", 120_000)), ("1.5s", ("ms", 1500)),
    ("100 batches", ("batches", 100)), ("1 batch", ("batches", 1)), ("3batches", ("batches", 3)),
    (None, ("ms", 10_000)),
])
def test_checkpoint_interval_is_a_duration_or_a_count_of_batches(value, every):
    assert dw.Config(checkpoint_dir="chk", checkpoint_interval=value).checkpoint_every == every


@pytest.mark.parametrize("value", [2, 1.5, True, "2", "1.5", "0 batches", "1.5 batches", "-1 batches", "0ms",
                                   "soon", ["1s"]])
def test_a_checkpoint_interval_without_a_unit_says_how_to_write_one(value):
    with pytest.raises(ConfigError, match="'checkpoint_interval'") as e:
        dw.Config(checkpoint_dir="chk", checkpoint_interval=value)
    assert "'10s'" in str(e.value) and "'100 batches'" in str(e.value)


def test_a_bare_number_in_a_yaml_file_names_the_line(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("checkpoint_dir: chk\ncheckpoint_interval: 2\n")
    with pytest.raises(ConfigError, match=r"line 2: config key 'checkpoint_interval': .*2.*'100 batches'"):
        dw.Config.from_yaml(p)


@pytest.mark.parametrize("name", ["mmap.yaml", "rocksdb.yaml", "local.yaml"])
def test_the_shipped_deployments_load(name):
    assert dw.Config.from_yaml(f"configs/{name}").batch_size >= 1


def test_a_yaml_syntax_error_is_one_line_naming_the_line(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("mode: compiled\nstate: [memory\nbatch_size: 10\n")
    with pytest.raises(ConfigError, match="not valid YAML") as e:
        dw.Config.from_yaml(p)
    assert "\n" not in str(e.value)
    assert "line 4" in str(e.value) or "line 3" in str(e.value)
