"""Upstream's defaults for KubeSchedulerConfiguration v1, applied to a decoded config.

One deliberate deviation: `leaderElection.resourceName` defaults to `kubesched`, not
`kube-scheduler`. kubesched usually runs next to the stock kube-scheduler as a secondary scheduler;
sharing its Lease would make the two take turns being leader instead of both scheduling their own pods.
"""

from __future__ import annotations

import contextlib
import copy
from typing import Any

from kubesched.config.args import decode_plugin_args, default_args, encode_args, lookup_plugin
from kubesched.config.features import DEFAULT_GATES, FeatureGates
from kubesched.config.merge import merge_plugins
from kubesched.config.plugin_catalog import PluginCatalog
from kubesched.config.types import (
    API_VERSION,
    DEFAULT_SCHEDULER_NAME,
    KIND,
    PLUGIN_SET_KEYS,
    ClientConnectionConfiguration,
    KubeSchedulerConfiguration,
    KubeSchedulerProfile,
    LeaderElectionConfiguration,
    Plugin,
    PluginConfig,
    Plugins,
    PluginSet,
)
from kubesched.errors import InputError

__all__ = [
    "DEFAULT_CLIENT_BURST",
    "DEFAULT_CLIENT_QPS",
    "DEFAULT_EXTENDER_HTTP_TIMEOUT",
    "DEFAULT_LEASE_NAME",
    "UPSTREAM_DEFAULT_PLUGINS",
    "apply_defaults",
    "default_config",
    "default_plugins",
    "upstream_default_plugins",
]

#: clientConnection.qps and .burst when the file gives none (kube-scheduler's).
DEFAULT_CLIENT_QPS = 50.0
DEFAULT_CLIENT_BURST = 100

#: Upstream's default plugins before its feature gates add theirs, all enabled through multiPoint, in
#: order, with their Score weights (None: no weight configured; the plugin does not score, or scores
#: with weight 1).
_UNGATED_DEFAULT_PLUGINS: tuple[tuple[str, int | None], ...] = (
    ("SchedulingGates", None),
    ("PrioritySort", None),
    ("NodeName", None),
    ("NodeUnschedulable", None),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", None),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", None),
    ("NodeVolumeLimits", None),
    ("VolumeBinding", None),
    ("VolumeZone", None),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", None),
)


def upstream_default_plugins(gates: FeatureGates = DEFAULT_GATES) -> tuple[tuple[str, int | None], ...]:
    """Upstream's default multiPoint plugins and weights under `gates`, as the binary's
    `--write-config-to` writes them: each gate adds its plugins where upstream puts them."""
    plugins = list(_UNGATED_DEFAULT_PLUGINS)
    if gates.enabled("NodeDeclaredFeatures"):
        plugins.append(("NodeDeclaredFeatures", None))
    if gates.enabled("InPlacePodVerticalScalingSchedulerPreemption"):
        # Before NodeResourcesFit, so a node where preemption is off fails here first.
        plugins.insert(_index(plugins, "NodeResourcesFit"), ("DeferredPodScheduling", None))
    if gates.enabled("DynamicResourceAllocation"):
        # Before DefaultPreemption: freeing an idle claim beats evicting a pod.
        plugins.insert(_index(plugins, "DefaultPreemption"), ("DynamicResources", 2))
    if gates.enabled("GenericWorkload"):
        plugins.append(("GangScheduling", None))
    if gates.enabled("TopologyAwareWorkloadScheduling"):
        plugins += [("TopologyPlacementGenerator", None), ("PodGroupPodsCount", 1)]
    return tuple(plugins)


def _index(plugins: list[tuple[str, int | None]], name: str) -> int:
    return next((i for i, (n, _) in enumerate(plugins) if n == name), len(plugins))


#: Plugin args fields upstream defaults only with a gate on: with it off the field stays unset, a
#: field written is refused (upstream's messages), and the plugin runs as the gate says.
GATED_ARGS: dict[str, dict[str, tuple[str, str]]] = {
    "VolumeBinding": {
        "shape": (
            "StorageCapacityScoring",
            "unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring",
        ),
    },
    "DynamicResources": {
        "filterTimeout": ("DRASchedulerFilterTimeout", "DRASchedulingFilterTimeout feature gate is disabled"),
    },
}

#: The default plugins of a binary run without `--feature-gates`.
UPSTREAM_DEFAULT_PLUGINS = upstream_default_plugins()
DEFAULT_LEASE_NAME = "kubesched"
DEFAULT_EXTENDER_HTTP_TIMEOUT = "5s"


def default_plugins(registry: PluginCatalog, gates: FeatureGates = DEFAULT_GATES) -> PluginSet:
    """The default multiPoint plugin set of a profile: upstream's list under `gates`, restricted to
    `registry`.

    Upstream defaults that kubesched does not ship yet (they arrive in a later release) are left
    out instead of failing every profile; a config that names one explicitly gets an error.
    """
    known = [
        Plugin(name=name, weight=w)
        for name, w in upstream_default_plugins(gates)
        if lookup_plugin(registry, name) is not None
    ]
    return PluginSet(enabled=known)


def default_config(
    registry: PluginCatalog, gates: FeatureGates = DEFAULT_GATES
) -> KubeSchedulerConfiguration:
    """The configuration kube-scheduler runs with when given no file: everything defaulted."""
    return apply_defaults(KubeSchedulerConfiguration(api_version=API_VERSION, kind=KIND), registry, gates)


def apply_defaults(
    cfg: KubeSchedulerConfiguration, registry: PluginCatalog, gates: FeatureGates = DEFAULT_GATES
) -> KubeSchedulerConfiguration:
    """A copy of `cfg` with every unset field defaulted under `gates` (idempotent: defaulting twice
    changes nothing).

    Works on invalid configs too (validation reports their problems): unknown plugins are kept
    as written and args that do not decode are left raw.
    """
    out = copy.deepcopy(cfg)
    _default_top_level(out)
    if not out.profiles:
        out.profiles = [KubeSchedulerProfile()]
    if len(out.profiles) == 1 and out.profiles[0].scheduler_name is None:
        out.profiles[0].scheduler_name = DEFAULT_SCHEDULER_NAME
    defaults = Plugins(multi_point=default_plugins(registry, gates))
    for profile in out.profiles:
        profile.plugins = merge_plugins(defaults, profile.plugins)
        profile.plugin_config = _default_plugin_config(profile, registry, gates)
    for ext in out.extenders:
        if ext.http_timeout is None:
            ext.http_timeout = DEFAULT_EXTENDER_HTTP_TIMEOUT
        if ext.weight is None and ext.prioritize_verb:
            ext.weight = 1
        ext.enable_https = bool(ext.enable_https)
        ext.node_cache_capable = bool(ext.node_cache_capable)
        ext.ignorable = bool(ext.ignorable)
        for res in ext.managed_resources:
            res.ignored_by_scheduler = bool(res.ignored_by_scheduler)
    return out


def _default_top_level(cfg: KubeSchedulerConfiguration) -> None:
    if cfg.parallelism is None:
        cfg.parallelism = 16
    le = cfg.leader_election = cfg.leader_election or LeaderElectionConfiguration()
    le.leader_elect = True if le.leader_elect is None else le.leader_elect
    le.lease_duration = le.lease_duration or "15s"
    le.renew_deadline = le.renew_deadline or "10s"
    le.retry_period = le.retry_period or "2s"
    le.resource_lock = le.resource_lock or "leases"
    le.resource_name = le.resource_name or DEFAULT_LEASE_NAME
    le.resource_namespace = le.resource_namespace or "kube-system"
    cc = cfg.client_connection = cfg.client_connection or ClientConnectionConfiguration()
    cc.kubeconfig = cc.kubeconfig or ""
    cc.accept_content_types = cc.accept_content_types or ""
    cc.content_type = cc.content_type or "application/vnd.kubernetes.protobuf"
    cc.qps = DEFAULT_CLIENT_QPS if cc.qps is None else cc.qps
    cc.burst = DEFAULT_CLIENT_BURST if cc.burst is None else cc.burst
    if cfg.enable_profiling is None:
        cfg.enable_profiling = True
    if cfg.enable_contention_profiling is None:
        # Upstream turns contention profiling on only along with profiling.
        cfg.enable_contention_profiling = cfg.enable_profiling
    if cfg.percentage_of_nodes_to_score is None:
        cfg.percentage_of_nodes_to_score = 0  # adaptive
    if cfg.pod_initial_backoff_seconds is None:
        cfg.pod_initial_backoff_seconds = 1
    if cfg.pod_max_backoff_seconds is None:
        cfg.pod_max_backoff_seconds = 10
    if cfg.delay_cache_until_active is None:
        cfg.delay_cache_until_active = False


def _default_plugin_config(
    profile: KubeSchedulerProfile, registry: PluginCatalog, gates: FeatureGates
) -> list[PluginConfig]:
    """pluginConfig with written args completed by their defaults and default args for every other
    enabled plugin that has an args type, so the effective config shows what each plugin runs with
    (without the fields whose gate is off, as upstream leaves them unset)."""
    configs: list[PluginConfig] = []
    for pc in profile.plugin_config:
        args = pc.args
        if lookup_plugin(registry, pc.name) is not None:
            with contextlib.suppress(InputError):  # validation reports it with its path
                args = encode_args(pc.name, decode_plugin_args(pc.name, registry, pc.args))
        configs.append(PluginConfig(name=pc.name, args=_ungated(pc.name, args, gates)))
    configured = {pc.name for pc in configs}
    for name in _enabled_names(profile.plugins):
        if name in configured or lookup_plugin(registry, name) is None:
            continue
        args = default_args(name, registry)
        if args is not None:
            configs.append(PluginConfig(name=name, args=_ungated(name, args, gates)))
            configured.add(name)
    return configs


def _ungated(name: str, args: Any, gates: FeatureGates) -> Any:
    """`args` without the fields of plugin `name` whose gate is off."""
    off = [field for field, (gate, _) in GATED_ARGS.get(name, {}).items() if not gates.enabled(gate)]
    if not off or not isinstance(args, dict):
        return args
    return {k: v for k, v in args.items() if k not in off}


def _enabled_names(plugins: Plugins | None) -> list[str]:
    """Plugins enabled anywhere in `plugins`, multiPoint first, each once."""
    if plugins is None:
        return []
    keys = ("multiPoint", *(k for k in PLUGIN_SET_KEYS if k != "multiPoint"))
    names = (p.name for key in keys for p in (plugins.get(key) or PluginSet()).enabled)
    return list(dict.fromkeys(names))
