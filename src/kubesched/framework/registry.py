"""Registry: plugin name -> plugin class, from built-ins, entry points and `module:Class` names.

A name may also be registered lazily, as the `module:Class` its class lives in: the module is
imported the first time the name is looked up, so a process only loads the plugins its profiles
use (`kubesched run` with the default profile never imports the contributed ones).

A plugin class has a `name` (ClassVar) and may declare `args_type`, a msgspec Struct for its
pluginConfig args. If the args struct has `validate() -> list[InputError]` it is called with the
decoded args; error paths are relative to the args (e.g. `scoringStrategy.type`).
The constructor may accept `args`, `handle` and/or `features` keyword arguments; it gets only those it
names. `features` is the registry's FeatureGates: as upstream's in-tree registry builds its plugins
with the scheduler's feature gates, a plugin that follows a gate reads it there.
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Iterable, Iterator, Mapping
from importlib.metadata import entry_points
from typing import Any

import msgspec
import msgspec.inspect

from kubesched.api.strict import field_names_at
from kubesched.config.features import DEFAULT_GATES, FeatureGates
from kubesched.config.plugin_catalog import PluginCatalog
from kubesched.errors import InputError, did_you_mean
from kubesched.framework.interfaces import extension_points_of

ENTRY_POINT_GROUP = "kubesched.plugins"


class Registry(Mapping[str, type], PluginCatalog):
    """Known plugin classes by name. `resolve` also accepts `package.module:Class`.

    It is the config layer's PluginCatalog: the name-based methods below answer for a known
    plugin (KeyError for an unknown one).
    """

    def __init__(
        self,
        plugins: Iterable[type] = (),
        *,
        features: FeatureGates = DEFAULT_GATES,
        lazy: Mapping[str, str] | None = None,
    ) -> None:
        #: A plugin's class, or the `module:Class` it is imported from when first looked up.
        self._plugins: dict[str, type | str] = {}
        #: The feature gates the plugins of this registry are built with.
        self.features = features
        for cls in plugins:
            self.register(cls)
        for name, target in (lazy or {}).items():
            self.register_lazy(name, target)

    def register(self, cls: type, name: str | None = None) -> None:
        plugin_name = name or getattr(cls, "name", None)
        if not isinstance(plugin_name, str) or not plugin_name:
            raise InputError(f"plugin class {cls.__module__}.{cls.__qualname__} has no `name`")
        known = self._plugins.get(plugin_name)
        if known is not None and known is not cls and known != f"{cls.__module__}:{cls.__qualname__}":
            raise InputError(f"plugin {plugin_name!r} is registered twice")
        self._plugins[plugin_name] = cls

    def register_lazy(self, name: str, target: str) -> None:
        """Register `name` as the class `target` (`module:Class`), imported on first lookup."""
        if name in self._plugins:
            raise InputError(f"plugin {name!r} is registered twice")
        self._plugins[name] = target

    def load_entry_points(self, group: str = ENTRY_POINT_GROUP) -> None:
        """Register third-party plugins published under the `kubesched.plugins` entry-point group."""
        for ep in entry_points(group=group):
            try:
                cls = ep.load()
            except Exception as exc:  # a broken third-party package must say which one
                raise InputError(f"cannot load plugin entry point {ep.name!r} ({ep.value}): {exc}") from None
            self.register(cls, ep.name if getattr(cls, "name", None) is None else None)

    def resolve(self, name: str) -> type | None:
        """The class registered as `name`, or imported from `module:Class`; None if unknown."""
        known = self._plugins.get(name)
        if isinstance(known, type):
            return known
        if known is not None:  # registered lazily: import it now, under the name it was given
            cls = _import_class(known)
            if getattr(cls, "name", None) != name:
                found = getattr(cls, "name", None)
                raise InputError(f"plugin {name!r} is registered as {known}, whose name is {found!r}")
        elif ":" in name:
            cls = _import_class(name)
        else:
            return None
        self._plugins[name] = cls
        return cls

    def extension_points(self, name: str) -> list[str]:
        return extension_points_of(self[name])

    def args_type(self, name: str) -> type[msgspec.Struct] | None:
        return args_type_of(self[name])

    def decode_args(self, name: str, raw: Any, path: str = "args") -> Any:
        return decode_args(self[name], raw, path)

    def __getitem__(self, name: str) -> type:
        cls = self.resolve(name)
        if cls is None:
            raise KeyError(name)
        return cls

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.resolve(name) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self._plugins)

    def __len__(self) -> int:
        return len(self._plugins)


def _import_class(target: str) -> type:
    """The class `module:Class` names; InputError if it cannot be imported or is not a class."""
    module_name, _, attr = target.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), attr)
    except Exception as exc:  # whatever a plugin module raises on import is a bad config value
        raise InputError(f"cannot import plugin {target!r}: {type(exc).__name__}: {exc}") from None
    if not isinstance(cls, type):
        raise InputError(f"plugin {target!r} is not a class")
    return cls


def args_type_of(cls: type) -> type[msgspec.Struct] | None:
    at = getattr(cls, "args_type", None)
    return at if isinstance(at, type) and issubclass(at, msgspec.Struct) else None


def decode_args(cls: type, raw: Any, path: str = "args") -> Any:
    """Decode and validate pluginConfig args for plugin `cls`; InputError names the field path.

    Plugins without an `args_type` get the raw value (out-of-tree args pass through undecoded).
    """
    at = args_type_of(cls)
    if at is None:
        return raw
    try:
        args = msgspec.convert(raw if raw is not None else {}, at, strict=False)
    except msgspec.ValidationError as exc:
        message, where = _split_msgspec_error(str(exc), path)
        unknown = re.fullmatch(r"Object contains unknown field `(.+)`", message)
        if unknown is not None:
            parent = where.removeprefix(path).lstrip(".")
            names = field_names_at(msgspec.inspect.type_info(at), parent)
            message = f"unknown field{did_you_mean(unknown[1], names)}"
            where = f"{where}.{unknown[1]}"
        raise InputError(message, path=where) from None
    validate = getattr(args, "validate", None)
    if callable(validate):
        errors: list[InputError] = validate()
        if errors:
            first = errors[0]
            raise InputError(first.message, path=f"{path}.{first.path}" if first.path else path)
    return args


def _split_msgspec_error(text: str, prefix: str) -> tuple[str, str]:
    """msgspec says `Expected int, got str - at $.a[0].b`; return (message, `prefix.a[0].b`)."""
    message, sep, where = text.rpartition(" - at `$")
    if not sep:
        return text, prefix
    return message, prefix + where.rstrip("`")


def instantiate(
    cls: type, args: Any = None, handle: Any = None, features: FeatureGates = DEFAULT_GATES
) -> Any:
    """Construct a plugin, passing `args`/`handle`/`features` only if its constructor names them."""
    try:
        signature = inspect.signature(cls)
    except (TypeError, ValueError):
        signature = inspect.Signature()
    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    params = {name for name, p in signature.parameters.items() if p.kind in named}
    kwargs: dict[str, Any] = {}
    if "args" in params:
        kwargs["args"] = args if args is not None else _default_args(cls)
    if "handle" in params:
        kwargs["handle"] = handle
    if "features" in params:
        kwargs["features"] = features
    return cls(**kwargs)


def _default_args(cls: type) -> Any:
    at = args_type_of(cls)
    return msgspec.convert({}, at) if at is not None else None
