"""The replay's GPU metrics: unallocated share and failed pods at every whole percent of arrived GPU
requests, over DRA devices with a consumable share and over nvidia.com/gpu counts."""

from __future__ import annotations

import json

import pytest

from kubesched.config import default_config
from kubesched.plugins import default_registry
from kubesched.simulate.replay.html import replay_figures
from kubesched.simulate.replay.model import ReplayReport
from kubesched.simulate.replay.run import replay
from kubesched.simulate.scenario import ObjectRef, Scenario, TimelineEvent, parse_scenario
from kubesched.simulate.trace.openb import scenario_for
from kubesched.simulate.trace.openb_csv import TraceNode, TraceTask
from kubesched.simulate.trace.openb_workload import arrange
from kubesched.testing.builders import make_node, make_pod


def task(name: str, num_gpu: int, gpu_milli: int) -> TraceTask:
    return TraceTask(name, 1000, 1024, num_gpu, gpu_milli, (), None)


def run(tasks: list[TraceTask], gpu_as: str = "dra", gpus: int = 4) -> ReplayReport:
    nodes = [TraceNode("n1", 64000, 262144, gpus, "T4")]
    doc = scenario_for("t", nodes, arrange(tasks, gpus * 1000), gpu_as=gpu_as).document
    registry = default_registry()
    return replay(parse_scenario(json.dumps(doc), "t.json"), default_config(registry), registry)


def test_shares_count_toward_allocation_and_a_pod_that_does_not_fit_fails() -> None:
    # 4 GPUs: 0.5 + 0.5 (one GPU, shared), 2 whole, 0.25, then 2 whole that cannot fit.
    report = run(
        [task("a", 1, 500), task("b", 1, 500), task("c", 2, 1000), task("d", 1, 250), task("e", 2, 1000)]
    )
    gpu = report.gpu
    assert gpu is not None and (gpu.source, gpu.gpus, gpu.typical_tasks) == ("dra", 4, 3)
    assert [(s.arrived_percent, s.unallocated_percent, s.failed, s.failed_gpu) for s in gpu.samples] == [
        (12, 87.5, 0, 0),
        (25, 75.0, 0, 0),
        (75, 25.0, 0, 0),
        (81, 18.75, 0, 0),
        (131, 18.75, 1, 1),
    ]
    # At the end GPU 0 holds a and b, GPUs 1-2 c, GPU 3 d (750 left). Typical tasks: a half GPU
    # (2 of 5 tasks), two whole GPUs (2 of 5), a quarter (1 of 5). Only the two-GPU task cannot
    # use the 750 left: 0.4 * 750 = 300 of 4000, 7.5 %.
    assert gpu.samples[-1].fragmented_percent == 7.5 == gpu.fragmented_percent
    assert all(s.fragmented_percent <= s.unallocated_percent for s in gpu.samples)
    assert (gpu.arrived_percent, gpu.unallocated_percent) == (131.25, 18.75)


def test_observations_at_one_percent_are_averaged() -> None:
    # 100 GPUs: each 0.1-GPU arrival moves the arrived share by 0.1 %, so ten fall in each percent.
    report = run([task(f"p{i}", 1, 100) for i in range(30)], gpus=100)
    gpu = report.gpu
    assert gpu is not None
    first = gpu.samples[0]
    # arrivals 1-5 round to 0 % (0.1 .. 0.5 rounds to 0, Python rounds half to even)
    assert first.arrived_percent == 0
    assert first.unallocated_percent == pytest.approx(round(100 - sum(0.1 * k for k in range(1, 6)) / 5, 2))
    assert [s.arrived_percent for s in gpu.samples] == [0, 1, 2, 3]


def test_extended_gpus_round_a_share_up_to_a_whole_gpu() -> None:
    report = run(
        [task("a", 1, 500), task("b", 1, 500), task("c", 2, 1000), task("d", 1, 250)], gpu_as="extended"
    )
    gpu = report.gpu
    assert gpu is not None and gpu.source == "extended"
    last = gpu.samples[-1]
    assert (last.arrived_percent, last.unallocated_percent, last.fragmented_percent) == (125, 0.0, 0.0)
    assert (last.failed, last.failed_gpu) == (1, 1)


def test_a_cluster_without_gpus_has_no_gpu_section_and_one_with_them_a_figure() -> None:
    node, pod = make_node("n1", cpu="2"), make_pod("p", cpu="1")
    events = [
        TimelineEvent(0, "create", ObjectRef("Node", "n1"), obj=node),
        TimelineEvent(1, "create", ObjectRef("Pod", "p", "default"), obj=pod),
    ]
    registry = default_registry()
    plain = replay(Scenario("t", events), default_config(registry), registry)
    assert plain.gpu is None
    assert "chart-gpu" not in [f["id"] for f in replay_figures(plain)]
    with_gpus = run([task("a", 1, 500)])
    assert "chart-gpu" in [f["id"] for f in replay_figures(with_gpus)]
