"""``nexmark sustain``: paced steps, the verdict on each, and the search for the highest sustained rate."""

import json

import pytest
from typer.testing import CliRunner

import darwin as dw
from nexmark import sustain
from nexmark.cli import app as nexmark_app

runner = CliRunner()


@pytest.mark.parametrize("parallelism", [1, 2])
def test_a_slow_rate_is_sustained_with_its_latency(parallelism):
    step = sustain.run_step("ysb", 4000, 0.5, dw.Config(parallelism=parallelism), time_scale=40)
    assert step.events == 2000 and step.sustained
    assert step.seconds >= 0.45  # paced: 2000 events at 4000/s take half a second
    assert step.results > 0 and 0 <= step.p50_ms <= step.p99_ms <= step.max_ms < step.seconds * 1000
    assert step.lag_ms < 500


def test_a_rate_the_engine_cannot_keep_up_with_is_not_sustained():
    """One row per batch costs far more than the 20 µs each row has at 50,000/s: the reads fall behind."""
    step = sustain.run_step("q12", 50_000, 0.5, dw.Config(batch_size=1), time_scale=20)
    assert not step.sustained
    assert step.lag_ms > 500 and step.seconds > 1.0


def test_the_search_doubles_then_bisects(monkeypatch):
    def fake(query, rate, seconds, config, seed=0, time_scale=1.0):
        return sustain.Step(rate, int(rate * seconds), seconds, 10, 1.0, 2.0, 3.0, 2.0, 2.0, 0.0, rate <= 5000)

    monkeypatch.setattr(sustain, "run_step", fake)
    monkeypatch.setattr(sustain, "warm_up", lambda *args: None)
    best, tried = sustain.find_sustainable("q5", dw.Config(), start=1000, factor=2, refine=2)
    assert [s.rate for s in tried] == [1000, 2000, 4000, 8000, 6000, 5000]
    assert best is not None and best.rate == 5000
    best, tried = sustain.find_sustainable("q5", dw.Config(), start=9000)
    assert best is None and [s.rate for s in tried] == [9000]


def test_the_command_end_to_end(tmp_path):
    out = tmp_path / "sustain.json"
    result = runner.invoke(nexmark_app, ["sustain", "ysb", "--parallelism", "2", "--start", "2K", "--step-seconds",
                                         "0.4", "--steps", "2", "--refine", "0", "--time-scale", "50", "--json",
                                         str(out)])
    assert result.exit_code == 0, result.output
    assert "highest sustainable rate 4.0K events/s" in result.output
    saved = json.loads(out.read_text())
    assert saved["sustainable_rate"] == 4000 and [s["rate"] for s in saved["steps"]] == [2000, 4000]
    assert all(s["p99_ms"] is not None for s in saved["steps"])


@pytest.mark.parametrize("args", [["nope"], ["ysb", "--factor", "1"], ["ysb", "--start", "0"]])
def test_bad_input_is_a_usage_error(args):
    result = runner.invoke(nexmark_app, ["sustain", *args])
    assert result.exit_code == 2 and "Traceback" not in result.output
