"""Builders shared by the extender tests: configs, Kubernetes JSON, engines and in-process servers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubesched.api.loader import LoadedObjects
from kubesched.api.objects import Node, Pod
from kubesched.config import decode_config
from kubesched.extender.engine import Binder, ExtenderEngine
from kubesched.extender.server import BackgroundServer, ExtenderServer, ServerOptions, uvicorn_config
from kubesched.extender.state import ClusterState
from kubesched.plugins import default_registry
from kubesched.scheduler.profiles import profiles_from_config

#: A profile with only NodeFilterLabel (rejecting node=hello) and NodeResourcesFit, as the issue asks.
PROFILE_YAML = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: extender
  plugins:
    multiPoint:
      disabled: [{name: "*"}]
      enabled:
      - {name: PrioritySort}
      - {name: DefaultBinder}
      - {name: NodeFilterLabel}
      - {name: NodeResourcesFit}
"""


def node_json(
    name: str, *, cpu: str = "4", memory: str = "8Gi", labels: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels or {}, "creationTimestamp": None},
        "spec": {},
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}},
    }


def pod_json(
    name: str,
    *,
    cpu: str = "1",
    namespace: str = "default",
    uid: str = "",
    node: str = "",
    extra: dict[str, str] | None = None,
) -> dict[str, Any]:
    requests: dict[str, str] = {"cpu": cpu, "memory": "1Gi", **(extra or {})}
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "pause", "resources": {"requests": requests}}]
    }
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": uid or f"uid-{name}"},
        "spec": spec,
        "status": {},
    }


def objects(nodes: list[dict[str, Any]], pods: list[dict[str, Any]] = ()) -> LoadedObjects:  # type: ignore[assignment]
    import msgspec

    loaded = LoadedObjects()
    loaded.nodes = [msgspec.convert(n, Node) for n in nodes]
    loaded.pods = [msgspec.convert(p, Pod) for p in pods]
    return loaded


def engine(
    state: ClusterState | None = None,
    *,
    config: str = PROFILE_YAML,
    binder: Binder | None = None,
) -> ExtenderEngine:
    registry = default_registry()
    cfg = decode_config(config, "test.yaml", registry)
    spec = profiles_from_config(cfg, registry)[0]
    return ExtenderEngine(spec, registry, state if state is not None else ClusterState(), binder=binder)


def server(eng: ExtenderEngine | None = None, **options: Any) -> ExtenderServer:
    return ExtenderServer(eng if eng is not None else engine(), ServerOptions(**options))


def serve_in_thread(app: Any, **tls: Any) -> BackgroundServer:
    """uvicorn on 127.0.0.1, a free port; use as a context manager."""
    return BackgroundServer(uvicorn_config(app, "127.0.0.1", 0, **tls))


def write(tmp: Path, name: str, text: str) -> Path:
    path = tmp / name
    path.write_text(text)
    return path
