"""FragPack, kubesched's own GPU-sharing policy: its normalisation, its GPU choice, and the plugin
with DRA claims, beside the default plugins, under either tie rule and for a pod group's members."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import yaml
from gpu_share_fixtures import CLASS, DRIVER, gpu_node, placements, task

from kubesched.api.loader import LoadedObjects, load_documents
from kubesched.config import decode_config, parse_feature_gates
from kubesched.plugins import default_registry
from kubesched.plugins.contrib.gpu_share.policies import frag_pack_gpus, frag_pack_normalize
from kubesched.plugins.contrib.gpu_share.shapes import TaskShape, typical_tasks
from kubesched.scheduler.options import TIE_BREAK_NODE_NAME, TIE_BREAK_RANDOM
from kubesched.simulate.snapshot.run import simulate

TYPICAL = (
    "{typicalTasks: [{cpuMilli: 1000, gpuMilli: 500, gpuCount: 1, weight: 2},"
    " {cpuMilli: 2000, gpuMilli: 1000, gpuCount: 1}]}"
)
DEFAULTS_AND_FRAG_PACK = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
percentageOfNodesToScore: 100
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint: {enabled: [{name: FragPack, weight: 5}]}
  pluginConfig:
  - name: FragPack
    args: TYPICAL
""".replace("TYPICAL", TYPICAL)


def test_the_best_fgd_score_wins_then_each_key_in_turn() -> None:
    scores = np.array([57, 57, 40, 57, 100], dtype=np.int64)
    gpu_left = np.array([3000, 1000, 0, 1000, 8000], dtype=np.int64)
    cpu_left = np.array([0, 8000, 0, 4000, 0], dtype=np.int64)
    rank = np.array([0, 1, 2, 3, 4], dtype=np.int64)
    # Node 4 alone has FGD's best score: it wins whatever its fill.
    assert frag_pack_normalize(scores, gpu_left, cpu_left, rank).tolist() == [57, 57, 40, 57, 100]
    scores[4] = 0
    # Nodes 0, 1, 3 tie at 57; 1 and 3 keep the least GPU share; 3 keeps less CPU.
    assert frag_pack_normalize(scores, gpu_left, cpu_left, rank).tolist() == [57, 57, 40, 100, 0]
    same = np.array([5, 5])
    assert frag_pack_normalize(np.array([60, 60]), same, same, np.array([1, 0])).tolist() == [60, 100]
    assert frag_pack_normalize(np.array([100, 100]), same, same, np.array([0, 1])).tolist() == [100, 99]


def test_a_share_goes_to_fgds_best_gpu_then_to_the_fullest() -> None:
    typical = typical_tasks([TaskShape(1000, 500, 1)])
    shape = TaskShape(1000, 300, 1)
    accepts = np.ones(1, dtype=np.bool_)
    # GPU 0 (800 left) keeps 500 for the typical task; GPUs 1 and 2 (600 left) would strand 300.
    assert frag_pack_gpus(8000, [800, 600, 600, 1000], accepts, shape, typical)[0] == 0
    # No typical task: every GPU scores alike, so the one with the least share left.
    empty = typical_tasks([])
    assert frag_pack_gpus(8000, [800, 600, 600, 1000], np.ones(0, dtype=np.bool_), shape, empty)[0] == 1


def test_a_node_in_use_wins_fgds_ties_over_an_idle_one() -> None:
    """Without typical tasks FGD scores every node alike; the node in use beats the lower names."""
    nodes = [*gpu_node("a", 2), *gpu_node("b", 2), *gpu_node("c", 4)]
    for seed in range(3):
        placed = _run("FragPack", nodes, task("p1", gpus=3), task("p2", gpus=1), seed=seed, args="{}")
        assert placed["p1"] == placed["p2"] == "c"


@pytest.mark.parametrize("tie_break", [TIE_BREAK_RANDOM, TIE_BREAK_NODE_NAME])
def test_shares_pack_whatever_the_tie_rule(tie_break: str) -> None:
    """Three idle nodes tie for the first share; the second goes beside it under either rule."""
    nodes = [*gpu_node("a", 4), *gpu_node("b", 4), *gpu_node("c", 4)]
    for seed in range(4):
        placed = _run(
            "FragPack", nodes, task("p1", share=500), task("p2", share=250), seed=seed, tie_break=tie_break
        )
        assert placed["p1"] is not None and placed["p2"] == placed["p1"]


def test_with_the_default_plugins_and_claims_from_templates() -> None:
    nodes = [*gpu_node("a", 2), *gpu_node("b", 4, model="T4"), *gpu_node("c", 8, cpu="96")]
    quarter = {"deviceClassName": DRIVER, "capacity": {"requests": {"share": "250"}}}
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "quarter", "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": quarter}]}}},
    }
    container = {"name": "c", "resources": {"requests": {"cpu": "1"}, "claims": [{"name": "gpu"}]}}
    from_template = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"t{i}", "namespace": "default"},
            "spec": {
                "containers": [container],
                "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "quarter"}],
            },
        }
        for i in range(3)
    ]
    pods = [*task("whole2", gpus=2), *task("cpu", cpu="4"), template, *from_template]
    placed = _run(DEFAULTS_AND_FRAG_PACK, nodes, pods, config_text=True)
    assert all(node is not None for node in placed.values()), placed
    # The three quarters share the GPU of the first: the same node.
    assert placed["t0"] == placed["t1"] == placed["t2"]


def test_every_member_of_a_pod_group_is_placed() -> None:
    gates = parse_feature_gates(["GenericWorkload=true"])
    group = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "train", "namespace": "default"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 3}}},
    }
    members = [task(f"w{i}", gpus=2) for i in range(3)]
    for docs in members:
        docs[-1]["spec"]["schedulingGroup"] = {"podGroupName": "train"}
    nodes = [*gpu_node("a", 4), *gpu_node("b", 4), *gpu_node("c", 2)]
    placed = _run("FragPack", nodes, [group], *members, gates=gates)
    assert all(placed[f"w{i}"] is not None for i in range(3)), placed
    # Packed: the second member joins the first on a node in use; three nodes would be spread.
    assert len(set(placed.values())) == 2


def test_it_schedules_a_mixed_workload_as_the_six_do() -> None:
    nodes = [*gpu_node("a", 2), *gpu_node("b", 4, model="T4"), *gpu_node("c", 8, cpu="96")]
    pods = [task("whole2", gpus=2), task("share", share=250), task("cpu", cpu="4"), task("share2", share=750)]
    assert all(node is not None for node in placements("FragPack", nodes, *pods, args=TYPICAL).values())


def _run(
    policy: str,
    *objects: list[dict[str, Any]],
    seed: int = 0,
    tie_break: str = TIE_BREAK_RANDOM,
    gates: Any = None,
    config_text: bool = False,
    args: str = TYPICAL,
) -> dict[str, str | None]:
    from gpu_share_fixtures import PROFILE

    kw = {} if gates is None else {"features": gates}
    registry = default_registry(entry_points=False, **kw)
    text = policy if config_text else PROFILE % {"policy": policy, "args": args}
    config = decode_config(text, "config.yaml", registry, **({} if gates is None else {"gates": gates}))
    loaded = LoadedObjects()
    for obj in load_documents(
        CLASS + "---\n" + yaml.safe_dump_all([d for g in objects for d in g]), "t.yaml"
    ):
        loaded.add(obj)
    report = simulate(loaded, config, registry, seed=seed, tie_break=tie_break)
    return {p.name: p.node for p in report.pods}
