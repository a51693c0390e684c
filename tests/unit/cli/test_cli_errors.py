"""Bad input to the `kubesched` command: one line on stderr naming the file and field, exit code 2.

Most cases run `kubesched.cli.main()` in-process; a few run `python -m kubesched.cli` in a
subprocess to prove that no traceback ever reaches the terminal.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kubesched.cli import main

Capsys = pytest.CaptureFixture[str]

CONFIG_HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
NODE = (
    "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n"
    "status: {allocatable: {cpu: '2', memory: 4Gi, pods: '10'}}\n"
)
POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: i}]\n"
DEFAULT_PLUGINS = (
    "SchedulingGates",
    "PrioritySort",
    "NodeName",
    "NodeUnschedulable",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "NodeResourcesBalancedAllocation",
    "ImageLocality",
    "DefaultBinder",
)


def write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def config(tmp_path: Path, body: str) -> str:
    return write(tmp_path / "sched.yaml", CONFIG_HEADER + body)


def cluster(tmp_path: Path) -> str:
    return write(tmp_path / "cluster.yaml", NODE + "---\n" + POD)


def fails(capsys: Capsys, *argv: str) -> str:
    """Run `kubesched ARGV`; it must exit 2 with one line `kubesched: ...` on stderr. That line."""
    code = main(list(argv))
    captured = capsys.readouterr()
    assert code == 2, captured
    assert captured.out == ""
    assert "Traceback" not in captured.err
    assert captured.err.endswith("\n") and captured.err.count("\n") == 1, captured.err
    line = captured.err.removesuffix("\n")
    assert line.startswith("kubesched: "), line
    return line


# --------------------------------------------------------------------------- object files


def test_malformed_yaml_names_line_and_column(tmp_path: Path, capsys: Capsys) -> None:
    path = write(
        tmp_path / "pods.yaml", "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: a\n   - name: b\n"
    )
    assert fails(capsys, "simulate", path) == (
        f"kubesched: {path}: line 6, column 4: invalid YAML: did not find expected key"
    )


def test_malformed_json_names_line_and_column(tmp_path: Path, capsys: Capsys) -> None:
    path = write(
        tmp_path / "pods.json", '{"apiVersion": "v1", "kind": "Pod",\n "metadata": {"name": "x"},, }\n'
    )
    assert fails(capsys, "simulate", path) == (
        f"kubesched: {path}: line 2, column 28: invalid JSON: object keys must be strings"
    )


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers: [{name: 5, image: i}]\n",
            "spec.containers[0].name: expected str, got int",
        ),
        (
            NODE + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers: [{name: 5}]\n",
            "document 2: spec.containers[0].name: expected str, got int",
        ),
        (
            "apiVersion: v1\nkind: NodeList\nitems:\n- metadata: {name: a}\n- metadata: {name: b}\n"
            "  status: {capacity: 5}\n",
            "items[1].status.capacity: expected object, got int",
        ),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n"
            "  - {name: c, image: i, ports: [{containerPort: http}]}\n",
            "spec.containers[0].ports[0].containerPort: expected int, got str",
        ),
        (
            "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s}\nspec:\n  driver: d\n"
            "  nodeName: n\n  pool: {name: p, generation: 1, sliceCount: 1}\n",
            'spec.pool.sliceCount: unknown field (did you mean "resourceSliceCount"?)',
        ),
        ("- a\n- b\n", "expected an object with a kind, got array"),
        ("metadata: {name: x}\n", "missing kind"),
    ],
)
def test_object_of_the_wrong_shape_names_the_field(
    tmp_path: Path, capsys: Capsys, text: str, where: str
) -> None:
    path = write(tmp_path / "objects.yaml", text)
    assert fails(capsys, "simulate", path) == f"kubesched: {path}: {where}"


def test_bad_file_inside_a_directory_is_named(tmp_path: Path, capsys: Capsys) -> None:
    write(tmp_path / "a-nodes.yaml", NODE)
    (tmp_path / "sub").mkdir()
    bad = write(tmp_path / "sub" / "b-pods.yaml", "kind: Pod\nmetadata: {name: x}\nspec: [1]\n")
    assert fails(capsys, "simulate", str(tmp_path)) == f"kubesched: {bad}: spec: expected object, got array"


def test_missing_object_file(tmp_path: Path, capsys: Capsys) -> None:
    path = str(tmp_path / "missing.yaml")
    assert fails(capsys, "simulate", path) == f"kubesched: {path}: no such file or directory"


def test_invalid_node_quantity_names_the_file_and_field(tmp_path: Path, capsys: Capsys) -> None:
    path = write(tmp_path / "nodes.yaml", NODE.replace("cpu: '2'", "cpu: two"))
    line = fails(capsys, "simulate", path)
    field = line.removeprefix(f"kubesched: {path}: status.allocatable")
    # Either spelling of the map key names the field.
    assert field in ('[cpu]: invalid quantity "two"', '.cpu: invalid quantity "two"'), line


# --------------------------------------------------------------------------- configuration


@pytest.mark.parametrize(
    ("body", "where"),
    [
        (
            "profiles:\n- plugins:\n    filter:\n      enabled: [{name: NodeFilterLabl}]\n",
            'profiles[0].plugins.filter.enabled[0].name: unknown plugin "NodeFilterLabl"'
            ' (did you mean "NodeFilterLabel"?)',
        ),
        (
            "profiles:\n- plugins:\n    score:\n      enabled: [{name: ImageLocality, weight: -1}]\n",
            "profiles[0].plugins.score.enabled[0].weight: must be positive",
        ),
        (
            "profiles:\n- schedulerName: a\n- schedulerName: b\n  plugins:\n    score:\n"
            "      enabled: [{name: NodeAffinity, weight: -5}]\n",
            "profiles[1].plugins.score.enabled[0].weight: must be positive",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n"
            "        resources: [{name: cpu, weight: 101}]\n",
            "profiles[0].pluginConfig[0].args.scoringStrategy.resources[0].weight: "
            "must be in the range [1, 100]",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n"
            "        type: Fancy\n",
            'profiles[0].pluginConfig[0].args.scoringStrategy.type: unsupported value "Fancy": '
            'supported values: "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"',
        ),
        (
            "leaderElection:\n  leaseDuration: 15 parsecs\n",
            'leaderElection.leaseDuration: invalid duration "15 parsecs": '
            "expected a number and a unit (ns, us, ms, s, m, h)",
        ),
        ("parallelizm: 4\n", 'parallelizm: unknown field (did you mean "parallelism"?)'),
        ("podInitialBackoffSeconds: 0\n", "podInitialBackoffSeconds: must be greater than 0"),
    ],
)
def test_bad_config_names_the_field(tmp_path: Path, capsys: Capsys, body: str, where: str) -> None:
    path = config(tmp_path, body)
    expected = f"kubesched: {path}: {where}"
    assert fails(capsys, "simulate", cluster(tmp_path), "--config", path) == expected
    assert fails(capsys, "config", "validate", path) == expected
    assert fails(capsys, "config", "defaults", path) == expected


def test_plugin_args_of_the_wrong_type(tmp_path: Path, capsys: Capsys) -> None:
    """No quantity lives in a KubeSchedulerConfiguration; a number given as text is the nearest case."""
    path = config(
        tmp_path,
        "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n"
        "        resources: [{name: cpu, weight: lots}]\n",
    )
    line = fails(capsys, "simulate", cluster(tmp_path), "--config", path)
    prefix = f"kubesched: {path}: profiles[0].pluginConfig[0].args.scoringStrategy.resources[0].weight: "
    assert line.startswith(prefix), line
    assert "int" in line.removeprefix(prefix) and "str" in line.removeprefix(prefix)


def test_several_config_problems_on_one_line(tmp_path: Path, capsys: Capsys) -> None:
    path = config(
        tmp_path,
        "parallelism: 0\nprofiles:\n- plugins:\n    score:\n"
        "      enabled: [{name: ImageLocality, weight: -1}]\n",
    )
    line = fails(capsys, "config", "validate", path)
    assert line.startswith(f"kubesched: {path}: ")
    assert "parallelism: must be greater than 0; " in line
    assert "profiles[0].plugins.score.enabled[0].weight: must be positive" in line


def test_missing_config_file(tmp_path: Path, capsys: Capsys) -> None:
    path = str(tmp_path / "missing.yaml")
    for argv in (("simulate", cluster(tmp_path), "--config", path), ("config", "validate", path)):
        line = fails(capsys, *argv)
        assert line.startswith(f"kubesched: {path}: ")
        assert "no such file or directory" in line.lower()


def test_config_validate_exit_codes(tmp_path: Path, capsys: Capsys) -> None:
    path = config(tmp_path, "profiles:\n- schedulerName: default-scheduler\n- schedulerName: batch\n")
    assert main(["config", "validate", path]) == 0
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == (f"{path}: valid (2 profiles: default-scheduler, batch)\n", "")
    # A Pod is not a configuration.
    assert fails(capsys, "config", "validate", write(tmp_path / "pod.yaml", POD)).startswith(
        f"kubesched: {tmp_path / 'pod.yaml'}: "
    )


def test_config_defaults_is_a_valid_config_with_the_default_plugins(tmp_path: Path, capsys: Capsys) -> None:
    assert main(["config", "defaults"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    doc = yaml.safe_load(captured.out)
    assert (doc["apiVersion"], doc["kind"]) == (
        "kubescheduler.config.k8s.io/v1",
        "KubeSchedulerConfiguration",
    )
    (profile,) = doc["profiles"]
    assert profile["schedulerName"] == "default-scheduler"
    enabled = profile["plugins"]["multiPoint"]["enabled"]
    names = [p["name"] for p in enabled]
    assert set(DEFAULT_PLUGINS) <= set(names)
    # Upstream's order for the ones shipped, and upstream's score weights.
    assert [n for n in names if n in DEFAULT_PLUGINS] == list(DEFAULT_PLUGINS)
    weights = {p["name"]: p.get("weight") for p in enabled}
    assert (weights["TaintToleration"], weights["NodeAffinity"], weights["NodeResourcesFit"]) == (3, 2, 1)
    assert (weights["NodeResourcesBalancedAllocation"], weights["ImageLocality"]) == (1, 1)
    assert doc["podInitialBackoffSeconds"] == 1 and doc["podMaxBackoffSeconds"] == 10
    # The output is itself a valid configuration.
    saved = write(tmp_path / "defaults.yaml", captured.out)
    assert main(["config", "validate", saved]) == 0
    assert capsys.readouterr().out == f"{saved}: valid (1 profile: default-scheduler)\n"


def test_simulate_needs_no_path_but_rejects_a_bad_option(capsys: Capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main(["simulate", "--output", "xml"])
    assert info.value.code == 2
    assert "invalid choice: 'xml'" in capsys.readouterr().err


# --------------------------------------------------------------------------- broken plugins

BROKEN_PLUGINS = """
raise RuntimeError("boom at import")
"""
FAILING_INIT = """
class InitFails:
    name = "InitFails"

    def __init__(self, handle=None):
        raise ValueError("bad init")

    def filter(self, state, pod, node_info):
        return None
"""


def broken_plugin_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    write(tmp_path / "kubesched_broken_plugins.py", BROKEN_PLUGINS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "kubesched_broken_plugins", raising=False)
    return config(
        tmp_path,
        "profiles:\n- plugins:\n    filter:\n      enabled: [{name: 'kubesched_broken_plugins:X'}]\n",
    )


def test_plugin_module_that_raises_on_import(
    tmp_path: Path, capsys: Capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = broken_plugin_config(tmp_path, monkeypatch)
    line = fails(capsys, "config", "validate", path)
    assert line.startswith(f"kubesched: {path}: profiles[0].plugins.filter.enabled[0].name: "), line
    assert "kubesched_broken_plugins:X" in line


def test_plugin_import_failure_says_why(
    tmp_path: Path, capsys: Capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    line = fails(capsys, "config", "validate", broken_plugin_config(tmp_path, monkeypatch))
    assert "boom at import" in line


def test_plugin_whose_constructor_raises(
    tmp_path: Path, capsys: Capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "kubesched_init_fails.py", FAILING_INIT)
    monkeypatch.syspath_prepend(str(tmp_path))
    path = config(
        tmp_path,
        "profiles:\n- plugins:\n    filter:\n      enabled: [{name: 'kubesched_init_fails:InitFails'}]\n",
    )
    line = fails(capsys, "simulate", cluster(tmp_path), "--config", path)
    assert "InitFails" in line and "bad init" in line


# --------------------------------------------------------------------------- in a real process


def run_module(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubesched.cli", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("case", ["malformed-yaml", "negative-weight", "bad-node-quantity"])
def test_no_traceback_reaches_the_terminal(tmp_path: Path, case: str) -> None:
    """Errors found while loading objects, loading the config, and building the cluster."""
    if case == "malformed-yaml":
        path = write(tmp_path / "pods.yaml", "kind: Pod\nspec:\n  containers: [\n")
        argv: tuple[str, ...] = ("simulate", path)
        expected = f"kubesched: {path}: line 4, column 1: invalid YAML: "
    elif case == "negative-weight":
        path = config(
            tmp_path,
            "profiles:\n- plugins:\n    score:\n      enabled: [{name: ImageLocality, weight: -1}]\n",
        )
        argv = ("simulate", cluster(tmp_path), "--config", path)
        expected = f"kubesched: {path}: profiles[0].plugins.score.enabled[0].weight: must be positive\n"
    else:
        path = write(tmp_path / "nodes.yaml", NODE.replace("cpu: '2'", "cpu: 2x"))
        argv = ("simulate", path)
        expected = f"kubesched: {path}: status.allocatable"
    done = run_module(*argv)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(expected), done.stderr


def test_record_refuses_a_bad_duration_or_kubeconfig_before_connecting(
    tmp_path: Path, capsys: Capsys
) -> None:
    assert fails(capsys, "record", "--duration", "0s") == "kubesched: --duration: must be positive"
    missing = tmp_path / "nope.kubeconfig"
    line = fails(capsys, "record", "--duration", "1s", "--kubeconfig", str(missing))
    assert line.startswith(f"kubesched: {missing}: kubeconfig not found")
    with pytest.raises(SystemExit):
        main(["record", "--duration", "five minutes"])
    assert "invalid" in capsys.readouterr().err
