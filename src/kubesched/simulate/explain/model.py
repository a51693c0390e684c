"""The `kubesched explain` report (`PodExplanation`, docs/explain.md), and the explanation pieces the
simulate report reuses for `--explain` (`Explanation`, `FilterVerdict`, `NodeScores`): a JSON contract."""

from __future__ import annotations

from kubesched.simulate.report import ReportStruct


class FilterVerdict(ReportStruct):
    plugin: str
    code: str
    reasons: list[str]


class NodeScores(ReportStruct):
    plugins: dict[str, int]
    total: int


class Rejection(ReportStruct):
    """Nodes one plugin rejected for one reason: how many, and the first few names."""

    plugin: str
    code: str
    reason: str
    count: int
    nodes: list[str]


class RankedNode(ReportStruct):
    """A feasible node with its total and per-plugin (unweighted) scores."""

    node: str
    total: int
    plugins: dict[str, int]


class Explanation(ReportStruct):
    """The last attempt summarised per reason, bounded whatever the cluster's size."""

    rejected_nodes: int
    rejections: list[Rejection]
    scored_nodes: int
    top_nodes: list[RankedNode]


class NearNode(ReportStruct):
    """A node that rejected the pod, with every plugin that did and what is missing, in words."""

    node: str
    plugins: list[str]
    missing: list[str]


class Preemption(ReportStruct):
    """What DefaultPreemption (or another PostFilter plugin) did for the pod, or why not."""

    helps: bool
    node: str | None
    victims: list[str]
    message: str


class PodExplanation(ReportStruct):
    """`kubesched explain`: one scheduling cycle of one pod, in full."""

    pod: str
    scheduler_name: str
    source: str
    nodes: int
    #: Schedulable | Unschedulable | Error | Gated | Waiting
    verdict: str
    node: str | None
    running_on: str | None
    message: str | None
    #: One sentence per terse upstream text in `message` or the preemption's refusal (explain/plain.py):
    #: the message itself stays word for word.
    plain_words: list[str]
    pre_filter: FilterVerdict | None
    rejected_nodes: int
    rejections: list[Rejection]
    nearest_nodes: list[NearNode]
    preemption: Preemption | None
    scored_nodes: int
    top_nodes: list[RankedNode]
    score_weights: dict[str, int]
    notes: list[str]
    seconds: float


class GroupMember(ReportStruct):
    """One pod of an explained PodGroup and what its group's cycle made of it."""

    pod: str
    #: Bound (before the cycle) | Placed (the cycle found it a node) | FitsNowhere | NotTried |
    #: Gated | Error
    outcome: str
    node: str | None
    #: Its FailedScheduling message, word for word (None when it was placed or bound).
    message: str | None
    #: For a member that fits nowhere: the nodes that rejected it, by plugin and reason, with the
    #: members placed before it assumed on their nodes, as the cycle tried it.
    rejections: list[Rejection]
    nearest_nodes: list[NearNode]


class GroupSibling(ReportStruct):
    """Another PodGroup of the explained group's CompositePodGroup tree, as the same cycle left it."""

    pod_group: str
    #: Schedulable | Unschedulable | Error
    verdict: str
    #: Its condition's message (empty when it fitted).
    message: str
    #: Whether it failed on its own (not only with the tree): a sibling that holds the tree back.
    blocking: bool


class PodGroupExplanation(ReportStruct):
    """`kubesched explain` of a scheduling.k8s.io PodGroup: one pod-group cycle, in full."""

    pod_group: str
    #: The pod named on the command line, when the group was reached through one of its pods.
    pod: str | None
    scheduler_name: str
    source: str
    nodes: int
    #: gang | basic
    policy: str
    min_count: int
    #: Pods that name the group in the snapshot, and how many of them were bound already.
    pods: int
    bound: int
    #: Schedulable | Unschedulable | Error | Gated
    verdict: str
    #: The message of the group's PodGroupInitiallyScheduled condition, as the binary writes it
    #: (the gating plugin's message for Gated).
    message: str | None
    #: The placement (set of nodes) the cycle tried, in words.
    placement: str
    #: pod name -> node of the members the cycle found a node for (bound ones only when Schedulable).
    assignments: dict[str, str]
    #: The message's terse parts (the minCount arithmetic, ...) in plain words.
    plain_words: list[str]
    #: The members in the order the cycle tried them, then those it did not reach.
    members: list[GroupMember]
    #: With CompositePodGroup on, the root composite of the group's tree ("namespace/name"), which
    #: is scheduled whole, all or nothing; None for a group of its own.
    tree: str | None
    #: The tree's other PodGroups, as the cycle left them.
    siblings: list[GroupSibling]
    notes: list[str]
    seconds: float
