"""Property: a field added anywhere in a real object, misspelt or of any name, never crashes the
loader; it is refused with one line naming where, or accepted when the API has such a field."""

from __future__ import annotations

import copy
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_api_fields import KUBECTL_LIST
from test_scheduling_groups import KUBECTL_LIST as GROUPS_LIST

from kubesched.api.loader import decode_object, load_documents
from kubesched.errors import InputError

ITEMS: list[dict[str, Any]] = [
    item for item in yaml.safe_load(KUBECTL_LIST)["items"] if item["kind"] in ("Node", "Pod", "Deployment")
] + yaml.safe_load(GROUPS_LIST)["items"]  # Workload, PodGroup, CompositePodGroup, a pod of the group


def _objects(doc: Any) -> list[dict[str, Any]]:
    """Every object inside `doc`, itself included."""
    found = []
    stack = [doc]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            found.append(value)
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return found


def _typo(word: str, data: st.DataObject) -> str:
    i = data.draw(st.integers(0, len(word)))
    edit = data.draw(st.sampled_from(["drop", "double", "swap", "insert"]))
    if edit == "drop" and i < len(word):
        return word[:i] + word[i + 1 :]
    if edit == "double" and i < len(word):
        return word[:i] + word[i] + word[i:]
    if edit == "swap" and i + 1 < len(word):
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    return word[:i] + data.draw(st.characters()) + word[i:]


KEYS = st.one_of(st.text(max_size=12), st.integers(), st.just("a.b\nc"))
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2),
    max_leaves=4,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_an_added_or_misspelt_field_is_one_line_or_accepted(data: st.DataObject) -> None:
    doc = copy.deepcopy(data.draw(st.sampled_from(ITEMS)))
    target = data.draw(st.sampled_from(_objects(doc)))
    if target and data.draw(st.booleans()):
        old = data.draw(st.sampled_from(sorted(map(str, target))))
        key: Any = _typo(old, data)
        target[key] = target.pop(old)
    else:
        key = data.draw(KEYS)
        target[key] = data.draw(VALUES)
    try:
        decode_object(doc)
    except InputError as err:
        text = str(err)
        assert "\n" not in text and text.strip() == text
        assert err.message
    lenient: list[InputError] = []
    try:
        decode_object(doc, lenient=lenient)
    except InputError as err:  # a value of the wrong type: not a field problem, never lenient
        assert "unknown" not in err.message, err
    assert all("\n" not in str(e) for e in lenient)


@settings(max_examples=100, deadline=None)
@given(key=st.text(min_size=1, max_size=20))
def test_an_unknown_key_in_yaml_is_named_on_one_line(key: str) -> None:
    doc = copy.deepcopy(ITEMS[1])
    doc["spec"][key] = 1
    text = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [doc]})
    try:
        load_documents(text, "in.yaml")
    except InputError as err:
        assert "\n" not in str(err)
        assert str(err).startswith("in.yaml: items[0].spec")
