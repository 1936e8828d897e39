"""The runners of stream operators (``op.StreamOperator``): one runner class per plan node type.

A runner takes the batches its input pipeline emits (``push``), the watermark of its input after
every input batch (``advance``), and may emit a batch at either; between batches its state is
consistent, so ``snapshot`` can capture it. A node type without a runner fails loudly here.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from darwin.config import Config
from darwin.errors import UnsupportedError
from darwin.graph import operators as op
from darwin.plan import nodes as pn
from darwin.runtime.encoding import EncodedBatch, StringPool
from darwin.runtime.workers import WorkerPool

if TYPE_CHECKING:
    from darwin.state.backend import StateBackend


class StreamRunner(Protocol):
    wm: int  # the watermark of its output

    def push(self, batch: EncodedBatch) -> EncodedBatch | None: ...

    def advance(self, input_wm: int) -> EncodedBatch | None: ...

    def counters(self) -> dict[str, int]: ...

    def snapshot(self, directory: Path) -> tuple[dict[str, Any], list[str]]: ...

    def restore(self, directory: Path, body: dict[str, Any]) -> None: ...

    def close(self) -> None: ...


class InputTime:
    """For a runner whose watermark is its input's, which fires nothing on time and counts nothing."""

    wm: int

    def advance(self, input_wm: int) -> EncodedBatch | None:
        self.wm = input_wm
        return None

    def counters(self) -> dict[str, int]:
        return {}

    def close(self) -> None:
        pass


def runner_for(operator: op.StreamOperator, config: Config, pool: StringPool, backend: StateBackend,
               workers: WorkerPool | None = None) -> StreamRunner:
    """The runner of ``operator``; its compiled parts load only when a query needs them."""
    node = operator.node
    if isinstance(node, pn.GroupAggregate):
        from darwin.runtime.group_aggregate import GroupAggregateRunner

        return GroupAggregateRunner(operator, config, pool, backend.scratch(f"group{operator.id}"))
    if isinstance(node, pn.SessionAggregate):
        from darwin.runtime.session import SessionAggregateRunner

        return SessionAggregateRunner(operator, config, pool)
    if isinstance(node, pn.BarrierAggregate):
        from darwin.runtime.barrier import BarrierAggregateRunner

        return BarrierAggregateRunner(operator, config, pool, workers or WorkerPool(1))
    if isinstance(node, pn.BarrierAssign):
        from darwin.runtime.barrier_assign import BarrierAssignRunner

        return BarrierAssignRunner(operator, config, pool, workers or WorkerPool(1))
    if isinstance(node, pn.Over):
        from darwin.runtime.over import OverRunner

        return OverRunner(operator, config, pool)
    if isinstance(node, (pn.TopN, pn.Deduplicate)):
        from darwin.runtime.rank import RankRunner

        return RankRunner(operator, config, pool)
    raise UnsupportedError(f"the compiled engine has no runner for {type(node).__name__}")
