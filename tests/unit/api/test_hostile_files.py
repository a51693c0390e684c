"""Hostile object and config files: nesting too deep for the parsers, alias bombs, integers and
quantities out of range, negative or non-finite capacities, the same object twice. Each is one
InputError naming the file and where in it; nothing crashes, nothing blows up in memory."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api.loader import load_documents, load_paths
from kubesched.api.safe_yaml import MAX_DEPTH, check_yaml, depth_bound
from kubesched.api.yaml_lines import distinct_lines
from kubesched.config import decode_config
from kubesched.errors import InputError
from kubesched.plugins import default_registry

LAUGHS = "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 9) + "]\n" for i in range(8)
)
BOMB = 'kind: Pod\na: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + LAUGHS
NODE = "kind: Node\nmetadata: {{name: n1}}\nstatus:\n  allocatable: {{cpu: {cpu}, memory: 1Gi, pods: 110}}\n"


def load(text: str, source: str = "f.yaml") -> InputError:
    with pytest.raises(InputError) as info:
        load_documents(text, source)
    assert "\n" not in str(info.value)
    return info.value


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        (
            "a: " + "[" * 200_000 + "]" * 200_000,
            "line 1, column 515",
            f"nested deeper than {MAX_DEPTH} levels",
        ),
        ("- " * 5000 + "x\n", "line 1, column 1025", "nested deeper than"),
        (
            "".join(" " * i + f"k{i}:\n" for i in range(2000)) + " " * 2000 + "v: 1\n",
            "line 513",
            "nested deeper",
        ),
        (BOMB, "line 7", "aliases expand the document more than 10-fold"),
    ],
    ids=["flow", "compact-sequences", "block-mappings", "billion-laughs"],
)
def test_yaml_too_deep_or_exploding_is_refused_before_libyaml_composes_it(
    text: str, where: str, message: str
) -> None:
    err = load(text)
    assert err.source == "f.yaml" and err.path.startswith(where) and message in err.message


def test_json_nested_too_deeply_is_one_line() -> None:
    err = load('{"kind": "Pod", "x": ' + "[" * 100_000 + "]" * 100_000 + "}", "f.json")
    assert str(err) == "f.json: invalid JSON: nested too deeply"


def test_ordinary_anchors_and_moderate_nesting_still_load() -> None:
    text = (
        "kind: Pod\nmetadata: {name: p, labels: &l {app: web}}\nspec:\n"
        "  containers:\n  - {name: a, resources: &r {requests: {cpu: 100m}}}\n"
        "  - {name: b, resources: *r}\n  nodeSelector: *l\n"
    )
    (pod,) = load_documents(text, "f.yaml")
    assert pod.spec.node_selector == {"app": "web"}
    nested = (
        "kind: Pod\nmetadata: {name: p, annotations: {x: '" + "[" * 5000 + "'}}\n"
    )  # brackets in a string
    assert len(load_documents(nested, "f.yaml")) == 1


@pytest.mark.parametrize(
    ("cpu", "message"),
    [
        ("'-4'", "status.allocatable[cpu]: must be greater than or equal to 0"),
        (".inf", 'status.allocatable[cpu]: invalid quantity "inf"'),
        (".nan", 'status.allocatable[cpu]: invalid quantity "nan"'),
        ("'1e99999'", "out of range"),
        ("'" + "9" * 5000 + "'", "out of range"),
    ],
)
def test_node_capacities_must_be_finite_and_non_negative(cpu: str, message: str) -> None:
    assert message in str(load(NODE.format(cpu=cpu)))


def test_an_odd_resource_name_in_a_bad_capacity_is_quoted_so_the_error_stays_one_line() -> None:
    err = load('kind: Node\nmetadata: {name: n1}\nstatus:\n  capacity: {"a.b\\nc": "-1"}\n')
    assert str(err) == "f.yaml: status.capacity[\"a.b\\nc\"]: must be greater than or equal to 0, got '-1'"


def test_integers_out_of_their_kubernetes_range_name_the_field() -> None:
    err = load(
        "kind: Pod\nmetadata: {name: p}\nspec: {priority: 99999999999999999999, containers: [{name: c}]}\n"
    )
    assert str(err) == "f.yaml: spec.priority: expected int <= 2147483647"


def test_the_same_object_twice_is_an_error_naming_both_places(tmp_path: Path) -> None:
    pod = "kind: Pod\nmetadata: {{name: p{ns}}}\nspec: {{containers: [{{name: c}}]}}\n"
    (tmp_path / "a.yaml").write_text(pod.format(ns=""))
    (tmp_path / "b.yaml").write_text(
        "kind: List\nitems:\n- "
        + NODE.format(cpu=1).replace("\n", "\n  ")
        + "\n- "
        + pod.format(ns=", namespace: default").replace("\n", "\n  ")
    )
    with pytest.raises(InputError) as info:
        load_paths([tmp_path])
    assert (
        str(info.value)
        == f"{tmp_path}/b.yaml: items[1]: Pod default/p is given twice (also at {tmp_path}/a.yaml)"
    )
    # Same name in another namespace, or of another kind, is another object.
    (tmp_path / "b.yaml").write_text(
        pod.format(ns=", namespace: other") + "---\n" + NODE.format(cpu=1).replace("n1", "p")
    )
    assert len(load_paths([tmp_path])) == 3


def test_config_files_get_the_same_limits(tmp_path: Path) -> None:
    registry = default_registry(entry_points=False)
    for text, message in (
        ("profiles: " + "[" * 100_000 + "]" * 100_000, "nested deeper than"),
        ('{"profiles": ' + "[" * 100_000 + "]" * 100_000 + "}", "invalid JSON: nested too deeply"),
        (
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n" + BOMB[10:],
            "alias bomb",
        ),
    ):
        with pytest.raises(InputError) as info:
            decode_config(text, "sched.yaml", registry)
        assert info.value.source == "sched.yaml" and message in str(info.value)


@settings(max_examples=200)
@given(
    st.recursive(
        st.none() | st.integers() | st.text(max_size=5),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
        max_leaves=30,
    )
)
def test_the_depth_bound_is_never_below_the_real_depth(value: object) -> None:
    for style in (False, True, None):
        text = yaml.safe_dump(value, default_flow_style=style)
        real = _depth(yaml.safe_load(text))
        assert depth_bound(text) >= real
        assert depth_bound(text, distinct_lines(text)) == depth_bound(text)  # the loader's shortcut
        check_yaml(text, "f.yaml")  # shallow: passes


def _depth(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0
