"""DRA on a real API server: the same scenario scheduled by kube-scheduler v1.37.2 and by `kubesched run`.

The test publishes ResourceSlices as a DRA driver would (three nodes per scheduler, two GPUs each,
models a100/h100) and creates ResourceClaims and pods one at a time, first for upstream (its own
profile name), then the same for kubesched, each on its own nodes. Every pod is pinned to one node
of its scheduler, so the device choice on that node is the allocator's alone. Compared, step by step:
scheduled or not, the FailedScheduling message, and the claim as written through the API
(finalizer, `status.allocation` results and node selector, `reservedFor`), with node and pool names
mapped between the two node sets.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_live_scheduler import Kubesched, pod_events

from kubesched.harness.controlplane import ControlPlane, ManagedProcess
from kubesched.harness.fake_nodes import ApiClient, ApiError, create_node, fake_node

DRIVER = "gpu.kubesched.test"
RESOURCE = "/apis/resource.k8s.io/v1"
MODELS = (("a100", "a100"), ("a100", "h100"), ("h100", "h100"))
#: Seconds to wait for a pod that will not be scheduled (no event is expected either).
QUIET_SECONDS = 3.0

Obj = dict[str, Any]


def _selector(model: str) -> list[Obj]:
    return [{"cel": {"expression": f'device.attributes["{DRIVER}"].model == "{model}"'}}]


#: (pod, node index, claim spec) in order; None: the pod names a claim that never exists.
_A100: Obj = {
    "requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER, "selectors": _selector("a100")}}]
}
STEPS: list[tuple[str, int, Obj | None]] = [
    ("a100-0", 0, _A100),
    ("a100-1", 1, _A100),
    ("two-on-0", 0, {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER, "count": 2}}]}),
    ("any-on-0", 0, {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER}}]}),
    ("pair-on-2", 2, {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER, "count": 2}}],
                      "constraints": [{"matchAttribute": f"{DRIVER}/model"}]}),
    ("prefer-h100", 1, {"requests": [{"name": "gpu", "firstAvailable": [
        {"name": "h100", "deviceClassName": DRIVER, "selectors": _selector("h100"), "count": 2},
        {"name": "one", "deviceClassName": DRIVER}]}]}),
    ("too-many", 2, {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER, "count": 3}}]}),
    ("no-class", 2, {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "no-such-class"}}]}),
    ("no-claim", 2, None),
]  # fmt: skip


class Side:
    """One scheduler's nodes, namespace and slices."""

    def __init__(self, api: ApiClient, run: str, label: str, scheduler: str) -> None:
        self.api = api
        self.label = label
        self.scheduler = scheduler
        self.namespace = f"dra-{label}-{run}"
        self.nodes = [f"dra-{label}-{run}-{i}" for i in range(len(MODELS))]
        api.post("/api/v1/namespaces", {"metadata": {"name": self.namespace}})
        for node, models in zip(self.nodes, MODELS, strict=True):
            create_node(api, fake_node(node, labels={"kubesched.test/dra": run}))
            api.post(
                f"{RESOURCE}/resourceslices",
                {
                    "metadata": {"name": f"{node}-gpus"},
                    "spec": {
                        "driver": DRIVER,
                        "nodeName": node,
                        "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                        "devices": [
                            {"name": f"gpu-{i}", "attributes": {"model": {"string": m}}}
                            for i, m in enumerate(models)
                        ],
                    },
                },
            )

    def create(self, name: str, node: int, claim: Obj | None) -> None:
        claim_name = f"{name}-claim" if claim is not None else "never-created"
        if claim is not None:
            self.api.post(
                f"{RESOURCE}/namespaces/{self.namespace}/resourceclaims",
                {"metadata": {"name": claim_name}, "spec": {"devices": claim}},
            )
        self.api.post(
            f"/api/v1/namespaces/{self.namespace}/pods",
            {
                "metadata": {"name": name},
                "spec": {
                    "schedulerName": self.scheduler,
                    "nodeSelector": {"kubernetes.io/hostname": self.nodes[node]},
                    "resourceClaims": [{"name": "gpu", "resourceClaimName": claim_name}],
                    "containers": [{"name": "c", "image": "x", "resources": {"claims": [{"name": "gpu"}]}}],
                    "terminationGracePeriodSeconds": 0,
                },
            },
        )

    def outcome(self, name: str, *, expect_nothing: bool) -> tuple[str, str | None]:
        """("Scheduled", node index) or ("Unschedulable", message) or ("Pending", None)."""
        deadline = time.monotonic() + (QUIET_SECONDS if expect_nothing else 60.0)
        while True:
            pod = self.api.get(f"/api/v1/namespaces/{self.namespace}/pods/{name}")
            node = pod["spec"].get("nodeName")
            if node:
                return "Scheduled", str(self.nodes.index(node))
            failed = [e for e in pod_events(self.api, self.namespace, reason="FailedScheduling")
                      if e["regarding"]["name"] == name]  # fmt: skip
            if failed:
                return "Unschedulable", failed[-1].get("note")
            if time.monotonic() > deadline:
                if expect_nothing:
                    return "Pending", None
                raise AssertionError(f"{self.label}: no outcome for pod {name}")
            time.sleep(0.1)

    def claim(self, name: str) -> Obj:
        """The claim as written, with this side's names replaced by node indices."""
        raw = self.api.get(f"{RESOURCE}/namespaces/{self.namespace}/resourceclaims/{name}-claim")
        allocation = dict(raw.get("status", {}).get("allocation") or {})
        if "allocationTimestamp" in allocation:
            allocation["allocationTimestamp"] = "<set>"
        text = repr(allocation)
        for i, node in enumerate(self.nodes):
            text = text.replace(node, f"node-{i}")
        return {
            "finalizers": raw["metadata"].get("finalizers", []),
            "allocation": text,
            "reservedFor": [
                (r.get("resource"), r.get("name")) for r in raw.get("status", {}).get("reservedFor", [])
            ],
        }

    def clean_up(self) -> None:
        for node in self.nodes:
            for path in (f"{RESOURCE}/resourceslices/{node}-gpus", f"/api/v1/nodes/{node}"):
                with contextlib.suppress(ApiError):
                    self.api.request("DELETE", path)
        with contextlib.suppress(ApiError):
            self.api.request("DELETE", f"/api/v1/namespaces/{self.namespace}")


@pytest.fixture(scope="module")
def schedulers(
    control_plane: ControlPlane, api: ApiClient, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Side, Side]]:
    run = uuid.uuid4().hex[:6]
    with contextlib.suppress(ApiError):  # created by an earlier module run in this session
        api.post(
            f"{RESOURCE}/deviceclasses",
            {
                "metadata": {"name": DRIVER},
                "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
            },
        )
    upstream_name = f"upstream-dra-{run}"
    upstream = Side(api, run, "up", upstream_name)
    ours = Side(api, run, "ks", "kubesched")
    kube_scheduler: ManagedProcess = control_plane.start_kube_scheduler(
        {"profiles": [{"schedulerName": upstream_name}]}
    )
    ks = Kubesched(control_plane, Path(tmp_path_factory.mktemp("kubesched-dra")))
    try:
        ks.wait_ready()
        yield upstream, ours
    finally:
        ks.stop()
        kube_scheduler.stop()
        upstream.clean_up()
        ours.clean_up()


def test_same_dra_decisions_as_kube_scheduler(schedulers: tuple[Side, Side]) -> None:
    upstream, ours = schedulers
    outcomes: dict[str, tuple[str, str | None]] = {}
    for name, node, claim in STEPS:
        results = []
        for side in (upstream, ours):
            side.create(name, node, claim)
            results.append(side.outcome(name, expect_nothing=claim is None))
        assert results[1] == results[0], f"pod {name}: upstream {results[0]}, kubesched {results[1]}"
        outcomes[name] = results[0]
        if claim is not None and results[0][0] == "Scheduled":
            assert ours.claim(name) == upstream.claim(name), f"claim of {name}"
    # The scenario exercised what it meant to (so a change in it cannot make the test vacuous).
    assert [n for n, (r, _) in outcomes.items() if r == "Scheduled"] == [
        "a100-0", "a100-1", "any-on-0", "pair-on-2", "prefer-h100",
    ]  # fmt: skip
    assert outcomes["no-claim"] == ("Pending", None)
    two, too_many, no_class = outcomes["two-on-0"][1], outcomes["too-many"][1], outcomes["no-class"][1]
    assert two is not None and " 1 cannot allocate all claims" in two
    assert too_many is not None and " 1 cannot allocate all claims" in too_many
    assert no_class is not None and "request gpu: device class no-such-class does not exist" in no_class


#: Extended resources backed by DRA (DeviceClass `extendedResourceName`, GA and locked on in v1.37.2):
#: (pod, node index, units of the resource). No node advertises it, so DRA serves it from the slices.
EXTENDED = f"{DRIVER}/gpu"
EXTENDED_STEPS: list[tuple[str, int, int]] = [("ext-one", 0, 1), ("ext-two", 1, 2), ("ext-too-many", 0, 2)]


def _extended_outcome(side: Side, name: str) -> Obj:
    """What the scheduler wrote for `name`: the claim it created and the pod's mapping to it."""
    pod = side.api.get(f"/api/v1/namespaces/{side.namespace}/pods/{name}")
    claims = side.api.get(f"{RESOURCE}/namespaces/{side.namespace}/resourceclaims")["items"]
    mine = [c for c in claims if c["metadata"]["name"].startswith(f"{name}-extended-resources-")]
    status = pod.get("status", {}).get("extendedResourceClaimStatus")
    if status is not None:
        assert [c["metadata"]["name"] for c in mine] == [status["resourceClaimName"]]
        status = {**status, "resourceClaimName": "<generated>"}
    out: Obj = {"status": status, "claims": []}
    for raw in mine:
        meta = raw["metadata"]
        allocation = dict(raw.get("status", {}).get("allocation") or {})
        allocation.pop("allocationTimestamp", None)
        text = repr(allocation)
        for i, node in enumerate(side.nodes):
            text = text.replace(node, f"node-{i}")
        out["claims"].append(
            {
                "annotations": meta.get("annotations"),
                "owners": [
                    (o["kind"], o["name"], o.get("controller")) for o in meta.get("ownerReferences", ())
                ],
                "finalizers": meta.get("finalizers", []),
                "spec": raw["spec"],
                "allocation": text,
                "reservedFor": [r["name"] for r in raw.get("status", {}).get("reservedFor", [])],
            }
        )
    return out


def test_same_dra_extended_resource_decisions_as_kube_scheduler(schedulers: tuple[Side, Side]) -> None:
    upstream, ours = schedulers
    run = upstream.namespace.rsplit("-", 1)[-1]
    with contextlib.suppress(ApiError):
        upstream.api.post(
            f"{RESOURCE}/deviceclasses",
            {
                "metadata": {"name": f"ext-{DRIVER}"},
                "spec": {
                    "extendedResourceName": EXTENDED,
                    "selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}],
                },
            },
        )
    sides = [Side(upstream.api, run, "xup", upstream.scheduler), Side(ours.api, run, "xks", ours.scheduler)]
    try:
        outcomes: dict[str, tuple[str, str | None]] = {}
        for name, node, units in EXTENDED_STEPS:
            results, written = [], []
            for side in sides:
                side.api.post(
                    f"/api/v1/namespaces/{side.namespace}/pods",
                    {
                        "metadata": {"name": name},
                        "spec": {
                            "schedulerName": side.scheduler,
                            "nodeSelector": {"kubernetes.io/hostname": side.nodes[node]},
                            "containers": [
                                {
                                    "name": "c",
                                    "image": "x",
                                    "resources": {"requests": {EXTENDED: units}, "limits": {EXTENDED: units}},
                                }
                            ],
                            "terminationGracePeriodSeconds": 0,
                        },
                    },
                )
                results.append(side.outcome(name, expect_nothing=False))
                written.append(_extended_outcome(side, name))
            assert results[1] == results[0], f"pod {name}: upstream {results[0]}, kubesched {results[1]}"
            assert written[1] == written[0], f"pod {name}: what was written"
            assert len(written[0]["claims"]) == (results[0][0] == "Scheduled"), f"pod {name}: {written[0]}"
            outcomes[name] = results[0]
        assert [r for r, _ in outcomes.values()] == ["Scheduled", "Scheduled", "Unschedulable"]
        assert " 1 cannot allocate all claims" in (outcomes["ext-too-many"][1] or "")
    finally:
        for side in sides:
            side.clean_up()
