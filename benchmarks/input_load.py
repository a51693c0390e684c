"""Time and peak memory of loading one big cluster snapshot, as YAML and as JSON.

The snapshot is what `kubectl get nodes,pods -o yaml|json` prints for N nodes and M running pods:
every server-set field, `managedFields` and `status` included (the shape of
tests/unit/api/test_api_fields.py's KUBECTL_LIST). Each format is loaded by `load_paths` in a fresh
process, `--repeat` times; the best wall time, the best CPU time (the fairer figure on a busy
machine, where the wall time waits for other processes) and the highest peak RSS of the process
(interpreter and imports included, about 40 MiB) are kept. The strict field check (the v1.37
OpenAPI walk) is timed on its own too.
Prints one JSON object:

    {"nodes": 2000, "pods": 5000, "yamlMB": 21.3, "jsonMB": 17.9,
     "yaml": {"seconds": 4.1, "cpuSeconds": 1.6, "peakMiB": 210}, "json": {...},
     "yamlOverJson": {"seconds": 1.41, "cpuSeconds": 1.45, "memory": 1.17}, "fieldCheckSeconds": 0.12}

Run: `.venv/bin/python benchmarks/input_load.py [--nodes 2000] [--pods 5000] [--repeat 3]`;
`--smoke` is a quick run on a small cluster (for CI: it checks the script, not the numbers).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

# The peak is the child's own VmHWM: getrusage's ru_maxrss carries the high-water mark over from
# before exec, that is the parent's, which holds the whole generated snapshot.
_CHILD = """
import json, sys, time
from kubesched.api.loader import load_paths
started, cpu = time.perf_counter(), time.process_time()
objects = load_paths([sys.argv[1]])
seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
with open("/proc/self/status") as status:
    peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
print(json.dumps({"seconds": seconds, "cpuSeconds": cpu, "peakKiB": peak, "objects": len(objects)}))
"""


def _managed(manager: str, subresource: str = "") -> dict[str, Any]:
    entry: dict[str, Any] = {
        "apiVersion": "v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {"f:containers": {'k:{"name":"app"}': {".": {}, "f:image": {}, "f:resources": {}}}},
        },
        "manager": manager,
        "operation": "Update",
        "time": "2026-11-30T10:00:00Z",
    }
    if subresource:
        entry["subresource"] = subresource
    return entry


def node(i: int) -> dict[str, Any]:
    name = f"node-{i:05d}"
    capacity = {"cpu": "16", "ephemeral-storage": "100Gi", "memory": "64Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
            "creationTimestamp": "2026-11-30T10:00:00Z",
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "topology.kubernetes.io/zone": f"zone-{i % 3}",
            },
            "managedFields": [_managed("kubelet"), _managed("kubelet", "status")],
            "name": name,
            "resourceVersion": str(1000 + i),
            "uid": f"00000000-0000-0000-0000-{i:012d}",
        },
        "spec": {"podCIDR": f"10.{i // 256}.{i % 256}.0/24", "providerID": f"kind://docker/kind/{name}"},
        "status": {
            "addresses": [{"address": f"172.18.{i // 256}.{i % 256}", "type": "InternalIP"}],
            "allocatable": capacity,
            "capacity": capacity,
            "conditions": [
                {
                    "lastHeartbeatTime": "2026-11-30T10:05:00Z",
                    "lastTransitionTime": "2026-11-30T10:00:00Z",
                    "message": "kubelet is posting ready status",
                    "reason": "KubeletReady",
                    "status": "True",
                    "type": "Ready",
                }
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "images": [{"names": ["registry.k8s.io/pause:3.10"], "sizeBytes": 320368}],
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": "b",
                "containerRuntimeVersion": "containerd://2.1.0",
                "kernelVersion": "6.12.0",
                "kubeProxyVersion": "",
                "kubeletVersion": "v1.37.2",
                "machineID": "m",
                "operatingSystem": "linux",
                "osImage": "Debian GNU/Linux 13",
                "systemUUID": "s",
            },
        },
    }


def pod(i: int, nodes: int) -> dict[str, Any]:
    app = f"app-{i % 50}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "creationTimestamp": "2026-11-30T10:01:00Z",
            "generateName": f"{app}-7d9f8b6c5-",
            "labels": {"app": app, "pod-template-hash": "7d9f8b6c5"},
            "managedFields": [_managed("kube-controller-manager"), _managed("kubelet", "status")],
            "name": f"{app}-7d9f8b6c5-{i:05d}",
            "namespace": "shop",
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "blockOwnerDeletion": True,
                    "controller": True,
                    "kind": "ReplicaSet",
                    "name": f"{app}-7d9f8b6c5",
                    "uid": f"rs-{i % 50}",
                }
            ],
            "resourceVersion": str(5000 + i),
            "uid": f"pod-{i}",
        },
        "spec": {
            "containers": [
                {
                    "image": f"shop/{app}:1.4",
                    "imagePullPolicy": "IfNotPresent",
                    "name": "app",
                    "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
                    "resources": {
                        "limits": {"memory": "512Mi"},
                        "requests": {"cpu": "250m", "memory": "256Mi"},
                    },
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                    "volumeMounts": [{"mountPath": "/var/run/secrets", "name": "token", "readOnly": True}],
                }
            ],
            "dnsPolicy": "ClusterFirst",
            "enableServiceLinks": True,
            "nodeName": f"node-{i % nodes:05d}",
            "preemptionPolicy": "PreemptLowerPriority",
            "priority": 0,
            "restartPolicy": "Always",
            "schedulerName": "default-scheduler",
            "securityContext": {},
            "serviceAccountName": "default",
            "terminationGracePeriodSeconds": 30,
            "tolerations": [
                {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists"}
            ],
            "volumes": [
                {"name": "token", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}}
            ],
        },
        "status": {
            "conditions": [{"lastTransitionTime": "2026-11-30T10:01:00Z", "status": "True", "type": "Ready"}],
            "containerStatuses": [
                {
                    "containerID": "containerd://9f",
                    "image": f"shop/{app}:1.4",
                    "imageID": f"shop/{app}@sha256:9f",
                    "lastState": {},
                    "name": "app",
                    "ready": True,
                    "restartCount": 0,
                    "started": True,
                    "state": {"running": {"startedAt": "2026-11-30T10:01:05Z"}},
                }
            ],
            "hostIP": "172.18.0.2",
            "phase": "Running",
            "podIP": f"10.244.{i // 256}.{i % 256}",
            "qosClass": "Burstable",
            "startTime": "2026-11-30T10:01:00Z",
        },
    }


def snapshot(nodes: int, pods: int) -> dict[str, Any]:
    items = [node(i) for i in range(nodes)] + [pod(i, nodes) for i in range(pods)]
    return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}


class _NoAliases(yaml.CSafeDumper):
    """kubectl never writes anchors: shared dicts are written out each time."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _load(path: Path, repeat: int) -> dict[str, float]:
    runs = []
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, "-c", _CHILD, str(path)], capture_output=True, text=True, check=True
        )
        runs.append(json.loads(out.stdout))
    return {
        "seconds": round(min(r["seconds"] for r in runs), 3),
        "cpuSeconds": round(min(r["cpuSeconds"] for r in runs), 3),
        "peakMiB": round(max(r["peakKiB"] for r in runs) / 1024, 1),
    }


def _field_check_seconds(doc: dict[str, Any]) -> float | None:
    try:
        from kubesched.api.openapi import unknown_fields
    except ImportError:  # a tree from before the check (for a before/after comparison)
        return None

    started = time.perf_counter()
    for item in doc["items"]:
        unknown_fields(item, item["kind"], item["apiVersion"])
    return round(time.perf_counter() - started, 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--pods", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="a small cluster, one run per format")
    args = parser.parse_args()
    if args.smoke:
        args.nodes, args.pods, args.repeat = 20, 50, 1
    doc = snapshot(args.nodes, args.pods)
    with tempfile.TemporaryDirectory() as tmp:
        yaml_path, json_path = Path(tmp, "cluster.yaml"), Path(tmp, "cluster.json")
        yaml_path.write_text(yaml.dump(doc, Dumper=_NoAliases, default_flow_style=False))
        json_path.write_text(json.dumps(doc, indent=4))
        result: dict[str, Any] = {
            "nodes": args.nodes,
            "pods": args.pods,
            "yamlMB": round(yaml_path.stat().st_size / 1e6, 1),
            "jsonMB": round(json_path.stat().st_size / 1e6, 1),
            "yaml": _load(yaml_path, args.repeat),
            "json": _load(json_path, args.repeat),
        }
    result["yamlOverJson"] = {
        key: round(result["yaml"][field] / max(result["json"][field], 1e-9), 2)
        for key, field in (("seconds", "seconds"), ("cpuSeconds", "cpuSeconds"), ("memory", "peakMiB"))
    }
    result["fieldCheckSeconds"] = _field_check_seconds(doc)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
