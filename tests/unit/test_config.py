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
    with pytest.raises(ConfigError, match="not valid YAML"):
        dw.Config.from_yaml(p)


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
