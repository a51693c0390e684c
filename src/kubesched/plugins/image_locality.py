"""ImageLocality: prefer nodes that already hold the pod's container images.

Pulling a large image delays the pod's start, so a node that has it scores higher (upstream
`pkg/scheduler/framework/plugins/imagelocality/image_locality.go`). Each container (init containers included)
whose image is on the node adds `int(size * nodesWithImage / totalNodes)`: the spread factor keeps the
scheduler from piling pods onto the few nodes that happen to hold an image everyone else would pull anyway.
The sum is clamped to [23 MiB, 1000 MiB x containers] and mapped linearly onto 0..100, so small images do not
count at all.

Image names are compared as the node reports them, after appending `:latest` to a pod image that has
no tag or digest. The image summary (size, number of nodes) covers the whole snapshot; it is built
once per snapshot and reused while the nodes do not change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from kubesched.api.objects import Pod
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import BatchScorePlugin, Handle, ScorePlugin
from kubesched.framework.node_info import NodeInfo
from kubesched.framework.node_table import NodeSet, NodeTable
from kubesched.framework.signature import SignFragment, images_fragment
from kubesched.framework.status import Status
from kubesched.framework.types import MAX_NODE_SCORE
from kubesched.framework.uniform_scores import uniform

__all__ = [
    "MAX_CONTAINER_THRESHOLD",
    "MIN_THRESHOLD",
    "ImageLocality",
    "image_priority",
    "normalized_image_name",
]

IntArray = npt.NDArray[np.int64]
IndexArray = npt.NDArray[np.intp]

MIB = 1024 * 1024
#: Below this the images on a node are too small to matter: score 0.
MIN_THRESHOLD = 23 * MIB
#: Per container: beyond this an image is "big" and the score is already 100.
MAX_CONTAINER_THRESHOLD = 1000 * MIB

STATE_KEY = "PreScoreImageLocality"


def normalized_image_name(name: str) -> str:
    """`name:latest` unless the name has a tag or digest (a `:` after the last `/`).

    A registry port (`host:5000/app`) is before the last `/`, so it is not mistaken for a tag.
    """
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def image_priority(total: int, num_containers: int) -> int:
    """Map the summed image scores onto 0..100 between the two thresholds."""
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    if total < MIN_THRESHOLD:
        total = MIN_THRESHOLD
    elif total > max_threshold:
        total = max_threshold
    return MAX_NODE_SCORE * (total - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)


def _pod_images(pod: Pod) -> list[str]:
    return [normalized_image_name(c.image) for c in (*pod.spec.init_containers, *pod.spec.containers)]


@dataclass(frozen=True, slots=True)
class _ImageIndex:
    """Every image name in a snapshot: its size and the table rows of the nodes that have it.

    The size is that of the first node (in table order) listing the name, as upstream keeps one
    summary per image name for the whole cache.
    """

    node_generation: int
    images: dict[str, tuple[int, IndexArray]]

    @classmethod
    def build(cls, table: NodeTable) -> _ImageIndex:
        sizes: dict[str, int] = {}
        rows: dict[str, list[int]] = {}
        for i, ni in enumerate(table.infos):
            for image in ni.node.status.images:
                for name in image.names:
                    on = rows.setdefault(name, [])
                    if not on or on[-1] != i:  # a name listed twice on one node counts once
                        on.append(i)
                    sizes.setdefault(name, image.size_bytes)
        images = {name: (sizes[name], np.asarray(r, dtype=np.intp)) for name, r in rows.items()}
        return cls(table.node_generation, images)

    def current_for(self, table: NodeTable) -> bool:
        """True while no Node object of the table changed (images only change with them)."""
        return self.node_generation == table.node_generation


@dataclass(frozen=True, slots=True)
class _ScoreState:
    """Per distinct pod image present somewhere: its spread-scaled score and the rows holding it."""

    contributions: dict[str, tuple[int, IndexArray]]
    images: tuple[str, ...]
    table_size: int

    def clone(self) -> _ScoreState:
        return self


class ImageLocality(ScorePlugin, BatchScorePlugin):
    """Score nodes by the total (spread-scaled) size of the pod's images they already have."""

    name: ClassVar[str] = "ImageLocality"
    #: What it reads through `handle.lister` (what `kubesched explain` snapshots for it).
    listed_kinds: ClassVar[tuple[str, ...]] = ()

    def sign_pod(self, pod: Pod) -> list[SignFragment] | Status:
        """KEP-5598: the parts of the pod this plugin's answers depend on."""
        return [images_fragment(pod, normalized_image_name)]

    def __init__(self, handle: Handle | None = None) -> None:
        self.handle = handle
        self._index: tuple[NodeTable, _ImageIndex] | None = None

    def _image_index(self, table: NodeTable) -> _ImageIndex:
        cached = self._index
        if cached is not None and cached[0] is table and cached[1].current_for(table):
            return cached[1]
        index = _ImageIndex.build(table)
        self._index = (table, index)
        return index

    def _state(self, state: CycleState, pod: Pod, table: NodeTable) -> _ScoreState:
        s = state.get(STATE_KEY)
        if isinstance(s, _ScoreState):
            return s
        index = self._image_index(table)
        total_nodes = len(table)
        contributions: dict[str, tuple[int, IndexArray]] = {}
        images = _pod_images(pod)
        for name in images:
            entry = index.images.get(name)
            if entry is not None and name not in contributions:
                size, rows = entry
                spread = len(rows) / total_nodes
                contributions[name] = (int(float(size) * spread), rows)
        computed = _ScoreState(contributions, tuple(images), len(table))
        state.write(STATE_KEY, computed)
        return computed

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int | tuple[int, Status | None]:
        if self.handle is None and not isinstance(state.get(STATE_KEY), _ScoreState):
            return 0, Status.as_error("ImageLocality needs the node snapshot to count nodes per image")
        s = self._state(state, pod, self.handle.snapshot if self.handle is not None else NodeTable([]))
        on_node = {name for image in node_info.node.status.images for name in image.names}
        total = sum(
            s.contributions[name][0] for name in s.images if name in on_node and name in s.contributions
        )
        return image_priority(total, len(s.images))

    def score_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> IntArray:
        """One numpy pass per distinct image of the pod, not per node."""
        s = self._state(state, pod, nodes.table)
        if not s.contributions:  # no node has any of the pod's images: one score for all
            return uniform(len(nodes), image_priority(0, len(s.images)))
        totals = np.zeros(len(nodes), dtype=np.int64)
        table_size = len(nodes.table)
        for name in s.images:
            entry = s.contributions.get(name)
            if entry is None:
                continue
            amount, rows = entry
            has = np.zeros(table_size, dtype=np.bool_)
            has[rows] = True
            totals += np.where(has[nodes.rows], amount, 0)
        return _priorities(totals, len(s.images))


def _priorities(totals: IntArray, num_containers: int) -> IntArray:
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    clamped = np.where(totals < MIN_THRESHOLD, MIN_THRESHOLD, np.minimum(totals, max_threshold))
    out: IntArray = (MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)).astype(
        np.int64
    )
    return out
