"""Plugins found by name, by entry point and by `module:Class`; args decoded with field paths."""

from __future__ import annotations

import subprocess
import sys
import types
from typing import Any

import msgspec
import pytest

from kubesched.config import DEFAULT_GATES, EXTENSION_POINTS, FeatureGates, PluginCatalog, parse_feature_gates
from kubesched.errors import InputError
from kubesched.framework import FilterPlugin, Status
from kubesched.framework.interfaces import EXTENSION_POINT_METHODS, extension_points_of
from kubesched.framework.registry import Registry, decode_args, instantiate
from kubesched.plugins import builtin_plugin_names, default_registry


class ThresholdArgs(msgspec.Struct, rename="camel"):
    max_pods: int = 10

    def validate(self) -> list[InputError]:
        return [InputError("must be positive", path="maxPods")] if self.max_pods <= 0 else []


class Threshold(FilterPlugin):
    name = "Threshold"
    args_type = ThresholdArgs

    def __init__(self, args: ThresholdArgs, handle: Any = None) -> None:
        self.args = args
        self.handle = handle

    def filter(self, state: Any, pod: Any, node_info: Any) -> Status | None:
        return None


def test_builtins_are_registered_under_their_names() -> None:
    registry = default_registry(entry_points=False)
    assert set(registry) == set(builtin_plugin_names())
    assert registry["NodeFilterLabel"].__name__ == "NodeFilterLabel"


def test_contributed_plugins_are_imported_when_first_looked_up() -> None:
    """The default registry knows every contributed plugin by name without importing it; a lookup
    imports the class, whose own name is the one it was registered under."""
    code = (
        "import sys\n"
        "from kubesched.plugins import CONTRIB_PLUGINS, default_registry\n"
        "r = default_registry(entry_points=False)\n"
        "assert set(CONTRIB_PLUGINS) <= set(r)\n"
        "assert not [m for m in sys.modules if m.startswith('kubesched.plugins.contrib.')], sys.modules\n"
        "for name in CONTRIB_PLUGINS:\n"
        "    assert r[name].name == name, name\n"
        "assert 'kubesched.plugins.contrib.gpu_share.plugin' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_a_lazy_name_must_match_its_class() -> None:
    module = types.ModuleType("lazy_plugins")
    module.Threshold = Threshold  # type: ignore[attr-defined]
    sys.modules["lazy_plugins"] = module
    try:
        registry = Registry(lazy={"Threshold": "lazy_plugins:Threshold", "Other": "lazy_plugins:Threshold"})
        assert list(registry) == ["Threshold", "Other"]
        assert registry["Threshold"] is Threshold
        assert list(registry) == ["Threshold", "Other"]  # a lookup keeps the order
        with pytest.raises(InputError, match="whose name is 'Threshold'"):
            registry.resolve("Other")
        registry.register(Threshold)  # the same class again is no conflict
        with pytest.raises(InputError, match="registered twice"):
            registry.register_lazy("Threshold", "lazy_plugins:Other")
        missing = Registry(lazy={"Gone": "no_such_module_xyz:Gone"})
        with pytest.raises(InputError, match="cannot import plugin"):
            missing.resolve("Gone")
    finally:
        del sys.modules["lazy_plugins"]


def test_subclassing_a_protocol_does_not_claim_other_extension_points() -> None:
    assert extension_points_of(Threshold) == ["filter"]


def test_module_class_names_are_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("my_plugins")
    module.Threshold = Threshold  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "my_plugins", module)
    registry = Registry()
    assert registry.resolve("my_plugins:Threshold") is Threshold
    assert "my_plugins:Threshold" in registry
    assert registry.resolve("NotThere") is None
    with pytest.raises(InputError, match="cannot import plugin 'no_such_module:X'"):
        registry.resolve("no_such_module:X")


def test_entry_points_register_third_party_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    class FakeEntryPoint:
        name = "Threshold"
        value = "pkg:Threshold"

        def load(self) -> type:
            return Threshold

    class Broken(FakeEntryPoint):
        name = "Broken"

        def load(self) -> type:
            raise ImportError("numpy too old")

    monkeypatch.setattr("kubesched.framework.registry.entry_points", lambda group: [FakeEntryPoint()])
    registry = Registry()
    registry.load_entry_points()
    assert registry["Threshold"] is Threshold
    monkeypatch.setattr("kubesched.framework.registry.entry_points", lambda group: [Broken()])
    with pytest.raises(InputError, match=r"cannot load plugin entry point 'Broken'.*numpy too old"):
        Registry().load_entry_points()


def test_the_same_name_twice_is_refused() -> None:
    other = type("Other", (), {"name": "Threshold"})
    with pytest.raises(InputError, match="registered twice"):
        Registry([Threshold, other])


def test_args_are_decoded_validated_and_located() -> None:
    assert decode_args(Threshold, {"maxPods": 3}).max_pods == 3
    with pytest.raises(InputError) as err:
        decode_args(Threshold, {"maxPods": "many"}, path="profiles[0].pluginConfig[1].args")
    assert str(err.value) == "profiles[0].pluginConfig[1].args.maxPods: Expected `int`, got `str`"
    with pytest.raises(InputError, match=r"^args.maxPods: must be positive$"):
        decode_args(Threshold, {"maxPods": 0})


def test_the_registry_is_the_config_layers_plugin_catalog() -> None:
    catalog: PluginCatalog = Registry([Threshold])
    assert catalog.resolve("Threshold") is Threshold
    assert catalog.extension_points("Threshold") == ["filter"]
    assert catalog.args_type("Threshold") is ThresholdArgs
    assert catalog.decode_args("Threshold", {"maxPods": 3}, "args").max_pods == 3
    with pytest.raises(InputError, match=r"^pluginConfig\[0\]\.args\.maxPods: must be positive$"):
        catalog.decode_args("Threshold", {"maxPods": 0}, "pluginConfig[0].args")


def test_config_knows_the_framework_extension_points_in_order() -> None:
    assert tuple(EXTENSION_POINT_METHODS) == EXTENSION_POINTS


def test_instantiate_passes_only_the_parameters_a_constructor_names() -> None:
    plugin = instantiate(Threshold, None, handle="H")
    assert plugin.args == ThresholdArgs() and plugin.handle == "H"
    bare = instantiate(type("Bare", (FilterPlugin,), {"name": "Bare", "filter": lambda *a: None}), "x", "H")
    assert bare.name == "Bare"


def test_a_plugin_that_names_features_gets_its_registrys_gates() -> None:
    gates = parse_feature_gates(["StorageCapacityScoring=false"])

    class Gated(FilterPlugin):
        name = "Gated"

        def __init__(self, features: FeatureGates) -> None:
            self.features = features

        def filter(self, state: Any, pod: Any, node_info: Any) -> Status | None:
            return None

    assert instantiate(Gated, None, None, gates).features is gates
    assert instantiate(Gated).features is DEFAULT_GATES
    assert Registry([Gated], features=gates).features is gates
