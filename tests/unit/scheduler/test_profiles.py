"""Config to profiles: extenders' ignoredByScheduler resources are left to the extender."""

from __future__ import annotations

from kubesched.api.loader import LoadedObjects
from kubesched.config import decode_config
from kubesched.plugins import default_registry
from kubesched.scheduler.profiles import profiles_from_config
from kubesched.simulate.snapshot.run import simulate
from kubesched.testing.builders import make_node, make_pod

CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args: {{ignoredResources: [example.com/already]}}
extenders:
- urlPrefix: http://127.0.0.1:1/unused
  managedResources:
  - name: example.com/foo
    ignoredByScheduler: {ignored}
"""


def run(ignored: str) -> str:
    registry = default_registry()
    cfg = decode_config(CONFIG.format(ignored=ignored), "sched.yaml", registry)
    objects = LoadedObjects(
        nodes=[make_node("n1")], pods=[make_pod("p", cpu="100m", extra={"example.com/foo": 2})]
    )
    report = simulate(objects, cfg, registry)
    return f"{report.pods[0].result}: {report.pods[0].message}"


def test_ignored_by_scheduler_joins_node_resources_fit_ignored_resources() -> None:
    registry = default_registry()
    cfg = decode_config(CONFIG.format(ignored="true"), "sched.yaml", registry)
    fit = profiles_from_config(cfg, registry)[0].plugin_args["NodeResourcesFit"]
    assert fit.ignored_resources == ["example.com/already", "example.com/foo"]


def test_the_scheduler_skips_the_fit_check_only_for_ignored_managed_resources() -> None:
    assert run("true") == "Scheduled: None"
    assert run("false").startswith("Unschedulable: 0/1 nodes are available: 1 Insufficient example.com/foo.")
