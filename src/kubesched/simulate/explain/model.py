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
