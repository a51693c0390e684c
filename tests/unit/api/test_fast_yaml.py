"""The rapidyaml fast path gives what the PyYAML loader gives, or declines (None) and leaves it to it."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.api import fast_yaml
from kubesched.api.fast_yaml import load_fast
from kubesched.api.loader import _YamlLoader, load_paths
from kubesched.api.yaml_lines import distinct_lines
from kubesched.errors import InputError


def _pyyaml(text: str) -> list[Any] | None:
    try:
        return list(yaml.load_all(text, Loader=_YamlLoader))
    except yaml.YAMLError:
        return None


#: Plain scalars that YAML 1.1 and YAML 1.2 (or JSON) read apart, and some they read alike.
TRICKY = [
    "yes",
    "No",
    "ON",
    "off",
    "y",
    "n",
    "True",
    "FALSE",
    "true",
    "false",
    "null",
    "Null",
    "~",
    "=",
    "<<",
    "0",
    "-0",
    "7",
    "-12",
    "+3",
    "0777",
    "0o17",
    "0x1F",
    "0b101",
    "1_000",
    "1:30",
    "-1:30:00",
    "1.5",
    "-0.25",
    "1.",
    ".5",
    "1e3",
    "1E+3",
    "1.0e+3",
    "1.0e3",
    ".inf",
    "-.Inf",
    ".NaN",
    "123456789012345678901234",
    "0.1234567890123456789",
    "2026-11-30",
    "2026-11-30T10:00:00Z",
    "2026-11-30 10:00:00 +1",
    "10.0.0.1",
    "512Mi",
    "250m",
    "v1.37.2",
    "a b",
    "x #c",
    "- x",
    "a: b",
    "'",
    '"',
    "\\n",
    "é",
    "@x",
    "`x",
    "%x",
    "|",
    ">",
    "[a]",
    "{a: 1}",
    "",
]
TOKENS = st.sampled_from(TRICKY) | st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc")) | st.sampled_from(" :-#,[]{}"), max_size=8
)


@st.composite
def scalars(draw: st.DrawFn) -> str:
    token = draw(TOKENS)
    style = draw(st.sampled_from(["plain", "plain", "single", "double"]))
    if style == "single":
        return "'" + token.replace("'", "''") + "'"
    if style == "double":
        return json.dumps(token, ensure_ascii=draw(st.booleans()))
    return token


def _render(node: Any, indent: int) -> str:
    """Block YAML for a tree of ("map", [(key, child)]), ("seq", [child]), ("flow", [scalars]),
    ("block", header, lines) and scalars (str)."""
    pad = " " * indent
    kind = node[0] if isinstance(node, tuple) else "scalar"
    if kind == "scalar":
        return f" {node}\n"
    if kind == "block":
        body = "".join(f"{pad}  {line}\n" if line else "\n" for line in node[2])
        return f" {node[1]}\n{body}"
    if kind == "flow":
        return " [" + ", ".join(node[1]) + "]\n"
    if not node[1]:
        return " {}\n" if kind == "map" else " []\n"
    lines = "\n"
    for item in node[1]:
        head = f"{pad}{item[0]}:" if kind == "map" else f"{pad}-"
        lines += head + _render(item[1] if kind == "map" else item, indent + 2)
    return lines


BLOCKS = st.tuples(
    st.just("block"),
    st.sampled_from(["|", "|-", "|+", ">", ">-", ">+"]),
    st.lists(
        st.sampled_from(["x", "a b", "  indented", "", "yes", "1e3", "tail  ", "# not a comment"]), max_size=4
    ),
)
TREES = st.recursive(
    scalars() | BLOCKS | st.tuples(st.just("flow"), st.lists(scalars(), max_size=3)),
    lambda inner: (
        st.tuples(st.just("seq"), st.lists(inner, max_size=3))
        | st.tuples(st.just("map"), st.lists(st.tuples(scalars(), inner), max_size=3))
    ),
    max_leaves=12,
)


def _same(a: Any, b: Any) -> bool:
    """Equal, with the types too (1 is not True, 1.0 is not 1), NaN equal to NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=st.tuples(st.just("map"), st.lists(st.tuples(scalars(), TREES), min_size=1, max_size=4)))
def test_fast_path_agrees_or_declines(tree: Any) -> None:
    text = _render(tree, 0).lstrip("\n")
    fast = load_fast(text)
    if fast is not None:
        expected = _pyyaml(text)
        assert expected is not None, f"the fast path read {text!r}, which PyYAML refuses"
        assert _same(fast, expected), text


@pytest.mark.parametrize(
    "text",
    [
        "a: yes\n",
        "a: [1, on]\n",
        "a: 0777\n",
        "a: 1_000\n",
        "a: 1:30\n",
        "a: 1e3\n",
        "a: .inf\n",
        "a: ~\n",
        "1: a\n",
        "true: a\n",
        # a key with spaces before its colon (hypothesis): still an int or a bool to YAML 1.1
        "0 : a\n",
        "true  : a\n",
        # a colon opening a flow entry or a block entry (hypothesis): ryml reads an empty key
        "a: [:]\n",
        "a: [x, :x]\n",
        "a: {: x}\n",
        "a:\n  - :\n",
        "a: &x 1\nb: *x\n",
        "a: !!str 1\n",
        "<<: {a: 1}\n",
        "a: 1\n---\nb: 2\n",
        "? a\n: b\n",
        "a:\tb\n",
        "just text\n",
        "a: [1, 2\n",
        "'yes': [@x]\n",
        "a: {@x: 1}\n",
        "a: [`x, y]\n",
        # a quoted key running over two lines (hypothesis): ryml reads it, PyYAML refuses it
        "'yes':\n  ': \"yes\"\n  ': 'yes'\n",
        'a:\n  "x\\\n  y": 1\n',
        "",
    ],
)
def test_declines_what_yaml_1_1_reads_its_own_way(text: str) -> None:
    assert load_fast(text) is None


def test_reads_a_kubectl_list_as_the_event_path_does() -> None:
    text = (
        "apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata:\n"
        '    annotations:\n      a: "true"\n      b: "1"\n    creationTimestamp: "2026-11-30T10:00:00Z"\n'
        "    labels: {}\n    name: web-0\n  spec:\n    containers:\n    - image: nginx:1.27\n"
        "      name: web\n      resources:\n        requests:\n          cpu: 250m\n          memory: 1.5Gi\n"
        "    priority: 0\n    enableServiceLinks: true\n    tolerations: []\n    nodeName: null\n"
        '  status:\n    podIP: 10.0.0.1\nkind: List\nmetadata:\n  resourceVersion: ""\n'
    )
    fast = load_fast(text)
    assert fast is not None
    assert _same(fast, _pyyaml(text))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=st.lists(TREES, min_size=1, max_size=6), chunk=st.integers(1, 40), tail=st.booleans())
def test_a_list_read_in_chunks_agrees_or_declines(items: list[Any], chunk: int, tail: bool) -> None:
    """A kubectl list is parsed a few entries at a time (`fast_yaml.CHUNK` bytes): the same
    objects as PyYAML's, or declined, wherever the cuts fall."""
    body = "".join(f"-{_render(item, 2)}" for item in items)
    text = "apiVersion: v1\nitems:\n" + body + ("kind: List\nmetadata: {}\n" if tail else "")
    saved = fast_yaml.CHUNK
    fast_yaml.CHUNK = chunk
    try:
        assert len(text) < 2 * chunk or fast_yaml._split_items(text) is not None
        fast = load_fast(text)
        assert fast == load_fast(text, distinct_lines(text))
    finally:
        fast_yaml.CHUNK = saved
    if fast is not None:
        expected = _pyyaml(text)
        assert expected is not None, f"the fast path read {text!r}, which PyYAML refuses"
        assert _same(fast, expected), text


def test_a_big_list_is_cut_between_entries_and_read_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    entries = "".join(
        f"- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: p{i}\n"
        "    note: |\n      line\n\n      - not an entry\n"
        for i in range(50)
    )
    text = f"apiVersion: v1\nitems:\n{entries}kind: List\nmetadata:\n  resourceVersion: ''\n"
    monkeypatch.setattr(fast_yaml, "CHUNK", 300)
    split = fast_yaml._split_items(text)
    assert split is not None
    head, chunks = split
    assert head == "apiVersion: v1\nitems: []\nkind: List\nmetadata:\n  resourceVersion: ''\n"
    assert len(chunks) > 5 and all(c.startswith("- apiVersion") for c in chunks)
    assert "".join(chunks) == entries
    fast = load_fast(text)
    assert fast is not None and _same(fast, _pyyaml(text))
    assert [p["metadata"]["name"] for p in fast[0]["items"]] == [f"p{i}" for i in range(50)]


@pytest.mark.parametrize(
    "text",
    [
        # An entry start inside a quoted scalar that runs over lines: PyYAML reads one entry, ryml
        # refuses the text, and so does the piece before the cut.
        'items:\n- a: "x\n- y"\n- b\n' + "- c\n" * 20,
        # A second items list, a line after the list that is no key: parsed whole, or declined.
        "items:\n- a\n" + "- c\n" * 20 + "items:\n- b\n",
        "items:\n- a\n" + "- c\n" * 20 + "[x]: 1\n",
    ],
)
def test_cuts_never_change_what_a_list_reads(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fast_yaml, "CHUNK", 8)
    fast = load_fast(text)
    assert fast is None or _same(fast, _pyyaml(text)), fast


def test_generated_documents_mostly_take_the_fast_path() -> None:
    """The differential test above means something only if the fast path reads most documents."""
    texts = [_render(("map", [("k", ("seq", [scalar, ("block", "|", ["x", "y"])]))]), 0) for scalar in TRICKY]
    taken = sum(load_fast(text.lstrip("\n")) is not None for text in texts)
    assert taken >= len(texts) // 3  # the list is mostly tricky on purpose


def test_a_syntax_error_is_ours_with_file_and_line(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: [x\n")
    with pytest.raises(InputError) as err:
        load_paths([path])
    assert "broken.yaml" in str(err.value) and "line 4" in str(err.value)
    assert capfd.readouterr().err == ""  # ryml's own complaint is not printed
