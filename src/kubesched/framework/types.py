"""Values passed between the framework, plugins and the scheduler (upstream framework/types.go)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from kubesched.api.objects import Pod
from kubesched.config.plugin_catalog import MAX_NODE_SCORE as MAX_NODE_SCORE
from kubesched.config.plugin_catalog import MAX_TOTAL_SCORE as MAX_TOTAL_SCORE
from kubesched.config.plugin_catalog import MIN_NODE_SCORE as MIN_NODE_SCORE
from kubesched.framework.node_info import PodInfo
from kubesched.framework.node_table import IndexArray, NodeTable
from kubesched.framework.status import Code, Status

# MAX_NODE_SCORE, MIN_NODE_SCORE and MAX_TOTAL_SCORE are defined in config (a layer below), which
# checks Score weights against them; they are re-exported here for the framework and plugins.

#: Permit may ask a pod to wait at most this long (seconds).
MAX_PERMIT_TIMEOUT = 15 * 60.0
#: The Event note limit; longer FailedScheduling messages are cut to 1020 bytes + " ...".
NOTE_LENGTH_LIMIT = 1024
NO_NODES_AVAILABLE = "no nodes available to schedule pods"


@dataclass(slots=True)
class PreFilterResult:
    """Nodes a PreFilter plugin restricts the pod to; `None` means all nodes."""

    node_names: frozenset[str] | None = None

    def all_nodes(self) -> bool:
        return self.node_names is None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        if other is None or other.node_names is None:
            return self
        if self.node_names is None:
            return other
        return PreFilterResult(self.node_names & other.node_names)


@dataclass(slots=True)
class PostFilterResult:
    """What a PostFilter plugin (preemption) decided for the pod.

    `nominated_node_name`: None leaves the pod's nomination as it is (upstream's ModeNoop); a name
    nominates the pod to that node and `""` clears its nomination (ModeOverride). `victims` are the
    pods evicted to make room, as `namespace/name`, for reports.
    """

    nominated_node_name: str | None = None
    victims: list[str] = field(default_factory=list)


@dataclass(slots=True)
class QueuedPodInfo:
    """A pod in the scheduling queue with its queueing history."""

    pod_info: PodInfo
    timestamp: float = 0.0
    initial_attempt_timestamp: float | None = None
    attempts: int = 0
    unschedulable_count: int = 0
    consecutive_errors: int = 0
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    gating_plugin: str = ""
    #: (pod, a key of its content) as the scheduler last computed it for this pod object, so that a
    #: pod tried again and again is not encoded again each time.
    content_key: tuple[Pod, bytes] | None = None

    @property
    def pod(self) -> Pod:
        return self.pod_info.pod

    @property
    def key(self) -> str:
        return self.pod_info.key


#: Up to this many distinct statuses, `StatusColumns.counts` finds each one's first node by a scan.
_FEW_STATUSES = 8


@dataclass(slots=True, frozen=True)
class StatusColumns:
    """The verdicts of a NodeStatuses as arrays: node `table.names[rows[i]]` got `statuses[codes[i]]`."""

    table: NodeTable
    rows: IndexArray
    codes: npt.NDArray[np.int32]
    statuses: list[Status]
    #: `counts()` once computed: a failed attempt asks for them twice (the plugins that rejected,
    #: then the FailedScheduling message).
    _counted: list[tuple[Status, int]] | None = field(default=None, compare=False, repr=False)

    def counts(self) -> list[tuple[Status, int]]:
        """(status, how many nodes got it) per distinct Status object some node got, in the order
        of their first node (as counting over the dict would, so ties rank alike)."""
        if self._counted is None:
            object.__setattr__(self, "_counted", self._count())
        assert self._counted is not None
        return list(self._counted)

    def _count(self) -> list[tuple[Status, int]]:
        codes = self.codes
        per_code = np.bincount(codes, minlength=len(self.statuses)).tolist()
        used = [code for code, k in enumerate(per_code) if k]
        if len(used) <= _FEW_STATUSES:  # one pass per status beats sorting thousands of codes
            first = [int(np.argmax(codes == code)) for code in used]
            order = [code for _, code in sorted(zip(first, used, strict=True))]
        else:
            distinct, where = np.unique(codes, return_index=True)
            order = distinct[np.argsort(where, kind="stable")].tolist()
        out: dict[int, tuple[Status, int]] = {}
        for code in order:
            st = self.statuses[code]
            _, before = out.get(id(st), (st, 0))
            out[id(st)] = (st, before + per_code[code])
        return list(out.values())


class NodeStatuses(dict[str, Status]):
    """node name -> Status, as the Filter plugins left it, with the same verdicts as columns.

    A failed attempt's readers count reasons (the FailedScheduling message) and pick nodes by code
    (preemption's potential nodes); on thousands of nodes, per-node Python work for each of them
    was the bulk of a failed attempt. `columns` holds while the dict is as built: any change
    (extenders and nominated pods add statuses) drops it, and readers fall back to the dict.

    Made `from_columns`, the entries themselves are filled in only when something reads them as a
    dict (every read method fills first), which on a full cluster is rarely: the column readers
    above are the usual ones.
    """

    __slots__ = ("_unfilled", "columns")

    def __init__(
        self, items: Iterable[tuple[str, Status]] = (), columns: StatusColumns | None = None
    ) -> None:
        super().__init__(items)
        self.columns = columns
        self._unfilled = False

    @classmethod
    def from_columns(cls, columns: StatusColumns) -> NodeStatuses:
        out = cls((), columns)
        out._unfilled = True
        return out

    def _fill(self) -> None:
        if self._unfilled:
            self._unfilled = False
            columns = self.columns
            assert columns is not None
            names, statuses = columns.table.names, columns.statuses
            super().update(
                zip(
                    map(names.__getitem__, columns.rows.tolist()),
                    map(statuses.__getitem__, columns.codes.tolist()),
                    strict=True,
                )
            )

    # ---- reads: fill first
    def __len__(self) -> int:
        if self._unfilled and self.columns is not None:
            return len(self.columns.rows)
        return super().__len__()

    def __getitem__(self, key: str) -> Status:
        self._fill()
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self._fill()
        return super().__contains__(key)

    def __iter__(self) -> Iterator[str]:
        self._fill()
        return super().__iter__()

    def __reversed__(self) -> Iterator[str]:
        self._fill()
        return super().__reversed__()

    def __eq__(self, other: object) -> bool:
        self._fill()
        if isinstance(other, NodeStatuses):
            other._fill()
        return super().__eq__(other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __repr__(self) -> str:
        self._fill()
        return super().__repr__()

    def __or__(self, other: Any) -> dict[str, Status]:  # type: ignore[override]
        self._fill()
        return dict(super().items()) | dict(other)

    def __ror__(self, other: Any) -> dict[str, Status]:  # type: ignore[override]
        self._fill()
        return dict(other) | dict(super().items())

    def get(self, key: str, default: Any = None) -> Any:
        self._fill()
        return super().get(key, default)

    def keys(self) -> Any:
        self._fill()
        return super().keys()

    def values(self) -> Any:
        self._fill()
        return super().values()

    def items(self) -> Any:
        self._fill()
        return super().items()

    def copy(self) -> dict[str, Status]:
        self._fill()
        return dict(super().items())

    def __reduce__(self) -> Any:
        self._fill()
        return (dict, (dict(super().items()),))

    # ---- changes: fill, then the columns no longer describe the dict
    def __setitem__(self, key: str, value: Status) -> None:
        self._fill()
        self.columns = None
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        self._fill()
        self.columns = None
        super().__delitem__(key)

    def update(self, *args: Any, **kwargs: Any) -> None:
        self._fill()
        self.columns = None
        super().update(*args, **kwargs)

    def pop(self, *args: Any) -> Any:
        self._fill()
        self.columns = None
        return super().pop(*args)

    def popitem(self) -> tuple[str, Status]:
        self._fill()
        self.columns = None
        return super().popitem()

    def setdefault(self, key: str, default: Status) -> Status:
        self._fill()
        if not super().__contains__(key):
            self.columns = None
        return super().setdefault(key, default)

    def clear(self) -> None:
        self._fill()
        self.columns = None
        super().clear()

    def __ior__(self, other: Any) -> NodeStatuses:  # type: ignore[override]
        self._fill()
        self.columns = None
        super().__ior__(other)
        return self


def distinct_statuses(node_to_status: dict[str, Status]) -> list[tuple[Status, int]]:
    """(status, how many nodes got it) per distinct Status object: plugins share one status among
    the nodes they reject alike, so readers work per status instead of per node."""
    columns = node_to_status.columns if isinstance(node_to_status, NodeStatuses) else None
    if columns is not None:
        return columns.counts()
    if not node_to_status:  # a pod that fits: nothing was kept, and a Counter costs more than this
        return []
    statuses = node_to_status.values()
    per_status: Counter[int] = Counter(map(id, statuses))
    distinct: dict[int, Status] = dict(zip(map(id, statuses), statuses, strict=True))
    return [(distinct[key], times) for key, times in per_status.items()]


@dataclass(slots=True)
class Diagnosis:
    """Why no node fit: per-node statuses, the plugins that rejected, and PreFilter/PostFilter text."""

    node_to_status: dict[str, Status] = field(default_factory=dict)
    #: Status of nodes not in node_to_status (removed by PreFilterResult narrowing).
    absent_nodes_status: Status | None = None
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    #: The PreFilter plugin's rejection when PreFilter refused the pod outright (then no node was filtered).
    pre_filter_status: Status | None = None
    post_filter_msg: str = ""


class FitError(Exception):
    """The pod fits no node; `str()` is the FailedScheduling message, built exactly as upstream."""

    def __init__(
        self,
        pod: Pod,
        num_all_nodes: int,
        diagnosis: Diagnosis,
        counts: Counter[str] | None = None,
        message: str | None = None,
    ) -> None:
        self.pod = pod
        self.num_all_nodes = num_all_nodes
        self.diagnosis = diagnosis
        #: `reason_counts()` and the message when already known (a repeated failure passes the
        #: first one's; the message is complete only once PostFilter has run).
        self._counts = counts
        self._message = message
        super().__init__()

    def __str__(self) -> str:
        if self._message is not None:
            return self._message
        return fit_error_message(self.num_all_nodes, self.diagnosis, self.reason_counts())

    def reason_counts(self) -> Counter[str]:
        """`reason_counts` of the diagnosis, counted once: the message and the report both use it.

        Counted on first use, after PostFilter, which adds only `post_filter_msg` (not counted).
        """
        if self._counts is None:
            self._counts = reason_counts(self.num_all_nodes, self.diagnosis)
        return self._counts


def reason_counts(num_all_nodes: int, d: Diagnosis) -> Counter[str]:
    """How many nodes each filter reason rejected, as the FailedScheduling message counts them."""
    counts: Counter[str] = Counter()
    for status, times in distinct_statuses(d.node_to_status):
        for reason in status.all_reasons():
            counts[reason] += times
    absent = num_all_nodes - len(d.node_to_status)
    if absent > 0 and d.absent_nodes_status is not None:
        for reason in d.absent_nodes_status.all_reasons():
            counts[reason] += absent
    return counts


def fit_error_message(num_all_nodes: int, d: Diagnosis, counts: Counter[str] | None = None) -> str:
    """The FailedScheduling message; `counts` are `reason_counts(num_all_nodes, d)` when known."""
    msg = f"0/{num_all_nodes} nodes are available:"
    if d.pre_filter_msg:
        msg += f" {d.pre_filter_msg}."
    else:
        if counts is None:
            counts = reason_counts(num_all_nodes, d)
        items = sorted(f"{n} {r}" for r, n in counts.items())
        if items:
            msg += " " + ", ".join(items) + "."
    if d.post_filter_msg:
        msg += f" {d.post_filter_msg}"
    return msg


def truncate_note(message: str) -> str:
    """An Event note fits 1024 bytes; longer ones keep 1020 and end with " ..."."""
    raw = message.encode()
    if len(raw) <= NOTE_LENGTH_LIMIT:
        return message
    return raw[: NOTE_LENGTH_LIMIT - 4].decode(errors="ignore") + " ..."


def rejected_by_plugins(plugins: list[str]) -> Status:
    """The status of nodes a PreFilterResult excluded: `node(s) didn't satisfy plugin(s) [A B]`."""
    return Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f"node(s) didn't satisfy plugin(s) [{' '.join(plugins)}]"
    )
