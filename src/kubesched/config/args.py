"""pluginConfig args: decode against a plugin's args type, and encode with every default shown.

Upstream writes args with their own TypeMeta (`apiVersion: kubescheduler.config.k8s.io/v1`,
`kind: NodeResourcesFitArgs`); configs copied from kube-scheduler carry it, so it is accepted
(and checked) here and stripped before the args struct sees the rest. Plugins without an args type
(out-of-tree args) get their raw value untouched, as upstream passes unknown args through.
"""

from __future__ import annotations

from typing import Any

import msgspec

from kubesched.config._util import quote
from kubesched.config.plugin_catalog import PluginCatalog
from kubesched.config.types import API_VERSION, KubeSchedulerProfile
from kubesched.errors import InputError

__all__ = ["decode_plugin_args", "default_args", "encode_args", "lookup_plugin", "plugin_args"]


def lookup_plugin(registry: PluginCatalog, name: str) -> type | None:
    """The class for `name`, or None when unknown or when a `module:Class` name cannot be imported."""
    try:
        return registry.resolve(name)
    except InputError:
        return None


def _strip_type_meta(name: str, raw: Any, path: str) -> Any:
    """`raw` without apiVersion/kind, after checking they name `<name>Args` in our API group."""
    if not isinstance(raw, dict) or not ({"apiVersion", "kind"} & raw.keys()):
        return raw
    rest = dict(raw)
    api_version = rest.pop("apiVersion", API_VERSION)
    kind = rest.pop("kind", f"{name}Args")
    if api_version != API_VERSION:
        raise InputError(f"must be {quote(API_VERSION)}, got {quote(api_version)}", path=f"{path}.apiVersion")
    if kind != f"{name}Args":
        raise InputError(
            f"args for plugin {quote(name)} must be of kind {quote(name + 'Args')}, got {quote(kind)}",
            path=f"{path}.kind",
        )
    return rest


def decode_plugin_args(name: str, registry: PluginCatalog, raw: Any, path: str = "args") -> Any:
    """Typed, validated args for known plugin `name` (raw without an args type); InputError names the path."""
    if registry.args_type(name) is None:
        return raw
    return registry.decode_args(name, _strip_type_meta(name, raw, path), path)


def encode_args(name: str, args: Any) -> Any:
    """Builtins for decoded `args`, every field included (defaults too), with upstream's TypeMeta first.

    `msgspec.to_builtins` would drop default-valued fields of structs declared `omit_defaults`,
    but the effective configuration must show them.
    """
    if not isinstance(args, msgspec.Struct):
        return args
    body = _full_builtins(args)
    return {"apiVersion": API_VERSION, "kind": f"{name}Args", **body}


def default_args(name: str, registry: PluginCatalog) -> Any:
    """Encoded default args for known plugin `name`, or None when it has no args type."""
    at = registry.args_type(name)
    if at is None:
        return None
    return encode_args(name, msgspec.convert({}, at))


def plugin_args(profile: KubeSchedulerProfile, registry: PluginCatalog) -> dict[str, Any]:
    """Decoded args by plugin name for a validated profile (what the Framework instantiates with)."""
    out: dict[str, Any] = {}
    for i, pc in enumerate(profile.plugin_config):
        if lookup_plugin(registry, pc.name) is not None:
            out[pc.name] = decode_plugin_args(pc.name, registry, pc.args, f"pluginConfig[{i}].args")
    return out


def _full_builtins(value: Any) -> Any:
    if isinstance(value, msgspec.Struct):
        out: dict[str, Any] = {}
        config = value.__struct_config__
        if config.tag is not None and isinstance(config.tag_field, str):
            out[config.tag_field] = config.tag
        for f in msgspec.structs.fields(value):
            item = getattr(value, f.name)
            if item is None or item is msgspec.UNSET:
                continue
            out[f.encode_name] = _full_builtins(item)
        return out
    if isinstance(value, dict):
        return {msgspec.to_builtins(k): _full_builtins(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_full_builtins(v) for v in value]
    return msgspec.to_builtins(value)
