"""PodTopologySpread: keep the pods of a workload evenly spread over topology domains.

A topology domain is one value of a node label (`topology.kubernetes.io/zone=us-east-1a`, one
hostname, ...). A pod's `topologySpreadConstraints` say how far apart the number of matching pods
per domain may drift (`maxSkew`); `DoNotSchedule` constraints filter nodes, `ScheduleAnyway`
constraints score them. Pods without constraints get the profile's default constraints, with a
selector made from the Services and the controller (ReplicationController, ReplicaSet,
StatefulSet) that select the pod.

Batch first: the matching pods are counted once per cycle (PreFilter / PreScore), per node, and
folded into per-domain counts with `np.bincount` over the interned label ids of the NodeTable, so
Filter and Score are a handful of array operations over all nodes. Per-row counts are remembered
per NodeTable and selector (`PodRowCounts`, fed by the table's pod change log), so consecutive
pods of one workload recount only the nodes whose pods changed, without visiting the others. The
per-node `filter` / `score` forms read the same cycle state and give the same answers.

As upstream's `podtopologyspread` package: `args`, `common` (constraints, node policies, counting),
`filtering`, `scoring` and `plugin`.
"""

from kubesched.plugins.pod_topology_spread.args import (
    DO_NOT_SCHEDULE,
    LIST_DEFAULTING,
    SCHEDULE_ANYWAY,
    SYSTEM_DEFAULT_CONSTRAINTS,
    SYSTEM_DEFAULTING,
    DefaultConstraint,
    PodTopologySpreadArgs,
)
from kubesched.plugins.pod_topology_spread.filtering import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
)
from kubesched.plugins.pod_topology_spread.plugin import PodTopologySpread

__all__ = [
    "DO_NOT_SCHEDULE",
    "ERR_REASON_CONSTRAINTS_NOT_MATCH",
    "ERR_REASON_NODE_LABEL_NOT_MATCH",
    "LIST_DEFAULTING",
    "SCHEDULE_ANYWAY",
    "SYSTEM_DEFAULTING",
    "SYSTEM_DEFAULT_CONSTRAINTS",
    "DefaultConstraint",
    "PodTopologySpread",
    "PodTopologySpreadArgs",
]
