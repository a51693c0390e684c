"""A scenario's timeline objects share equal strings and one empty list and dict
(api/compact.py): the same objects, in less memory, and no replay changes a shared empty."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from kubesched.api.compact import EMPTY_DICT, EMPTY_LIST, Compactor
from kubesched.api.loader import decode_object
from kubesched.api.objects import Pod
from kubesched.config import default_config
from kubesched.plugins import default_registry
from kubesched.simulate.replay.run import replay
from kubesched.simulate.scenario import load_scenario, parse_scenario
from kubesched.testing.scenarios import synthetic_scenario

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "replay"


def _pod(name: str) -> Pod:
    doc = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "image": "nginx", "resources": {"requests": {"cpu": "1"}}}]},
    }
    pod = decode_object(msgspec.json.decode(msgspec.json.encode(doc)))
    assert isinstance(pod, Pod)
    return pod


def test_compacted_objects_share_strings_and_empties_at_any_depth_and_encode_the_same() -> None:
    a, b = _pod("a"), _pod("b")
    before = [msgspec.json.encode(p) for p in (a, b)]
    assert a.spec.containers[0].image is not b.spec.containers[0].image
    assert a.spec.tolerations is not b.spec.tolerations
    compactor = Compactor()
    compactor.compact(a)
    compactor.compact(b)
    assert [msgspec.json.encode(p) for p in (a, b)] == before
    # strings: plain fields, in a list of structs (containers), dict values
    assert a.kind is b.kind and a.metadata.namespace is b.metadata.namespace
    assert a.spec.containers[0].image is b.spec.containers[0].image
    assert a.metadata.labels["app"] is b.metadata.labels["app"]
    assert a.spec.containers[0].resources.requests["cpu"] is b.spec.containers[0].resources.requests["cpu"]
    # empties, at any depth
    assert a.spec.tolerations is b.spec.tolerations is EMPTY_LIST
    assert a.spec.node_selector is b.spec.node_selector is EMPTY_DICT
    assert a.metadata.annotations is EMPTY_DICT and a.metadata.labels == {"app": "web"}
    assert a.spec.containers[0].ports is EMPTY_LIST
    assert a.spec.containers[0].resources.limits is EMPTY_DICT
    assert a.metadata.name == "a" and b.metadata.name == "b"


def test_a_parsed_timeline_is_compacted() -> None:
    scenario = parse_scenario(msgspec.json.encode(synthetic_scenario(nodes=4, events=40, seed=1)).decode())
    pods = [e.obj for e in scenario.events if isinstance(e.obj, Pod)]
    assert len(pods) > 2
    assert all(p.spec.volumes is EMPTY_LIST and p.metadata.annotations is EMPTY_DICT for p in pods)
    assert len({id(p.kind) for p in pods}) == 1


@pytest.mark.parametrize("name", ["shop-morning.yaml", "web-rollout.yaml", "synthetic"])
def test_no_replay_changes_the_shared_empties(name: str) -> None:
    if name == "synthetic":
        text = msgspec.json.encode(synthetic_scenario(nodes=20, events=400, seed=1)).decode()
        scenario = parse_scenario(text)
    else:
        scenario = load_scenario(EXAMPLES / name)
    registry = default_registry()
    replay(scenario, default_config(registry), registry, seed=1, explain=True)
    assert EMPTY_LIST == [] and EMPTY_DICT == {}
