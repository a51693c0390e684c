"""NodeFilterLabel: reject nodes carrying given labels — the classic custom Filter plugin.

This is the worked example of the plugin-writing guide (docs/plugins/NodeFilterLabel.md). The
per-node `filter` is what a plugin author writes first; `filter_nodes` is the optional batch form
that evaluates every node at once from the NodeTable's label columns, with the same verdicts;
`sign_pod` says which parts of the pod the verdicts read (none).
"""

from __future__ import annotations

from typing import ClassVar, Literal

import msgspec
import numpy as np

from kubesched.api.objects import Pod
from kubesched.api.openapi import map_key_path
from kubesched.api.selectors import label_value_error, qualified_name_error
from kubesched.errors import InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, Resource
from kubesched.framework.interfaces import BatchFilterPlugin, EnqueueExtensions, FilterPlugin, RepeatsFailures
from kubesched.framework.node_info import NodeInfo
from kubesched.framework.node_table import BatchFilterResult, NodeSet
from kubesched.framework.signature import SignFragment
from kubesched.framework.status import Status

__all__ = ["NodeFilterLabel", "NodeFilterLabelArgs"]


def _default_labels() -> dict[str, list[str]]:
    return {"node": ["hello"]}


class NodeFilterLabelArgs(
    msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True, frozen=True
):
    """pluginConfig args: label key -> values to reject; an empty list rejects any value of the key."""

    labels: dict[str, list[str]] = msgspec.field(default_factory=_default_labels)

    def validate(self) -> list[InputError]:
        errors: list[InputError] = []
        for key, values in self.labels.items():
            key_path = map_key_path("labels", key)
            problem = qualified_name_error(key)
            if problem is not None:
                errors.append(InputError(f"invalid label key {key!r}: {problem}", path=key_path))
            for i, value in enumerate(values):
                problem = label_value_error(value)
                if problem is not None:
                    errors.append(
                        InputError(f"invalid label value {value!r}: {problem}", path=f"{key_path}[{i}]")
                    )
        return errors


def _reason(key: str, value: str | None = None) -> Status:
    text = f"node(s) had label {key}" if value is None else f"node(s) had label {key}={value}"
    return Status.unschedulable_and_unresolvable(text)


class NodeFilterLabel(FilterPlugin, BatchFilterPlugin, EnqueueExtensions, RepeatsFailures):
    """Filter: reject nodes labelled with a configured key=value (default `node=hello`).

    Args map label keys to values to reject (`{"node": ["hello"]}` by default); an empty value list
    rejects every node that has the key. The rejection is UnschedulableAndUnresolvable — evicting
    pods would not remove a label — with the reason `node(s) had label <key>=<value>` (or
    `node(s) had label <key>`), naming the first configured key that matched.
    """

    name: ClassVar[str] = "NodeFilterLabel"
    #: Its Filter verdict on a node reads only the pod and that node (`NodeLocalFilterPlugin`).
    filter_reads_only_the_node: ClassVar[Literal[True]] = True
    #: What it reads through `handle.lister` (what `kubesched explain` snapshots for it).
    listed_kinds: ClassVar[tuple[str, ...]] = ()
    args_type: ClassVar[type[NodeFilterLabelArgs]] = NodeFilterLabelArgs

    def __init__(self, args: NodeFilterLabelArgs | None = None) -> None:
        self.labels = (args if args is not None else NodeFilterLabelArgs()).labels

    def sign_pod(self, pod: Pod) -> list[SignFragment]:
        """KEP-5598: no part of the pod, which its verdict never reads. Without `sign_pod` the
        plugin would keep every pod of its profile out of batching and out of the filter memo's
        sharing of verdicts between pods of one shape."""
        return []

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        for key, rejected in self.labels.items():
            value = node_info.labels.get(key)
            if value is None:
                continue  # the node does not have this label
            if not rejected:
                return _reason(key)  # any value of this key is rejected
            if value in rejected:
                return _reason(key, value)
        return None

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> BatchFilterResult:
        codes = np.full(len(nodes), -1, dtype=np.int32)
        statuses: list[Status] = []
        for key, rejected in self.labels.items():
            column = nodes.table.label_column(key)
            ids = column.ids[nodes.rows]
            undecided = codes < 0  # the first matching key decides, as in `filter`
            if not rejected:
                hit = undecided & (ids >= 0)
                if hit.any():
                    codes[hit] = len(statuses)
                    statuses.append(_reason(key))
                continue
            for value in dict.fromkeys(rejected):
                value_id = column.index.get(value)
                if value_id is None:
                    continue  # no node has this value
                hit = undecided & (ids == value_id)
                if hit.any():
                    codes[hit] = len(statuses)
                    statuses.append(_reason(key, value))
        return BatchFilterResult(codes, statuses)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # A node added, or relabelled, may no longer carry a rejected label.
        return [
            ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL))
        ]
