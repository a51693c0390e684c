"""Plugin sets: upstream's merge of a profile onto the defaults, and the multiPoint expansion.

Two steps, as upstream does them:

1. `merge_plugins` (config defaulting): each extension point's custom set is merged onto the
   default set — `disabled` names (or `*`) drop defaults, a default that is also custom-enabled is
   replaced *in place* (keeping its position, taking the custom weight), the other custom-enabled
   plugins are appended in order. All upstream defaults live in `multiPoint`, so this is where an
   explicitly configured multiPoint plugin overrides a default one.
2. `resolve_profile_plugins` (framework init): every multiPoint plugin is expanded onto each
   extension point its class implements, unless that point disables it (or `*`). A plugin also
   enabled explicitly at the point is not duplicated: the point's entry (and weight) wins.

Resulting order at a point (upstream's): plugins enabled at the point that multiPoint would also
have put there (in the point's order), then the other multiPoint plugins (in multiPoint order), then
the point's remaining plugins. So a custom Filter plugin listed under `filter` runs after the
default filters, while re-weighting a default Score plugin under `score` moves it first.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from kubesched.config._util import quote
from kubesched.config.args import lookup_plugin
from kubesched.config.plugin_catalog import MAX_NODE_SCORE, MAX_TOTAL_SCORE, PluginCatalog
from kubesched.config.types import EXTENSION_POINTS, PLUGIN_SET_KEYS, Plugin, Plugins, PluginSet
from kubesched.errors import InputError, did_you_mean

__all__ = [
    "PluginRef",
    "ResolvedPlugins",
    "merge_plugin_set",
    "merge_plugins",
    "resolve_profile_plugins",
]


def merge_plugin_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    """Upstream mergePluginSet: `custom` applied onto `default` for one extension point."""
    disabled = [Plugin(name=p.name) for p in (*custom.disabled, *default.disabled)]
    disabled_names = {p.name for p in disabled}
    # The last custom entry of a name is the one that replaces a default in place; duplicates
    # are kept (appended) so validation can report them.
    replacing = {p.name: i for i, p in enumerate(custom.enabled)}
    used: set[int] = set()
    enabled: list[Plugin] = []
    if "*" not in disabled_names:
        for plugin in default.enabled:
            if plugin.name in disabled_names:
                continue
            index = replacing.get(plugin.name)
            if index is not None:
                used.add(index)
                plugin = custom.enabled[index]
            enabled.append(_copy(plugin))
    enabled.extend(_copy(p) for i, p in enumerate(custom.enabled) if i not in used)
    return PluginSet(enabled=enabled, disabled=disabled)


def merge_plugins(default: Plugins, custom: Plugins | None) -> Plugins:
    """Every extension point (and multiPoint) of `custom` merged onto `default`."""
    merged = Plugins()
    for key in PLUGIN_SET_KEYS:
        d = default.get(key) or PluginSet()
        c = custom.get(key) if custom is not None else None
        result = merge_plugin_set(d, c) if c is not None else _copy_set(d)
        if result.enabled or result.disabled:
            merged.assign(key, result)
    return merged


class PluginRef(NamedTuple):
    """A plugin enabled at an extension point; `weight` is the Score weight (never below 1)."""

    name: str
    weight: int


@dataclass(frozen=True)
class ResolvedPlugins:
    """The plugins a profile runs, by extension point config key (`filter`, `score`, ...), in order."""

    points: Mapping[str, tuple[PluginRef, ...]]

    def __getitem__(self, point: str) -> tuple[PluginRef, ...]:
        return self.points.get(point, ())

    def __iter__(self) -> Iterator[str]:
        return iter(self.points)

    def names(self, point: str) -> list[str]:
        return [ref.name for ref in self[point]]

    @property
    def score_weights(self) -> dict[str, int]:
        return {ref.name: ref.weight for ref in self["score"]}

    def all_names(self) -> list[str]:
        """Every plugin the profile instantiates, each once, in first-use order."""
        return list(dict.fromkeys(ref.name for refs in self.points.values() for ref in refs))


def resolve_profile_plugins(plugins: Plugins, registry: PluginCatalog) -> ResolvedPlugins:
    """Expand merged `plugins` (a defaulted profile's) into the ordered plugins of each extension point.

    Raises InputError (path relative to `plugins`) for an unknown plugin, a plugin enabled at a
    point it does not implement, a plugin enabled twice at one point, or Score weights whose
    maximum total would overflow.
    """
    multi_point = plugins.multi_point.enabled if plugins.multi_point else []
    implements: dict[str, list[str]] = {}
    for i, entry in enumerate(multi_point):
        implements[entry.name] = _points_of(registry, entry.name, f"multiPoint.enabled[{i}].name")
    _reject_duplicates(multi_point, "multiPoint")

    points: dict[str, tuple[PluginRef, ...]] = {}
    for point in EXTENSION_POINTS:
        pset = plugins.get(point) or PluginSet()
        for i, entry in enumerate(pset.enabled):
            path = f"{point}.enabled[{i}].name"
            if point not in _points_of(registry, entry.name, path):
                raise InputError(f"plugin {quote(entry.name)} does not implement {point}", path=path)
        _reject_duplicates(pset.enabled, point)
        disabled = {p.name for p in pset.disabled}
        if "*" in disabled:
            ordered = list(pset.enabled)
        else:
            at_point = {p.name for p in pset.enabled}
            # multiPoint plugins this point takes (a disabled one is only here if enabled explicitly).
            candidates = [p for p in multi_point if point in implements[p.name] and p.name not in disabled]
            expanded = [p for p in candidates if p.name not in at_point]
            in_multi = {p.name for p in candidates}
            overrides = [p for p in pset.enabled if p.name in in_multi]
            rest = [p for p in pset.enabled if p.name not in in_multi]
            ordered = overrides + expanded + rest
        points[point] = tuple(PluginRef(p.name, p.weight if p.weight else 1) for p in ordered)

    total = sum(ref.weight for ref in points.get("score", ())) * MAX_NODE_SCORE
    if total > MAX_TOTAL_SCORE:
        raise InputError("total score of Score plugins could overflow", path="score")
    return ResolvedPlugins(points)


def _points_of(registry: PluginCatalog, name: str, path: str) -> list[str]:
    if lookup_plugin(registry, name) is None:
        raise InputError(f"unknown plugin {quote(name)}{did_you_mean(name, registry)}", path=path)
    return registry.extension_points(name)


def _reject_duplicates(enabled: list[Plugin], key: str) -> None:
    seen: set[str] = set()
    for i, p in enumerate(enabled):
        if p.name in seen:
            raise InputError(f"Duplicate value: {quote(p.name)}", path=f"{key}.enabled[{i}].name")
        seen.add(p.name)


def _copy(p: Plugin) -> Plugin:
    return Plugin(name=p.name, weight=p.weight)


def _copy_set(s: PluginSet) -> PluginSet:
    return PluginSet(enabled=[_copy(p) for p in s.enabled], disabled=[_copy(p) for p in s.disabled])
