"""The six policies as plugins in a simulated scheduler over DRA GPUs with a consumable share: the
node each picks, and the GPU each hands DynamicResources through the device preference."""

from __future__ import annotations

import msgspec
import pytest
from gpu_share_fixtures import gpu_node, placements, task

from kubesched.api.resource import ResourceClaim
from kubesched.errors import FieldErrors
from kubesched.plugins.contrib.gpu_share.args import GpuSharePolicyArgs, TypicalTaskArg
from kubesched.plugins.contrib.gpu_share.plugin import FGD, BestFit
from kubesched.plugins.contrib.gpu_share.pod_shape import pod_shape
from kubesched.plugins.contrib.gpu_share.shapes import TaskShape

POLICIES = ("Random", "DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD")
# p1 300 -> GPU 0 (700 left), p2 800 -> GPU 1 (200 left); p3 150: first fit takes GPU 0, best fit GPU 1;
# p4 700 then fits only if GPU 0 still has 700.
SHARES = [task("p1", share=300), task("p2", share=800), task("p3", share=150), task("p4", share=700)]


def test_without_a_policy_the_allocator_keeps_upstreams_device_order() -> None:
    assert placements(None, gpu_node("n0", 2), *SHARES)["p4"] is None


@pytest.mark.parametrize("policy", ["BestFit", "GpuPacking", "DotProd", "GpuClustering"])
def test_best_fit_gpu_choice_leaves_room_for_the_last_share(policy: str) -> None:
    assert placements(policy, gpu_node("n0", 2), *SHARES)["p4"] == "n0"


def test_fgd_puts_a_share_where_typical_tasks_still_fit() -> None:
    args = "{typicalTasks: [{cpuMilli: 1000, gpuMilli: 500, gpuCount: 1}]}"
    # p1 leaves GPU 0 with 700. p2 (500) on GPU 0 would strand 200; FGD takes GPU 1 (700 and 500 left,
    # both usable by the typical task), so no whole GPU is left for p3. First fit keeps GPU 1 whole.
    pods = [task("p1", share=300), task("p2", share=500), task("p3", gpus=1)]
    assert placements("FGD", gpu_node("n0", 2), *pods, args=args)["p3"] is None
    assert placements(None, gpu_node("n0", 2), *pods)["p3"] == "n0"


@pytest.mark.parametrize("policy", ["BestFit", "GpuPacking", "DotProd", "GpuClustering"])
def test_packing_policies_put_the_second_share_beside_the_first(policy: str) -> None:
    nodes = [*gpu_node("a", 4), *gpu_node("b", 4), *gpu_node("c", 4)]
    placed = placements(policy, nodes, task("p1", share=500), task("p2", share=300))
    assert placed["p1"] is not None and placed["p2"] == placed["p1"]


@pytest.mark.parametrize("policy", POLICIES)
def test_every_policy_schedules_a_mixed_workload(policy: str) -> None:
    nodes = [*gpu_node("a", 2), *gpu_node("b", 4, model="T4"), *gpu_node("c", 8, cpu="96")]
    pods = [
        task("whole2", gpus=2),
        task("share", share=250),
        task("cpu", cpu="4"),
        task("whole1", gpus=1),
        task("share2", share=750),
    ]
    args = "{seed: 3, typicalTasks: [{cpuMilli: 1000, gpuMilli: 250, gpuCount: 1}, {cpuMilli: 4000}]}"
    placed = placements(policy, nodes, *pods, args=args)
    assert all(node is not None for node in placed.values()), placed


def test_random_repeats_itself_for_a_seed() -> None:
    nodes = [*gpu_node("a", 2), *gpu_node("b", 2), *gpu_node("c", 2), *gpu_node("d", 2)]
    pods = [task(f"p{i}", share=100 * (i + 1)) for i in range(6)]
    first = placements("Random", nodes, *pods, args="{seed: 5}")
    assert placements("Random", nodes, *pods, args="{seed: 5}") == first
    assert len(set(first.values())) > 1


def test_pod_shape_reads_the_claims() -> None:
    def claim(name: str, request: dict[str, object]) -> ResourceClaim:
        return msgspec.convert(
            {
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": request}]}},
            },
            ResourceClaim,
        )

    from kubesched.api.objects import Pod

    def pod(claim_name: str | None) -> Pod:
        spec: dict[str, object] = {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "2500m"}}}],
        }
        if claim_name:
            spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim_name}]
        return msgspec.convert({"metadata": {"name": "p", "namespace": "default"}, "spec": spec}, Pod)

    driver = "gpu.kubesched.io"
    claims = {
        "default/share": claim(
            "share", {"deviceClassName": driver, "capacity": {"requests": {"share": "460"}}}
        ),
        "default/two": claim("two", {"deviceClassName": driver, "count": 2}),
        "default/other": claim("other", {"deviceClassName": "nic.example.com"}),
        "default/many": claim(
            "many", {"deviceClassName": driver, "count": 2, "capacity": {"requests": {"share": "100"}}}
        ),
    }

    def shape(name: str | None) -> TaskShape | None:
        return pod_shape(pod(name), claims, driver, "share")

    assert shape("share") == TaskShape(2500, 460, 1)
    assert shape("two") == TaskShape(2500, 1000, 2)
    assert shape("other") == TaskShape(2500, 0, 0)
    assert shape(None) == TaskShape(2500, 0, 0)
    assert shape("many") is None  # a share of several GPUs is not a task the paper models
    assert shape("missing") is None


def test_args_are_checked_and_weights_normalised() -> None:
    with pytest.raises(FieldErrors):
        BestFit(GpuSharePolicyArgs(driver=""))
    with pytest.raises(FieldErrors):
        FGD(GpuSharePolicyArgs(typical_tasks=[TypicalTaskArg(cpu_milli=1, gpu_milli=300, gpu_count=2)]))
    errors = GpuSharePolicyArgs(typical_tasks=[TypicalTaskArg(weight=0)]).validate()
    assert [e.path for e in errors] == ["typicalTasks[0].weight"]
    args = GpuSharePolicyArgs(
        typical_tasks=[TypicalTaskArg(cpu_milli=1000, gpu_milli=500, gpu_count=1, weight=3), TypicalTaskArg()]
    )
    assert FGD(args).typical.freqs.tolist() == [0.75, 0.25]


def test_fgd_chooses_the_gpu_with_the_cpu_free_before_the_pod() -> None:
    args = "{typicalTasks: [{cpuMilli: 4000, gpuMilli: 500, gpuCount: 1}]}"
    # p1 leaves GPU 0 with 700 and 8 cores. p2 (500, 4 cores) leaves 4 cores, enough for a typical
    # task: on GPU 0 it would strand 200, on GPU 1 nothing, so FGD takes GPU 1 and no whole GPU is
    # left for p3. By Reserve p2 is assumed; counting its CPU twice would see no room for a typical
    # task, score both GPUs alike and take GPU 0.
    node = gpu_node("n0", 2, cpu="9")
    pods = [task("p1", share=300), task("p2", cpu="4", share=500), task("p3", gpus=1)]
    assert placements("FGD", node, *pods, args=args)["p3"] is None
