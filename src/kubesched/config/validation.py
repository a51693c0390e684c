"""Validation of a KubeSchedulerConfiguration: upstream's rules, every problem reported with its path.

`validate` accepts a config as decoded (paths then point at the lines the user wrote) or already
defaulted; it defaults a copy itself for the rules that need effective values. Plugin lists are
checked as written, so `profiles[0].plugins.multiPoint.enabled[1]` is the user's second entry,
not its position after the defaults were merged in.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from kubesched.config._util import quote
from kubesched.config.args import decode_plugin_args, lookup_plugin
from kubesched.config.defaults import GATED_ARGS, UPSTREAM_DEFAULT_PLUGINS, apply_defaults
from kubesched.config.duration import parse_duration
from kubesched.config.features import DEFAULT_GATES, FeatureGates
from kubesched.config.merge import ResolvedPlugins, resolve_profile_plugins
from kubesched.config.plugin_catalog import PluginCatalog
from kubesched.config.types import (
    API_VERSION,
    KIND,
    PLUGIN_SET_KEYS,
    ClientConnectionConfiguration,
    Extender,
    KubeSchedulerConfiguration,
    KubeSchedulerProfile,
    LeaderElectionConfiguration,
)
from kubesched.errors import FieldErrors, InputError, did_you_mean

__all__ = ["is_extended_resource_name", "validate"]

_UPSTREAM_DEFAULT_NAMES = frozenset(name for name, _ in UPSTREAM_DEFAULT_PLUGINS)


def validate(
    cfg: KubeSchedulerConfiguration, registry: PluginCatalog, gates: FeatureGates = DEFAULT_GATES
) -> None:
    """Raise FieldErrors listing every problem in `cfg` defaulted under `gates`, each with its field path."""
    errors: list[InputError] = []
    effective = apply_defaults(cfg, registry, gates)
    _check_top_level(effective, errors)
    _check_leader_election(effective.leader_election, errors)
    _check_client_connection(effective.client_connection, errors)
    _check_profiles(cfg, effective, registry, gates, errors)
    _check_extenders(effective.extenders, errors)
    if errors:
        raise FieldErrors(errors)


def _err(errors: list[InputError], path: str, message: str) -> None:
    errors.append(InputError(message, path=path))


# --------------------------------------------------------------------------- top level


def _check_top_level(cfg: KubeSchedulerConfiguration, errors: list[InputError]) -> None:
    if cfg.api_version != API_VERSION:
        _err(errors, "apiVersion", f"must be {quote(API_VERSION)}, got {quote(cfg.api_version or '')}")
    if cfg.kind != KIND:
        _err(errors, "kind", f"must be {quote(KIND)}, got {quote(cfg.kind or '')}")
    if cfg.parallelism is not None and cfg.parallelism <= 0:
        _err(errors, "parallelism", "must be greater than 0")
    _check_percentage(cfg.percentage_of_nodes_to_score, "percentageOfNodesToScore", errors)
    initial, maximum = cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds
    if initial is not None and initial <= 0:
        _err(errors, "podInitialBackoffSeconds", "must be greater than 0")
    if initial is not None and maximum is not None and maximum < initial:
        _err(
            errors,
            "podMaxBackoffSeconds",
            f"must be greater than or equal to podInitialBackoffSeconds ({initial})",
        )


def _check_percentage(value: int | None, path: str, errors: list[InputError]) -> None:
    if value is not None and not 0 <= value <= 100:
        _err(errors, path, f"must be in the range [0, 100], got {value}")


def _check_leader_election(le: LeaderElectionConfiguration | None, errors: list[InputError]) -> None:
    if le is None:
        return
    seconds: dict[str, float] = {}
    for field, text in (
        ("leaseDuration", le.lease_duration),
        ("renewDeadline", le.renew_deadline),
        ("retryPeriod", le.retry_period),
    ):
        if text is None:
            continue
        try:
            seconds[field] = parse_duration(text)
        except InputError as exc:
            _err(errors, f"leaderElection.{field}", exc.message)
            continue
        if le.leader_elect and seconds[field] <= 0:
            _err(errors, f"leaderElection.{field}", "must be greater than 0")
    if not le.leader_elect:
        return
    lease, renew = seconds.get("leaseDuration"), seconds.get("renewDeadline")
    if lease is not None and renew is not None and 0 < lease <= renew:
        _err(errors, "leaderElection.leaseDuration", "must be greater than renewDeadline")
    if le.resource_lock != "leases":
        _err(
            errors,
            "leaderElection.resourceLock",
            f'must be "leases" when leaderElect is true, got {quote(le.resource_lock)}',
        )


def _check_client_connection(cc: ClientConnectionConfiguration | None, errors: list[InputError]) -> None:
    if cc is not None and cc.burst is not None and cc.burst < 0:
        _err(errors, "clientConnection.burst", "must not be negative")


# --------------------------------------------------------------------------- profiles


def _check_profiles(
    written: KubeSchedulerConfiguration,
    effective: KubeSchedulerConfiguration,
    registry: PluginCatalog,
    gates: FeatureGates,
    errors: list[InputError],
) -> None:
    if not effective.profiles:
        _err(errors, "profiles", "must not be empty")
        return
    names: set[str] = set()
    queue_sorts: list[tuple[int, str, Any]] = []
    for i, profile in enumerate(effective.profiles):
        path = f"profiles[{i}]"
        if not profile.scheduler_name:
            _err(errors, f"{path}.schedulerName", "must not be empty")
        elif profile.scheduler_name in names:
            _err(errors, f"{path}.schedulerName", f"Duplicate value: {quote(profile.scheduler_name)}")
        else:
            names.add(profile.scheduler_name)
        _check_percentage(profile.percentage_of_nodes_to_score, f"{path}.percentageOfNodesToScore", errors)
        as_written = written.profiles[i] if i < len(written.profiles) else KubeSchedulerProfile()
        before = len(errors)
        _check_plugin_lists(as_written, path, registry, errors)
        _check_plugin_config(as_written, path, registry, gates, errors)
        if len(errors) > before:
            continue  # resolving would only repeat these problems
        resolved = _resolve(profile, path, registry, errors)
        if resolved is not None:
            queue_sort = resolved.names("queueSort")
            if len(queue_sort) == 1:
                queue_sorts.append((i, queue_sort[0], _args_of(profile, queue_sort[0])))
    _check_common_queue_sort(written, queue_sorts, errors)


def _check_plugin_lists(
    profile: KubeSchedulerProfile, path: str, registry: PluginCatalog, errors: list[InputError]
) -> None:
    if profile.plugins is None:
        return
    for key in PLUGIN_SET_KEYS:
        pset = profile.plugins.get(key)
        if pset is None:
            continue
        base = f"{path}.plugins.{key}"
        seen: set[str] = set()
        for j, entry in enumerate(pset.enabled):
            where = f"{base}.enabled[{j}]"
            if lookup_plugin(registry, entry.name) is None:
                _err(errors, f"{where}.name", _unknown(entry.name, registry))
            elif key != "multiPoint" and key not in registry.extension_points(entry.name):
                _err(errors, f"{where}.name", f"plugin {quote(entry.name)} does not implement {key}")
            if entry.name in seen:
                _err(errors, f"{where}.name", f"Duplicate value: {quote(entry.name)}")
            seen.add(entry.name)
            if entry.weight is not None and entry.weight < 0:
                _err(errors, f"{where}.weight", "must be positive")
        for j, entry in enumerate(pset.disabled):
            # Disabling an upstream default that kubesched does not ship is harmless: configs
            # written for kube-scheduler keep working.
            name = entry.name
            if name != "*" and name not in _UPSTREAM_DEFAULT_NAMES and lookup_plugin(registry, name) is None:
                _err(errors, f"{base}.disabled[{j}].name", _unknown(name, registry))


def _unknown(name: str, registry: PluginCatalog) -> str:
    if ":" in name:
        try:
            registry.resolve(name)  # a `module:Class` that fails to import says why
        except InputError as exc:
            return exc.message
    if name in _UPSTREAM_DEFAULT_NAMES:
        return f"unknown plugin {quote(name)} (an upstream default plugin kubesched does not provide yet)"
    return f"unknown plugin {quote(name)}{did_you_mean(name, registry)}"


def _check_plugin_config(
    profile: KubeSchedulerProfile,
    path: str,
    registry: PluginCatalog,
    gates: FeatureGates,
    errors: list[InputError],
) -> None:
    seen: set[str] = set()
    for j, pc in enumerate(profile.plugin_config):
        where = f"{path}.pluginConfig[{j}]"
        if pc.name in seen:
            _err(errors, f"{where}.name", f"Duplicate value: {quote(pc.name)}")
            continue
        seen.add(pc.name)
        if lookup_plugin(registry, pc.name) is None:
            _err(errors, f"{where}.name", _unknown(pc.name, registry))
            continue
        try:
            decode_plugin_args(pc.name, registry, pc.args, f"{where}.args")
        except InputError as exc:
            errors.append(InputError(exc.message, path=exc.path))
            continue
        for field, (gate, message) in GATED_ARGS.get(pc.name, {}).items():
            if isinstance(pc.args, dict) and field in pc.args and not gates.enabled(gate):
                _err(errors, f"{where}.args.{field}", message)


def _resolve(
    profile: KubeSchedulerProfile, path: str, registry: PluginCatalog, errors: list[InputError]
) -> ResolvedPlugins | None:
    """The profile's plugins by extension point, after checking the framework's structural rules."""
    if profile.plugins is None:
        return None
    try:
        resolved = resolve_profile_plugins(profile.plugins, registry)
    except InputError as exc:
        _err(errors, f"{path}.plugins.{exc.path}", exc.message)
        return None
    queue_sort = resolved.names("queueSort")
    if len(queue_sort) != 1:
        found = ", ".join(queue_sort) or "none"
        _err(errors, f"{path}.plugins.queueSort", f"exactly one queueSort plugin is required, got {found}")
    if not resolved["bind"]:
        _err(errors, f"{path}.plugins.bind", "at least one bind plugin is required")
    return resolved


def _args_of(profile: KubeSchedulerProfile, name: str) -> Any:
    return next((pc.args for pc in profile.plugin_config if pc.name == name), None)


def _check_common_queue_sort(
    written: KubeSchedulerConfiguration, queue_sorts: list[tuple[int, str, Any]], errors: list[InputError]
) -> None:
    """Profiles share one scheduling queue, so they must sort it the same way."""
    if not queue_sorts:
        return
    first_index, first_name, first_args = queue_sorts[0]
    for i, name, args in queue_sorts[1:]:
        if name != first_name:
            _err(
                errors,
                f"profiles[{i}].plugins.queueSort",
                f"must be the same for all profiles: {quote(name)} here, "
                f"{quote(first_name)} in profiles[{first_index}]",
            )
        elif args != first_args:
            written_configs = written.profiles[i].plugin_config if i < len(written.profiles) else []
            index = next((j for j, pc in enumerate(written_configs) if pc.name == name), None)
            where = f"profiles[{i}].pluginConfig" + (f"[{index}].args" if index is not None else "")
            _err(errors, where, f"args of queueSort plugin {quote(name)} must be the same for all profiles")


# --------------------------------------------------------------------------- extenders


def _check_extenders(extenders: list[Extender], errors: list[InputError]) -> None:
    binder: int | None = None
    managed: set[str] = set()
    for i, ext in enumerate(extenders):
        path = f"extenders[{i}]"
        if not ext.url_prefix:
            _err(errors, f"{path}.urlPrefix", "must not be empty")
        if ext.prioritize_verb and (ext.weight is None or ext.weight <= 0):
            _err(errors, f"{path}.weight", "must be positive when prioritizeVerb is set")
        if ext.bind_verb:
            if binder is not None:
                _err(
                    errors,
                    f"{path}.bindVerb",
                    f"only one extender can implement bind (extenders[{binder}] does)",
                )
            else:
                binder = i
        if ext.http_timeout is not None:
            try:
                if parse_duration(ext.http_timeout) < 0:
                    _err(errors, f"{path}.httpTimeout", "must not be negative")
            except InputError as exc:
                _err(errors, f"{path}.httpTimeout", exc.message)
        if ext.tls_config is not None:
            for field, data in (
                ("certData", ext.tls_config.cert_data),
                ("keyData", ext.tls_config.key_data),
                ("caData", ext.tls_config.ca_data),
            ):
                if data and not _is_base64(data):
                    _err(errors, f"{path}.tlsConfig.{field}", "must be base64-encoded")
        for j, res in enumerate(ext.managed_resources):
            where = f"{path}.managedResources[{j}].name"
            if not is_extended_resource_name(res.name):
                _err(
                    errors,
                    where,
                    f"{quote(res.name)} is not a valid extended resource name (e.g. example.com/gpu)",
                )
            elif res.name in managed:
                _err(errors, where, f"Duplicate value: {quote(res.name)}")
            managed.add(res.name)


def _is_base64(data: str) -> bool:
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN = re.compile(rf"{_DNS_LABEL}(\.{_DNS_LABEL})*")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")


def is_extended_resource_name(name: str) -> bool:
    """Upstream's rule: a domain-prefixed name outside `kubernetes.io/`, usable as `requests.<name>`."""
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    prefix, _, short = f"requests.{name}".partition("/")
    return (
        len(prefix) <= 253
        and _DNS_SUBDOMAIN.fullmatch(prefix) is not None
        and len(short) <= 63
        and _QUALIFIED_NAME.fullmatch(short) is not None
    )
