"""Opportunistic batching's cache rules, on the real default plugins over the in-memory cluster.

Profile `batch` is the default profile with PodTopologySpread's system defaults off (so bare pods
are signable); `default-scheduler` keeps them (so no pod is, as in kube-scheduler v1.37.2). Each
test drives the scheduler one cycle at a time and checks what the batch counted and where pods went.
"""

from __future__ import annotations

from collections import Counter

import msgspec
import pytest

from kubesched.api.loader import LoadedObjects
from kubesched.api.objects import Node, Pod
from kubesched.cluster.memory import MemoryCluster
from kubesched.config import DEFAULT_GATES, FeatureGates, decode_config, parse_feature_gates
from kubesched.plugins import default_registry
from kubesched.scheduler.batch import MAX_BATCH_AGE, OpportunisticBatch
from kubesched.scheduler.clock import VirtualClock
from kubesched.scheduler.profiles import options_from_config, profiles_from_config
from kubesched.scheduler.scheduler import Scheduler
from kubesched.testing.builders import make_node, make_pod

CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: batch
  pluginConfig:
  - name: PodTopologySpread
    args: {defaultingType: List}
- schedulerName: default-scheduler
"""


class Bed:
    def __init__(self, nodes: list[Node], features: FeatureGates = DEFAULT_GATES) -> None:
        registry = default_registry(entry_points=False, features=features)
        cfg = decode_config(CONFIG, "sched.yaml", registry)
        self.clock = VirtualClock()
        self.cluster = MemoryCluster(LoadedObjects(nodes=nodes), self.clock.now)
        self.scheduler = Scheduler(
            profiles_from_config(cfg, registry),
            registry,
            self.cluster,
            self.clock,
            options_from_config(cfg, seed=0),
        )
        self.cluster.subscribe(self.scheduler)
        self.batch: OpportunisticBatch = self.scheduler.batches["batch"]
        self.count = 0

    def schedule(self, pod: Pod | None = None, **kw: object) -> str:
        """Create one pod (by default an identical 1-cpu bare pod of profile `batch`), run its cycle,
        and return the node it was bound to ("" when it was not)."""
        self.count += 1
        if pod is None:
            pod = make_pod(f"p{self.count}", cpu="1", scheduler_name="batch", **kw)  # type: ignore[arg-type]
        stored = self.cluster.create_pod(pod)
        assert self.scheduler.schedule_one()
        bound = self.cluster.pods[
            next(k for k, p in self.cluster.pods.items() if p.metadata.name == stored.metadata.name)
        ]
        return bound.spec.node_name

    def cached(self) -> list[str]:
        """The nodes left in the list, best first."""
        stored = self.batch.stored
        if stored is None:
            return []
        kept = stored.nodes
        left = [i for i in range(len(kept.names)) if stored.alive[i]]
        return [kept.names[i] for i in sorted(left, key=lambda i: (-kept.totals[i], kept.order[i]))]


def sized(*cpus: int) -> list[Node]:
    """Nodes n0, n1, ... of these cpu sizes: different sizes score differently, so no ties."""
    return [make_node(f"n{i}", cpu=str(c), memory="8Gi") for i, c in enumerate(cpus)]


def test_a_burst_of_identical_pods_is_batched_one_pod_per_node() -> None:
    bed = Bed(sized(1, 1, 1, 1))
    nodes = [bed.schedule() for _ in range(4)]
    assert sorted(nodes) == ["n0", "n1", "n2", "n3"]
    assert bed.batch.attempts == Counter({"no_hint": 1, "hint_used": 3})
    assert bed.batch.rescores == 0  # a full node is dropped from the list, never rescored
    assert bed.batch.flushes == Counter()


def test_with_the_gate_off_nothing_is_batched_and_every_pod_lands_where_a_full_pass_puts_it() -> None:
    batched = Bed(sized(8, 6, 5, 3, 2))
    off = Bed(sized(8, 6, 5, 3, 2), parse_feature_gates(["OpportunisticBatching=false"]))
    placements = [
        [bed.schedule(make_pod(f"p{i}", cpu="1500m", scheduler_name="batch")) for i in range(14)]
        for bed in (batched, off)
    ]
    assert placements[0] == placements[1]
    assert batched.batch.attempts["hint_used"] >= 10
    assert off.batch.attempts == Counter() and off.batch.flushes == Counter() and off.batch.stored is None


def test_the_node_just_used_is_rescored_when_it_still_fits() -> None:
    # 4 and 3 cpus: the 4-cpu node leads, then (3 cpus left) ties the empty 3-cpu node ...
    bed = Bed(sized(4, 3))
    first = bed.schedule()
    assert first == "n0" and bed.cached() == ["n1"]
    second = bed.schedule()
    assert bed.batch.rescores == 1
    assert bed.batch.attempts["hint_used"] == 1
    assert second in ("n0", "n1") and set(bed.cached()) == {"n0", "n1"} - {second}


def test_batched_placements_equal_a_full_pass_for_every_pod() -> None:
    """The same burst with batching (profile `batch`) and without (default-scheduler, where no pod
    is signable) lands on the same nodes, pod for pod."""
    placements = []
    for profile in ("batch", "default-scheduler"):
        bed = Bed(sized(8, 6, 5, 3, 2))
        placements.append(
            [bed.schedule(make_pod(f"p{i}", cpu="1500m", scheduler_name=profile)) for i in range(14)]
        )
        if profile == "batch":
            assert bed.batch.attempts["hint_used"] >= 10
            assert bed.batch.rescores >= 5
        else:
            assert bed.scheduler.batches["default-scheduler"].attempts == Counter({"no_hint": 14})
    assert placements[0] == placements[1]


@pytest.mark.parametrize(
    ("between", "flushes"),
    [
        # the other pod's own list does not serve ours either: counted twice
        ("other-signature", {"pod_incompatible": 2}),
        ("other-profile", {"pod_skipped": 1}),
        # the failed pod (another signature) stores nothing: the next cycle is not last + 1
        ("failed-pod", {"pod_incompatible": 1, "pod_skipped": 1}),
        ("too-late", {"expired": 1}),
        ("node-deleted", {"node_missing": 1}),
    ],
)
def test_a_list_serves_only_the_next_cycle_of_a_same_signature_pod_in_time(
    between: str, flushes: dict[str, int]
) -> None:
    bed = Bed(sized(1, 1, 1, 1))
    first = bed.schedule()
    if between == "other-signature":
        bed.schedule(make_pod("other", cpu="1", memory="1Mi", scheduler_name="batch"))
    elif between == "other-profile":
        bed.schedule(make_pod("other", cpu="100m", scheduler_name="default-scheduler"))
    elif between == "failed-pod":
        assert bed.schedule(make_pod("huge", cpu="64", scheduler_name="batch")) == ""
    elif between == "too-late":
        bed.clock.advance(MAX_BATCH_AGE + 0.001)
    elif between == "node-deleted":
        bed.cluster.remove_node(first)
    bed.schedule()
    assert bed.batch.flushes == Counter(flushes)
    assert bed.batch.attempts["hint_used"] == 0


def test_just_within_the_age_the_list_still_serves() -> None:
    bed = Bed(sized(1, 1, 1))
    bed.schedule()
    bed.clock.advance(MAX_BATCH_AGE)
    bed.schedule()
    assert bed.batch.attempts["hint_used"] == 1


def test_a_hint_that_no_longer_fits_is_not_used_and_the_full_pass_decides() -> None:
    bed = Bed(sized(1, 2, 3))
    assert bed.schedule() == "n2"
    hint = bed.cached()[0]
    bed.cluster.create_pod(make_pod("squatter", cpu=str(1 if hint == "n0" else 2), node_name=hint))
    assert bed.schedule() != hint
    assert bed.batch.attempts == Counter({"no_hint": 1, "hint_not_used": 1})


def test_a_single_feasible_node_leaves_nothing_to_batch() -> None:
    bed = Bed(sized(1))
    bed.schedule()
    assert bed.batch.flushes == Counter({"empty_list": 1})
    assert bed.batch.stored is None


def test_an_unsignable_pod_flushes_the_list() -> None:
    bed = Bed(sized(1, 1, 1))
    bed.schedule()
    spread = {
        "topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
             "labelSelector": {"matchLabels": {"app": "x"}}}
        ]
    }  # fmt: skip
    bed.schedule(make_pod("spread", cpu="1", scheduler_name="batch", spec=spread))
    assert bed.batch.flushes == Counter({"pod_incompatible": 1, "pod_not_batchable": 1})
    assert bed.batch.stored is None


def test_the_default_profile_of_v1_37_never_batches() -> None:
    """PodTopologySpread's System defaults make every pod unsignable (seen on the v1.37.2 binary)."""
    bed = Bed(sized(1, 1, 1))
    for i in range(3):
        bed.schedule(make_pod(f"d{i}", cpu="1"))
    batch = bed.scheduler.batches["default-scheduler"]
    assert batch.attempts == Counter({"no_hint": 3})
    assert batch.flushes == Counter({"pod_not_batchable": 2, "empty_list": 1})


def test_a_nominated_node_is_tried_before_the_hint() -> None:
    """Upstream evaluates `status.nominatedNodeName` alone when set, and the hint only otherwise."""
    bed = Bed(sized(1, 2, 3))
    assert bed.schedule() == "n2"
    assert bed.cached()[0] == "n1"
    nominated = make_pod("nominated", cpu="1", scheduler_name="batch", spec={})
    nominated = msgspec.structs.replace(
        nominated, status=msgspec.structs.replace(nominated.status, nominated_node_name="n0")
    )
    assert bed.schedule(nominated) == "n0"
    assert bed.batch.attempts == Counter({"no_hint": 1, "hint_not_used": 1})


def test_simulate_batches_a_burst_in_virtual_time() -> None:
    """`simulate` schedules the pods pending at the start back to back while its clock stands still:
    after the first, each pod takes the hint, so --explain has no scores for it (none were computed,
    as upstream computes none); the placements are a full pass's."""
    from kubesched.simulate.snapshot.run import simulate

    registry = default_registry(entry_points=False)
    cfg = decode_config(CONFIG, "sched.yaml", registry)
    reports = {}
    for profile in ("batch", "default-scheduler"):
        pods = [make_pod(f"p{i}", cpu="1500m", scheduler_name=profile) for i in range(6)]
        reports[profile] = simulate(
            LoadedObjects(nodes=sized(8, 6, 5, 3), pods=pods), cfg, registry, explain=True
        )
    batched, full = reports["batch"].pods, reports["default-scheduler"].pods
    assert [p.node for p in batched] == [p.node for p in full]
    assert [bool(p.scores) for p in batched] == [True, False, False, False, False, False]
    assert all(p.scores for p in full)


@pytest.mark.parametrize("preferred", [False, True])
def test_a_rescored_node_is_normalized_with_the_nodes_kept(preferred: bool) -> None:
    """TaintToleration and NodeAffinity normalize over the nodes scored: the node just used must be
    normalized together with the kept ones (normalized alone, its PreferNoSchedule taint or its
    affinity weighs differently and pods land elsewhere than a full pass puts them)."""
    from kubesched.api.objects import Taint

    def tainted() -> list[Node]:
        shapes = ((6, 1), (7, 2), (4, 0), (5, 3), (3, 0))
        return [
            make_node(
                f"n{i}",
                cpu=str(c),
                memory="16Gi",
                taints=[Taint(key=f"t{k}", effect="PreferNoSchedule") for k in range(t)],
            )
            for i, (c, t) in enumerate(shapes)
        ]

    terms = [
        {
            "weight": 50,
            "preference": {
                "matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["n0"]}]
            },
        },
        {
            "weight": 20,
            "preference": {
                "matchExpressions": [
                    {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n0", "n1"]}
                ]
            },
        },
    ]
    spec = (
        {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": terms}}}
        if preferred
        else {}
    )
    counts = []
    for profile in ("batch", "default-scheduler"):
        bed = Bed(tainted())
        nodes = [
            bed.schedule(make_pod(f"p{i}", cpu="1", scheduler_name=profile, spec=spec)) for i in range(14)
        ]
        counts.append(Counter(nodes))
        if profile == "batch":
            assert bed.batch.attempts["hint_used"] == 13 and bed.batch.rescores >= 10
    assert counts[0] == counts[1]
