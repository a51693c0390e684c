"""What the Filter and Permit extension points answer: kept apart from the runtime that runs them,
so the scheduler's cycles and the filter memo can name them without the whole Framework."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from kubesched.framework.node_table import BoolArray, NodeSet
from kubesched.framework.status import Status


@dataclass(slots=True)
class FilterOutcome:
    """Filter verdicts over a NodeSet: `status_idx[i] == -1` means node i passed."""

    nodes: NodeSet
    status_idx: npt.NDArray[np.int32]
    statuses: list[Status]
    error: Status | None = None

    @property
    def feasible(self) -> BoolArray:
        return self.status_idx < 0

    def node_to_status(self) -> dict[str, Status]:
        names = self.nodes.table.names
        return {names[self.nodes.rows[i]]: self.statuses[j] for i, j in enumerate(self.status_idx) if j >= 0}


@dataclass(slots=True)
class PermitOutcome:
    status: Status | None
    #: plugin -> timeout seconds, for the plugins that asked to wait.
    waits: dict[str, float] = field(default_factory=dict)
