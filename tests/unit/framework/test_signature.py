"""Pod signatures (KEP-5598): per plugin, which pods it signs, with which fragments, and which it
refuses; per profile, which pods end up with the same signature."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api.loader import LoadedObjects
from kubesched.api.objects import Pod, Toleration
from kubesched.cluster.memory import MemoryCluster
from kubesched.config import decode_config
from kubesched.framework import signature as sig
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Status
from kubesched.plugins import default_registry
from kubesched.scheduler.clock import VirtualClock
from kubesched.scheduler.profiles import options_from_config, profiles_from_config
from kubesched.scheduler.scheduler import Scheduler
from kubesched.testing.builders import make_node, make_pod

CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: batch
  pluginConfig:
  - name: PodTopologySpread
    args: {defaultingType: List}
- schedulerName: default-scheduler
- schedulerName: with-custom
  plugins:
    multiPoint:
      enabled: [{name: NodeFilterLabel}, {name: SpotScheduler}]
"""


@pytest.fixture(scope="module")
def frameworks() -> dict[str, Framework]:
    registry = default_registry(entry_points=False)
    cfg = decode_config(CONFIG, "sched.yaml", registry)
    clock = VirtualClock()
    cluster = MemoryCluster(LoadedObjects(nodes=[make_node("n0")]), clock.now)
    scheduler = Scheduler(
        profiles_from_config(cfg, registry), registry, cluster, clock, options_from_config(cfg)
    )
    return scheduler.frameworks


def pod(**spec: Any) -> Pod:
    labels = spec.pop("labels", {"app": "a"})
    return make_pod("p", cpu="1", scheduler_name="batch", labels=labels, spec=spec or None)


NOT_SIGNED = "unsignable"
POD_AFFINITY_TERM = {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": "kubernetes.io/hostname"}
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
SPREAD = {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule"}

#: plugin -> (pod spec, the fragment keys it signs, or NOT_SIGNED)
PLUGIN_CASES: list[tuple[str, dict[str, Any], list[str] | str]] = [
    ("NodeName", {}, [sig.NODE_NAME]),
    ("NodeUnschedulable", {}, [sig.TOLERATIONS]),
    ("TaintToleration", {}, [sig.TOLERATIONS]),
    ("NodeAffinity", {}, [sig.AFFINITY, sig.NODE_SELECTOR]),
    ("NodePorts", {}, [sig.HOST_PORTS]),
    ("NodeResourcesFit", {}, [sig.REQUESTS]),
    ("NodeResourcesBalancedAllocation", {}, [sig.REQUESTS]),
    ("VolumeRestrictions", {}, [sig.VOLUMES]),
    ("NodeVolumeLimits", {}, [sig.VOLUMES]),
    ("VolumeBinding", {}, [sig.VOLUMES]),
    ("VolumeZone", {}, [sig.VOLUMES]),
    ("ImageLocality", {}, [sig.IMAGES]),
    ("NodeDeclaredFeatures", {}, [sig.REQUIRED_FEATURES]),
    ("InterPodAffinity", {}, [sig.LABELS]),
    ("InterPodAffinity", {"affinity": {"podAffinity": {REQUIRED: [POD_AFFINITY_TERM]}}}, NOT_SIGNED),
    ("InterPodAffinity",
     {"affinity": {"podAntiAffinity": {PREFERRED: [{"weight": 1, "podAffinityTerm": POD_AFFINITY_TERM}]}}},
     NOT_SIGNED),
    ("InterPodAffinity", {"affinity": {"nodeAffinity": {}}}, [sig.LABELS]),
    ("PodTopologySpread", {}, []),
    ("PodTopologySpread", {"topologySpreadConstraints": [SPREAD]}, NOT_SIGNED),
    ("DynamicResources", {}, []),
    ("DynamicResources", {"resourceClaims": [{"name": "gpu", "resourceClaimName": "c"}]}, NOT_SIGNED),
]  # fmt: skip


@pytest.mark.parametrize(("plugin", "spec", "expected"), PLUGIN_CASES)
def test_each_plugin_signs_what_it_reads(
    frameworks: dict[str, Framework], plugin: str, spec: dict[str, Any], expected: list[str] | str
) -> None:
    out = frameworks["batch"].plugins[plugin].sign_pod(pod(**spec))
    if expected == NOT_SIGNED:
        assert isinstance(out, Status) and out.is_rejected()
        assert "not signable" in out.message()
    else:
        assert [key for key, _ in out] == expected


def test_system_default_spreading_makes_every_pod_unsignable(frameworks: dict[str, Framework]) -> None:
    """kube-scheduler v1.37.2's default profile: `pods with default topology constraints are not signable`."""
    out = frameworks["default-scheduler"].plugins["PodTopologySpread"].sign_pod(pod())
    assert (
        isinstance(out, Status) and out.message() == "pods with default topology constraints are not signable"
    )
    assert frameworks["default-scheduler"].sign_pod(pod()) is None


def test_a_plugin_without_sign_pod_turns_signatures_off_for_its_profile(
    frameworks: dict[str, Framework],
) -> None:
    custom = frameworks["with-custom"]
    assert not custom.signs_pods and custom.unsigned_plugins == ["SpotScheduler"]  # NodeFilterLabel signs
    assert custom.sign_pod(pod()) is None
    assert frameworks["batch"].signs_pods and frameworks["batch"].unsigned_plugins == []


def _toleration(key: str) -> dict[str, str]:
    return {"key": key, "operator": "Exists", "effect": "NoSchedule"}


BASE: dict[str, Any] = {}
#: (what differs, spec a, spec b, same signature?)
PAIR_CASES: list[tuple[str, dict[str, Any], dict[str, Any], bool]] = [
    ("nothing", BASE, BASE, True),
    ("tolerations in another order", {"tolerations": [_toleration("a"), _toleration("b")]},
     {"tolerations": [_toleration("b"), _toleration("a")]}, True),
    ("a toleration", BASE, {"tolerations": [_toleration("a")]}, False),
    ("labels", {"labels": {"app": "a"}}, {"labels": {"app": "b"}}, False),
    ("node selector", BASE, {"nodeSelector": {"disk": "ssd"}}, False),
    ("host port", BASE,
     {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80, "hostPort": 80}]}]}, False),
    ("image", {"containers": [{"name": "c", "image": "i:1"}]},
     {"containers": [{"name": "c", "image": "i:2"}]}, False),
    ("image with and without :latest", {"containers": [{"name": "c", "image": "i"}]},
     {"containers": [{"name": "c", "image": "i:latest"}]}, True),
    ("a PVC volume", BASE, {"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "c"}}]}, False),
    ("a configMap volume", BASE, {"volumes": [{"name": "d", "configMap": {"name": "x"}}]}, True),
    # measured on v1.37.2: pods whose token / scratch volumes are named per pod still batch
    ("emptyDir and projected volumes named per pod", {"volumes": [{"name": "s-1", "emptyDir": {}}]},
     {"volumes": [{"name": "kube-api-access-x2v9q", "projected": {"sources": []}}]}, True),
    ("pod-level resources", BASE, {"resources": {"requests": {"cpu": "2"}}}, False),
    ("overhead", BASE, {"overhead": {"cpu": "100m"}}, False),
    ("a sidecar's requests", BASE, {"initContainers": [{"name": "s", "image": "i", "restartPolicy": "Always",
                                                         "resources": {"requests": {"cpu": "1"}}}]}, False),
    ("node affinity", BASE, {"affinity": {"nodeAffinity": {PREFERRED: [
        {"weight": 1, "preference": {"matchExpressions": [{"key": "k", "operator": "Exists"}]}}]}}}, False),
    ("priority (not read by filters or scores)", BASE, {"priority": 10}, True),
]  # fmt: skip


@pytest.mark.parametrize(("what", "a", "b", "same"), PAIR_CASES, ids=[c[0] for c in PAIR_CASES])
def test_pods_share_a_signature_exactly_when_no_plugin_can_tell_them_apart(
    frameworks: dict[str, Framework], what: str, a: dict[str, Any], b: dict[str, Any], same: bool
) -> None:
    fwk = frameworks["batch"]
    sa, sb = fwk.sign_pod(pod(**dict(a))), fwk.sign_pod(pod(**dict(b)))
    assert sa is not None and sb is not None
    assert (sa == sb) is same


def test_the_scheduler_name_is_part_of_the_signature(frameworks: dict[str, Framework]) -> None:
    fwk = frameworks["batch"]
    other = make_pod("p", cpu="1", scheduler_name="other", labels={"app": "a"})
    assert fwk.sign_pod(pod()) != fwk.sign_pod(other)


def test_tolerations_fragment_sorts_without_touching_the_pod() -> None:
    p = make_pod("p", tolerations=[Toleration(key="b"), Toleration(key="a")])
    key, value = sig.tolerations_fragment(p)
    assert key == sig.TOLERATIONS and [t.key for t in value] == ["a", "b"]
    assert [t.key for t in p.spec.tolerations] == ["b", "a"]
