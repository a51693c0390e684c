"""`--feature-gates` is parsed and checked as kube-scheduler v1.37.2 does, then refused where kubesched
cannot follow a gate; the default profile follows the gates as the binary's `--write-config-to`."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesched.config import (
    DEFAULT_GATES,
    FeatureGates,
    default_config,
    load_config,
    parse_feature_gates,
    upstream_default_plugins,
)
from kubesched.config.features import DEFAULT_ONLY
from kubesched.config.gate_table import DEPENDENCIES, GATES
from kubesched.errors import InputError
from kubesched.plugins import default_registry

#: Gates kube-scheduler's feature struct and scheduler package read, with their v1.37.2 stage and
#: default (checked by hand against pkg/features/kube_features.go; the table must agree).
SCHEDULER_GATES = {
    "GenericWorkload": ("beta", False),
    "TopologyAwareWorkloadScheduling": ("alpha", False),
    "PodGroupPreemptionPolicy": ("alpha", False),
    "DRAWorkloadResourceClaims": ("beta", False),
    "CompositePodGroup": ("alpha", False),
    "WorkloadWithJob": ("alpha", False),
    "SchedulerAsyncPreemption": ("beta", True),
    "OpportunisticBatching": ("beta", True),
    "StorageCapacityScoring": ("beta", True),
    "NodeDeclaredFeatures": ("ga", True),
    "DynamicResourceAllocation": ("ga", True),
    "InPlacePodVerticalScalingSchedulerPreemption": ("alpha", False),
    "SchedulerAsyncAPICalls": ("beta", False),
    "DRADeviceTaintRules": ("ga", True),  # GA in 1.37, not locked yet
    "DRADeviceTaints": ("ga", True),
}


@pytest.mark.parametrize(("name", "spec"), sorted(SCHEDULER_GATES.items()))
def test_the_table_has_the_gates_with_their_v1_37_stage_and_default(
    name: str, spec: tuple[str, bool]
) -> None:
    assert GATES[name][:2] == spec


def test_every_gate_kubesched_runs_at_its_default_only_is_known_and_unlocked() -> None:
    for name in DEFAULT_ONLY:
        _stage, _default, locked = GATES[name]
        assert not locked, name


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([], {}),
        (["KubeletTracing=true"], {"KubeletTracing": True}),
        (["MemoryQoS=true,ContextualLogging=false"], {"MemoryQoS": True, "ContextualLogging": False}),
        (["MemoryQoS=true", "MemoryQoS=false"], {"MemoryQoS": False}),  # repeated: the last wins
        ([" MemoryQoS = T , ContextualLogging=0 ,"], {"MemoryQoS": True, "ContextualLogging": False}),
        (["kube:MemoryQoS=1", "kube:ContextualLogging=F"], {"MemoryQoS": True, "ContextualLogging": False}),
        (["NodeDeclaredFeatures=true"], {"NodeDeclaredFeatures": True}),  # locked, at its default
        (["GenericWorkload=false"], {"GenericWorkload": False}),
    ],
)
def test_accepted(values: list[str], expected: dict[str, bool]) -> None:
    gates = parse_feature_gates(values)
    gates.refuse_unimplemented()
    assert dict(gates.explicit) == expected
    for name, value in expected.items():
        assert gates.enabled(name) is value


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            ["GenricWorkload=true"],
            'unrecognized feature gate: GenricWorkload (did you mean "GenericWorkload"?)',
        ),
        (["Zzzz=true"], "unrecognized feature gate: Zzzz"),
        (["MemoryQoS"], "missing bool value for MemoryQoS"),
        (
            ["MemoryQoS=yes"],
            'invalid value of MemoryQoS=yes, err: strconv.ParseBool: parsing "yes": invalid syntax',
        ),
        (["wardle:MemoryQoS=true"], "component not registered: wardle"),
        (
            ["kube:MemoryQoS=true", "ContextualLogging=true"],
            "set kube feature gates with default empty prefix or kube: prefix consistently, do not mix use",
        ),
        (
            ["NodeDeclaredFeatures=false"],
            "cannot set feature gate NodeDeclaredFeatures to false, feature is locked to true",
        ),
        (
            ["TopologyAwareWorkloadScheduling=true"],
            "TopologyAwareWorkloadScheduling is enabled, but depends on features that are disabled: "
            "[GenericWorkload]",
        ),
        (
            ["DRADeviceTaints=false", "DRADeviceTaintRules=true"],
            "DRADeviceTaintRules is enabled, but depends on features that are disabled: [DRADeviceTaints]",
        ),
    ],
)
def test_refused_as_the_binary_refuses(values: list[str], message: str) -> None:
    with pytest.raises(InputError) as info:
        parse_feature_gates(values)
    assert str(info.value) == f"--feature-gates: {message}"


@pytest.mark.parametrize(
    ("values", "named"),
    [
        (["DRADerivedAttributes=true"], "DRADerivedAttributes=true changes"),
        (["SchedulerAsyncPreemption=false"], "SchedulerAsyncPreemption=false changes scheduling"),
        (["SchedulerPopFromBackoffQ=false"], "SchedulerPopFromBackoffQ=false changes scheduling"),
        (
            ["InPlacePodVerticalScalingSchedulerPreemption=true"],
            "InPlacePodVerticalScalingSchedulerPreemption",
        ),
        (["AllBeta=true"], "(by AllAlpha/AllBeta) changes scheduling"),
        (["AllBeta=false"], "(by AllAlpha/AllBeta) changes scheduling"),
    ],
)
def test_a_gate_kubesched_does_not_implement_is_refused_naming_it(values: list[str], named: str) -> None:
    gates = parse_feature_gates(values)
    with pytest.raises(InputError) as info:
        gates.refuse_unimplemented()
    text = str(info.value)
    assert text.startswith("--feature-gates: ")
    assert named in text
    assert "v1.37's default" in text
    assert "\n" not in text


def test_all_alpha_and_all_beta_set_every_gate_of_their_stage_not_named() -> None:
    gates = parse_feature_gates(["AllAlpha=true,GenericWorkload=true,CompositePodGroup=false"])
    assert gates.enabled("TopologyAwareWorkloadScheduling")  # alpha, by AllAlpha
    assert not gates.enabled("CompositePodGroup")  # named: the name wins
    assert not gates.enabled("DRAWorkloadResourceClaims")  # beta: AllAlpha leaves it
    assert gates.enabled("NodeDeclaredFeatures")  # GA
    off = parse_feature_gates(["AllAlpha=false"])
    assert off.enabled("SchedulerAsyncPreemption")
    off.refuse_unimplemented()  # every alpha gate is off by default: nothing changes


def test_ignored_gates_are_named_once_and_the_scheduling_ones_are_not() -> None:
    gates = parse_feature_gates(
        ["MemoryQoS=true,ContextualLogging=false", "MemoryQoS=true,GenericWorkload=false"]
    )
    assert gates.ignored_notice() == (
        "feature gates accepted and ignored (they do not change scheduling): "
        "MemoryQoS=true, ContextualLogging=false"
    )
    assert DEFAULT_GATES.ignored_notice() == ""


# --------------------------------------------------------------------------- the parser, by property

_names = st.sampled_from(sorted(GATES))
_true = st.sampled_from(["1", "t", "T", "TRUE", "true", "True"])
_false = st.sampled_from(["0", "f", "F", "FALSE", "false", "False"])


@given(st.lists(st.tuples(_names, st.booleans(), st.data()), max_size=8), st.booleans())
def test_any_spelling_of_gates_at_their_default_parses_to_those_gates(
    pairs: list[tuple[str, bool, st.DataObject]], prefixed: bool
) -> None:
    """Gates set to their defaults never break a rule; spacing, Go's boolean spellings, the `kube:`
    prefix and how the pairs are split over repeated flags change nothing; the last value wins."""
    expected: dict[str, bool] = {}
    items: list[str] = []
    for name, pad, data in pairs:
        default = GATES[name][1]
        word = data.draw(_true if default else _false)
        space = " " if pad else ""
        items.append(f"{'kube:' if prefixed else ''}{space}{name}{space}={space}{word}{space}")
        expected[name] = default
    cut = len(items) // 2
    values = [",".join(items[:cut]), ",".join(items[cut:])]
    gates = parse_feature_gates(values)
    assert dict(gates.explicit) == expected
    assert all(gates.enabled(name) == GATES[name][1] for name in GATES)
    gates.refuse_unimplemented()


@given(st.lists(st.text(st.characters(codec="ascii"), max_size=30), max_size=4))
def test_any_text_is_gates_or_one_line_naming_the_flag(values: list[str]) -> None:
    try:
        gates = parse_feature_gates(values)
    except InputError as err:
        assert str(err).startswith("--feature-gates: ")
        assert "\n" not in err.message or "\n" in "".join(values)
        return
    assert set(gates.explicit) <= set(GATES)


@given(st.sampled_from(sorted(DEPENDENCIES)))
def test_a_gate_on_with_its_dependencies_off_is_refused_naming_both(name: str) -> None:
    deps = DEPENDENCIES[name]
    values = [f"{name}=true"] + [f"{d}=false" for d in deps if not GATES[d][2]]
    locked_on = [d for d in deps if GATES[d][2] and GATES[d][1]]
    if len(locked_on) == len(deps) or GATES[name][2]:
        return  # every dependency is locked on, or the gate is locked: no way to break the rule
    with pytest.raises(InputError) as info:
        parse_feature_gates(values)
    assert f"{name} is enabled, but depends on features that are disabled: [" in str(info.value)


# --------------------------------------------------------------------------- the default profile


def _names_of(gates: FeatureGates) -> list[str]:
    return [name for name, _ in upstream_default_plugins(gates)]


def test_the_default_profile_follows_the_gates_as_upstream_adds_plugins() -> None:
    base = _names_of(DEFAULT_GATES)
    assert base[-1] == "NodeDeclaredFeatures"
    assert base.index("DynamicResources") == base.index("DefaultPreemption") - 1
    gang = upstream_default_plugins(FeatureGates(explicit={"GenericWorkload": True}))
    assert gang[-1] == ("GangScheduling", None)
    topo = upstream_default_plugins(
        FeatureGates(explicit={"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True})
    )
    assert topo[-3:] == (
        ("GangScheduling", None),
        ("TopologyPlacementGenerator", None),
        ("PodGroupPodsCount", 1),
    )
    deferred = _names_of(FeatureGates(explicit={"InPlacePodVerticalScalingSchedulerPreemption": True}))
    assert deferred.index("DeferredPodScheduling") == deferred.index("NodeResourcesFit") - 1


# --------------------------------------------------------------------------- args the gates default

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def _args(gates: FeatureGates, name: str) -> dict[str, object]:
    cfg = default_config(default_registry(features=gates), gates)
    (args,) = [pc.args for pc in cfg.profiles[0].plugin_config if pc.name == name]
    assert isinstance(args, dict)
    return args


@pytest.mark.parametrize(
    ("gate", "plugin", "field"),
    [
        ("StorageCapacityScoring", "VolumeBinding", "shape"),
        ("DRASchedulerFilterTimeout", "DynamicResources", "filterTimeout"),
    ],
)
def test_a_field_upstream_defaults_under_a_gate_is_left_unset_with_the_gate_off(
    gate: str, plugin: str, field: str
) -> None:
    assert field in _args(DEFAULT_GATES, plugin)
    off = parse_feature_gates([f"{gate}=false"])
    off.refuse_unimplemented()  # kubesched follows this gate
    assert off.ignored_notice() == ""
    args = _args(off, plugin)
    assert field not in args
    assert len(args) == len(_args(DEFAULT_GATES, plugin)) - 1


@pytest.mark.parametrize(
    ("gate", "plugin_config", "message"),
    [
        (
            "StorageCapacityScoring",
            "{name: VolumeBinding, args: {shape: [{utilization: 0, score: 1}]}}",
            "profiles[0].pluginConfig[0].args.shape: unexpected field `shape`, remove it or turn on the "
            "feature gate StorageCapacityScoring",
        ),
        (
            "DRASchedulerFilterTimeout",
            "{name: DynamicResources, args: {filterTimeout: 5s}}",
            "profiles[0].pluginConfig[0].args.filterTimeout: "
            "DRASchedulingFilterTimeout feature gate is disabled",
        ),
    ],
)
def test_a_field_written_with_its_gate_off_is_refused_as_upstream_refuses_it(
    tmp_path: Path, gate: str, plugin_config: str, message: str
) -> None:
    path = tmp_path / "sched.yaml"
    path.write_text(HEADER + f"profiles: [{{pluginConfig: [{plugin_config}]}}]\n")
    registry = default_registry()
    load_config(path, registry)  # valid with the gate on
    with pytest.raises(InputError) as info:
        load_config(path, registry, parse_feature_gates([f"{gate}=false"]))
    assert str(info.value) == f"{path}: {message}"


def test_generic_workload_is_followed_at_either_value() -> None:
    for value in ("true", "false"):
        gates = parse_feature_gates([f"GenericWorkload={value}"])
        gates.refuse_unimplemented()
        assert gates.ignored_notice() == ""
