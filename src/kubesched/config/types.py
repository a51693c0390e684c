"""KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) as msgspec Structs.

Field names are upstream's JSON names, so a file written for kube-scheduler decodes unchanged.
Unknown fields are rejected (a typo such as `parallelizm` is an error naming its path, not a
silently ignored line). Every field that defaulting fills is `None` when unset, so "not written"
is distinguishable from an explicit zero/false and the dumped effective config shows only what
was written or defaulted.

Durations stay the strings the user wrote (`"15s"`); `*_seconds` properties parse them.
"""

from __future__ import annotations

from typing import Any

import msgspec

from kubesched.config._util import snake
from kubesched.config.duration import parse_duration

__all__ = [
    "API_VERSION",
    "DEFAULT_SCHEDULER_NAME",
    "EXTENSION_POINTS",
    "KIND",
    "PLUGIN_SET_KEYS",
    "ClientConnectionConfiguration",
    "Extender",
    "ExtenderManagedResource",
    "ExtenderTLSConfig",
    "KubeSchedulerConfiguration",
    "KubeSchedulerProfile",
    "LeaderElectionConfiguration",
    "Plugin",
    "PluginConfig",
    "PluginSet",
    "Plugins",
]

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
DEFAULT_SCHEDULER_NAME = "default-scheduler"


class _Base(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True, omit_defaults=True):
    """camelCase wire names, unknown fields rejected, unset (None/empty) fields left out of dumps."""


class Plugin(_Base):
    """A plugin named in a PluginSet; `weight` only matters for Score (unset or 0 means 1)."""

    name: str
    weight: int | None = None


class PluginSet(_Base):
    """Plugins to enable (in order) and to disable (`*` = every default) at one extension point."""

    enabled: list[Plugin] = []
    disabled: list[Plugin] = []


class Plugins(_Base):
    """Per-extension-point plugin sets; `multiPoint` enables a plugin at every point it implements."""

    pre_enqueue: PluginSet | None = None
    queue_sort: PluginSet | None = None
    pre_filter: PluginSet | None = None
    filter: PluginSet | None = None
    post_filter: PluginSet | None = None
    pre_score: PluginSet | None = None
    score: PluginSet | None = None
    reserve: PluginSet | None = None
    permit: PluginSet | None = None
    pre_bind: PluginSet | None = None
    bind: PluginSet | None = None
    post_bind: PluginSet | None = None
    multi_point: PluginSet | None = None
    placement_generate: PluginSet | None = None
    placement_score: PluginSet | None = None

    def get(self, key: str) -> PluginSet | None:
        """The set for config key `key` (`preFilter`, `multiPoint`, ...)."""
        value: PluginSet | None = getattr(self, _ATTR_OF_KEY[key])
        return value

    def assign(self, key: str, value: PluginSet | None) -> None:
        """Set the set for config key `key`."""
        setattr(self, _ATTR_OF_KEY[key], value)


#: Config keys of `Plugins`, in upstream's order (extension points, `multiPoint`, the pod-group points).
PLUGIN_SET_KEYS: tuple[str, ...] = (
    "preEnqueue",
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
    "multiPoint",
    "placementGenerate",
    "placementScore",
)
#: The extension points' config keys, in upstream's order (PLUGIN_SET_KEYS without `multiPoint`).
EXTENSION_POINTS: tuple[str, ...] = tuple(key for key in PLUGIN_SET_KEYS if key != "multiPoint")
_ATTR_OF_KEY: dict[str, str] = {key: snake(key) for key in PLUGIN_SET_KEYS}


class PluginConfig(_Base):
    """Arguments for one plugin; `args` stays raw here and is decoded against the plugin's args type."""

    name: str
    args: Any = None


class KubeSchedulerProfile(_Base):
    """One scheduling profile: pods choose it by `spec.schedulerName`."""

    scheduler_name: str | None = None
    percentage_of_nodes_to_score: int | None = None
    plugins: Plugins | None = None
    plugin_config: list[PluginConfig] = []


class LeaderElectionConfiguration(_Base):
    leader_elect: bool | None = None
    lease_duration: str | None = None
    renew_deadline: str | None = None
    retry_period: str | None = None
    resource_lock: str | None = None
    resource_name: str | None = None
    resource_namespace: str | None = None

    @property
    def lease_duration_seconds(self) -> float:
        return parse_duration(self.lease_duration or "0")

    @property
    def renew_deadline_seconds(self) -> float:
        return parse_duration(self.renew_deadline or "0")

    @property
    def retry_period_seconds(self) -> float:
        return parse_duration(self.retry_period or "0")


class ClientConnectionConfiguration(_Base):
    kubeconfig: str | None = None
    accept_content_types: str | None = None
    content_type: str | None = None
    qps: float | None = None
    burst: int | None = None


class ExtenderTLSConfig(_Base):
    """TLS settings for an extender; `*Data` fields are base64 PEM, as Go encodes []byte."""

    insecure: bool | None = None
    server_name: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    ca_file: str | None = None
    cert_data: str | None = None
    key_data: str | None = None
    ca_data: str | None = None


class ExtenderManagedResource(_Base):
    name: str
    ignored_by_scheduler: bool | None = None


class Extender(_Base):
    """An HTTP scheduler extender; an unset verb means the extender does not support that call."""

    url_prefix: str | None = None
    filter_verb: str | None = None
    preempt_verb: str | None = None
    prioritize_verb: str | None = None
    weight: int | None = None
    bind_verb: str | None = None
    enable_https: bool | None = msgspec.field(default=None, name="enableHTTPS")
    tls_config: ExtenderTLSConfig | None = None
    http_timeout: str | None = None
    node_cache_capable: bool | None = None
    managed_resources: list[ExtenderManagedResource] = []
    ignorable: bool | None = None

    @property
    def http_timeout_seconds(self) -> float:
        return parse_duration(self.http_timeout or "0")


class KubeSchedulerConfiguration(_Base):
    api_version: str | None = None
    kind: str | None = None
    parallelism: int | None = None
    leader_election: LeaderElectionConfiguration | None = None
    client_connection: ClientConnectionConfiguration | None = None
    healthz_bind_address: str | None = None  # deprecated upstream; accepted and ignored
    metrics_bind_address: str | None = None  # deprecated upstream; accepted and ignored
    enable_profiling: bool | None = None
    enable_contention_profiling: bool | None = None
    percentage_of_nodes_to_score: int | None = None
    pod_initial_backoff_seconds: int | None = None
    pod_max_backoff_seconds: int | None = None
    profiles: list[KubeSchedulerProfile] = []
    extenders: list[Extender] = []
    delay_cache_until_active: bool | None = None
