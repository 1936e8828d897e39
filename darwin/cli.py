"""The ``darwin`` command: machine info, the main job (a Nexmark query on the compiled engine), and
deployment files (``darwin run|validate|explain job.yaml``)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table as RichTable

from darwin.config import Config
from darwin.errors import DarwinError

if TYPE_CHECKING:
    from darwin.api import Table

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)
console = Console()
DEFAULT_CONFIG = Path(__file__).resolve().parent.parent / "configs" / "local.yaml"


@contextmanager
def _one_line_errors() -> Iterator[None]:
    """Bad input (Darwin's errors, and OS errors naming a path) ends a command with one line and exit 2."""
    try:
        yield
    except (DarwinError, OSError) as e:
        console.print(f"[red]error:[/red] {escape(str(e))}", soft_wrap=True)  # soft_wrap: no inserted newlines
        raise typer.Exit(2) from None


def parse_count(text: str) -> int:
    """'10M' -> 10_000_000; '2k' -> 2000; '1000' -> 1000."""
    t = str(text).strip().lower().replace("_", "")
    scale = {"k": 1_000, "m": 1_000_000, "g": 1_000_000_000}.get(t[-1:], 1)
    try:
        value = float(t[:-1] if scale > 1 else t) * scale
    except ValueError:
        raise typer.BadParameter(f"{text!r} is not a count such as 2000, 500K or 10M") from None
    if not math.isfinite(value) or value < 0 or value != int(value):  # nan, inf and 1e400 read as floats
        raise typer.BadParameter(f"{text!r} is not a whole, non-negative count such as 2000, 500K or 10M")
    return int(value)


def _config(path: Path | None) -> Config:
    if path is None:
        return Config.from_yaml(DEFAULT_CONFIG) if DEFAULT_CONFIG.exists() else Config()
    return Config.from_yaml(path)


@app.command()
def info(config: Path = typer.Option(None, help="an engine config (as configs/local.yaml, the default) or a "
                                                "deployment file, whose config: section is shown")) -> None:
    """What Darwin detected about this machine, and the effective configuration."""
    with _one_line_errors():
        cfg = _deployment_config(config) if config is not None and _holds_deployment(config) else _config(config)
    console.print(Config.detect().describe())
    for key, value in vars(cfg).items():
        console.print(f"config.{key}: {value}")


def _holds_deployment(path: Path) -> bool:
    """Whether the YAML in ``path`` is a deployment (top-level 'sources'), not an engine config."""
    import yaml

    from darwin.deploy.nodes import compose

    node = compose(path)
    return isinstance(node, yaml.MappingNode) and any(
        isinstance(k, yaml.ScalarNode) and k.value == "sources" for k, _ in node.value)


def _deployment_config(path: Path) -> Config:
    from darwin import deploy

    return deploy.load(path).config


# options of the main job (a Nexmark query), which a deployment file says for itself
_MAIN_JOB_ONLY = ("query", "rate", "events", "config", "show", "out")


def _given(ctx: typer.Context, name: str) -> bool:
    """Whether option ``name`` was given (on the command line or by its environment variable), not left
    at its default. (Typer bundles its own click, so the source is compared by name.)"""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP")


def _is_deployment(job: str) -> bool:
    """Whether ``job`` names a deployment file (by its extension, or an existing file)."""
    return job.endswith((".yaml", ".yml")) or Path(job).is_file()


@app.command()
def run(ctx: typer.Context,
        job: str = typer.Argument(None, help="a deployment file (job.yaml) to run; without it, the main job"),
        query: str = typer.Option("q12", help="Nexmark query to run (see `nexmark list`)"),
        rate: int = typer.Option(10_000, min=1, help="events per second of event time (10,000: 1M events span 100 s)"),
        events: str = typer.Option("1M", help="number of Nexmark events, e.g. 500K, 10M"),
        config: Path = typer.Option(None, help="the main job's engine config (as configs/local.yaml, the "
                                               "default); a deployment file is run as `darwin run job.yaml`"),
        show: int = typer.Option(10, min=0, help="result rows to print"),
        out: Path = typer.Option(None, file_okay=False,
                                 help="write the result as Parquet parts here (needed with checkpoints; "
                                      "a restart with the same checkpoint_dir resumes)"),
        metrics_port: int = typer.Option(None, min=0, max=65535,
                                         help="serve Prometheus metrics on 127.0.0.1:PORT while the job runs"),
        progress: bool = typer.Option(False, help="show rows, rates, watermark lag and checkpoints as it runs"),
        drain: bool = typer.Option(False, help="on SIGTERM/SIGINT, fire the open windows before the final "
                                               "checkpoint (the job then counts as finished)"),
        fresh: bool = typer.Option(False, "--fresh",
                                   help="with a job.yaml without checkpoints: first delete what an earlier run "
                                        "wrote to its sink")) -> None:
    """Run a deployment file (`darwin run job.yaml`), or the main job: a Nexmark query over the embedded
    generator, printing its result. SIGTERM/SIGINT stop a job writing to a sink with a final checkpoint."""
    watch = {"metrics_port": metrics_port, "progress": progress, "drain": drain}
    given = [name for name in _MAIN_JOB_ONLY if _given(ctx, name)]
    if job is not None:
        if not _is_deployment(job):
            raise typer.BadParameter(f"{job!r} is not a deployment file (job.yaml); for a Nexmark query, "
                                     "use --query q5", param_hint="JOB")
        if given:  # the file says all of it: an option it would silently override, or that would be ignored
            options = ", ".join(f"--{n.replace('_', '-')}" for n in given)
            raise typer.BadParameter(f"{options} {'does' if len(given) == 1 else 'do'} not apply to a deployment "
                                     "file, which sets its query, sources, sink and engine settings itself (its "
                                     "'config:' section); change the file, or leave the option out",
                                     param_hint="JOB")
        _run_deployment(Path(job), fresh, watch)
        return
    if fresh:
        raise typer.BadParameter("--fresh clears the output of a deployment file's earlier run: give the file "
                                 "(darwin run job.yaml --fresh)", param_hint="'--fresh'")
    with _one_line_errors():
        if config is not None and _holds_deployment(config):
            raise DarwinError(f"{config} is a deployment file (it has 'sources'), not an engine config: run it as "
                              f"`darwin run {config}`, without --config")
        cfg = _config(config)
        n = parse_count(events)
        q = _main_job()(query, n, rate)
        if out is None and cfg.checkpoint_dir:
            raise DarwinError("the config takes checkpoints: give --out, the directory the output is committed to")
        if out is None and (metrics_port is not None or progress or drain):
            raise DarwinError("--metrics-port, --progress and --drain watch a job writing to a sink: give --out")
        started = time.perf_counter()
        if out is None:
            result = q.execute(cfg)
            table, m, stopped = result.table, result.metrics, False
        else:
            import pyarrow as pa
            import pyarrow.parquet as pq

            import darwin as dw
            from darwin.monitor import run_watched

            sunk = q.sink(dw.sinks.Parquet(out))
            job = run_watched(lambda control: sunk.run(cfg, control), console=console, **watch)
            table, m = pa.concat_tables([pq.read_table(f, schema=q.schema) for f in job.files]
                                        or [q.schema.empty_table()]), job.metrics
            if job.resumed_from is not None:
                console.print(f"resumed from checkpoint {job.resumed_from}")
            stopped = job.stopped
            if stopped:
                console.print("stopped: the final checkpoint keeps the open windows; run again to go on")
        seconds = time.perf_counter() - started
    title = f"Nexmark {query}: first {min(show, table.num_rows)} of {table.num_rows} rows"
    rows = RichTable(title=title + (f" (committed to {out})" if out else ""))
    for name in table.column_names:
        rows.add_column(name)
    for row in table.slice(0, show).to_pylist():
        rows.add_row(*(str(v) for v in row.values()))
    console.print(rows)
    count, unit = (m["input_rows"], "input rows") if stopped else (n, "events")
    console.print(f"{'stopped after ' if stopped else ''}{count:,} {unit} in {seconds:.2f} s "
                  f"({count / seconds:,.0f} {unit}/s; mode={cfg.mode}, "
                  f"state={cfg.state}); late rows {m['late_rows']}, windows fired {m['windows_fired']}, "
                  f"kernels compiled {m.get('kernels_compiled', 0)}, from cache {m.get('kernels_from_cache', 0)}"
                  + (f", checkpoints {m.get('checkpoints', 0)}" if out else ""))


def _run_deployment(path: Path, fresh: bool, watch: dict[str, Any]) -> None:
    from darwin import deploy
    from darwin.monitor import run_watched

    with _one_line_errors():
        deployment = deploy.load(path)
        console.print(escape(deployment.summary(deploy.run_config(deployment))), soft_wrap=True)
        started = time.perf_counter()
        result = run_watched(lambda control: deploy.run(deployment, fresh=fresh, control=control), console=console,
                             **watch)
        seconds = time.perf_counter() - started
    m = result.metrics
    rows_in, rows_out = m.get("input_rows", 0), m.get("output_rows", 0)
    console.print(f"rows in {rows_in:,}, rows out {rows_out:,}, {seconds:.2f} s "
                  f"({rows_in / seconds if seconds else 0:,.0f} rows/s); late rows {m.get('late_rows', 0)}"
                  + (f", checkpoints {m['checkpoints']}" if m.get("checkpoints") else "")
                  + (f"; resumed from checkpoint {result.resumed_from}" if result.resumed_from is not None else ""))
    if result.stopped:
        console.print("stopped: the final checkpoint keeps the open windows; run again to go on")
    for f in result.files:
        console.print(f"  {escape(str(f))}", soft_wrap=True)
    if result.files:
        console.print(f"{len(result.files)} file(s) committed")


@app.command()
def validate(job: Path = typer.Argument(..., help="the deployment file to check")) -> None:
    """Check a deployment file: every key, value and path, the query and the sink; nothing runs.
    An error names the file, line and key (exit 2)."""
    from darwin import deploy

    with _one_line_errors():
        deployment = deploy.load(job)
        planned = deploy.plan(deployment)
    console.print(f"OK {escape(str(job))}")
    console.print(escape(deployment.summary(planned.config)), soft_wrap=True)
    console.print(f"  result: {escape(', '.join(f'{f.name} {f.type}' for f in planned.table.schema))}", soft_wrap=True)


@app.command()
def explain(job: Path = typer.Argument(..., help="the deployment file whose query to explain")) -> None:
    """A deployment's query plans: logical, optimized, the operator graph and the generated code."""
    from darwin import deploy

    with _one_line_errors():
        text = deploy.explain(deploy.load(job))
    console.print(escape(text), soft_wrap=True, highlight=False)


def _main_job() -> Callable[[str, int, int], Table]:
    """The main job's query builder, (query, events, rate) -> Table, registered by a workload package
    under the ``darwin.jobs`` entry point (Nexmark's): Darwin itself never imports a workload."""
    found = entry_points(group="darwin.jobs", name="main")
    if not found:
        raise DarwinError("no main job is installed: install the project with `pip install -e .`, which "
                          "registers the Nexmark workload")
    job: Callable[[str, int, int], Table] = next(iter(found)).load()
    return job


@app.command()
def reset(checkpoint_dir: Path = typer.Argument(..., help="the checkpoint_dir of the job to discard"),
          yes: bool = typer.Option(False, "--yes", help="do not ask for confirmation")) -> None:
    """Discard a job to start it over: its checkpoints, its state files and its committed output.

    Only what Darwin made for that job is deleted; other files in those directories stay.
    """
    from darwin.runtime.reset import reset_job

    if not yes and not typer.confirm(f"Delete the checkpoints, state and output of the job in {checkpoint_dir}?"):
        raise typer.Exit(1)
    with _one_line_errors():
        removed = reset_job(checkpoint_dir)
    for path in removed:
        console.print(f"removed {path}")
    console.print(f"the job in {checkpoint_dir} is reset: {len(removed)} paths removed")


if __name__ == "__main__":  # pragma: no cover
    app()
