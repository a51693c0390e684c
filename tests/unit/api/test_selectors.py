"""Label selectors, node selectors, required node affinity and the kubectl selector string."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesched.api.meta import (
    LabelSelector,
    LabelSelectorRequirement,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
)
from kubesched.api.objects import Affinity, NodeAffinity, Pod, PodSpec
from kubesched.api.selectors import (
    RequiredNodeAffinity,
    compile_label_selector,
    compile_node_selector,
    format_label_selector,
    is_qualified_name,
    label_selector_matches,
    label_value_error,
    node_selector_map_matches,
    node_selector_matches,
    node_selector_term_matches,
    parse_selector_string,
    required_node_affinity_matches,
)
from kubesched.errors import InputError


def expr(key: str, operator: str, *values: str) -> LabelSelectorRequirement:
    return LabelSelectorRequirement(key=key, operator=operator, values=list(values))


def nexpr(key: str, operator: str, *values: str) -> NodeSelectorRequirement:
    return NodeSelectorRequirement(key=key, operator=operator, values=list(values))


def sel(match_labels: dict[str, str] | None = None, *exprs: LabelSelectorRequirement) -> LabelSelector:
    return LabelSelector(match_labels=match_labels or {}, match_expressions=list(exprs))


# --------------------------------------------------------------------------- label selectors


@pytest.mark.parametrize(
    ("selector", "labels", "matches"),
    [
        (None, {}, False),
        (None, {"app": "web"}, False),
        (sel(), {}, True),
        (sel(), {"app": "web"}, True),
        (sel({"app": "web"}), {"app": "web", "tier": "fe"}, True),
        (sel({"app": "web"}), {"app": "db"}, False),
        (sel({"app": "web"}), {}, False),
        (sel({"app": ""}), {}, False),  # an empty value is still a value
        (sel({"app": ""}), {"app": ""}, True),
        (sel(None, expr("env", "In", "prod", "staging")), {"env": "staging"}, True),
        (sel(None, expr("env", "In", "prod")), {"env": "dev"}, False),
        (sel(None, expr("env", "In", "prod")), {}, False),
        (sel(None, expr("env", "NotIn", "prod")), {"env": "dev"}, True),
        (sel(None, expr("env", "NotIn", "prod")), {}, True),  # absent key satisfies NotIn
        (sel(None, expr("env", "NotIn", "prod")), {"env": "prod"}, False),
        (sel(None, expr("gpu", "Exists")), {"gpu": ""}, True),
        (sel(None, expr("gpu", "Exists")), {}, False),
        (sel(None, expr("gpu", "DoesNotExist")), {}, True),
        (sel(None, expr("gpu", "DoesNotExist")), {"gpu": "a100"}, False),
        (sel({"app": "web"}, expr("env", "In", "prod")), {"app": "web", "env": "prod"}, True),
        (sel({"app": "web"}, expr("env", "In", "prod")), {"app": "web", "env": "dev"}, False),
        (sel({"app": "web"}, expr("env", "In", "prod")), {"app": "db", "env": "prod"}, False),
        (sel(None, expr("a", "Exists"), expr("b", "DoesNotExist")), {"a": "1", "b": "2"}, False),
    ],
)
def test_label_selector_matches(
    selector: LabelSelector | None, labels: dict[str, str], matches: bool
) -> None:
    assert label_selector_matches(selector, labels) is matches
    assert compile_label_selector(selector)(labels) is matches


def test_compiled_flags() -> None:
    assert compile_label_selector(None).matches_nothing
    assert not compile_label_selector(None).matches_everything
    assert compile_label_selector(sel()).matches_everything
    assert not compile_label_selector(sel({"a": "b"})).matches_everything
    assert not compile_label_selector(sel({"a": "b"})).matches_nothing


@pytest.mark.parametrize(
    ("selector", "path", "fragment"),
    [
        (sel(None, expr("env", "In")), "matchExpressions[0].values", "must be specified"),
        (
            sel(None, expr("a", "Exists"), expr("env", "NotIn")),
            "matchExpressions[1].values",
            "must be specified",
        ),
        (sel(None, expr("env", "Exists", "x")), "matchExpressions[0].values", "may not be specified"),
        (sel(None, expr("env", "DoesNotExist", "x")), "matchExpressions[0].values", "may not be specified"),
        (sel(None, expr("env", "Gt", "1")), "matchExpressions[0].operator", 'unsupported operator "Gt"'),
        (sel(None, expr("env", "in", "x")), "matchExpressions[0].operator", 'unsupported operator "in"'),
        (sel(None, expr("bad key", "Exists")), "matchExpressions[0].key", 'invalid label key "bad key"'),
        (sel(None, expr("Example.com/x", "Exists")), "matchExpressions[0].key", "prefix part"),
        (
            sel(None, expr("env", "In", "ok", "not ok")),
            "matchExpressions[0].values[1]",
            "invalid label value",
        ),
        (sel({"app": "x" * 64}), "matchLabels[app]", "no more than 63"),
        (sel({"a/b/c": "x"}), "matchLabels[a/b/c]", "at most one '/'"),
        # An odd key is quoted in the path, so the error stays one line (hypothesis found a raw newline).
        (sel({"a.b\nc": "x"}), 'matchLabels["a.b\\nc"]', "invalid label key"),
    ],
)
def test_label_selector_validation(selector: LabelSelector, path: str, fragment: str) -> None:
    with pytest.raises(InputError) as info:
        compile_label_selector(selector)
    assert info.value.path == path
    assert fragment in info.value.message
    with pytest.raises(InputError) as info:
        compile_label_selector(selector, path="spec.selector")
    assert info.value.path == f"spec.selector.{path}"


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("app", True),
        ("app.kubernetes.io/name", True),
        ("example.com/My_Key-1.2", True),
        ("a" * 63, True),
        ("a" * 64, False),
        ("", False),
        ("/app", False),
        ("example.com/", False),
        ("-app", False),
        ("app-", False),
        ("EXAMPLE.com/app", False),
        ("a/b/c", False),
        (("a" * 250) + ".com/x", False),
    ],
)
def test_qualified_names(name: str, valid: bool) -> None:
    assert is_qualified_name(name) is valid


@pytest.mark.parametrize(("value", "valid"), [("", True), ("a.b-c_D", True), ("-a", False), ("a b", False)])
def test_label_values(value: str, valid: bool) -> None:
    assert (label_value_error(value) is None) is valid


# --------------------------------------------------------------------------- node selectors


def term(
    *exprs: NodeSelectorRequirement, fields: list[NodeSelectorRequirement] | None = None
) -> NodeSelectorTerm:
    return NodeSelectorTerm(match_expressions=list(exprs), match_fields=fields or [])


def ns(*terms: NodeSelectorTerm) -> NodeSelector:
    return NodeSelector(node_selector_terms=list(terms))


ZONE_A = {"zone": "a", "cores": "16", "kubernetes.io/hostname": "n1"}


@pytest.mark.parametrize(
    ("selector", "node_name", "labels", "matches"),
    [
        (ns(), "n1", ZONE_A, False),  # no terms: nothing
        (ns(term()), "n1", ZONE_A, False),  # empty term: nothing
        (ns(term(), term(nexpr("zone", "In", "a"))), "n1", ZONE_A, True),
        (ns(term(nexpr("zone", "In", "a", "b"))), "n1", ZONE_A, True),
        (ns(term(nexpr("zone", "In", "b"))), "n1", ZONE_A, False),
        (ns(term(nexpr("zone", "In", "b")), term(nexpr("zone", "In", "a"))), "n1", ZONE_A, True),  # OR
        (ns(term(nexpr("zone", "In", "a"), nexpr("cores", "In", "8"))), "n1", ZONE_A, False),  # AND
        (ns(term(nexpr("zone", "NotIn", "b"))), "n1", ZONE_A, True),
        (ns(term(nexpr("ssd", "NotIn", "true"))), "n1", ZONE_A, True),
        (ns(term(nexpr("zone", "Exists"))), "n1", ZONE_A, True),
        (ns(term(nexpr("ssd", "DoesNotExist"))), "n1", ZONE_A, True),
        (ns(term(nexpr("cores", "Gt", "8"))), "n1", ZONE_A, True),
        (ns(term(nexpr("cores", "Gt", "16"))), "n1", ZONE_A, False),
        (ns(term(nexpr("cores", "Lt", "17"))), "n1", ZONE_A, True),
        (ns(term(nexpr("cores", "Lt", "16"))), "n1", ZONE_A, False),
        (ns(term(nexpr("cores", "Gt", "-5"))), "n1", ZONE_A, True),
        (ns(term(nexpr("zone", "Gt", "1"))), "n1", ZONE_A, False),  # label not an integer
        (ns(term(nexpr("missing", "Lt", "100"))), "n1", ZONE_A, False),
        (ns(term(nexpr("cores", "Gt", "8"))), "n1", {"cores": "+16"}, True),  # Go ParseInt accepts a sign
        (ns(term(nexpr("cores", "Gt", "8"))), "n1", {"cores": "016"}, True),
        (ns(term(nexpr("cores", "Gt", "8"))), "n1", {"cores": "99999999999999999999"}, False),  # > int64
        (ns(term(fields=[nexpr("metadata.name", "In", "n1")])), "n1", {}, True),
        (ns(term(fields=[nexpr("metadata.name", "In", "n1")])), "n2", {}, False),
        (ns(term(fields=[nexpr("metadata.name", "NotIn", "n1")])), "n2", {}, True),
        (ns(term(fields=[nexpr("metadata.name", "NotIn", "n1")])), "n1", {}, False),
        (
            ns(term(nexpr("zone", "In", "a"), fields=[nexpr("metadata.name", "In", "n2")])),
            "n1",
            ZONE_A,
            False,
        ),
        (ns(term(nexpr("zone", "In", "a"), fields=[nexpr("metadata.name", "In", "n1")])), "n1", ZONE_A, True),
    ],
)
def test_node_selector_matches(
    selector: NodeSelector, node_name: str, labels: dict[str, str], matches: bool
) -> None:
    assert node_selector_matches(selector, node_name, labels) is matches
    assert compile_node_selector(selector).errors == ()


@pytest.mark.parametrize(
    ("bad", "path", "fragment"),
    [
        (
            term(nexpr("cores", "Gt", "eight")),
            "nodeSelectorTerms[0].matchExpressions[0].values[0]",
            "integer",
        ),
        (
            term(nexpr("cores", "Gt", "1", "2")),
            "nodeSelectorTerms[0].matchExpressions[0].values",
            "exactly one",
        ),
        (term(nexpr("cores", "Lt")), "nodeSelectorTerms[0].matchExpressions[0].values", "exactly one"),
        (term(nexpr("zone", "In")), "nodeSelectorTerms[0].matchExpressions[0].values", "must be specified"),
        (term(nexpr("zone", "Equals", "a")), "nodeSelectorTerms[0].matchExpressions[0].operator", "Gt"),
        (
            term(fields=[nexpr("metadata.uid", "In", "x")]),
            "nodeSelectorTerms[0].matchFields[0].key",
            "metadata.name",
        ),
        (
            term(fields=[nexpr("metadata.name", "Exists")]),
            "nodeSelectorTerms[0].matchFields[0].operator",
            "In",
        ),
        (
            term(fields=[nexpr("metadata.name", "In", "a", "b")]),
            "nodeSelectorTerms[0].matchFields[0].values",
            "one",
        ),
    ],
)
def test_invalid_term_matches_nothing_but_others_still_count(
    bad: NodeSelectorTerm, path: str, fragment: str
) -> None:
    good = term(nexpr("zone", "In", "a"))
    matcher = compile_node_selector(ns(bad, good), path="spec.x")
    assert matcher.matches("n1", ZONE_A)
    assert [e.path for e in matcher.errors] == [f"spec.x.{path}"]
    assert fragment in matcher.errors[0].message
    assert not node_selector_matches(ns(bad), "n1", ZONE_A)
    assert not node_selector_term_matches(bad, "n1", ZONE_A)


def test_node_selector_term_matches() -> None:
    assert node_selector_term_matches(term(nexpr("zone", "In", "a")), "n1", ZONE_A)
    assert not node_selector_term_matches(term(nexpr("zone", "In", "b")), "n1", ZONE_A)
    assert not node_selector_term_matches(term(), "n1", ZONE_A)


@pytest.mark.parametrize(
    ("node_selector", "labels", "matches"),
    [
        ({}, {}, True),
        ({"disk": "ssd"}, {"disk": "ssd", "zone": "a"}, True),
        ({"disk": "ssd"}, {"disk": "hdd"}, False),
        ({"disk": "ssd", "zone": "b"}, {"disk": "ssd", "zone": "a"}, False),
        ({"disk": ""}, {}, False),
    ],
)
def test_node_selector_map(node_selector: dict[str, str], labels: dict[str, str], matches: bool) -> None:
    assert node_selector_map_matches(node_selector, labels) is matches


def affinity_pod(node_selector: dict[str, str], required: NodeSelector | None) -> Pod:
    affinity = Affinity(
        node_affinity=NodeAffinity(required_during_scheduling_ignored_during_execution=required)
    )
    return Pod(spec=PodSpec(node_selector=node_selector, affinity=affinity))


@pytest.mark.parametrize(
    ("p", "matches"),
    [
        (Pod(), True),
        (affinity_pod({}, None), True),
        (affinity_pod({"zone": "a"}, None), True),
        (affinity_pod({"zone": "b"}, None), False),
        (affinity_pod({}, ns(term(nexpr("cores", "Gt", "8")))), True),
        (affinity_pod({"zone": "a"}, ns(term(nexpr("cores", "Gt", "32")))), False),  # both must hold
        (affinity_pod({"zone": "b"}, ns(term(nexpr("cores", "Gt", "8")))), False),
        (affinity_pod({}, ns()), False),  # required but no terms
    ],
)
def test_required_node_affinity(p: Pod, matches: bool) -> None:
    assert required_node_affinity_matches(p, "n1", ZONE_A) is matches
    assert RequiredNodeAffinity(p)("n1", ZONE_A) is matches


def test_required_node_affinity_reports_errors_with_pod_paths() -> None:
    p = affinity_pod({}, ns(term(nexpr("cores", "Gt", "x"))))
    (error,) = RequiredNodeAffinity(p).errors
    assert error.path.startswith("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.")
    assert error.path.endswith("nodeSelectorTerms[0].matchExpressions[0].values[0]")


# --------------------------------------------------------------------------- selector strings


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", sel()),
        ("   ", sel()),
        ("a=b", sel({"a": "b"})),
        ("a==b", sel({"a": "b"})),
        (" a = b ", sel({"a": "b"})),
        ("a=", sel({"a": ""})),
        ("a=in", sel({"a": "in"})),  # keywords are plain values after an operator
        ("a!=b", sel(None, expr("a", "NotIn", "b"))),
        ("a in (x, y)", sel(None, expr("a", "In", "x", "y"))),
        ("a notin (x)", sel(None, expr("a", "NotIn", "x"))),
        ("a in (x,x,y)", sel(None, expr("a", "In", "x", "y"))),
        ("a in (x,)", sel(None, expr("a", "In", "x", ""))),
        ("a", sel(None, expr("a", "Exists"))),
        ("!a", sel(None, expr("a", "DoesNotExist"))),
        (
            "a=b,c!=d,e in (x,y),!f,g",
            sel(
                {"a": "b"},
                expr("c", "NotIn", "d"),
                expr("e", "In", "x", "y"),
                expr("f", "DoesNotExist"),
                expr("g", "Exists"),
            ),
        ),
        ("app.kubernetes.io/name=web", sel({"app.kubernetes.io/name": "web"})),
        ("a=b,a=b", sel({"a": "b"})),
        ("a=b,a=c", sel({"a": "b"}, expr("a", "In", "c"))),
    ],
)
def test_parse_selector_string(text: str, expected: LabelSelector) -> None:
    assert parse_selector_string(text) == expected


def test_conflicting_equalities_match_nothing() -> None:
    selector = parse_selector_string("a=b,a=c")
    assert not label_selector_matches(selector, {"a": "b"})
    assert not label_selector_matches(selector, {"a": "c"})


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("a in x", 'expected "("'),
        ("a in ()", "must be specified"),
        ("a in (x y)", 'expected a value, "," or ")"'),
        ("a in (x", "found end of string"),
        ("a,", "after ','"),
        (",a", "a label key"),
        ("a=b=c", '"," or end of string'),
        ("a=b c", '"," or end of string'),
        ("a>1", "not supported in label selectors"),
        ("a<1", "not supported in label selectors"),
        ("in", "a label key"),
        ("notin=x", "a label key"),
        ("!", "a label key"),
        ("!a=b", '"," or end of string'),
        ("a=(", "a value"),
        ("bad key=x", "an operator"),
        ("Bad.Domain/x=y", "prefix part"),
        ("a=-b", "invalid label value"),
    ],
)
def test_parse_selector_string_errors(text: str, fragment: str) -> None:
    with pytest.raises(InputError) as info:
        parse_selector_string(text)
    assert fragment in str(info.value)
    assert str(info.value).startswith(f'invalid selector "{text}"')


def test_parse_error_gives_the_position() -> None:
    with pytest.raises(InputError) as info:
        parse_selector_string("a=b, c in x")
    assert str(info.value).endswith('found "x" at position 10')


@pytest.mark.parametrize(
    ("selector", "text"),
    [
        (sel(), ""),
        (sel({"b": "2", "a": "1"}), "a=1,b=2"),
        (sel({"a": ""}), "a="),
        (sel(None, expr("e", "In", "x", "y")), "e in (x,y)"),
        (sel(None, expr("e", "NotIn", "x")), "e notin (x)"),
        (sel(None, expr("e", "In", "")), "e in (,)"),
        (sel(None, expr("e", "In", "x", "")), "e in (x,)"),
        (sel({"a": "b"}, expr("f", "DoesNotExist"), expr("g", "Exists")), "a=b,!f,g"),
    ],
)
def test_format_label_selector(selector: LabelSelector, text: str) -> None:
    assert format_label_selector(selector) == text


def test_format_refuses_unknown_operators() -> None:
    with pytest.raises(InputError):
        format_label_selector(sel(None, expr("a", "Gt", "1")))


# --------------------------------------------------------------------------- properties

names = st.from_regex(r"[a-z0-9]([-a-z0-9_.]{0,6}[a-z0-9])?", fullmatch=True).filter(
    lambda s: s not in ("in", "notin")
)
prefixes = st.from_regex(r"[a-z0-9]([-a-z0-9]{0,5}[a-z0-9])?(\.[a-z]{1,4}){0,2}", fullmatch=True)
keys = st.one_of(names, st.builds(lambda p, n: f"{p}/{n}", prefixes, names))
values = st.one_of(
    st.just(""), st.from_regex(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,6}[A-Za-z0-9])?", fullmatch=True)
)
set_values = st.lists(values, min_size=1, max_size=4, unique=True)

requirements = st.one_of(
    st.builds(lambda k, vs: expr(k, "In", *vs), keys, set_values)
    | st.builds(lambda k, vs: expr(k, "NotIn", *vs), keys, set_values)
    | st.builds(lambda k: expr(k, "Exists"), keys)
    | st.builds(lambda k: expr(k, "DoesNotExist"), keys)
)
selectors = st.builds(
    lambda labels, exprs: LabelSelector(match_labels=labels, match_expressions=exprs),
    st.dictionaries(keys, values, max_size=4),
    st.lists(requirements, max_size=4),
)


@given(selectors)
def test_selector_string_round_trip(selector: LabelSelector) -> None:
    assert parse_selector_string(format_label_selector(selector)) == selector


@given(selectors, st.dictionaries(keys, values, max_size=6))
def test_string_form_selects_the_same_labels(selector: LabelSelector, labels: dict[str, str]) -> None:
    reparsed = parse_selector_string(format_label_selector(selector))
    assert label_selector_matches(reparsed, labels) == label_selector_matches(selector, labels)


@given(st.text(max_size=40) | st.text(alphabet="ab=!(), in notin", max_size=20))
def test_garbage_selector_strings_raise_only_input_error(text: str) -> None:
    try:
        selector = parse_selector_string(text)
    except InputError as err:
        assert str(err).startswith("invalid selector")
    else:
        # Whatever parsed must survive formatting and reparsing unchanged.
        assert parse_selector_string(format_label_selector(selector)) == selector
