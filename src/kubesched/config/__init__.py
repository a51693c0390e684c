"""KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1): decode, default, validate, resolve.

Typical use::

    cfg = load_config("sched.yaml", registry)                       # validated and defaulted
    for profile in cfg.profiles:
        plugins = resolve_profile_plugins(profile.plugins, registry)   # ordered, per extension point
        args = plugin_args(profile, registry)                           # decoded args by plugin name
"""

from kubesched.config.args import decode_plugin_args, default_args, encode_args, plugin_args
from kubesched.config.defaults import (
    DEFAULT_EXTENDER_HTTP_TIMEOUT,
    DEFAULT_LEASE_NAME,
    UPSTREAM_DEFAULT_PLUGINS,
    apply_defaults,
    default_config,
    default_plugins,
    upstream_default_plugins,
)
from kubesched.config.duration import format_duration, parse_duration, parse_duration_ns
from kubesched.config.features import DEFAULT_GATES, FeatureGates, parse_feature_gates
from kubesched.config.loader import (
    decode_config,
    dump_config,
    load_config,
    parse_document,
)
from kubesched.config.merge import (
    PluginRef,
    ResolvedPlugins,
    merge_plugin_set,
    merge_plugins,
    resolve_profile_plugins,
)
from kubesched.config.plugin_catalog import MAX_NODE_SCORE, MAX_TOTAL_SCORE, MIN_NODE_SCORE, PluginCatalog
from kubesched.config.types import (
    API_VERSION,
    DEFAULT_SCHEDULER_NAME,
    EXTENSION_POINTS,
    KIND,
    PLUGIN_SET_KEYS,
    ClientConnectionConfiguration,
    Extender,
    ExtenderManagedResource,
    ExtenderTLSConfig,
    KubeSchedulerConfiguration,
    KubeSchedulerProfile,
    LeaderElectionConfiguration,
    Plugin,
    PluginConfig,
    Plugins,
    PluginSet,
)
from kubesched.config.validation import is_extended_resource_name, validate

__all__ = [
    "API_VERSION",
    "DEFAULT_EXTENDER_HTTP_TIMEOUT",
    "DEFAULT_GATES",
    "DEFAULT_LEASE_NAME",
    "DEFAULT_SCHEDULER_NAME",
    "EXTENSION_POINTS",
    "KIND",
    "MAX_NODE_SCORE",
    "MAX_TOTAL_SCORE",
    "MIN_NODE_SCORE",
    "PLUGIN_SET_KEYS",
    "UPSTREAM_DEFAULT_PLUGINS",
    "ClientConnectionConfiguration",
    "Extender",
    "ExtenderManagedResource",
    "ExtenderTLSConfig",
    "FeatureGates",
    "KubeSchedulerConfiguration",
    "KubeSchedulerProfile",
    "LeaderElectionConfiguration",
    "Plugin",
    "PluginCatalog",
    "PluginConfig",
    "PluginRef",
    "PluginSet",
    "Plugins",
    "ResolvedPlugins",
    "apply_defaults",
    "decode_config",
    "decode_plugin_args",
    "default_args",
    "default_config",
    "default_plugins",
    "dump_config",
    "encode_args",
    "format_duration",
    "is_extended_resource_name",
    "load_config",
    "merge_plugin_set",
    "merge_plugins",
    "parse_document",
    "parse_duration",
    "parse_duration_ns",
    "parse_feature_gates",
    "plugin_args",
    "resolve_profile_plugins",
    "upstream_default_plugins",
    "validate",
]
