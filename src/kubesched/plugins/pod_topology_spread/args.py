"""PodTopologySpread's pluginConfig args (kind PodTopologySpreadArgs), its default constraints and
the constraint vocabulary (whenUnsatisfiable, defaulting types, node policies)."""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from kubesched.api.meta import LabelSelector
from kubesched.api.selectors import (
    qualified_name_error,
)
from kubesched.errors import InputError

__all__ = [
    "DO_NOT_SCHEDULE",
    "HONOR",
    "IGNORE",
    "LABEL_HOSTNAME",
    "LABEL_ZONE",
    "LIST_DEFAULTING",
    "SCHEDULE_ANYWAY",
    "SYSTEM_DEFAULTING",
    "SYSTEM_DEFAULT_CONSTRAINTS",
    "DefaultConstraint",
    "PodTopologySpreadArgs",
]

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"
HONOR = "Honor"
IGNORE = "Ignore"

LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_ZONE = "topology.kubernetes.io/zone"


class DefaultConstraint(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """A `TopologySpreadConstraint` applied to pods that have none; its selector comes from the pod.

    Every field has a zero default (as upstream decodes it) so that a missing `maxSkew` or
    `topologyKey` is reported by validation with its path instead of failing the decoding.
    """

    max_skew: int = 0
    topology_key: str = ""
    when_unsatisfiable: str = ""
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] = []


#: What `defaultingType: System` spreads by: soft spreading over hosts (maxSkew 3) and zones (5).
SYSTEM_DEFAULT_CONSTRAINTS: tuple[DefaultConstraint, ...] = (
    DefaultConstraint(max_skew=3, topology_key=LABEL_HOSTNAME, when_unsatisfiable=SCHEDULE_ANYWAY),
    DefaultConstraint(max_skew=5, topology_key=LABEL_ZONE, when_unsatisfiable=SCHEDULE_ANYWAY),
)

_ACTIONS = (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY)
_DEFAULTING_TYPES = (SYSTEM_DEFAULTING, LIST_DEFAULTING)


def _supported(values: Iterable[str]) -> str:
    return ", ".join(f'"{v}"' for v in values)


class PodTopologySpreadArgs(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """pluginConfig args (kind PodTopologySpreadArgs).

    `defaultingType: System` (the default) uses the built-in default constraints and requires
    `defaultConstraints` to be empty; `List` uses `defaultConstraints` (empty: no defaults).
    """

    default_constraints: list[DefaultConstraint] = []
    defaulting_type: str = SYSTEM_DEFAULTING

    def __post_init__(self) -> None:
        if not self.defaulting_type:  # upstream defaulting: unset means System
            self.defaulting_type = SYSTEM_DEFAULTING

    def validate(self) -> list[InputError]:
        """Field errors with paths relative to the args, e.g. `defaultConstraints[0].maxSkew`."""
        errors: list[InputError] = []
        if self.defaulting_type not in _DEFAULTING_TYPES:
            errors.append(
                InputError(
                    f'unsupported value "{self.defaulting_type}": supported values: '
                    f"{_supported(_DEFAULTING_TYPES)}",
                    path="defaultingType",
                )
            )
        elif self.defaulting_type == SYSTEM_DEFAULTING and self.default_constraints:
            errors.append(
                InputError(
                    'must be "List" when defaultConstraints are not empty ("System" uses the built-in ones)',
                    path="defaultingType",
                )
            )
        seen: set[tuple[str, str]] = set()
        for i, c in enumerate(self.default_constraints):
            path = f"defaultConstraints[{i}]"
            if c.max_skew <= 0:
                errors.append(InputError("must be greater than zero", path=f"{path}.maxSkew"))
            if not c.topology_key:
                errors.append(InputError("can not be empty", path=f"{path}.topologyKey"))
            else:
                why = qualified_name_error(c.topology_key)
                if why is not None:
                    errors.append(
                        InputError(f'invalid label key "{c.topology_key}": {why}', path=f"{path}.topologyKey")
                    )
            if not c.when_unsatisfiable:
                errors.append(InputError("can not be empty", path=f"{path}.whenUnsatisfiable"))
            elif c.when_unsatisfiable not in _ACTIONS:
                errors.append(
                    InputError(
                        f'unsupported value "{c.when_unsatisfiable}": '
                        f"supported values: {_supported(_ACTIONS)}",
                        path=f"{path}.whenUnsatisfiable",
                    )
                )
            if c.label_selector is not None:
                errors.append(
                    InputError(
                        "constraint must not define a selector, as they deduced for each pod",
                        path=f"{path}.labelSelector",
                    )
                )
            pair = (c.topology_key, c.when_unsatisfiable)
            if pair in seen:
                errors.append(InputError(f'duplicate value "{{{pair[0]}, {pair[1]}}}"', path=path))
            seen.add(pair)
        return errors
