"""DefaultPreemption: when no node fits, evict lower-priority pods from one node to make room.

PostFilter (upstream `pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go` and
`pkg/scheduler/framework/preemption/preemption.go`): runs only after the filters left no feasible node. In
order:

1. Eligibility. A pod with `preemptionPolicy: Never` never preempts. A pod already nominated to a
   node where a lower-priority victim of an earlier preemption is still terminating waits for it
   instead of evicting more pods elsewhere (unless the filters now say that node can never fit).
2. Candidates. Only nodes the filters rejected as `Unschedulable` can be helped by evicting pods;
   `UnschedulableAndUnresolvable` nodes (and nodes a PreFilter excluded) are "not helpful".
3. Dry run. From a random offset, each potential node is cloned, every pod of lower priority is
   removed, and the filters are re-run (nominated pods included). On a node that then fits, pods
   are reprieved (added back) from the most important down — first those whose eviction would
   violate a PodDisruptionBudget, then the others — as long as the pod still fits. Those left are
   the victims. The dry run stops once enough candidates are found (`minCandidateNodes*` args) and
   at least one of them violates no PDB. With GenericWorkload on, a pod under a group whose
   `disruptionMode` is `all` is reprieved or evicted with every scheduled pod of its group, on
   whatever node (upstream's getCrossNodesVictims).
4. Selection. Fewest PDB violations, then the lowest highest-victim priority, the smallest sum of
   priorities, the fewest victims, the latest start time of the most important victims, then the
   first candidate in dry-run order.
5. Preparation. Victims held at Permit are rejected; the others are deleted. Each gets a
   `Preempted` Event. Lower-priority pods nominated to the chosen node lose their nomination, as
   they may no longer fit there. The pod is nominated to the node and retried later; the
   nomination keeps lower-priority pods from taking the room in the meantime.

Live mode preempts asynchronously, as v1.37's SchedulerAsyncPreemption (on by default): the
evictions run on a background thread the cluster port provides, and until they are done the
plugin's PreEnqueue holds the pod back. The simulator evicts within the cycle, in virtual time.

The plugin draws its random offset from its own generator, seeded from the scheduler's seed, so a
simulation is reproducible and preemption does not shift the scheduler's tie-breaking sequence.

As upstream: `args`; `candidates`, `dry_run` and `executor` (upstream's framework/preemption);
`plugin` (upstream's defaultpreemption).
"""

from kubesched.plugins.default_preemption.args import DefaultPreemptionArgs
from kubesched.plugins.default_preemption.candidates import (
    Candidate,
    disruption_budgets,
    pick_one_node_for_preemption,
    potential_rows,
    start_time,
)
from kubesched.plugins.default_preemption.dry_run import NO_VICTIMS
from kubesched.plugins.default_preemption.executor import WAITING_FOR_PREEMPTION
from kubesched.plugins.default_preemption.plugin import (
    NOT_ELIGIBLE_NEVER,
    NOT_ELIGIBLE_TERMINATING,
    NOT_HELPFUL,
    DefaultPreemption,
)

__all__ = [
    "NOT_ELIGIBLE_NEVER",
    "NOT_ELIGIBLE_TERMINATING",
    "NOT_HELPFUL",
    "NO_VICTIMS",
    "WAITING_FOR_PREEMPTION",
    "Candidate",
    "DefaultPreemption",
    "DefaultPreemptionArgs",
    "disruption_budgets",
    "pick_one_node_for_preemption",
    "potential_rows",
    "start_time",
]
