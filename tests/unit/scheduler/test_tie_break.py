"""The scheduler's tie-break among equal best scores: kube-scheduler's seeded draw, or the lowest node
name (the FGD paper's simulator), for a full pass and for the batch's runners-up."""

from __future__ import annotations

import pytest

from kubesched.api.loader import LoadedObjects
from kubesched.cluster.memory import MemoryCluster
from kubesched.config import decode_config
from kubesched.plugins import default_registry
from kubesched.scheduler.clock import VirtualClock
from kubesched.scheduler.options import TIE_BREAK_NODE_NAME, TIE_BREAK_RANDOM, SchedulerOptions
from kubesched.scheduler.profiles import options_from_config, profiles_from_config
from kubesched.scheduler.scheduler import Scheduler
from kubesched.testing.builders import make_node, make_pod

# Profile `batch`: bare pods are signable (PodTopologySpread's system defaults off), so they batch.
CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: batch
  pluginConfig:
  - name: PodTopologySpread
    args: {defaultingType: List}
"""
#: Equal nodes, listed out of name order so that list order and name order disagree.
NAMES = ["n-c", "n-a", "n-d", "n-b"]


def placements(tie_break: str, seed: int, pods: int) -> list[str]:
    """Where `pods` identical 1-cpu pods go, one cycle each, on four equal 4-cpu nodes."""
    registry = default_registry(entry_points=False)
    cfg = decode_config(CONFIG, "sched.yaml", registry)
    clock = VirtualClock()
    nodes = [make_node(n, cpu="4", memory="8Gi") for n in NAMES]
    cluster = MemoryCluster(LoadedObjects(nodes=nodes), clock.now)
    options = SchedulerOptions(**{**_fields(options_from_config(cfg, seed=seed)), "tie_break": tie_break})
    scheduler = Scheduler(profiles_from_config(cfg, registry), registry, cluster, clock, options)
    cluster.subscribe(scheduler)
    out = []
    for i in range(pods):
        cluster.create_pod(make_pod(f"p{i}", cpu="1", scheduler_name="batch"))
        assert scheduler.schedule_one()
        out.append(next(p.spec.node_name for p in cluster.pods.values() if p.metadata.name == f"p{i}"))
    return out


def _fields(options: SchedulerOptions) -> dict[str, object]:
    return {name: getattr(options, name) for name in SchedulerOptions.__slots__}


def test_node_name_takes_the_lowest_name_whatever_the_seed() -> None:
    assert {placements(TIE_BREAK_NODE_NAME, seed, 1)[0] for seed in range(8)} == {"n-a"}


def test_random_draws_among_the_equal_nodes() -> None:
    assert len({placements(TIE_BREAK_RANDOM, seed, 1)[0] for seed in range(8)}) > 1


def test_node_name_orders_the_batch_runners_up_by_name() -> None:
    # After n-a, the other three still tie: the second pod takes the batch's best runner-up
    # (no full pass), the third a full pass again; both by name, not by list order.
    assert placements(TIE_BREAK_NODE_NAME, 0, 4) == ["n-a", "n-b", "n-c", "n-d"]


def test_unknown_tie_break_is_refused() -> None:
    with pytest.raises(ValueError, match="tie_break must be one of random, nodeName"):
        SchedulerOptions(tie_break="lowest")
