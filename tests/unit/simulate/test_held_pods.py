"""Every pod counted: pending pods whose schedulerName names no profile are held by another
scheduler. capacity and compare name them with their requests and say the free-room figures leave
them out; a KubeSchedulerConfiguration among the input files is named, not skipped in silence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.unit.simulate.simulate_helpers import Obj, node, pod, run_cli, write_yaml

GPU = "nvidia.com/gpu"


def gpu_pod(name: str, gpus: str, *, limits_only: bool = False) -> Obj:
    p = pod(name, requests={"cpu": "1"}, schedulerName="gpu-scheduler")
    p["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}, "limits": {GPU: gpus}}
    if not limits_only:
        p["spec"]["containers"][0]["resources"]["requests"][GPU] = gpus
    return p


@pytest.fixture
def cluster(tmp_path: Path) -> Path:
    """One 8-GPU node; two pending pods of a `gpu-scheduler` no profile here is named after."""
    return write_yaml(
        tmp_path / "cluster" / "cluster.yaml",
        node("g", cpu="16", memory="64Gi", extra={GPU: "8"}),
        gpu_pod("train-0", "4"),
        gpu_pod("train-1", "2", limits_only=True),  # requests its limit, as the API server defaults it
    )


def test_capacity_names_the_pods_another_scheduler_holds(
    tmp_path: Path, cluster: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shape = write_yaml(tmp_path / "shape.yaml", pod("one-gpu", requests={"cpu": "1", GPU: "1"}))
    code, out, err = run_cli(capsys, "capacity", str(shape), str(cluster), "-o", "json")
    assert (code, err) == (0, "")
    report = json.loads(out)
    assert report["shapes"][0]["fits"] == 8  # free room does not keep the held pods' 6 GPUs
    assert report["heldByAnotherScheduler"] == {
        "pods": 2,
        "schedulerNames": {"gpu-scheduler": 2},
        "requests": {"cpu": "2", GPU: "6"},
    }
    code, out, _ = run_cli(capsys, "capacity", str(shape), str(cluster))
    text = " ".join(out.split())
    assert "2 pending pod(s) held by another scheduler (gpu-scheduler (2); no profile of that name)" in text
    assert f"requesting cpu=2 {GPU}=6: the free-room figures do not keep room for them" in text


def test_capacity_names_nothing_when_every_pod_has_a_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = write_yaml(tmp_path / "c.yaml", node("n"), pod("p", requests={"cpu": "1"}))
    shape = write_yaml(tmp_path / "shape.yaml", pod("s", requests={"cpu": "1"}))
    code, out, _ = run_cli(capsys, "capacity", str(shape), str(cluster))
    assert code == 0 and "held by another scheduler" not in out
    code, out, _ = run_cli(capsys, "capacity", str(shape), str(cluster), "-o", "json")
    assert json.loads(out)["heldByAnotherScheduler"] == {"pods": 0, "schedulerNames": {}, "requests": {}}


def test_compare_names_the_held_pods_and_their_requests(
    cluster: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["compare", str(cluster), "--config", "default", "--config", "default"]
    code, out, err = run_cli(capsys, *argv, "-o", "json")
    assert (code, err) == (0, "")
    for run in json.loads(out)["runs"]:
        assert run["ignored"] == 2
        assert run["heldByAnotherScheduler"]["requests"] == {"cpu": "2", GPU: "6"}
    code, out, _ = run_cli(capsys, *argv)
    lines = [" ".join(line.replace("│", " ").split()) for line in out.splitlines()]
    assert "pods held by another scheduler (no profile of that name) 2 2" in lines
    assert f"their {GPU} requests (not in the free figures) 6 6" in lines


def test_a_configuration_among_the_input_files_is_named(
    tmp_path: Path, cluster: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = cluster.parent / "scheduler.yaml"
    config.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n")
    code, _, err = run_cli(capsys, "simulate", str(cluster.parent), "-o", "json")
    assert code == 0
    assert err == (
        f"kubesched: note: not using the KubeSchedulerConfiguration in {config}: configurations come "
        "only from --config (this run uses upstream's default configuration)\n"
    )
    shape = write_yaml(tmp_path / "shape.yaml", pod("s", requests={"cpu": "1"}))
    code, _, err = run_cli(capsys, "capacity", str(shape), str(cluster.parent))
    assert code == 0 and f"not using the KubeSchedulerConfiguration in {config}" in err


def test_a_configuration_among_the_inputs_given_with_config_needs_no_note(
    cluster: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = cluster.parent / "scheduler.yaml"
    config.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n")
    code, _, err = run_cli(capsys, "simulate", str(cluster.parent), "--config", str(config), "-o", "json")
    assert (code, err) == (0, "")


def test_the_compare_page_draws_the_held_pods(cluster: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(
        capsys, "compare", str(cluster), "--config", "default", "--config", "default", "-o", "html"
    )
    assert (code, err) == (0, "") and "pods held by another scheduler" in out
