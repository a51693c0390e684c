"""Feature gates, taken on `--feature-gates` as kube-scheduler v1.37.2 takes them.

The syntax and checks are the binary's: `A=true,B=false`, the flag repeatable, an optional `kube:`
prefix, Go's boolean spellings, `AllAlpha`/`AllBeta`, gates locked to their default, and gate
dependencies, with the binary's error texts. Every gate the binary registers is known
(`gate_table`, generated from the v1.37.2 sources); an unknown name gets a did-you-mean.

What kubesched does with a known gate:

* the scheduler does not read it (kubelet, API server, controller gates), or reading it does not
  change a decision (the zpages endpoints, a fast path): accepted and ignored, so a kube-scheduler
  command line moves over unchanged (the CLI logs them once, `ignored_notice`);
* the scheduler reads it and kubesched follows both values (`FOLLOWED`: config defaulting and
  validation as `GATED_ARGS` says, the plugins and the scheduler through the registry's
  `features`);
* the scheduler reads it and a value other than v1.37's default changes what it decides: kubesched
  implements the default only (`DEFAULT_ONLY`), so `refuse_unimplemented` refuses the other value
  with one line naming the gate rather than schedule differently from the binary without saying so.

`FeatureGates.enabled` answers for every gate; config defaulting reads it (the default profile
follows the gates as the binary's `--write-config-to` does).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kubesched.config.gate_table import DEPENDENCIES, GATES
from kubesched.errors import InputError, did_you_mean

__all__ = ["DEFAULT_GATES", "FLAG", "FeatureGates", "parse_feature_gates"]

FLAG = "--feature-gates"
ALL_ALPHA = "AllAlpha"
ALL_BETA = "AllBeta"
#: component-base's two switches: every alpha (beta) gate not set by name takes their value.
_SPECIAL = {ALL_ALPHA: "alpha", ALL_BETA: "beta"}
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})

#: Gates kube-scheduler v1.37.2 reads whose non-default value changes its decisions (or the objects
#: it writes) and that kubesched runs at the default only: what the other value would need.
DEFAULT_ONLY: Mapping[str, str] = {
    "CoordinatedLeaderElection": "coordinated leader election (LeaseCandidate objects)",
    "DRAConsumableCapacity": "switching off consumable device capacity in DynamicResources",
    "DRADerivedAttributes": "derived device attributes in DynamicResources",
    "DRADeviceBindingConditions": "switching off device binding conditions in DynamicResources",
    "DRADeviceCompatibilityGroups": "device compatibility groups in DynamicResources",
    "DRADeviceTaintRules": "switching off DeviceTaintRule objects in DynamicResources",
    "DRADeviceTaints": "switching off device taints in DynamicResources",
    "DRAFractionalCapacityRange": "fractional capacity ranges in DynamicResources",
    "DRAListTypeAttributes": "list-typed device attributes in DynamicResources",
    "DRANodeAllocatableResources": "node-allocatable DRA resources",
    "DRAOptionalNodeOperations": "optional node operations in DynamicResources",
    "DRAPartitionableDevices": "switching off partitionable devices in DynamicResources",
    "InPlacePodLevelResourcesVerticalScaling": "switching off in-place resizes of pod-level resources",
    "InPlacePodVerticalScalingSchedulerPreemption": "the DeferredPodScheduling plugin",
    "MatchLabelKeysInPodTopologySpread": "switching off matchLabelKeys in PodTopologySpread",
    "NominatedNodeNameForExpectation": "switching off nominatedNodeName as a binding expectation",
    "PodLevelResources": "switching off pod-level resources",
    "SchedulerAsyncPreemption": "synchronous preemption",
    "SchedulerPopFromBackoffQ": "a queue that never pops from the backoff queue",
    "SchedulerPreQueueingHints": "pre-queueing hints",
    "TaintTolerationComparisonOperators": "the Gt and Lt toleration operators",
    "VolumeLimitScaling": "switching off volume limit scaling in NodeVolumeLimits",
}


#: Gates kube-scheduler v1.37.2 reads that kubesched follows at either value.
FOLLOWED = frozenset(
    {
        "CompositePodGroup",
        "DRASchedulerFilterTimeout",
        "DRAWorkloadResourceClaims",
        "GenericWorkload",
        "OpportunisticBatching",
        "PodGroupPreemptionPolicy",
        "StorageCapacityScoring",
        "TopologyAwareWorkloadScheduling",
        # Read by kube-controller-manager's Job controller: simulate's and replay's Job controller
        # follows it (a Job's Workload and PodGroup); the live scheduler has nothing to do for it.
        "WorkloadWithJob",
    }
)


def _spec(name: str) -> tuple[str, bool, bool]:
    """(stage, default, locked) of a gate, AllAlpha and AllBeta included (alpha/beta, off)."""
    return (_SPECIAL[name], False, False) if name in _SPECIAL else GATES[name]


def _go(value: bool) -> str:
    return "true" if value else "false"


@dataclass(frozen=True)
class FeatureGates:
    """The gates as set on the command line (`explicit`, after AllAlpha/AllBeta expansion) over
    v1.37.2's defaults. `FeatureGates()` is the binary run without `--feature-gates`."""

    explicit: Mapping[str, bool] = field(default_factory=dict)
    #: The gates named on the command line, in order, with their values (for notices).
    given: tuple[tuple[str, bool], ...] = ()

    def enabled(self, name: str) -> bool:
        """Whether gate `name` is on (KeyError for a name the binary does not know)."""
        if name in self.explicit:
            return self.explicit[name]
        return _spec(name)[1]

    def refuse_unimplemented(self) -> None:
        """InputError naming the first gate set away from v1.37's default that changes scheduling
        and that kubesched does not implement."""
        for name in sorted(DEFAULT_ONLY):
            default = GATES[name][1]
            if self.enabled(name) != default:
                by = "" if name in dict(self.given) else " (by AllAlpha/AllBeta)"
                raise InputError(
                    f"{name}={_go(not default)}{by} changes scheduling and kubesched does not implement it "
                    f"({DEFAULT_ONLY[name]}); kubesched runs {name}={_go(default)}, v1.37's default",
                    source=FLAG,
                )

    def ignored_notice(self) -> str:
        """One line naming the gates given that kubesched accepts and ignores ("" if none). A gate
        locked to its default is not among them: setting it changes nothing, in the binary either."""
        ignored = [
            f"{name}={_go(value)}"
            for name, value in self.given
            if not (name in DEFAULT_ONLY or name in FOLLOWED or name in _SPECIAL or GATES[name][2])
        ]
        if not ignored:
            return ""
        return "feature gates accepted and ignored (they do not change scheduling): " + ", ".join(ignored)


DEFAULT_GATES = FeatureGates()


def parse_feature_gates(values: Iterable[str]) -> FeatureGates:
    """The gates of the `--feature-gates` values given (the flag may repeat), checked as the binary
    checks them; InputError with the binary's text (plus a did-you-mean) otherwise."""
    pairs = _pairs(values)
    unknown = [name for name, _ in pairs if name not in GATES and name not in _SPECIAL]
    if unknown:
        raise InputError(
            f"unrecognized feature gate: {unknown[0]}{did_you_mean(unknown[0], GATES)}", source=FLAG
        )
    wanted = dict(pairs)
    errors = []
    for name, value in wanted.items():
        _stage, default, locked = _spec(name)
        if locked and value != default:
            errors.append(
                f"cannot set feature gate {name} to {_go(value)}, feature is locked to {_go(default)}"
            )
    if errors:
        raise InputError(", ".join(errors) if len(errors) == 1 else f"[{', '.join(errors)}]", source=FLAG)
    explicit = {name: value for name, value in wanted.items() if name not in _SPECIAL}
    for special, stage in _SPECIAL.items():
        if special in wanted:
            for name, (gate_stage, _default, _locked) in GATES.items():
                if gate_stage == stage:
                    explicit.setdefault(name, wanted[special])
    gates = FeatureGates(explicit=explicit, given=tuple(wanted.items()))
    missing = [
        f"{name} is enabled, but depends on features that are disabled: [{' '.join(off)}]"
        for name, deps in sorted(DEPENDENCIES.items())
        if gates.enabled(name) and (off := [d for d in deps if not gates.enabled(d)])
    ]
    if missing:
        raise InputError(missing[0] if len(missing) == 1 else f"[{', '.join(missing)}]", source=FLAG)
    return gates


def _pairs(values: Iterable[str]) -> list[tuple[str, bool]]:
    """`name=bool` pairs of every value, in order; `kube:` prefixes (all or none) allowed."""
    items: list[tuple[str, str]] = []
    for value in values:
        for pair in value.split(","):
            if not pair:
                continue
            component, colon, rest = pair.partition(":")
            items.append((component.strip(), rest.strip()) if colon else ("", pair.strip()))
    components = {component for component, _ in items}
    for component in sorted(components - {"", "kube"}):
        raise InputError(f"component not registered: {component}", source=FLAG)
    if components == {"", "kube"}:
        raise InputError(
            "set kube feature gates with default empty prefix or kube: prefix consistently, do not mix use",
            source=FLAG,
        )
    out: list[tuple[str, bool]] = []
    for _component, item in items:
        key, eq, raw = item.partition("=")
        key, raw = key.strip(), raw.strip()
        if not eq:
            raise InputError(f"missing bool value for {key}", source=FLAG)
        if raw not in _TRUE and raw not in _FALSE:
            raise InputError(
                f'invalid value of {key}={raw}, err: strconv.ParseBool: parsing "{raw}": invalid syntax',
                source=FLAG,
            )
        out.append((key, raw in _TRUE))
    return out
