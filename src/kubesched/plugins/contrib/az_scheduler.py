"""AZScheduler: prefer chosen availability zones, and spread a workload's replicas over zones.

Zones are the values of `topology.kubernetes.io/zone`. Two preferences make the score:

* preferred zones, from the plugin args or, per pod, the `zone.kubesched.io/preferred` annotation
  (`us-east-1a,us-east-1b`): where the data, the cheaper capacity or the rest of the system lives;
* spreading: among the pods with the same controller (ReplicaSet, StatefulSet,
  ReplicationController by default), the zone with the fewest of them scores highest, so losing a
  zone loses as few replicas as possible. Jobs are left out by default: a training job's pods want
  to be close together, not apart.

Score only, on purpose: a zone preference that cannot be met should not leave a pod pending (the
required form already exists as node affinity on the zone label, and PodTopologySpread's
DoNotSchedule covers hard spreading). The replica counts are taken once per cycle in PreScore, over
every node, and remembered per node between cycles, so the per-node and batch Score forms are dict
and array lookups that agree exactly (hypothesis-tested).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

import msgspec
import numpy as np

from kubesched.api.meta import controller_of
from kubesched.api.objects import Pod
from kubesched.api.selectors import label_value_error, qualified_name_error
from kubesched.errors import FieldErrors, InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ClusterEventWithHint
from kubesched.framework.interfaces import (
    BatchScorePlugin,
    EnqueueExtensions,
    Handle,
    PreScorePlugin,
    ScoreExtensions,
    ScorePlugin,
    Scores,
)
from kubesched.framework.node_info import NodeInfo
from kubesched.framework.node_table import NodeSet
from kubesched.framework.normalize import default_normalize_score
from kubesched.framework.status import Status
from kubesched.framework.types import MAX_NODE_SCORE
from kubesched.plugins.contrib._owners import OwnerPodCounts, owner_key

__all__ = [
    "DEFAULT_PREFERRED_ANNOTATION",
    "DEFAULT_SPREAD_OWNER_KINDS",
    "LABEL_ZONE",
    "AZScheduler",
    "AZSchedulerArgs",
]

LABEL_ZONE = "topology.kubernetes.io/zone"
DEFAULT_PREFERRED_ANNOTATION = "zone.kubesched.io/preferred"
DEFAULT_SPREAD_OWNER_KINDS = ("ReplicaSet", "StatefulSet", "ReplicationController")
MAX_WEIGHT = 100

_STATE_KEY = "PreScoreAZScheduler"


def _default_kinds() -> list[str]:
    return list(DEFAULT_SPREAD_OWNER_KINDS)


class AZSchedulerArgs(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """pluginConfig args (kind AZSchedulerArgs).

    A node's raw score is `preferredZoneWeight * preferred + spreadWeight * spread`, each part
    0..100; with the default weights (2 and 1) a preferred zone always beats spreading, and spreading
    orders the zones within the preferred ones and within the rest.
    """

    zone_label: str = LABEL_ZONE
    preferred_zones: list[str] = []
    preferred_zones_annotation: str = DEFAULT_PREFERRED_ANNOTATION
    preferred_zone_weight: int = 2
    spread_weight: int = 1
    spread_owner_kinds: list[str] = msgspec.field(default_factory=_default_kinds)

    def validate(self) -> list[InputError]:
        """Field errors with paths relative to the args, e.g. `preferredZones[1]`."""
        errors: list[InputError] = []
        for path, kind, key in (
            ("zoneLabel", "label", self.zone_label),
            ("preferredZonesAnnotation", "annotation", self.preferred_zones_annotation),
        ):
            why = qualified_name_error(key)
            if why is not None:
                errors.append(InputError(f"invalid {kind} key {key!r}: {why}", path=path))
        for i, zone in enumerate(self.preferred_zones):
            why = "must not be empty" if not zone else label_value_error(zone)
            if why is not None:
                errors.append(InputError(f"invalid zone {zone!r}: {why}", path=f"preferredZones[{i}]"))
        for path, weight in (
            ("preferredZoneWeight", self.preferred_zone_weight),
            ("spreadWeight", self.spread_weight),
        ):
            if not 0 <= weight <= MAX_WEIGHT:
                errors.append(InputError(f"must be in the range [0, {MAX_WEIGHT}]", path=path))
        if self.preferred_zone_weight == 0 and self.spread_weight == 0:
            errors.append(
                InputError("preferredZoneWeight and spreadWeight must not both be 0", path="spreadWeight")
            )
        for i, kind in enumerate(self.spread_owner_kinds):
            if not kind:
                errors.append(InputError("must not be empty", path=f"spreadOwnerKinds[{i}]"))
        return errors


@dataclass(frozen=True, slots=True)
class _ScoreState:
    """Per cycle: the pod's preferred zones, and its workload's replicas per zone."""

    preferred: frozenset[str]
    #: False when the pod is not spread (no controller of a spread kind, or spreadWeight 0).
    spread: bool
    counts: Mapping[str, int] = field(default_factory=dict)
    #: The most replicas in one zone among the zones of the nodes being scored.
    max_count: int = 0

    def clone(self) -> _ScoreState:
        return self


def _zones(value: str) -> frozenset[str]:
    return frozenset(z for z in (part.strip() for part in value.split(",")) if z)


class AZScheduler(PreScorePlugin, ScorePlugin, BatchScorePlugin, ScoreExtensions, EnqueueExtensions):
    """Score nodes by zone: preferred zones first, then the zones holding the fewest replicas of the
    pod's workload. Nodes without a zone label score 0. NormalizeScore scales the best node to 100."""

    name: ClassVar[str] = "AZScheduler"
    #: What it reads through `handle.lister` (what `kubesched explain` snapshots for it).
    listed_kinds: ClassVar[tuple[str, ...]] = ()
    args_type: ClassVar[type[AZSchedulerArgs]] = AZSchedulerArgs

    def __init__(self, args: AZSchedulerArgs | None = None, handle: Handle | None = None) -> None:
        self.args = args if args is not None else AZSchedulerArgs()
        self.handle = handle
        errors = self.args.validate()
        if errors:
            raise FieldErrors(errors)
        self._preferred = frozenset(self.args.preferred_zones)
        self._kinds = frozenset(self.args.spread_owner_kinds)
        self._counts = OwnerPodCounts()

    def preferred_zones(self, pod: Pod) -> frozenset[str]:
        """The annotation's zones when the pod has the annotation (an empty one clears the
        preference), else the configured ones."""
        value = pod.metadata.annotations.get(self.args.preferred_zones_annotation)
        return self._preferred if value is None else _zones(value)

    def _spread_key(self, pod: Pod) -> str | None:
        if self.args.spread_weight == 0:
            return None
        ref = controller_of(pod.metadata)
        if ref is None or ref.kind not in self._kinds:
            return None
        return owner_key(pod)

    def _compute(self, pod: Pod, nodes: NodeSet) -> _ScoreState:
        preferred = self.preferred_zones(pod) if self.args.preferred_zone_weight > 0 else frozenset()
        key = self._spread_key(pod)
        if key is None:
            return _ScoreState(preferred, spread=False)
        table = nodes.table
        column = table.label_column(self.args.zone_label)
        per_row = self._counts.all_rows(table, key)
        zoned = column.ids >= 0
        per_zone = np.bincount(column.ids[zoned], weights=per_row[zoned], minlength=len(column.values))
        per_zone = per_zone.astype(np.int64)
        scored = column.ids[nodes.rows]
        scored = scored[scored >= 0]
        max_count = int(per_zone[scored].max()) if len(scored) else 0
        counts = {value: int(per_zone[i]) for i, value in enumerate(column.values)}
        return _ScoreState(preferred, spread=True, counts=counts, max_count=max_count)

    def pre_score(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Status | None:
        s = self._compute(pod, nodes)
        if not s.preferred and not s.spread:
            return Status.skip()  # nothing to prefer: every node would score the same
        state.write(_STATE_KEY, s)
        return None

    def _state(self, state: CycleState, pod: Pod, nodes: NodeSet | None) -> _ScoreState:
        s = state.get(_STATE_KEY)
        if isinstance(s, _ScoreState):
            return s
        # PreScore disabled: count against the scored set, or else every node of the snapshot.
        if nodes is None and self.handle is not None:
            nodes = self.handle.snapshot.all()
        computed = (
            self._compute(pod, nodes) if nodes is not None else _ScoreState(self.preferred_zones(pod), False)
        )
        state.write(_STATE_KEY, computed)
        return computed

    def _zone_score(self, s: _ScoreState, zone: str) -> int:
        preferred = MAX_NODE_SCORE if zone in s.preferred else 0
        spread = 0
        if s.spread:
            if s.max_count == 0:
                spread = MAX_NODE_SCORE
            else:
                fewer = max(s.max_count - s.counts.get(zone, 0), 0)
                spread = MAX_NODE_SCORE * fewer // s.max_count
        return self.args.preferred_zone_weight * preferred + self.args.spread_weight * spread

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        zone = node_info.labels.get(self.args.zone_label)
        if zone is None:
            return 0
        return self._zone_score(self._state(state, pod, None), zone)

    def score_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Scores:
        s = self._state(state, pod, nodes)
        column = nodes.table.label_column(self.args.zone_label)
        per_value = [self._zone_score(s, v) for v in column.values]
        padded = np.asarray([*per_value, 0], dtype=np.int64)  # id -1 (no zone label) -> 0
        out: Scores = padded[column.ids[nodes.rows]]
        return out

    def normalize_score(self, state: CycleState, pod: Pod, nodes: NodeSet, scores: Scores) -> Status | None:
        default_normalize_score(scores, reverse=False)
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """None: a Score plugin never rejects a pod, so no event can make one schedulable for it."""
        return []
