"""The default profile is v1.37.2's: `kubesched config defaults` against `kube-scheduler --write-config-to`,
without feature gates and under several gate sets.

The built upstream binary writes its effective configuration without needing a reachable API server
(the kubeconfig only has to parse). Compared: the multiPoint plugins in order with their weights, and
every plugin's args — so the next upstream change to the default profile fails here, not in a user's
cluster. Both sides are normalised the same way: a weight left unset is 0, empty lists and maps are
dropped (Go omits them, kubesched may write `[]`), and pluginConfig is keyed by plugin name.

Gate sets kubesched accepts must give the binary's profile exactly. Gate sets that change the
binary's profile (plugins its gates add, args its gates default) name gates kubesched refuses: for
those the test checks that the binary's profile does differ from the default one, that kubesched
refuses them with one line naming the gate, and that kubesched's gate-aware plugin list
(`upstream_default_plugins`) is the binary's all the same.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.config import parse_feature_gates, upstream_default_plugins
from kubesched.harness.controlplane import find_binaries

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
users: [{name: u, user: {}}]
"""


def _upstream(tmp_path: Path, gates: str = "") -> dict[str, Any]:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    out = tmp_path / "upstream.yaml"
    flags = [f"--feature-gates={gates}"] if gates else []
    proc = subprocess.run(
        [
            str(find_binaries().kube_scheduler),
            "--write-config-to",
            str(out),
            "--kubeconfig",
            str(kubeconfig),
            # its default 10259 may be taken by another test's scheduler: listen on any free port
            "--secure-port=0",
            *flags,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.is_file(), f"kube-scheduler did not write its configuration:\n{proc.stderr[-2000:]}"
    loaded: dict[str, Any] = yaml.safe_load(out.read_text())
    return loaded


def _run_ours(gates: str = "") -> subprocess.CompletedProcess[str]:
    flags = [f"--feature-gates={gates}"] if gates else []
    return subprocess.run(
        [sys.executable, "-m", "kubesched.cli", "config", "defaults", *flags],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _ours(gates: str = "") -> dict[str, Any]:
    proc = _run_ours(gates)
    assert proc.returncode == 0, proc.stderr
    loaded: dict[str, Any] = yaml.safe_load(proc.stdout)
    return loaded


def _pruned(value: Any) -> Any:
    if isinstance(value, dict):
        kept = {k: _pruned(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v not in ({}, [], None)}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


def _profile(config: dict[str, Any]) -> tuple[list[tuple[str, int]], dict[str, Any]]:
    (profile,) = config["profiles"]
    enabled = profile["plugins"]["multiPoint"]["enabled"]
    plugins = [(p["name"], int(p.get("weight") or 0)) for p in enabled]
    args = {pc["name"]: _pruned(pc["args"]) for pc in profile.get("pluginConfig", [])}
    return plugins, args


def test_default_profile_is_the_binarys(tmp_path: Path) -> None:
    upstream_plugins, upstream_args = _profile(_upstream(tmp_path))
    our_plugins, our_args = _profile(_ours())
    assert our_plugins == upstream_plugins
    assert our_args == upstream_args
    # The plugins this issue added, as the binary has them.
    assert ("DynamicResources", 2) in upstream_plugins and upstream_plugins[-1] == ("NodeDeclaredFeatures", 0)
    assert upstream_args["DynamicResources"]["filterTimeout"] == "10s"
    assert upstream_args["DynamicResources"]["bindingTimeout"] == "10m0s"


#: Gate sets kubesched accepts: gates the scheduler does not read, gates it reads that change no
#: decision, gates at their defaults, locked gates at their only value, AllAlpha/AllBeta that flip
#: nothing the scheduler reads.
ACCEPTED = [
    "MemoryQoS=false,WatchListClient=false,ClientsAllowCBOR=true",
    "ComponentFlagz=false,ComponentStatusz=false,InterPodAffinityHostnameFastPath=true",
    "SchedulerAsyncAPICalls=true,ContextualLogging=false",
    "GenericWorkload=false,SchedulerAsyncPreemption=true,StorageCapacityScoring=true",
    "NodeDeclaredFeatures=true,DynamicResourceAllocation=true,DRAPrioritizedList=true",
    "AllAlpha=false",
    "kube:WorkloadWithJob=false,kube:DRADeviceTaintRules=true",
    # followed: the args upstream defaults under them are left unset
    "StorageCapacityScoring=false",
    "DRASchedulerFilterTimeout=false",
    "StorageCapacityScoring=false,DRASchedulerFilterTimeout=false",
    "OpportunisticBatching=false",
    # followed: GangScheduling joins the default profile
    "GenericWorkload=true",
    # followed: TopologyPlacementGenerator and PodGroupPodsCount (weight 1) join it too
    "GenericWorkload=true,TopologyAwareWorkloadScheduling=true",
    # followed: group claims in DynamicResources change no plugin or arg
    "GenericWorkload=true,DRAWorkloadResourceClaims=true",
    # followed: CompositePodGroup leaves the profile as it is
    "GenericWorkload=true,TopologyAwareWorkloadScheduling=true,CompositePodGroup=true",
]

#: Gate sets under which the binary's default profile differs from its default one, and the gate
#: kubesched names when it refuses the set.
CHANGING = [
    (
        "InPlacePodVerticalScalingSchedulerPreemption=true",
        "InPlacePodVerticalScalingSchedulerPreemption=true",
    ),
    ("DRADeviceBindingConditions=false", "DRADeviceBindingConditions=false"),
]


@pytest.mark.parametrize("gates", ACCEPTED)
def test_the_default_profile_under_gates_kubesched_accepts_is_the_binarys(tmp_path: Path, gates: str) -> None:
    upstream_plugins, upstream_args = _profile(_upstream(tmp_path, gates))
    our_plugins, our_args = _profile(_ours(gates))
    assert our_plugins == upstream_plugins
    assert our_args == upstream_args


@pytest.mark.parametrize(("gates", "named"), CHANGING)
def test_gates_that_change_the_default_profile_are_refused_and_their_plugins_known(
    tmp_path: Path, gates: str, named: str
) -> None:
    default_plugins, default_args = _profile(_upstream(tmp_path))
    upstream_plugins, upstream_args = _profile(_upstream(tmp_path, gates))
    assert (upstream_plugins, upstream_args) != (default_plugins, default_args)
    ours = [(name, weight or 0) for name, weight in upstream_default_plugins(parse_feature_gates([gates]))]
    assert ours == upstream_plugins
    proc = _run_ours(gates)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"kubesched: --feature-gates: {named} changes scheduling")
    assert proc.stderr.count("\n") == 1
