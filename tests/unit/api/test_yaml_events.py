"""The event-stream builder returns what PyYAML's own loading returns, errors included."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api.yaml_events import load_all


class Loader(yaml.CSafeLoader):
    """As the object loader: timestamps stay strings."""


Loader.add_constructor("tag:yaml.org,2002:timestamp", lambda loader, node: str(loader.construct_scalar(node)))


def _pyyaml(text: str) -> list[Any]:
    return list(yaml.load_all(text, Loader=Loader))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "---\n",
        "a: 1\n---\n---\nb: [x, 'y', \"z\"]\n",
        "plain: [yes, no, on, off, ~, null, 0o17, 017, 0x1f, 1_000, 1e3, .inf, -.Inf, .nan, 12:30:00]\n",
        "t: 2026-11-30T10:00:00Z\nd: 2026-11-30\nquoted: '2026-11-30'\n",
        "t: !!timestamp nonsense\n",
        "tags: [!!str 123, !!int '7', !!float '1', !!binary aGk=, !!null '', ! 12]\n",
        "base: &b {cpu: 1, memory: 2Gi}\nuse: *b\nlist: &l [1, 2]\nagain: *l\nscalar: &s 5\ns2: *s\n",
        "base: &b {a: 1, b: 2}\nmerged: {<<: *b, b: 3}\nmany: {<<: [*b, {c: 4}], a: 0}\n",
        "dup: 1\ndup: 2\n",
        "set: !!set {a, b}\nomap: !!omap [{a: 1}]\n",
        "literal: |\n  line one\n  line two\nfolded: >\n  folded\n  text\n",
        "key with spaces: v\n'quoted key': v\n1: int key\ntrue: bool key\n~: null key\n",
        "nested: [[[]], {}, [{}], {a: [{b: {c: [1]}}]}]\n",
        '"<<": not a merge\n',
    ],
)
def test_same_documents_as_pyyaml(text: str) -> None:
    assert load_all(text, Loader) == _pyyaml(text)


@pytest.mark.parametrize(
    "text",
    [
        "a: [1, 2\n",
        "a: *nowhere\n",
        "a: !custom 1\n",
        "a: b: c\n",
        "- a\nb: c\n",
        "i: !!int nonsense\n",
        "? [a, b]\n: value\n",
    ],
)
def test_same_errors_as_pyyaml(text: str) -> None:
    with pytest.raises(Exception) as ours:  # whatever PyYAML raises
        load_all(text, Loader)
    with pytest.raises(Exception) as theirs:
        _pyyaml(text)
    assert (type(ours.value), str(ours.value)) == (type(theirs.value), str(theirs.value))


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=8),
    st.sampled_from(["yes", "on", "0755", "1e3", "~", "<<", "2026-01-01", "- x", "a: b", "#c", "*a", "&b"]),
)
DOCUMENTS = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(SCALARS, inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(documents=st.lists(DOCUMENTS, min_size=1, max_size=3), flow=st.booleans())
def test_any_dumped_document_loads_the_same(documents: list[Any], flow: bool) -> None:
    text = yaml.dump_all(documents, Dumper=yaml.CSafeDumper, default_flow_style=flow, allow_unicode=True)
    assert load_all(text, Loader) == _pyyaml(text)
