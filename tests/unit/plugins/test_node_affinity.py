"""NodeAffinity PreFilter / Filter / PreScore / Score / NormalizeScore and its args (upstream
`pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api.objects import Pod
from kubesched.errors import InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import QueueingHint, QueueingHintFn
from kubesched.framework.node_table import NodeSet, NodeTable
from kubesched.framework.registry import decode_args, instantiate
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PreFilterResult
from kubesched.plugins.node_affinity import NodeAffinity, NodeAffinityArgs
from kubesched.testing.builders import make_node, make_pod, make_table

REASON_POD = "node(s) didn't match Pod's node affinity/selector"
REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
REASON_CONFLICT = "pod affinity terms conflict"

Term = dict[str, Any]


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, "values": list(values)}


def name_field(op: str, *names: str) -> dict[str, Any]:
    return {"key": "metadata.name", "operator": op, "values": list(names)}


def term(*exprs: dict[str, Any], fields: tuple[dict[str, Any], ...] = ()) -> Term:
    return {"matchExpressions": list(exprs), "matchFields": list(fields)}


def affinity_pod(
    required: list[Term] | None = None,
    preferred: Sequence[tuple[int, Term]] = (),
    node_selector: dict[str, str] | None = None,
) -> Pod:
    node_affinity: dict[str, Any] = {}
    if required is not None:
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": required}
    if preferred:
        node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": w, "preference": t} for w, t in preferred
        ]
    spec = {"affinity": {"nodeAffinity": node_affinity}} if node_affinity else {}
    return make_pod("p", node_selector=node_selector, spec=spec)


def plugin_with(added: dict[str, Any] | None = None) -> NodeAffinity:
    args = msgspec.convert({"addedAffinity": added} if added is not None else {}, NodeAffinityArgs)
    return NodeAffinity(args)


def run_filter(
    plugin: NodeAffinity, pod: Pod, table: NodeTable, nodes: NodeSet | None = None
) -> list[Status | None]:
    """Filter through PreFilter (unless skipped) in both forms, asserting they agree."""
    nodes = nodes if nodes is not None else table.all()
    state = CycleState()
    out = plugin.pre_filter(state, pod, nodes)
    assert isinstance(out, tuple)
    per_node = [plugin.filter(state, pod, ni) for ni in nodes]
    res = plugin.filter_nodes(state, pod, nodes)
    batch = [None if c < 0 else res.statuses[c] for c in res.codes]
    assert batch == per_node
    # Without PreFilter state (PreFilter disabled) the verdicts are the same.
    assert [plugin.filter(CycleState(), pod, ni) for ni in nodes] == per_node
    fresh = plugin.filter_nodes(CycleState(), pod, nodes)
    assert [None if c < 0 else fresh.statuses[c] for c in fresh.codes] == per_node
    return per_node


def fits(plugin: NodeAffinity, pod: Pod, labels: dict[str, str], name: str = "node-1") -> bool:
    statuses = run_filter(plugin, pod, make_table([make_node(name, labels=labels)]))
    status = statuses[0]
    if status is not None:
        assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.message() == REASON_POD
    return status is None


# --------------------------------------------------------------------------- Filter

FILTER_CASES: list[tuple[str, dict[str, Any], dict[str, str], bool]] = [
    ("nothing required", {}, {}, True),
    ("nodeSelector matches", {"node_selector": {"zone": "a"}}, {"zone": "a"}, True),
    ("nodeSelector value differs", {"node_selector": {"zone": "a"}}, {"zone": "b"}, False),
    ("nodeSelector key missing", {"node_selector": {"zone": "a"}}, {}, False),
    ("nodeSelector empty value", {"node_selector": {"gpu": ""}}, {"gpu": ""}, True),
    ("nodeSelector all keys", {"node_selector": {"zone": "a", "disk": "ssd"}}, {"zone": "a"}, False),
    ("In matches", {"required": [term(expr("zone", "In", "a", "b"))]}, {"zone": "b"}, True),
    ("In no match", {"required": [term(expr("zone", "In", "a", "b"))]}, {"zone": "c"}, False),
    ("In key missing", {"required": [term(expr("zone", "In", "a"))]}, {}, False),
    ("NotIn value differs", {"required": [term(expr("zone", "NotIn", "a"))]}, {"zone": "b"}, True),
    ("NotIn value listed", {"required": [term(expr("zone", "NotIn", "a"))]}, {"zone": "a"}, False),
    ("NotIn key missing matches", {"required": [term(expr("zone", "NotIn", "a"))]}, {}, True),
    ("Exists present", {"required": [term(expr("gpu", "Exists"))]}, {"gpu": ""}, True),
    ("Exists missing", {"required": [term(expr("gpu", "Exists"))]}, {}, False),
    ("DoesNotExist missing", {"required": [term(expr("gpu", "DoesNotExist"))]}, {}, True),
    ("DoesNotExist present", {"required": [term(expr("gpu", "DoesNotExist"))]}, {"gpu": "1"}, False),
    ("Gt greater", {"required": [term(expr("cores", "Gt", "4"))]}, {"cores": "8"}, True),
    ("Gt equal", {"required": [term(expr("cores", "Gt", "4"))]}, {"cores": "4"}, False),
    ("Gt negative bound", {"required": [term(expr("cores", "Gt", "-2"))]}, {"cores": "-1"}, True),
    ("Gt label not an integer", {"required": [term(expr("cores", "Gt", "4"))]}, {"cores": "eight"}, False),
    ("Gt label missing", {"required": [term(expr("cores", "Gt", "4"))]}, {}, False),
    ("Lt smaller", {"required": [term(expr("cores", "Lt", "4"))]}, {"cores": "2"}, True),
    ("Lt equal", {"required": [term(expr("cores", "Lt", "4"))]}, {"cores": "4"}, False),
    ("Lt leading zero parses", {"required": [term(expr("cores", "Lt", "10"))]}, {"cores": "09"}, True),
    (
        "expressions ANDed",
        {"required": [term(expr("zone", "In", "a"), expr("disk", "In", "ssd"))]},
        {"zone": "a", "disk": "hdd"},
        False,
    ),
    (
        "terms ORed",
        {"required": [term(expr("zone", "In", "x")), term(expr("disk", "In", "ssd"))]},
        {"zone": "a", "disk": "ssd"},
        True,
    ),
    ("empty term matches nothing", {"required": [term()]}, {"zone": "a"}, False),
    ("no terms matches nothing", {"required": []}, {"zone": "a"}, False),
    (
        "empty term next to a matching one",
        {"required": [term(), term(expr("zone", "Exists"))]},
        {"zone": "a"},
        True,
    ),
    (
        "invalid operator: term ignored",
        {"required": [term(expr("zone", "Bogus", "a"))]},
        {"zone": "a"},
        False,
    ),
    (
        "invalid term does not spoil a valid one",
        {"required": [term(expr("zone", "In")), term(expr("zone", "In", "a"))]},
        {"zone": "a"},
        True,
    ),
    (
        "Gt with non-integer value is invalid",
        {"required": [term(expr("cores", "Gt", "x"))]},
        {"cores": "9"},
        False,
    ),
    (
        "Exists with values is invalid",
        {"required": [term(expr("zone", "Exists", "a"))]},
        {"zone": "a"},
        False,
    ),
    (
        "nodeSelector AND affinity",
        {"node_selector": {"disk": "ssd"}, "required": [term(expr("zone", "In", "a"))]},
        {"zone": "a", "disk": "hdd"},
        False,
    ),
    (
        "nodeSelector AND affinity, both hold",
        {"node_selector": {"disk": "ssd"}, "required": [term(expr("zone", "In", "a"))]},
        {"zone": "a", "disk": "ssd"},
        True,
    ),
    ("matchFields In", {"required": [term(fields=(name_field("In", "node-1"),))]}, {}, True),
    ("matchFields In other", {"required": [term(fields=(name_field("In", "node-2"),))]}, {}, False),
    ("matchFields NotIn", {"required": [term(fields=(name_field("NotIn", "node-1"),))]}, {}, False),
    ("matchFields NotIn other", {"required": [term(fields=(name_field("NotIn", "node-2"),))]}, {}, True),
    (
        "matchFields AND expressions",
        {"required": [term(expr("zone", "In", "a"), fields=(name_field("In", "node-1"),))]},
        {"zone": "b"},
        False,
    ),
]


@pytest.mark.parametrize(
    ("pod_args", "labels", "expected"), [c[1:] for c in FILTER_CASES], ids=[c[0] for c in FILTER_CASES]
)
def test_filter(pod_args: dict[str, Any], labels: dict[str, str], expected: bool) -> None:
    assert fits(NodeAffinity(), affinity_pod(**pod_args), labels) is expected


ADDED_REQUIRED = {
    "requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [term(expr("pool", "In", "batch"))]
    }
}


@pytest.mark.parametrize(
    ("labels", "pod_selector", "reason"),
    [
        ({"pool": "batch", "zone": "a"}, {"zone": "a"}, None),
        ({"pool": "web", "zone": "a"}, {"zone": "a"}, REASON_ENFORCED),
        ({"pool": "batch", "zone": "b"}, {"zone": "a"}, REASON_POD),
        ({"zone": "b"}, {"zone": "a"}, REASON_ENFORCED),  # addedAffinity is checked first
        ({"pool": "batch"}, None, None),
    ],
)
def test_added_affinity_filter(
    labels: dict[str, str], pod_selector: dict[str, str] | None, reason: str | None
) -> None:
    status = run_filter(
        plugin_with(ADDED_REQUIRED),
        affinity_pod(node_selector=pod_selector),
        make_table([make_node("n", labels=labels)]),
    )[0]
    if reason is None:
        assert status is None
    else:
        assert status is not None
        assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.message() == reason


def test_batch_filter_mixed_reasons_on_subset() -> None:
    table = make_table(
        [
            make_node("n0", labels={"pool": "batch", "zone": "a"}),
            make_node("n1", labels={"pool": "web", "zone": "a"}),
            make_node("n2", labels={"pool": "batch", "zone": "b"}),
            make_node("n3", labels={"pool": "batch", "zone": "a"}),
        ]
    )
    nodes = NodeSet(table, np.array([1, 2, 3], dtype=np.intp))
    statuses = run_filter(
        plugin_with(ADDED_REQUIRED), affinity_pod(node_selector={"zone": "a"}), table, nodes
    )
    assert [s and s.message() for s in statuses] == [REASON_ENFORCED, REASON_POD, None]


# --------------------------------------------------------------------------- PreFilter


def pre_filter(plugin: NodeAffinity, pod: Pod) -> tuple[PreFilterResult | None, Status | None]:
    table = make_table([make_node(f"n{i}") for i in range(3)])
    out = plugin.pre_filter(CycleState(), pod, table.all())
    assert isinstance(out, tuple)
    return out


def test_pre_filter_skips_pods_without_constraints() -> None:
    result, status = pre_filter(NodeAffinity(), affinity_pod(preferred=[(5, term(expr("a", "Exists")))]))
    assert result is None
    assert status is not None and status.code == Code.SKIP
    result, status = pre_filter(NodeAffinity(), make_pod("p"))
    assert status is not None and status.code == Code.SKIP


@pytest.mark.parametrize(
    "pod",
    [
        affinity_pod(node_selector={"a": "b"}),
        affinity_pod(required=[term(expr("a", "Exists"))]),
        affinity_pod(required=[]),
    ],
    ids=["nodeSelector", "required", "required without terms"],
)
def test_pre_filter_runs_for_constrained_pods(pod: Pod) -> None:
    state = CycleState()
    table = make_table([make_node("n")])
    assert NodeAffinity().pre_filter(state, pod, table.all()) == (None, None)
    assert state.get("PreFilterNodeAffinity") is not None


def test_pre_filter_runs_with_added_affinity_only() -> None:
    assert pre_filter(plugin_with(ADDED_REQUIRED), make_pod("p")) == (None, None)


@pytest.mark.parametrize(
    ("required", "names"),
    [
        ([term(fields=(name_field("In", "n1", "n2"),))], {"n1", "n2"}),
        (
            [term(fields=(name_field("In", "n1"),)), term(fields=(name_field("In", "n2", "n9"),))],
            {"n1", "n2", "n9"},
        ),
        ([term(fields=(name_field("In", "n1", "n2"), name_field("In", "n2", "n3")))], {"n2"}),
        ([term(expr("zone", "Exists"), fields=(name_field("In", "n1"),))], {"n1"}),
        # A term without a name requirement lets every node through.
        ([term(fields=(name_field("In", "n1"),)), term(expr("zone", "Exists"))], None),
        ([term(fields=(name_field("NotIn", "n1"),))], None),
        ([term()], None),
    ],
)
def test_pre_filter_narrows_to_named_nodes(required: list[Term], names: set[str] | None) -> None:
    result, status = pre_filter(NodeAffinity(), affinity_pod(required=required))
    assert status is None
    if names is None:
        assert result is None
    else:
        assert result == PreFilterResult(frozenset(names))


@pytest.mark.parametrize(
    "required",
    [
        [term(fields=(name_field("In", "n1"), name_field("In", "n2")))],
        [
            term(fields=(name_field("In", "n1"), name_field("In", "n2"))),
            term(fields=(name_field("In", "a"), name_field("In", "b"))),
        ],
    ],
)
def test_pre_filter_conflict(required: list[Term]) -> None:
    result, status = pre_filter(NodeAffinity(), affinity_pod(required=required))
    assert result is None
    assert status is not None
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == REASON_CONFLICT


# --------------------------------------------------------------------------- Score


def run_score(plugin: NodeAffinity, pod: Pod, table: NodeTable) -> tuple[Status | None, list[int], list[int]]:
    """(PreScore status, raw scores, normalized scores), asserting both Score forms agree."""
    state = CycleState()
    nodes = table.all()
    status = plugin.pre_score(state, pod, nodes)
    if status is not None:
        return status, [], []
    per_node: list[int] = []
    for ni in nodes:
        s = plugin.score(state, pod, ni)
        assert isinstance(s, int)
        per_node.append(s)
    raw = plugin.score_nodes(state, pod, nodes)
    assert raw.dtype == np.int64
    assert raw.tolist() == per_node
    normalized = raw.copy()
    assert plugin.normalize_score(state, pod, nodes, normalized) is None
    return None, per_node, normalized.tolist()


SCORE_TABLE = [
    {"zone": "a", "disk": "ssd"},
    {"zone": "a"},
    {"zone": "b", "disk": "ssd"},
    {},
]


def score_table() -> NodeTable:
    table: NodeTable = make_table([make_node(f"n{i}", labels=labels) for i, labels in enumerate(SCORE_TABLE)])
    return table


def test_score_sums_matching_preferred_weights() -> None:
    pod = affinity_pod(
        preferred=[
            (10, term(expr("zone", "In", "a"))),
            (30, term(expr("disk", "Exists"))),
            (5, term(expr("zone", "In", "a"), expr("disk", "In", "ssd"))),
            (0, term(expr("zone", "Exists"))),  # weight 0 contributes nothing
            (50, term()),  # an empty preference matches nothing
            (7, term(fields=(name_field("In", "n3"),))),
        ]
    )
    status, raw, normalized = run_score(NodeAffinity(), pod, score_table())
    assert status is None
    assert raw == [45, 10, 30, 7]
    assert normalized == [100, 22, 66, 15]  # 100*s//45


def test_added_preferred_terms_add_to_the_score() -> None:
    added = {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 20, "preference": term(expr("disk", "DoesNotExist"))}
        ]
    }
    pod = affinity_pod(preferred=[(10, term(expr("zone", "In", "a")))])
    status, raw, normalized = run_score(plugin_with(added), pod, score_table())
    assert status is None
    assert raw == [10, 30, 0, 20]
    assert normalized == [33, 100, 0, 66]
    # A pod without preferences is still scored by the added terms.
    status, raw, _ = run_score(plugin_with(added), make_pod("p"), score_table())
    assert status is None
    assert raw == [0, 20, 0, 20]


def test_pre_score_skips_without_preferences() -> None:
    status, _, _ = run_score(
        NodeAffinity(), affinity_pod(required=[term(expr("zone", "Exists"))]), score_table()
    )
    assert status is not None and status.code == Code.SKIP


def test_all_zero_scores_stay_zero() -> None:
    pod = affinity_pod(preferred=[(10, term(expr("zone", "In", "nowhere")))])
    status, raw, normalized = run_score(NodeAffinity(), pod, score_table())
    assert status is None
    assert raw == normalized == [0, 0, 0, 0]


def test_invalid_preferred_term_is_an_error() -> None:
    pod = affinity_pod(preferred=[(10, term(expr("zone", "Bogus", "a")))])
    status, _, _ = run_score(NodeAffinity(), pod, score_table())
    assert status is not None
    assert status.code == Code.ERROR
    assert status.message().startswith(
        "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference"
        ".matchExpressions[0].operator: "
    )
    # A per-node Score without PreScore state reports it too.
    got = NodeAffinity().score(CycleState(), pod, score_table().infos[0])
    assert isinstance(got, tuple) and got[1] is not None and got[1].code == Code.ERROR


def test_pre_score_with_no_nodes() -> None:
    pod = affinity_pod(preferred=[(10, term(expr("zone", "In", "a")))])
    assert NodeAffinity().pre_score(CycleState(), pod, make_table([]).all()) is None


@pytest.mark.parametrize(
    ("raw", "expected"), [([0, 0], [0, 0]), ([1, 2, 4], [25, 50, 100]), ([3, 9], [33, 100]), ([5], [100])]
)
def test_normalize_is_not_reversed(raw: list[int], expected: list[int]) -> None:
    table = make_table([make_node(f"n{i}") for i in range(len(raw))])
    scores = np.array(raw, dtype=np.int64)
    NodeAffinity().normalize_score(CycleState(), make_pod("p"), table.all(), scores)
    assert scores.tolist() == expected


# --------------------------------------------------------------------------- args


def test_default_args() -> None:
    plugin = instantiate(NodeAffinity)
    assert isinstance(plugin, NodeAffinity)
    assert plugin.args.added_affinity is None
    assert NodeAffinity.args_type is NodeAffinityArgs


def test_valid_args_decode() -> None:
    raw = {
        "addedAffinity": {
            **ADDED_REQUIRED,
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 3, "preference": term(expr("zone", "In", "a"))}
            ],
        }
    }
    args = decode_args(NodeAffinity, raw)
    assert isinstance(args, NodeAffinityArgs)
    assert args.added_affinity is not None


REQ = "args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
PREF = "args.addedAffinity.preferredDuringSchedulingIgnoredDuringExecution"


@pytest.mark.parametrize(
    ("added", "path", "message"),
    [
        (
            {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [term(expr("zone", "Bogus", "a"))]
                }
            },
            f"{REQ}[0].matchExpressions[0].operator",
            'unsupported operator "Bogus"',
        ),
        (
            {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [term(), term(expr("zone", "In"))]
                }
            },
            f"{REQ}[1].matchExpressions[0].values",
            "must be specified",
        ),
        (
            {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [term(expr("bad key", "Exists"))]
                }
            },
            f"{REQ}[0].matchExpressions[0].key",
            "invalid label key",
        ),
        (
            {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [term(expr("n", "Gt", "x"))]
                }
            },
            f"{REQ}[0].matchExpressions[0].values[0]",
            "must be an integer",
        ),
        (
            {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [term(fields=(name_field("In", "a", "b"),))]
                }
            },
            f"{REQ}[0].matchFields[0].values",
            "must be only one value",
        ),
        (
            {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 1, "preference": term(expr("zone", "Exists", "a"))}
                ]
            },
            f"{PREF}[0].preference.matchExpressions[0].values",
            "may not be specified",
        ),
        (
            {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 1, "preference": term(expr("zone", "Exists"))},
                    {"weight": 2, "preference": term(fields=(name_field("Bogus", "a"),))},
                ]
            },
            f"{PREF}[1].preference.matchFields[0].operator",
            'unsupported operator "Bogus"',
        ),
        (
            {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 101, "preference": term(expr("zone", "Exists"))}
                ]
            },
            f"{PREF}[0].weight",
            "must be in the range 1-100",
        ),
    ],
)
def test_arg_validation_errors(added: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(InputError) as info:
        decode_args(NodeAffinity, {"addedAffinity": added})
    assert info.value.path == path
    assert message in info.value.message


def test_unknown_fields_are_refused() -> None:
    with pytest.raises(msgspec.ValidationError, match="unknown field `addedAffinities`"):
        msgspec.convert({"addedAffinities": {}}, NodeAffinityArgs, strict=False)


def test_validate_reports_every_problem() -> None:
    args = msgspec.convert(
        {
            "addedAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [term(expr("a", "Bogus")), term(expr("b", "In"))]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 0, "preference": term(expr("c", "Lt"))}
                ],
            }
        },
        NodeAffinityArgs,
    )
    paths = [e.path for e in args.validate()]
    req = REQ.removeprefix("args.")
    pref = PREF.removeprefix("args.")
    assert paths == [
        f"{req}[0].matchExpressions[0].operator",
        f"{req}[1].matchExpressions[0].values",
        f"{pref}[0].weight",
        f"{pref}[0].preference.matchExpressions[0].values",
    ]


def test_invalid_args_refused_at_construction() -> None:
    args = msgspec.convert(
        {
            "addedAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [term(expr("a", "In"))]
                }
            }
        },
        NodeAffinityArgs,
    )
    with pytest.raises(InputError, match="must be specified"):
        NodeAffinity(args)


_FOO_IN_BAR = {
    "nodeSelectorTerms": [{"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar"]}]}]
}


def _node_hint(args: NodeAffinityArgs | None = None) -> QueueingHintFn:
    (reg,) = NodeAffinity(args).events_to_register()
    assert reg.hint is not None
    return reg.hint


# The cases of v1.37.2's nodeaffinity Test_isSchedulableAfterNodeChange.
@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (None, "not-a-node", QueueingHint.QUEUE),
        ("not-a-node", make_node("n"), QueueingHint.QUEUE),
        (None, make_node("n"), QueueingHint.SKIP),
        (None, make_node("n", labels={"foo": "bar"}), QueueingHint.QUEUE),
        (make_node("n"), make_node("n", cpu="8"), QueueingHint.SKIP),
        (make_node("n"), make_node("n", labels={"k": "v"}), QueueingHint.SKIP),
        (make_node("n", labels={"foo": "bar"}), make_node("n", labels={"k": "v"}), QueueingHint.SKIP),
        (make_node("n"), make_node("n", labels={"foo": "bar"}), QueueingHint.QUEUE),
        (
            make_node("n", labels={"foo": "bar"}),
            make_node("n", cpu="8", labels={"foo": "bar"}),
            QueueingHint.SKIP,
        ),
    ],
)
def test_node_hint(old: object, new: object, expected: QueueingHint) -> None:
    pod = make_pod(
        "p",
        spec={"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": _FOO_IN_BAR}}},
    )
    assert _node_hint()(pod, old, new) is expected


def test_node_hint_with_added_affinity() -> None:
    """`addedAffinity` is checked first: a node it rejects is skipped whatever the pod wants."""
    args = msgspec.convert(
        {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": _FOO_IN_BAR}}, NodeAffinityArgs
    )
    hint = _node_hint(args)
    assert hint(make_pod("p"), None, make_node("n", labels={"foo": "bar"})) is QueueingHint.QUEUE
    assert hint(make_pod("p"), None, make_node("n", labels={"foo": "baz"})) is QueueingHint.SKIP
    assert hint(make_pod("p", node_selector={"k": "v"}), None, make_node("n", labels={"foo": "bar"})) is (
        QueueingHint.SKIP
    )


# --------------------------------------------------------------------------- batch == per node

_keys = st.sampled_from(["zone", "disk", "num"])
_values = st.sampled_from(["a", "b", "1", "5", "-3", "07", "x y", ""])
_names = [f"n{i}" for i in range(5)]
labels_st = st.dictionaries(_keys, _values, max_size=3)
_label_values = st.sampled_from(["a", "b", "1", "5", "-3", "07", ""])
_valid_expr = st.one_of(
    st.builds(
        lambda k, op, vs: expr(k, op, *vs),
        _keys,
        st.sampled_from(["In", "NotIn"]),
        st.lists(_label_values, min_size=1, max_size=2),
    ),
    st.builds(expr, _keys, st.sampled_from(["Exists", "DoesNotExist"])),
    st.builds(
        lambda k, op, v: expr(k, op, v),
        _keys,
        st.sampled_from(["Gt", "Lt"]),
        st.sampled_from(["0", "3", "-2"]),
    ),
)
_any_expr = st.builds(
    lambda k, op, vs: expr(k, op, *vs),
    _keys,
    st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Bogus"]),
    st.lists(_values, max_size=2),
)
expr_st = st.one_of(_valid_expr, _valid_expr, _valid_expr, _any_expr)  # mostly valid, sometimes not
_valid_field = st.builds(
    lambda op, name: name_field(op, name),
    st.sampled_from(["In", "NotIn"]),
    st.sampled_from([*_names, "gone"]),
)
_any_field = st.builds(
    lambda op, names: name_field(op, *names),
    st.sampled_from(["In", "NotIn", "Exists"]),
    st.lists(st.sampled_from([*_names, "gone"]), max_size=2),
)
field_st = st.one_of(_valid_field, _valid_field, _any_field)
term_st = st.builds(
    lambda e, f: {"matchExpressions": e, "matchFields": f},
    st.lists(expr_st, max_size=2),
    st.lists(field_st, max_size=1),
)
required_st = st.one_of(st.none(), st.lists(term_st, max_size=3))
preferred_st = st.lists(st.tuples(st.integers(0, 100), term_st), max_size=3)
node_selector_st = st.one_of(st.none(), st.dictionaries(_keys, _values, max_size=2))


def _added_st() -> st.SearchStrategy[dict[str, Any] | None]:
    def build(required: list[Term] | None, preferred: list[tuple[int, Term]]) -> dict[str, Any]:
        added: dict[str, Any] = {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "preference": t} for w, t in preferred
            ]
        }
        if required is not None:
            added["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": required}
        return added

    return st.one_of(st.none(), st.builds(build, required_st, preferred_st))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(labels_st, max_size=5),
    required_st,
    preferred_st,
    node_selector_st,
    _added_st(),
    st.data(),
)
def test_batch_agrees_with_per_node(
    node_labels: list[dict[str, str]],
    required: list[Term] | None,
    preferred: list[tuple[int, Term]],
    node_selector: dict[str, str] | None,
    added: dict[str, Any] | None,
    data: st.DataObject,
) -> None:
    table = make_table([make_node(_names[i], labels=lab) for i, lab in enumerate(node_labels)])
    rows = sorted(data.draw(st.sets(st.integers(0, len(node_labels) - 1))) if node_labels else set())
    nodes = NodeSet(table, np.array(rows, dtype=np.intp))
    pod = affinity_pod(required=required, preferred=preferred, node_selector=node_selector)
    plugin = plugin_with(added) if added is None or not _invalid_added(added) else None
    if plugin is None:
        return  # invalid addedAffinity is refused at construction, as by config validation

    run_filter(plugin, pod, table, nodes)  # asserts the two filter forms agree

    state = CycleState()
    status = plugin.pre_score(state, pod, nodes)
    if status is not None and status.code != Code.SKIP:
        assert status.code == Code.ERROR  # an invalid preferred term of the pod
        return
    per_node: list[int] = []
    for ni in nodes:
        s = plugin.score(state, pod, ni)
        assert isinstance(s, int)
        per_node.append(s)
    assert plugin.score_nodes(state, pod, nodes).tolist() == per_node


def _invalid_added(added: dict[str, Any]) -> bool:
    try:
        plugin_with(added)
    except InputError:
        return True
    return False
