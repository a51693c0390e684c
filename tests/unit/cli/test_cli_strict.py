"""A field the Kubernetes v1.37 API does not have stops every command that reads objects, with one
line; `--strict=false` makes each such problem a warning on stderr and runs on without the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubesched.cli import main
from kubesched.cli.inputs import MAX_WARNINGS

Capsys = pytest.CaptureFixture[str]

NODE = (
    "apiVersion: v1\nkind: Node\nmetadata: {name: n1, labels: {disk: hdd}}\n"
    "status: {allocatable: {cpu: '2', memory: 4Gi, pods: '10'}}\n"
)
#: On the issue's 2-CPU node this pod fits only because its two misspelt fields are dropped.
TYPO_POD = (
    "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nspec:\n"
    "  nodeSelectr: {disk: ssd}\n"
    "  containers: [{name: c, image: i, resources: {request: {cpu: '64'}}}]\n"
)
NODE_SELECTOR = 'spec.nodeSelectr: unknown field (did you mean "nodeSelector"?)'
REQUEST = 'spec.containers[0].resources.request: unknown field (did you mean "requests"?)'


@pytest.fixture
def cluster(tmp_path: Path) -> str:
    path = tmp_path / "cluster.yaml"
    path.write_text(NODE + "---\n" + TYPO_POD)
    return str(path)


@pytest.mark.parametrize(
    "argv",
    [
        ["simulate", "{cluster}"],
        ["compare", "{cluster}", "--config", "default", "--config", "default"],
        ["explain", "default/p", "--snapshot", "{cluster}"],
    ],
)
def test_a_misspelt_field_stops_the_command_with_one_line(
    argv: list[str], cluster: str, capsys: Capsys
) -> None:
    code = main([a.format(cluster=cluster) for a in argv])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.err == f"kubesched: {cluster}: document 2: {NODE_SELECTOR}\n"


def test_capacity_checks_the_shape_file_too(tmp_path: Path, capsys: Capsys) -> None:
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(NODE)
    shape = tmp_path / "pod.yaml"
    shape.write_text(TYPO_POD)
    assert main(["capacity", str(shape), str(nodes)]) == 2
    assert capsys.readouterr().err == f"kubesched: {shape}: {NODE_SELECTOR}\n"


def test_not_strict_warns_once_per_problem_and_runs_without_the_fields(cluster: str, capsys: Capsys) -> None:
    assert main(["simulate", cluster, "--strict=false", "-o", "json"]) == 0
    captured = capsys.readouterr()
    warnings = [line for line in captured.err.splitlines() if "warning" in line]
    assert warnings == [
        f"kubesched: warning: {cluster}: document 2: {NODE_SELECTOR} (ignored: --strict=false)",
        f"kubesched: warning: {cluster}: document 2: {REQUEST} (ignored: --strict=false)",
    ]
    (pod,) = json.loads(captured.out)["pods"]
    assert pod["result"] == "Scheduled"


def test_explain_f_checks_the_manifest(tmp_path: Path, capsys: Capsys) -> None:
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(NODE)
    pod = tmp_path / "pod.yaml"
    pod.write_text(TYPO_POD)
    assert main(["explain", "-f", str(pod), "--snapshot", str(nodes)]) == 2
    assert capsys.readouterr().err == f"kubesched: {pod}: {NODE_SELECTOR}\n"
    assert main(["explain", "-f", str(pod), "--snapshot", str(nodes), "--strict=false"]) == 0
    assert capsys.readouterr().err.count("(ignored: --strict=false)") == 2


def test_warnings_are_capped(tmp_path: Path, capsys: Capsys) -> None:
    path = tmp_path / "cluster.yaml"
    pods = [TYPO_POD.replace("name: p,", f"name: p{i},") for i in range(MAX_WARNINGS)]
    path.write_text("---\n".join([NODE, *pods]))
    assert main(["simulate", str(path), "--strict=false"]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert len(warnings) == MAX_WARNINGS + 1
    assert warnings[-1] == f"kubesched: warning: {MAX_WARNINGS} more problem(s) like these ignored"
