"""Answers are about the cluster the user named: `capacity` and `compare` without PATHs refuse
(unless `--demo` asks for the bundled demo), bare `simulate` says it uses the demo, and
`simulate --fail-on-unschedulable` ends with exit code 3 when a pod was not placed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.unit.simulate.simulate_helpers import node, pod, run_cli, write_yaml

from kubesched.cli.inputs import DEMO_DIR
from kubesched.cli.simulate import EXIT_UNSCHEDULABLE

NO_CLUSTER = (
    "kubesched: no cluster given: pass PATHs of objects, --kubeconfig (or --context, --in-cluster) for a "
    "live cluster, or --demo for the bundled demo cluster\n"
)


@pytest.fixture
def shape(tmp_path: Path) -> Path:
    return write_yaml(tmp_path / "shape.yaml", pod("small", requests={"cpu": "1"}))


@pytest.fixture
def cluster(tmp_path: Path) -> Path:
    return write_yaml(tmp_path / "cluster.yaml", node("n1", cpu="2"))


def test_capacity_without_a_cluster_is_an_error(shape: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(capsys, "capacity", str(shape)) == (2, "", NO_CLUSTER)


def test_compare_without_a_cluster_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(capsys, "compare", "--config", "default", "--config", "default") == (2, "", NO_CLUSTER)


def test_the_demo_and_paths_together_are_an_error(
    shape: Path, cluster: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, "capacity", str(shape), str(cluster), "--demo")
    assert (code, out, err) == (2, "", "kubesched: --demo: give PATHs of objects or --demo, not both\n")


def test_capacity_answers_about_the_demo_when_asked_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    huge = write_yaml(tmp_path / "huge.yaml", pod("huge", requests={"cpu": "1000"}))
    code, out, err = run_cli(capsys, "capacity", str(huge), "--demo", "-o", "json")
    assert code == 0 and json.loads(out)["nodes"] == 60  # the demo's nodes
    assert err == f"kubesched: note: no PATH given: using the bundled demo cluster ({DEMO_DIR / 'cluster'})\n"


def test_bare_simulate_says_it_uses_the_demo(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "simulate", "--no-nodes", "--pods", "scheduled", "-o", "json")
    assert code == 0
    assert err == f"kubesched: note: no PATH given: using the bundled demo cluster ({DEMO_DIR / 'cluster'})\n"


def test_fail_on_unschedulable_exits_3_after_the_report(
    tmp_path: Path, cluster: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pods = write_yaml(
        tmp_path / "pods.yaml", pod("fits", requests={"cpu": "1"}), pod("too-big", requests={"cpu": "8"})
    )
    code, out, err = run_cli(capsys, "simulate", str(cluster), str(pods), "--fail-on-unschedulable")
    assert code == EXIT_UNSCHEDULABLE == 3
    assert "1 unschedulable" in out  # the report is printed first
    assert err == "kubesched: 1 pod(s) not scheduled (--fail-on-unschedulable)\n"
    # without the flag, or when every pod is placed, the exit code stays 0
    assert run_cli(capsys, "simulate", str(cluster), str(pods))[0] == 0
    small = write_yaml(tmp_path / "small.yaml", pod("fits", requests={"cpu": "1"}))
    assert run_cli(capsys, "simulate", str(cluster), str(small), "--fail-on-unschedulable")[0] == 0


def test_a_live_cluster_is_a_cluster_given_but_not_with_paths_or_the_demo(
    shape: Path, cluster: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no-such-kubeconfig"
    # capacity accepts --kubeconfig as the cluster: it gets as far as reading the kubeconfig
    code, out, err = run_cli(capsys, "capacity", str(shape), "--kubeconfig", str(missing))
    assert (code, out) == (2, "")
    assert err == f"kubesched: {missing}: kubeconfig not found (pass --kubeconfig, or run in a cluster)\n"
    both = "kubesched: give PATHs of objects or a cluster (--kubeconfig, --context, --in-cluster), not both\n"
    for argv in (
        ("simulate", str(cluster), "--kubeconfig", str(missing)),
        ("capacity", str(shape), str(cluster), "--context", "prod"),
        ("compare", "--config", "default", "--config", "default", str(cluster), "--kubeconfig", "k"),
    ):
        assert run_cli(capsys, *argv) == (2, "", both), argv
    code, _, err = run_cli(capsys, "capacity", str(shape), "--demo", "--kubeconfig", str(missing))
    assert (code, err) == (2, "kubesched: --demo: give a live cluster or --demo, not both\n")


def test_in_cluster_outside_a_cluster_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    code, _, err = run_cli(capsys, "simulate", "--in-cluster")
    assert (code, err) == (
        2,
        "kubesched: --in-cluster: not running in a cluster (KUBERNETES_SERVICE_HOST is not set)\n",
    )
