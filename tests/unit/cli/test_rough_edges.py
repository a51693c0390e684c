"""What a new user hits first: empty or odd inputs, stdin, failing plugins, dead servers, busy ports.

Each test runs the command as a user would (in-process through `main`, or as a subprocess where a
server or a signal is involved) and checks the one line the user reads.
"""

from __future__ import annotations

import io
import json
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubeconfigs import kubeconfig_for

from kubesched.cli import main

Capsys = pytest.CaptureFixture[str]
REPO = Path(__file__).resolve().parents[3]

NODE = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n"
NODE += "status: {allocatable: {cpu: '4', memory: 8Gi, pods: '10'}}\n"
POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: x}]}\n"


def run(capsys: Capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --------------------------------------------------------------------------- inputs


def test_an_input_with_nothing_to_schedule_says_so(tmp_path: Path, capsys: Capsys) -> None:
    path = tmp_path / "odd.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n" + POD.replace("p}", "q}"))
    code, out, err = run(capsys, "simulate", str(path), "-o", "json")
    assert code == 0 and json.loads(out)["summary"]["pods"] == 1
    assert err.splitlines() == [
        "kubesched: note: left out 1 object(s) of kinds the scheduler does not read: ConfigMap (1)",
        "kubesched: note: the input has no nodes, so no pod can be scheduled",
    ]
    path.write_text(NODE)
    assert run(capsys, "simulate", str(path), "-o", "json")[2] == (
        "kubesched: note: the input has no pending pods (0 running), so there is nothing to schedule\n"
    )
    path.write_text(NODE + "---\n" + POD)
    assert run(capsys, "simulate", str(path), "-o", "json")[2] == ""  # nothing to say


def test_pods_of_a_pod_group_are_scheduled_one_by_one_and_the_input_says_so(
    tmp_path: Path, capsys: Capsys
) -> None:
    group = "apiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroup\nmetadata: {name: g}\n"
    group += "spec: {schedulingPolicy: {gang: {minCount: 3}}}\n"
    members = [
        POD.replace("p}", f"p{i}}}").replace("spec: {", "spec: {schedulingGroup: {podGroupName: g}, ")
        for i in range(2)
    ]
    path = tmp_path / "gang.yaml"
    path.write_text("---\n".join([NODE, group, *members]))
    code, out, err = run(capsys, "simulate", str(path), "-o", "json")
    assert code == 0
    assert [p["result"] for p in json.loads(out)["pods"]] == [
        "Scheduled",
        "Scheduled",
    ]  # minCount 3: no gang yet
    assert err == (
        "kubesched: note: 2 pending pod(s) name a PodGroup (spec.schedulingGroup): "
        "each is scheduled on its own, as kube-scheduler does with GenericWorkload off "
        "(--feature-gates=GenericWorkload=true schedules them by group)\n"
    )
    assert json.loads(out)["podGroups"] == []
    # With the gate on the gang waits for its third pod, and the report says why nothing ran.
    code, out, err = run(capsys, "simulate", str(path), "-o", "json", "--feature-gates=GenericWorkload=true")
    assert (code, err) == (0, "")
    report = json.loads(out)
    assert [p["result"] for p in report["pods"]] == ["Gated", "Gated"]
    assert report["podGroups"] == [
        {
            "namespace": "default",
            "name": "g",
            "result": "Pending",
            "minCount": 3,
            "pods": 2,
            "message": None,
            "placement": {},
            "members": ["p0", "p1"],
            "kind": "PodGroup",
            "parent": None,
        }
    ]


def test_dash_reads_stdin(monkeypatch: pytest.MonkeyPatch, capsys: Capsys) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(NODE + "---\n" + POD))
    code, out, err = run(capsys, "simulate", "-", "-o", "json")
    assert (code, err) == (0, "")
    (pod,) = json.loads(out)["pods"]
    assert (pod["name"], pod["result"], pod["node"]) == ("p", "Scheduled", "n1")
    monkeypatch.setattr("sys.stdin", io.StringIO("kind: Pod\nspec: [\n"))
    code, _, err = run(capsys, "simulate", "-")
    assert code == 2 and err.startswith("kubesched: <stdin>: line ")


# --------------------------------------------------------------------------- plugins that fail

PLUGINS = """
class Crash:
    name = "Crash"

    def filter(self, state, pod, node_info):
        if node_info.name == "n2":
            return {}["missing"]
        return None


class WrongType:
    name = "WrongType"

    def filter(self, state, pod, node_info):
        return True


class BadScore:
    name = "BadScore"

    def score(self, state, pod, node_info):
        return "high"
"""


@pytest.fixture
def failing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cluster of two nodes, a config with one profile per failing plugin, and one pod per profile."""
    (tmp_path / "failing_plugins.py").write_text(PLUGINS)
    monkeypatch.syspath_prepend(str(tmp_path))
    profiles = []
    pods = []
    for name, point in (("Crash", "filter"), ("WrongType", "filter"), ("BadScore", "score")):
        profiles.append(
            {
                "schedulerName": name.lower(),
                "plugins": {point: {"enabled": [{"name": f"failing_plugins:{name}"}]}},
            }
        )
        pods.append(yaml.safe_load(POD.replace("name: p}", f"name: {name.lower()}}}")) | {})
        pods[-1]["spec"]["schedulerName"] = name.lower()
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": profiles,
    }
    (tmp_path / "sched.yaml").write_text(yaml.safe_dump(config))
    nodes = [yaml.safe_load(NODE), yaml.safe_load(NODE.replace("n1", "n2"))]
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all([*nodes, *pods]))
    return tmp_path


def test_a_plugin_that_raises_or_returns_the_wrong_type_is_named(failing: Path, capsys: Capsys) -> None:
    code, out, err = run(
        capsys,
        "simulate",
        str(failing / "cluster.yaml"),
        "--config",
        str(failing / "sched.yaml"),
        "-o",
        "json",
    )
    assert (code, err) == (0, "")
    messages = {p["name"]: (p["result"], p["message"]) for p in json.loads(out)["pods"]}
    assert messages == {
        "crash": (
            "Error",
            'running "failing_plugins:Crash" filter plugin on node "n2": KeyError: \'missing\'',
        ),
        "wrongtype": (
            "Error",
            'running "failing_plugins:WrongType" filter plugin on node "n1": '
            "returned bool (True) from Filter; expected a Status or None",
        ),
        "badscore": (
            "Error",
            'running Score plugin "failing_plugins:BadScore" on node "n1": '
            "returned str ('high') from Score; expected an int (0-100) or (int, Status)",
        ),
    }


def test_debug_prints_the_plugins_traceback(failing: Path, capsys: Capsys) -> None:
    argv = ["simulate", str(failing / "cluster.yaml"), "--config", str(failing / "sched.yaml"), "-o", "json"]
    code, _, err = run(capsys, *argv, "--pod", "default/crash", "--debug")
    assert code == 0
    assert err.startswith('kubesched: traceback of default/crash\'s error (running "failing_plugins:Crash"')
    assert "Traceback (most recent call last):" in err
    assert re.search(r'failing_plugins\.py", line \d+, in filter\n +return \{\}\["missing"\]', err)
    assert err.rstrip().endswith("KeyError: 'missing'")


# --------------------------------------------------------------------------- servers


@pytest.fixture
def closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def run_config(tmp_path: Path) -> Path:
    path = tmp_path / "run.yaml"
    path.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "leaderElection: {leaderElect: false}\n"
    )
    return path


def test_a_dead_api_server_is_named_with_its_kubeconfig(tmp_path: Path, closed_port: int) -> None:
    kubeconfig = kubeconfig_for(tmp_path, f"https://127.0.0.1:{closed_port}")
    argv = [
        "run",
        "--config",
        str(run_config(tmp_path)),
        "--kubeconfig",
        str(kubeconfig),
        "--secure-port",
        "0",
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "kubesched.cli", *argv],
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        line = ""
        assert proc.stderr is not None
        while "cannot reach" not in line and time.monotonic() < deadline:
            line = proc.stderr.readline()
            assert line or proc.poll() is None, "kubesched run exited early"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    assert (
        f"cannot reach the API server https://127.0.0.1:{closed_port} (from kubeconfig {kubeconfig}): "
        f"GET /api/v1: [Errno 111] Connection refused; retrying in"
    ) in line
    assert proc.returncode == 0


@pytest.mark.parametrize("command", ["run", "extender"])
def test_a_busy_port_is_one_clean_line(
    tmp_path: Path, closed_port: int, busy_port: int, command: str
) -> None:
    config = str(run_config(tmp_path))
    if command == "run":
        kubeconfig = kubeconfig_for(tmp_path, f"https://127.0.0.1:{closed_port}")
        argv = ["run", "--config", config, "--kubeconfig", str(kubeconfig), "--secure-port", "0"]
        argv += ["--insecure-listen", f"127.0.0.1:{busy_port}"]
        flag = "--insecure-listen"
    else:
        argv = ["extender", "--config", config, "--listen", f"127.0.0.1:{busy_port}"]
        flag = "--listen"
    done = subprocess.run(
        [sys.executable, "-m", "kubesched.cli", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if " I " not in line and " W " not in line]
    assert errors == [
        f"kubesched: {flag}: cannot serve on 127.0.0.1:{busy_port} (address in use or not available)"
    ]


def test_extender_start_line_has_no_class_names(tmp_path: Path, busy_port: int) -> None:
    snapshot = REPO / "examples" / "node-label-filter" / "cluster.yaml"
    argv = ["extender", "--config", str(run_config(tmp_path)), "--listen", f"127.0.0.1:{busy_port}"]
    done = subprocess.run(
        [sys.executable, "-m", "kubesched.cli", *argv, "--cluster-snapshot", str(snapshot)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    start = next(line for line in done.stderr.splitlines() if "serving profile" in line)
    assert "node cache: the --cluster-snapshot files (3 nodes)" in start
    assert "ClusterState" not in done.stderr


# --------------------------------------------------------------------------- docs


def test_the_gpu_scheduler_page_example_schedules(tmp_path: Path, capsys: Capsys) -> None:
    """docs/plugins/GPUScheduler.md's config and pod, on a tainted A100 node as GPU nodes are."""
    page = (REPO / "docs" / "plugins" / "GPUScheduler.md").read_text()
    example = page[page.index("## Example") :]
    config, pod = (yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", example, re.S)[:2])
    (tmp_path / "sched.yaml").write_text(yaml.safe_dump(config))
    node = textwrap.dedent(
        """\
        apiVersion: v1
        kind: Node
        metadata:
          name: a100
          labels: {nvidia.com/gpu.memory: "81920", nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}
        spec:
          taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
        status: {allocatable: {cpu: "32", memory: 256Gi, pods: "110", nvidia.com/gpu: "8"}}
        """
    )
    (tmp_path / "cluster.yaml").write_text(node + "---\n" + yaml.safe_dump(pod))
    code, out, err = run(
        capsys,
        "simulate",
        str(tmp_path / "cluster.yaml"),
        "--config",
        str(tmp_path / "sched.yaml"),
        "-o",
        "json",
    )
    assert (code, err) == (0, "")
    (result,) = json.loads(out)["pods"]
    assert (result["name"], result["result"], result["node"]) == ("train-0", "Scheduled", "a100")
    (usage,) = json.loads(out)["nodes"]
    assert usage["requested"]["nvidia.com/gpu"] == "4"  # the limits became requests
