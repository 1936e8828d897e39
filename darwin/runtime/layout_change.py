"""Why a checkpoint's state layout is not this run's, in the user's terms, for the refusal to resume it.

A checkpoint records the operator graph its query compiled to (``OperatorGraph.describe()``) and
the settings that choose layouts. The same query compiles to another layout when one of those
settings changed (``pre_aggregate``, ``panes``, ``max_delay``) or when the input did (a window ring
is sized to the key range the source's statistics show); the refusal names the operator, the two
layouts and which of these it is, found by compiling the query again with the checkpoint's settings.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from typing import Any

from darwin.config import Config
from darwin.errors import RESET_HINT, CheckpointError
from darwin.graph import operators as op

# the Config fields besides parallelism and state that the operator graph (the state layout) depends on
LAYOUT_SETTINGS = ("pre_aggregate", "panes", "max_delay")
_DOMAIN = re.compile(r"domain=\[(-?\d+), (-?\d+)\)")


def fingerprint(text: str) -> str:
    """What a checkpoint records of a query's or a layout's text to compare it with a later run's."""
    return hashlib.sha256(text.encode()).hexdigest()


def first_difference(old: str, new: str, past_end: str = "(end)") -> tuple[str, str]:
    """The first line where two texts differ, of each, stripped (``past_end`` where one has ended)."""
    a, b = old.splitlines(), new.splitlines()
    i = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    was, now = (lines[i].strip() if i < len(lines) else past_end for lines in (a, b))
    return was, now


def layout_settings(config: Config) -> dict[str, Any]:
    """What a checkpoint records of ``config`` to explain a layout change."""
    return {name: getattr(config, name) for name in LAYOUT_SETTINGS}


def layout_refusal(where: str, body: Mapping[str, Any], layout: str, now: Mapping[str, Any], taken: int,
                   workers: int, graph: op.OperatorGraph,
                   compiled_with: Callable[..., op.OperatorGraph]) -> CheckpointError:
    """The error for checkpoint ``body`` whose layout is not ``layout``: this query's ``graph`` at the
    checkpoint's parallelism ``taken`` with this run's settings ``now`` (this run has ``workers``);
    ``compiled_with(n, **settings)`` compiles the query at parallelism ``n`` with other settings."""
    was, is_ = first_difference(body["graph"], layout, "(none)")
    at = "" if workers == taken else f" (this query at the checkpoint's parallelism, {taken})"
    head = (f"{where} holds state of another layout than this run's for {_operator(was, is_, graph)}: the "
            f"checkpoint has {_state(was)!r}, this run has {_state(is_)!r}{at}. ")
    saved = body.get("settings")
    changed = {k: saved[k] for k in LAYOUT_SETTINGS if saved and k in saved and saved[k] != now[k]}
    if changed and fingerprint(compiled_with(taken, **changed).describe()) == body["layout"]:
        then = ", ".join(f"{k}={v!r}" for k, v in changed.items())
        these = "that setting chooses" if len(changed) == 1 else "these settings choose"
        return CheckpointError(
            head + f"The checkpoint's run had {then} and this run has "
            f"{', '.join(f'{k}={now[k]!r}' for k in changed)}: {these} how this operator keeps its state. "
            f"Resume with Config({then}), as the checkpoint's run had; or start from an empty checkpoint "
            f"directory (a new checkpoint_dir, state_path and output directory), or {RESET_HINT}")
    if saved is None:
        cause = (f"The checkpoint does not record its settings (an older Darwin wrote it): one of "
                 f"{', '.join(LAYOUT_SETTINGS)} changed, or the input did")
    elif changed:
        cause = (f"Settings changed ({', '.join(f'{k}: {v!r} then, {now[k]!r} now' for k, v in changed.items())}), "
                 "but going back to them alone does not give the checkpoint's layout, so the input changed too")
    else:
        cause = "The query and the settings that choose layouts are the checkpoint's, so the input is not"
    domains = _DOMAIN.search(was), _DOMAIN.search(is_)
    if domains[0] and domains[1]:
        cause += (f": a window ring is sized to the key range of the input's statistics, [{domains[0][1]}, "
                  f"{domains[0][2]}) then and [{domains[1][1]}, {domains[1][2]}) in this input. ")
    elif "window-ring-aggregate" in was + is_:
        cause += ": whether the keys fit a window ring, and its size, follow the key range of the input's statistics. "
    else:
        cause += ": part of a layout follows the input (its statistics and schema). "
    return CheckpointError(head + cause + "Resume over the input the checkpoint's run read, with its settings; or "
                           "start from an empty checkpoint directory (a new checkpoint_dir, state_path and output "
                           f"directory), or {RESET_HINT}")


def _operator(was: str, is_: str, graph: op.OperatorGraph) -> str:
    """The stateful operator of a line of ``OperatorGraph.describe()``, by name."""
    label = (is_ if is_ != "(none)" else was).split(":")[0]
    number = label.rsplit(" ", 1)[-1]
    if label.startswith("pipeline ") and number.isdigit() and int(number) < len(graph.pipelines):
        sink = graph.pipelines[int(number)].sink
        if isinstance(sink, op.WindowAggregateSink):
            return (f"the windowed aggregation of pipeline {number} ({sink.window}, grouped by "
                    f"[{', '.join(sink.aggregate.keys)}])")
    return label


def _state(line: str) -> str:
    """A line of ``describe()`` without its label and the input it reads."""
    text = line.split(": ", 1)[-1]
    return text.split(" -> ", 1)[1] if text.startswith(("source ", "fired windows", "output of", "rows of")) \
        and " -> " in text else text
