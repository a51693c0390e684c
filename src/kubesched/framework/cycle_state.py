"""CycleState: a per-attempt key/value store shared by the plugins of one scheduling cycle."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar, runtime_checkable

from kubesched.framework.status import Status


@runtime_checkable
class StateData(Protocol):
    """A value stored in CycleState. `clone` may return `self` for data never mutated after writing."""

    def clone(self) -> StateData: ...


class NotFoundError(KeyError):
    """Raised by `CycleState.read` for a missing key (upstream's ErrNotFound: "not found")."""

    def __str__(self) -> str:
        return "not found"


T = TypeVar("T", bound=StateData)
U = TypeVar("U")


class CycleState:
    """Plugin data for one scheduling attempt. Preemption dry-runs operate on `clone()`s."""

    __slots__ = ("_data", "record_plugin_metrics", "skip_filter_plugins", "skip_score_plugins")

    def __init__(self) -> None:
        self._data: dict[str, StateData] = {}
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()
        self.record_plugin_metrics = False

    def read(self, key: str) -> StateData:
        try:
            return self._data[key]
        except KeyError:
            raise NotFoundError(key) from None

    def read_as(self, key: str, kind: type[T]) -> T:
        """`read` with a type check, so plugins get a typed value or a clear error."""
        value = self.read(key)
        if not isinstance(value, kind):
            raise TypeError(f"cycle state {key!r} holds {type(value).__name__}, not {kind.__name__}")
        return value

    def get(self, key: str) -> StateData | None:
        return self._data.get(key)

    def write(self, key: str, value: StateData) -> None:
        self._data[key] = value

    def delete(self, key: str) -> None:
        self._data.pop(key, None)

    def clone(self) -> CycleState:
        copy = CycleState()
        copy._data = {k: v.clone() for k, v in self._data.items()}
        copy.skip_filter_plugins = set(self.skip_filter_plugins)
        copy.skip_score_plugins = set(self.skip_score_plugins)
        copy.record_plugin_metrics = self.record_plugin_metrics
        return copy


def pre_filter_state(
    state: CycleState, key: str, kind: type[T], compute: Callable[[], T | U], *, keep: bool
) -> T | U:
    """The one way a plugin reads what its PreFilter wrote under `key`, from both Filter forms
    (per node and batch) and its PreFilter extensions.

    When PreFilter did not run (it is disabled in the profile), `compute` works it out here; what
    it returns besides a `kind` (e.g. the Status that stops the pod) is passed back as it is.
    With `keep`, a `kind` it made is written under `key`, so the next node and the other form
    read it instead of computing it again: for state made from the pod alone, not from the nodes
    of one call.
    """
    found = state.get(key)
    if isinstance(found, kind):
        return found
    made = compute()
    if keep and isinstance(made, kind):
        state.write(key, made)
    return made


def missing_state_error(message: str) -> Callable[[], Status]:
    """`compute` for `pre_filter_state` in a plugin that, as its upstream counterpart, returns an
    error when its state is missing instead of working it out: the error carries upstream's message."""
    return lambda: Status.as_error(message)


#: Where a member's CycleState holds its pod-group cycle's shared state (upstream keeps it in a
#: field of CycleState: `GetPodGroupSchedulingCycle`).
POD_GROUP_CYCLE_KEY = "kubesched.io/pod-group-cycle"


class PodGroupCycleState:
    """upstream's PodGroupCycleState: plugin data shared by every member of one pod-group cycle,
    across its placements (DynamicResources' claims pending for the group, say). Present in a
    member's CycleState only while the group's cycle runs: binding cycles see none."""

    __slots__ = ("data",)

    def __init__(self) -> None:
        self.data: dict[str, object] = {}

    def clone(self) -> PodGroupCycleState:
        return self


def pod_group_cycle(state: CycleState) -> PodGroupCycleState | None:
    """The pod-group cycle `state` belongs to (None: a pod scheduled on its own, or binding)."""
    found = state.get(POD_GROUP_CYCLE_KEY)
    return found if isinstance(found, PodGroupCycleState) else None
