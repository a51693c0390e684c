"""Which tasks arrive, in which order and when: the trace as it is, or resized to a share of the GPUs.

The FGD paper's authors resize the workload so that the GPUs it asks for reach a chosen share of the
cluster's (their generator's "tuning" step; 130 % in the paper's Fig. 9): short of it, tasks drawn
uniformly from the trace, with replacement, are appended until the next draw would pass the target;
past it, tasks drawn at random are removed until it is met. Two details follow their generator: the
stop test adds the drawn task's share of *one* GPU (so a last multi-GPU task may pass the target by
a few GPUs), and the Fig. 9 runs first put the trace's tasks in a seeded random order (`shuffled`).
Python's generator draws other numbers than Go's, so a seed gives the same workload on every run
here, not the authors' workload for that seed.

Their simulator also renames the nodes before a run: sorted by name, each gets a seeded random rank
as a prefix (`0412-openb-node-0000`). Its scheduler gives equal best scores to the lowest node name,
so the ranks, not the trace's names, decide where ties go: a seeded random node order. Without them
the lowest names are the trace's first nodes, its smallest (2 GPUs, 64 cores), where every tie
would land. `ranked_nodes` does the same renaming (from its own seeded stream).

When tasks arrive matters to a replay, not only in which order: a pod that does not fit waits, and the
scheduler retries it every 5 minutes of virtual time (and on cluster events), as a real one would.
The trace spans five months, so at its own times (`trace`) a full cluster retries its pending pods
tens of thousands of times. `sequence` and `shuffled` keep only the order, one arrival every
millisecond: each pod is scheduled before the next arrives, as in the authors' simulator, and the
whole workload arrives before a retry is due.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, replace

from kubesched.simulate.trace.openb_csv import TraceNode, TraceTask

__all__ = ["ORDERS", "SPACING", "Arrival", "Workload", "arrange", "ranked_nodes"]

#: How tasks arrive: at their trace times, in trace order, or in a seeded random order.
ORDERS = ("trace", "sequence", "shuffled")
#: Seconds between two arrivals when only the order is kept, and after the last trace arrival.
SPACING = 0.001


@dataclass(frozen=True, slots=True)
class Arrival:
    """A task arriving at `at` seconds as the pod `name` (a drawn copy has a name of its own)."""

    name: str
    task: TraceTask
    at: float


@dataclass(frozen=True, slots=True)
class Workload:
    arrivals: list[Arrival]
    #: Tasks of the trace kept, drawn copies appended, tasks removed to meet the target.
    kept: int
    sampled: int
    removed: int

    @property
    def gpu_requested(self) -> int:
        """GPU share asked for by all arrivals (milli)."""
        return sum(a.task.gpu_total for a in self.arrivals)


def arrange(
    tasks: Sequence[TraceTask],
    gpu_capacity: int,
    *,
    target_percent: float | None = None,
    seed: int = 0,
    order: str = "trace",
) -> Workload:
    """The arrivals: `tasks` in the `order` asked for, resized to `target_percent` of `gpu_capacity`
    (milli) when given. With `trace`, tasks keep their creation times shifted to start at 0 (a list
    without `creation_time` arrives in file order); otherwise, and for drawn copies after the last
    arrival, they come SPACING apart."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}, not {order!r}")
    rng = random.Random(seed)
    kept = list(tasks)
    if order == "shuffled":
        kept.sort(key=lambda t: t.name)
        rng.shuffle(kept)
    removed = sampled = 0
    drawn: list[TraceTask] = []
    if target_percent is not None and tasks:
        target = target_percent / 100 * gpu_capacity
        total = sum(t.gpu_total for t in kept)
        while total > target and kept:
            total -= kept.pop(rng.randrange(len(kept))).gpu_total
            removed += 1
        while total < target:
            task = tasks[rng.randrange(len(tasks))]
            if total + task.gpu_milli > target:
                break
            total += task.gpu_total
            drawn.append(task)
        sampled = len(drawn)
    arrivals = _timed(kept, in_trace_time=order == "trace")
    after = max(a.at for a in arrivals) + SPACING if arrivals else 0.0
    arrivals += [Arrival(f"{t.name}-s{i}", t, _at(after, i)) for i, t in enumerate(drawn)]
    return Workload(arrivals, kept=len(kept), sampled=sampled, removed=removed)


def _timed(tasks: list[TraceTask], *, in_trace_time: bool) -> list[Arrival]:
    created = [t.created for t in tasks]
    if in_trace_time and tasks and all(c is not None for c in created):
        start = min(c for c in created if c is not None)
        # A list that is not sorted by time still arrives in time order: the replay sorts by `at`.
        return [Arrival(t.name, t, (t.created or 0.0) - start) for t in tasks]
    return [Arrival(t.name, t, _at(0.0, i)) for i, t in enumerate(tasks)]


def _at(start: float, i: int) -> float:
    """The i-th arrival after `start`, in whole milliseconds (what a scenario file keeps)."""
    return round(start + i * SPACING, 3)


def ranked_nodes(nodes: Sequence[TraceNode], seed: int) -> list[TraceNode]:
    """The nodes sorted by name, each renamed with a seeded random rank in front, zero-padded to 4
    digits at least, as the FGD authors' simulator names them (see the module's notes)."""
    ordered = sorted(nodes, key=lambda n: n.name)
    ranks = random.Random(f"openb-node-ranks-{seed}").sample(range(len(ordered)), len(ordered))
    width = max(4, len(str(len(ordered) - 1)))
    return [replace(n, name=f"{rank:0{width}d}-{n.name}") for n, rank in zip(ordered, ranks, strict=True)]
