"""Loading objects from YAML / JSON files: shapes accepted, skipped kinds, error locations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api.cluster_objects import PriorityClass
from kubesched.api.kinds import KINDS
from kubesched.api.loader import LoadedObjects, load_documents, load_paths
from kubesched.api.objects import Node, Pod
from kubesched.errors import InputError

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: web-1
  namespace: default
  labels: {app: web}
  creationTimestamp: 2024-05-01T10:00:00Z
spec:
  priority: 10
  containers:
  - name: app
    image: nginx
    resources:
      requests: {cpu: 250m, memory: 64Mi}
"""

NODE = """\
apiVersion: v1
kind: Node
metadata: {name: node-1, labels: {zone: a}}
status:
  allocatable: {cpu: "4", memory: 16Gi, pods: "110"}
"""


def test_single_object() -> None:
    (pod,) = load_documents(POD, "pod.yaml")
    assert isinstance(pod, Pod)
    assert pod.key == "default/web-1"
    assert pod.spec.priority == 10
    assert pod.spec.containers[0].resources.requests == {"cpu": "250m", "memory": "64Mi"}
    # timestamps stay text, as the API server returns them
    assert pod.metadata.creation_timestamp == "2024-05-01T10:00:00Z"


def test_multi_document_yaml_ignores_empty_documents() -> None:
    text = f"---\n{POD}---\n---\n# only a comment\n---\n{NODE}---\n"
    objs = load_documents(text, "all.yaml")
    assert [type(o) for o in objs] == [Pod, Node]
    assert isinstance(objs[1], Node)
    assert objs[1].status.allocatable == {"cpu": "4", "memory": "16Gi", "pods": "110"}


def test_json_list_as_kubectl_writes_it() -> None:
    pod = yaml.safe_load(POD)
    pod["metadata"]["creationTimestamp"] = "2024-05-01T10:00:00Z"
    text = json.dumps({"apiVersion": "v1", "kind": "List", "items": [pod, yaml.safe_load(NODE)]}, indent=2)
    objs = load_documents(text, "dump.json")
    assert [type(o) for o in objs] == [Pod, Node]


def test_typed_lists_infer_item_kind() -> None:
    text = """\
apiVersion: v1
kind: PodList
items:
- metadata: {name: a}
- metadata: {name: b}
  spec: {nodeName: n1}
---
kind: NodeList
items:
- metadata: {name: n1}
"""
    objs = load_documents(text, "lists.yaml")
    assert [(type(o).__name__, o.metadata.name) for o in objs] == [("Pod", "a"), ("Pod", "b"), ("Node", "n1")]
    assert isinstance(objs[1], Pod) and objs[1].spec.node_name == "n1"


def test_unknown_kinds_are_counted_not_rejected() -> None:
    text = """\
kind: Ingress
metadata: {name: d}
---
kind: List
items:
- {kind: Endpoints, metadata: {name: s}}
- {kind: Ingress}
- {kind: PriorityClass, metadata: {name: high}, value: 1000}
---
kind: ConfigMapList
items:
- metadata: {name: c1}
- metadata: {name: c2}
"""
    skipped: dict[str, int] = {}
    objs = load_documents(text, "mixed.yaml", skipped=skipped)
    assert skipped == {"Ingress": 2, "Endpoints": 1, "ConfigMap": 2}
    assert len(objs) == 1 and isinstance(objs[0], PriorityClass) and objs[0].value == 1000


def test_nulls_count_as_unset() -> None:
    text = "kind: Node\nmetadata:\n  name: n\n  labels:\nspec:\n  taints: null\n"
    (node,) = load_documents(text, "n.yaml")
    assert isinstance(node, Node)
    assert node.metadata.labels == {}
    assert node.spec.taints == []


def test_empty_input() -> None:
    assert load_documents("", "empty.yaml") == []
    assert load_documents("---\n---\n", "empty.yaml") == []
    assert load_documents("kind: List\nitems: []\n", "empty.yaml") == []


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (
            "kind: Pod\nspec:\n  containers:\n  - name: 1\n",
            "f.yaml: spec.containers[0].name: expected str, got int",
        ),
        (
            "kind: PodList\nitems:\n- {}\n- {}\n- {}\n- spec: {containers: [{name: 1}]}\n",
            "f.yaml: items[3].spec.containers[0].name: expected str, got int",
        ),
        (
            "kind: Pod\n---\nkind: Pod\nspec: {priority: high}\n",
            "f.yaml: document 2: spec.priority: expected int | null, got str",
        ),
        (
            "kind: Pod\nmetadata:\n  labels: {ok: x, bad: 1}\n",
            "f.yaml: metadata.labels.bad: expected str, got int",
        ),
        (
            "kind: Pod\nspec:\n  containers:\n  - resources: {requests: {nvidia.com/gpu: [1]}}\n",
            "f.yaml: spec.containers[0].resources.requests[nvidia.com/gpu]: "
            "expected int | float | str, got array",
        ),
        (
            "kind: Pod\nspec:\n  tolerations: [{key: a}]\n  topologySpreadConstraints: [{maxSkew: 1}]\n",
            'f.yaml: spec.topologySpreadConstraints[0]: object missing required field "topologyKey"',
        ),
        ("- a\n- b\n", "f.yaml: expected an object with a kind, got array"),
        ("just text\n", "f.yaml: expected an object with a kind, got str"),
        ("metadata: {name: x}\n", "f.yaml: missing kind"),
        ("kind: Pod\n---\napiVersion: v1\n", "f.yaml: document 2: missing kind"),
        ("kind: [Pod]\n", "f.yaml: kind: expected str, got array"),
        ("kind: List\nitems:\n- kind: Pod\n- metadata: {}\n", "f.yaml: items[1]: missing kind"),
        ("kind: List\nitems: 3\n", "f.yaml: items: expected array, got int"),
        ("kind: PodList\nitems: [3]\n", "f.yaml: items[0]: expected an object with a kind, got int"),
    ],
)
def test_object_errors_name_file_and_path(text: str, error: str) -> None:
    with pytest.raises(InputError) as info:
        load_documents(text, "f.yaml")
    assert str(info.value) == error
    assert info.value.source == "f.yaml"


@pytest.mark.parametrize(
    ("text", "source", "error"),
    [
        ("kind: Pod\nmetadata:\n  name: [\n", "f.yaml", "f.yaml: line 4, column 1: invalid YAML: "),
        ("kind: Pod\n  bad: indent\n", "f.yaml", "f.yaml: line 2, column 6: invalid YAML: mapping values"),
        ("kind: !!python/object:os.system x\n", "f.yaml", "f.yaml: line 1, column 7: invalid YAML: "),
        ('{"kind": "Pod",\n "spec": }', "f.json", "f.json: line 2, column 10: invalid JSON: "),
        ('{"kind": "Pod"', "f.json", "f.json: invalid JSON: input data was truncated"),
        ("kind: Pod\n", "f.json", "f.json: line 1, column 1: invalid JSON: "),
    ],
)
def test_syntax_errors_give_line_and_column(text: str, source: str, error: str) -> None:
    with pytest.raises(InputError) as info:
        load_documents(text, source)
    assert str(info.value).startswith(error)


def test_json_looking_yaml_falls_back_to_yaml() -> None:
    # Flow-style YAML starting with "{" is not JSON, but it is a valid manifest.
    (node,) = load_documents("{kind: Node, metadata: {name: n}}\n", "n.yaml")
    assert isinstance(node, Node) and node.name == "n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_load_paths_walks_directories_in_sorted_order(tmp_path: Path) -> None:
    def pod(name: str) -> str:
        return f"kind: Pod\nmetadata: {{name: {name}}}\n"

    write(tmp_path / "b.yaml", pod("b"))
    write(tmp_path / "a" / "z.yml", pod("a/z"))
    write(tmp_path / "a-b.json", json.dumps({"kind": "Pod", "metadata": {"name": "a-b"}}))
    write(tmp_path / "a" / "deeper" / "x.yaml", pod("a/deeper/x"))
    write(tmp_path / "notes.txt", pod("ignored"))
    write(tmp_path / ".hidden.yaml", pod("hidden"))
    write(tmp_path / ".git" / "x.yaml", pod("hidden dir"))
    write(tmp_path / "svc.yaml", "kind: Endpoints\n")
    loaded = load_paths([tmp_path])
    assert [p.metadata.name for p in loaded.pods] == ["a/deeper/x", "a/z", "a-b", "b"]
    assert loaded.skipped == {"Endpoints": 1}


def test_load_paths_files_and_kinds(tmp_path: Path) -> None:
    manifest = write(tmp_path / "cluster.manifest", f"{POD}---\n{NODE}")
    others = write(
        tmp_path / "others.yaml",
        "\n---\n".join(
            [
                "kind: Namespace\nmetadata: {name: team}",
                "kind: PriorityClass\nmetadata: {name: high}\nvalue: 100",
                "kind: PersistentVolume\nmetadata: {name: pv}",
                "kind: PersistentVolumeClaim\nmetadata: {name: pvc}",
                "kind: StorageClass\nmetadata: {name: fast}\nprovisioner: x",
                "kind: CSINode\nmetadata: {name: node-1}",
                "kind: PodDisruptionBudget\nmetadata: {name: pdb}\nspec: {minAvailable: 1}",
            ]
        ),
    )
    loaded = load_paths([str(manifest), others])
    assert isinstance(loaded, LoadedObjects)
    counts = {
        name: len(getattr(loaded, name))
        for name in [
            "pods",
            "nodes",
            "namespaces",
            "priority_classes",
            "persistent_volumes",
            "persistent_volume_claims",
            "storage_classes",
            "csi_nodes",
            "pod_disruption_budgets",
        ]
    }
    assert counts == dict.fromkeys(counts, 1)
    assert len(loaded) == 9
    assert loaded.priority_classes[0].value == 100
    assert loaded.pod_disruption_budgets[0].spec.min_available == 1


def test_load_paths_errors_name_the_file(tmp_path: Path) -> None:
    bad = write(tmp_path / "dir" / "bad.yaml", "kind: Pod\nspec: {priority: x}\n")
    with pytest.raises(InputError) as info:
        load_paths([tmp_path])
    assert str(info.value) == f"{bad}: spec.priority: expected int | null, got str"

    with pytest.raises(InputError) as info:
        load_paths([tmp_path / "missing.yaml"])
    assert str(info.value) == f"{tmp_path / 'missing.yaml'}: no such file or directory"

    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"kind: Pod\n\xff\xfe")
    with pytest.raises(InputError) as info:
        load_paths([binary])
    assert str(info.value) == f"{binary}: not UTF-8 text (byte 10)"


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.yaml"
    path.write_bytes(b"\xef\xbb\xbfkind: Node\nmetadata: {name: n}\n")
    assert [n.name for n in load_paths([path]).nodes] == ["n"]


# --------------------------------------------------------------------------- properties

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=12,
)
kinds = st.sampled_from(["Pod", "Node", "PodList", "List", "PriorityClass", "Deployment", ""])
documents = st.dictionaries(
    st.sampled_from(["kind", "metadata", "spec", "status", "items", "value"]), json_values, max_size=4
).flatmap(lambda d: st.builds(lambda k: {**d, "kind": k} if k else d, kinds))


@settings(max_examples=200)
@given(st.lists(documents, max_size=3))
def test_any_document_gives_objects_or_input_error(docs: list[dict[str, Any]]) -> None:
    text = "---\n".join(yaml.safe_dump(d) for d in docs)
    try:
        objs = load_documents(text, "g.yaml")
    except InputError as err:
        assert err.source == "g.yaml"
        assert err.message
    else:
        assert all(type(obj).__name__ in KINDS for obj in objs)
        assert len(objs) <= sum(1 + len(d["items"]) if isinstance(d.get("items"), list) else 1 for d in docs)


# Letters, digits and punctuation (PyYAML itself does not round-trip exotic line breaks like U+0085).
names = st.text(st.characters(categories=("L", "N", "P", "Zs")), max_size=10)


@given(st.lists(st.tuples(names, st.dictionaries(names, names, max_size=3)), max_size=5), st.booleans())
def test_pods_round_trip_through_yaml_and_json(pods: list[tuple[str, dict[str, str]]], as_json: bool) -> None:
    items = [{"metadata": {"name": name, "labels": labels}} for name, labels in pods]
    document = {"apiVersion": "v1", "kind": "PodList", "items": items}
    text = json.dumps(document) if as_json else yaml.safe_dump(document, allow_unicode=True)
    objs = load_documents(text, "p.json" if as_json else "p.yaml")
    assert [(o.metadata.name, o.metadata.labels) for o in objs] == pods


@given(st.text(max_size=60))
def test_any_text_gives_objects_or_input_error(text: str) -> None:
    for source in ("t.yaml", "t.json"):
        try:
            load_documents(text, source)
        except InputError as err:
            assert err.source == source
