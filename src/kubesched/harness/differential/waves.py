"""Play a pod-group scenario on a real API server, one wave at a time, and read back what settled.

For each wave the harness snapshots the objects (what kubesched's simulator will be given), creates
the wave's pods, waits until the scheduler's queue holds every one of them, then creates their
PodGroup (for the binary that is the queue's own log line for a pod held for its group: the event
handler's "Add event" line comes before the pod is queued). Until the PodGroup exists the pods are
held back; its arrival moves them to the active queue, as the pods of a Job created in one go
would be. Created before the PodGroup, a group with minCount below its size would be popped as soon
as minCount pods exist.

The binary moves them one at a time, and its scheduling loop may pop the group while the move goes
on: the first cycle then holds part of the group (its log says how many, `first_cycle_pods`), and
the rest join the next. Measured under load (2 cores at load 12): seed 1 wave 3 of the priority set
in about one play of six, with 3 of 4 pods; a group whose first cycle held one pod is what leaves
`error in "DynamicResources" PodGroupPostFilter plugins: not found` in messages and conditions.
Which pods fail their first attempt, and with which message, follows that split.

**Settled** means: every pod of the wave is bound, or unschedulable with no nomination pending and
the FailedScheduling event of the attempt its condition shows written; every PodGroup (basic ones
too) carries its `PodGroupInitiallyScheduled` condition; and nothing of that (nodes, conditions,
event notes) changed for `QUIET_SECONDS`. A wave that does not settle within `SETTLE_TIMEOUT` is an error, not
an outcome. Pods of the wave a later pod of it preempted count as victims.

Then bound pods are started (the kubelet's part, `ScenarioOnCluster._start`) and the wave's unbound
pods deleted, so the next wave meets bound pods only, as in the one-pod-at-a-time harness.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from kubesched.framework.types import truncate_note
from kubesched.harness.differential.cluster import (
    ScenarioOnCluster,
    UpstreamTimeout,
    gone,
    pod_path,
    wait_until,
)
from kubesched.harness.differential.group_scenario import COMPOSITE_API, POD_GROUP_API, GroupScenario, Wave
from kubesched.harness.fake_nodes import ApiClient, ApiError

__all__ = [
    "QUIET_SECONDS",
    "SETTLE_TIMEOUT",
    "GroupOutcome",
    "WaveOutcome",
    "play_waves",
    "play_waves_whole",
    "popped_in_part",
]

Obj = dict[str, Any]

#: Seconds with nothing changing before a wave counts as settled.
QUIET_SECONDS = 0.6
#: Seconds a wave may take to settle.
SETTLE_TIMEOUT = 60.0
_POLL = 0.05
#: Where the scenario's PodGroups live (every generated object is in `default`).
PODGROUPS = f"/apis/{POD_GROUP_API}/namespaces/default/podgroups"
COMPOSITES = f"/apis/{COMPOSITE_API}/namespaces/default/compositepodgroups"
INITIALLY_SCHEDULED = "PodGroupInitiallyScheduled"


@dataclass
class GroupOutcome:
    """What one PodGroup's status said once the wave settled."""

    name: str
    #: (type, status, reason, message) of each condition, in the server's order.
    conditions: list[tuple[str, str, str, str]]


@dataclass
class WaveOutcome:
    """One wave's pods (node or None, FailedScheduling notes), groups and victims."""

    index: int
    #: The wave's pods and PodGroups as the server admitted them (a PodGroup's priority resolved from
    #: its priorityClassName, as the binary reads it).
    pods: list[Obj]
    groups: list[Obj]
    #: The scenario's objects just before the wave was created (what kubesched is given).
    before: list[Obj]
    nodes: dict[str, str | None]
    messages: dict[str, list[str]]
    group_status: dict[str, GroupOutcome]
    #: Pods the scheduler deleted during the wave (running ones, earlier waves', this wave's).
    victims: list[str] = field(default_factory=list)
    seconds: float = 0.0
    #: Per PodGroup name, how many pods the scheduler's first cycle for it held, where its log tells
    #: (the binary's). Below the group's size: the group was popped before its last pods joined it.
    first_cycle_pods: dict[str, int] = field(default_factory=dict)
    #: The wave's CompositePodGroups as admitted (they carry no condition of their own).
    composites: list[Obj] = field(default_factory=list)
    #: Per PodGroup name, how many pod-group cycles the scheduler ran for it during the wave, where its
    #: log tells (the binary's).
    cycles: dict[str, int] = field(default_factory=dict)


def play_waves(target: ScenarioOnCluster, s: GroupScenario) -> list[WaveOutcome]:
    """Set the scenario up, play each wave to its settled outcome, tear it all down."""
    target.begin(s, s.pods_to_schedule)
    try:
        target._set_up(s)
        return [_play(target, s, wave, i) for i, wave in enumerate(s.waves)]
    finally:
        target._tear_down(s)
        _remove_groups(target.api, s)


def play_waves_whole(target: ScenarioOnCluster, s: GroupScenario, *, tries: int = 3) -> list[WaveOutcome]:
    """`play_waves`, played again (at most `tries` times in all) while the scheduler popped some
    group before all its pods had joined it: for checks of what it does with a whole group."""
    for _ in range(tries - 1):
        waves = play_waves(target, s)
        if not any(popped_in_part(w) for w in waves):
            return waves
    return play_waves(target, s)


#: PreFilter's refusal of a claim another pod's Reserve allocated and whose PreBind has not written it.
IN_FLIGHT = "is in the process of being allocated"


def raced_in_flight(wave: WaveOutcome) -> set[str]:
    """The wave's groups a member of which the binary refused with `IN_FLIGHT` (any attempt).

    Within one pod-group cycle the members share the allocation the first one's Reserve made; a
    member that comes to a *later* cycle while that allocation is still in flight is refused (its
    binding cycles run apart from the scheduling loop: a member whose PreBind found the claim
    written by another is retried at once, and a group popped in part has its last pods in a second
    cycle). Its outcome then depends on which of the binary's goroutines came first. kubesched's
    binding cycles end before its next cycle starts, so it never shows the refusal for a member."""
    members = {
        pod["metadata"]["name"]: group
        for pod in wave.pods
        if (group := (pod["spec"].get("schedulingGroup") or {}).get("podGroupName"))
    }
    return {
        group for name, group in members.items() if any(IN_FLIGHT in m for m in wave.messages.get(name, []))
    }


def popped_in_part(wave: WaveOutcome) -> bool:
    """Whether the scheduler's first cycle for some group of the wave held fewer of its pods than
    the wave created (from its log; a scheduler whose log does not tell is taken at its word)."""
    sizes = {g["metadata"]["name"]: 0 for g in wave.groups}
    for pod in wave.pods:
        group = (pod["spec"].get("schedulingGroup") or {}).get("podGroupName")
        if group in sizes:
            sizes[group] += 1
    return any(wave.first_cycle_pods.get(name, size) < size for name, size in sizes.items())


def snapshot(target: ScenarioOnCluster, s: GroupScenario) -> list[Obj]:
    """The scenario's objects now, its PodGroups (and CompositePodGroups) included."""
    groups = [
        {**copy.deepcopy(g), "apiVersion": POD_GROUP_API, "kind": "PodGroup"}
        for g in target.api.list_all(PODGROUPS)
        if g["metadata"]["name"].startswith(f"{s.name}-")
    ]
    if s.composite:
        groups += [
            {**copy.deepcopy(g), "apiVersion": COMPOSITE_API, "kind": "CompositePodGroup"}
            for g in target.api.list_all(COMPOSITES)
            if g["metadata"]["name"].startswith(f"{s.name}-")
        ]
    return [*target._snapshot(s), *groups]


def _play(target: ScenarioOnCluster, s: GroupScenario, wave: Wave, index: int) -> WaveOutcome:
    api = target.api
    before = snapshot(target, s)
    existing = {o["metadata"]["name"] for o in before if o["kind"] == "Pod"}
    started = time.monotonic()
    pods = []
    for pod in wave.pods:
        body = copy.deepcopy(pod)
        if target.scheduler_name is not None:
            body["spec"]["schedulerName"] = target.scheduler_name
        pods.append({**api.post(pod_path("default"), body), "apiVersion": "v1", "kind": "Pod"})
    if wave.groups:
        members = frozenset(
            f"default/{p['metadata']['name']}" for p in pods if p["spec"].get("schedulingGroup")
        )
        target._wait_pods_seen([f"default/{p['metadata']['name']}" for p in pods], members)
    cycles_before = {group: len(sizes) for group, sizes in target._group_cycles().items()}
    attempts_before = target._group_attempts()
    groups = [
        {**api.post(PODGROUPS, group), "apiVersion": POD_GROUP_API, "kind": "PodGroup"}
        for group in wave.groups
    ]
    composites = []
    if wave.composites:
        # Held until their root composite exists: it comes last, once the scheduler saw the PodGroups
        # (and each inner composite), so the tree is released whole.
        target._wait_groups_seen([f"default/{g['metadata']['name']}" for g in wave.groups])
        for composite in wave.composites:
            created = api.post(COMPOSITES, composite)
            composites.append({**created, "apiVersion": COMPOSITE_API, "kind": "CompositePodGroup"})
    state = _settle(api, wave, {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods})
    seconds = time.monotonic() - started
    nodes, messages, status = state
    first_cycle_pods = {
        group.partition("/")[2]: sizes[cycles_before.get(group, 0)]
        for group, sizes in target._group_cycles().items()
        if group.startswith("default/") and len(sizes) > cycles_before.get(group, 0)
    }
    cycles = {
        group.partition("/")[2]: n - attempts_before.get(group, 0)
        for group, n in target._group_attempts().items()
        if group.startswith("default/") and n > attempts_before.get(group, 0)
    }
    for j, pod in enumerate(wave.pods):
        name = pod["metadata"]["name"]
        if nodes[name] is not None:
            target._start("default", name, 100 * index + j)
    after = {p["metadata"]["name"] for p in api.list_all(pod_path("default"))}
    # All deleted before waiting for any: `kubesched run` tells a pod's removal by its queue emptying.
    unbound = [name for name, node in nodes.items() if node is None and name in after]
    for name in unbound:
        api.request("DELETE", pod_path("default", name), {"gracePeriodSeconds": 0})
    for name in unbound:
        target._wait_unscheduled_pod_gone(f"default/{name}")
    return WaveOutcome(
        index=index,
        pods=pods,
        groups=groups,
        before=before,
        nodes=nodes,
        messages=messages,
        group_status=status,
        victims=sorted(f"default/{n}" for n in (existing | set(nodes)) - after),
        seconds=seconds,
        first_cycle_pods=first_cycle_pods,
        composites=composites,
        cycles=cycles,
    )


_State = tuple[dict[str, str | None], dict[str, list[str]], dict[str, GroupOutcome]]


def _observe(
    api: ApiClient, wave: Wave, uids: dict[str, str], expected: dict[str, set[str]] | None = None
) -> tuple[_State, bool]:
    """The wave's state now, and whether it is final (every pod decided, every group conditioned).

    `expected` gathers, from one call to the next, the notes of the failed attempts seen in pods'
    conditions: a pod bound since (binding sets its condition to True) is final only once their
    Events are written too, for its first message is compared."""
    expected = {} if expected is None else expected
    pods = {
        p["metadata"]["name"]: p for p in api.list_all(pod_path("default")) if p["metadata"]["name"] in uids
    }
    notes: dict[str, list[tuple[str, str]]] = {name: [] for name in uids}
    for e in api.list_all(
        "/apis/events.k8s.io/v1/namespaces/default/events", {"fieldSelector": "reason=FailedScheduling"}
    ):
        regarding = e.get("regarding") or {}
        name = regarding.get("name", "")
        if name in uids and regarding.get("uid") == uids[name]:
            stamp = e.get("eventTime") or e["metadata"].get("creationTimestamp") or ""
            notes[name].append((stamp, e.get("note", "")))
    nodes: dict[str, str | None] = {}
    final = True
    for name in uids:
        pod = pods.get(name)
        if pod is None:  # deleted: a preemption's victim, or gone for good
            nodes[name] = None
            continue
        nodes[name] = pod["spec"].get("nodeName") or None
        status = pod.get("status") or {}
        cond: Obj = next((c for c in status.get("conditions") or [] if c["type"] == "PodScheduled"), {})
        if nodes[name] is None and cond.get("reason") == "Unschedulable":
            expected.setdefault(name, set()).add(truncate_note(cond.get("message") or ""))
        if not expected.get(name, set()) <= {note for _, note in notes[name]}:
            final = False  # the Event of an attempt a condition showed is not written yet
        if nodes[name] is None and (cond.get("reason") != "Unschedulable" or status.get("nominatedNodeName")):
            final = False
    groups: dict[str, GroupOutcome] = {}
    for group in wave.groups:
        name = group["metadata"]["name"]
        current = api.get(f"{PODGROUPS}/{name}")
        conditions = [
            (c["type"], c["status"], c.get("reason", ""), c.get("message", ""))
            for c in (current.get("status") or {}).get("conditions") or []
        ]
        groups[name] = GroupOutcome(name, conditions)
        if not any(c[0] == INITIALLY_SCHEDULED for c in conditions):
            final = False
    messages = {name: [note for _, note in sorted(n)] for name, n in notes.items()}
    return (nodes, messages, groups), final


def _settle(api: ApiClient, wave: Wave, uids: dict[str, str]) -> _State:
    deadline = time.monotonic() + SETTLE_TIMEOUT
    last: _State | None = None
    since = time.monotonic()
    expected: dict[str, set[str]] = {}
    while True:
        state, final = _observe(api, wave, uids, expected)
        now = time.monotonic()
        if state != last:
            last, since = state, now
        elif final and now - since >= QUIET_SECONDS:
            return state
        if now > deadline:
            raise UpstreamTimeout(f"wave of {sorted(uids)} did not settle in {SETTLE_TIMEOUT:.0f} s: {state}")
        time.sleep(_POLL)


def _remove_groups(api: ApiClient, s: GroupScenario) -> None:
    paths = [f"{PODGROUPS}/{g['metadata']['name']}" for g in s.groups]
    paths += [f"{COMPOSITES}/{g['metadata']['name']}" for w in s.waves for g in w.composites]
    for path in paths:
        try:
            current = api.get(path)
        except ApiError as err:
            if err.reason == "NotFound":
                continue
            raise
        if current["metadata"].get("finalizers"):
            current["metadata"]["finalizers"] = []
            api.request("PUT", path, current)
        try:
            api.request("DELETE", path, {"gracePeriodSeconds": 0})
        except ApiError as err:
            if err.reason != "NotFound":
                raise
        wait_until(f"removal of {path}", partial(gone, api, path))
