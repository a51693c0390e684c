"""GPU replay metrics as the FGD paper reports them: sampled at every 1 % of arrived GPU requests.

A scenario has GPUs when its ResourceSlices publish devices of the driver `gpu.kubesched.io` (what
`kubesched trace import openb` writes: each GPU a device with a consumable `share` of 1000) or its
nodes have `nvidia.com/gpu`. Shares are counted in thousandths of a GPU ("milli"):

- *arrived*: what the pods created so far ask for, in percent of the cluster's GPUs;
- *unallocated*: the GPU share no pod holds, in percent of all of it (a GPU three tenths taken
  is seven tenths unallocated);
- *failed*: pods created so far and not bound (nothing leaves in the paper's protocol, so a pod
  that did not fit when it came stays failed);
- *fragmented*: the paper's fragmentation measure (Sec. 3, `plugins/contrib/gpu_share`): the free
  GPU share the workload's typical tasks could not use, in percent of all GPUs. The typical tasks
  are the most frequent task shapes (CPU, share of each GPU, GPU count) of the scenario's pods until
  they cover 95 % of them, as the authors take them. GPU models a task accepts are not read from
  its claim's CEL selectors: every typical task accepts every model.

The paper's authors log the cluster after every arrival and give, for each whole percent `p`, the
mean over the arrivals whose arrived share rounds to `p` (their `merge_alloc_discrete.py`); the
replay observes the cluster after each instant's scheduling and does the same.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from kubesched.api.objects import Node, Pod
from kubesched.api.quantity import QuantityError, quantity_value, resource_amount
from kubesched.api.resource import ResourceClaim, ResourceClaimTemplate, ResourceSlice
from kubesched.api.resources import pod_requests
from kubesched.framework.node_info import pod_key
from kubesched.plugins.contrib.gpu_share import GPU_MILLI, TaskShape, typical_tasks
from kubesched.plugins.contrib.gpu_share.args import DEFAULT_CAPACITY, DEFAULT_DRIVER
from kubesched.plugins.contrib.gpu_share.pod_shape import gpu_requests
from kubesched.simulate.replay.gpu_nodes import GpuNodes, Taken
from kubesched.simulate.replay.model import GpuReport, GpuSample

__all__ = ["GPU_DRIVER", "GPU_MILLI", "GPU_SHARE", "MODEL_LABEL", "NVIDIA_GPU", "GpuMeter"]

#: The DRA driver (and DeviceClass) whose devices are GPUs with a consumable share: the policies' default.
GPU_DRIVER = DEFAULT_DRIVER
#: The consumable capacity of a GPU device; GPU_MILLI is the whole GPU.
GPU_SHARE = DEFAULT_CAPACITY
NVIDIA_GPU = "nvidia.com/gpu"
#: The node label naming the GPU model of nodes with nvidia.com/gpu.
MODEL_LABEL = "gpu.kubesched.io/model"
#: The share of all tasks the typical ones cover (the authors' podPopularityThreshold).
TYPICAL_COVERAGE = 0.95


@dataclass(frozen=True, slots=True)
class _Ask:
    """A pod's GPU request: `per_gpu` share (milli) on each of `count` GPUs."""

    per_gpu: int = 0
    count: int = 0

    @property
    def total(self) -> int:
        return self.per_gpu * self.count


@dataclass(slots=True)
class _Bucket:
    unallocated_sum: float = 0.0
    fragmented_sum: float = 0.0
    count: int = 0
    failed: int = 0
    failed_gpu: int = 0


@dataclass(slots=True)
class GpuMeter:
    """Counts GPU shares as pods arrive, bind and leave, and buckets the observations by percent."""

    source: str
    capacity: int  # milli
    templates: Mapping[tuple[str, str], ResourceClaimTemplate]
    nodes: GpuNodes
    #: (pool, device) of a GPU device -> its (row, column) in `nodes`
    columns: Mapping[tuple[str, str], tuple[int, int]]
    arrived: int = 0
    allocated: int = 0
    #: Pods present (created, not gone) and bound; the same for pods asking for GPUs.
    present: int = 0
    bound: int = 0
    gpu_present: int = 0
    gpu_bound: int = 0
    #: pod key -> what it asks for; once bound, what it took
    asks: dict[str, _Ask] = field(default_factory=dict)
    taken: dict[str, Taken] = field(default_factory=dict)
    buckets: dict[int, _Bucket] = field(default_factory=dict)

    @classmethod
    def for_scenario(
        cls,
        slices: Iterable[ResourceSlice],
        templates: Iterable[ResourceClaimTemplate],
        nodes: Iterable[Node],
        pods: Iterable[Pod],
    ) -> GpuMeter | None:
        """A meter for a cluster with GPUs, else None. `nodes` and `pods`: every node and pod the
        timeline creates (the pods give the typical tasks)."""
        by_name = {n.metadata.name: n for n in nodes}  # a node created twice: as it was last
        names = list(by_name)
        row_of = {name: i for i, name in enumerate(names)}
        gpus: list[list[int]] = [[] for _ in names]
        models = ["" for _ in names]
        columns: dict[tuple[str, str], tuple[int, int]] = {}
        for slc in slices:
            row = row_of.get(slc.spec.node_name or "")
            if slc.spec.driver != GPU_DRIVER or row is None:
                continue
            for device in slc.spec.devices:
                share = device.capacity.get(GPU_SHARE)
                columns[(slc.spec.pool.name, device.name)] = (row, len(gpus[row]))
                gpus[row].append(_amount(share.value) if share is not None else GPU_MILLI)
                model = device.attributes.get("model") or device.attributes.get(f"{GPU_DRIVER}/model")
                if model is not None and model.string and not models[row]:
                    models[row] = model.string
        source = "dra"
        if not columns:
            source = "extended"
            for row, name in enumerate(names):
                node = by_name[name]
                gpus[row] = [GPU_MILLI] * _amount(node.status.allocatable.get(NVIDIA_GPU, 0))
                models[row] = node.metadata.labels.get(MODEL_LABEL, "")
        capacity = sum(sum(g) for g in gpus)
        if not capacity:
            return None
        template_of = {(t.metadata.namespace or "default", t.metadata.name): t for t in templates}
        cpu = [resource_amount("cpu", by_name[n].status.allocatable.get("cpu", 0)) for n in names]
        shapes = [s for s in (_shape(p, _pod_ask(p, source, template_of)) for p in pods) if s is not None]
        typical = typical_tasks(shapes, TYPICAL_COVERAGE)
        return cls(source, capacity, template_of, GpuNodes(names, cpu, models, gpus, typical), columns)

    # ------------------------------------------------------------------ what happens to pods
    def arrive(self, pod: Pod) -> None:
        ask = _pod_ask(pod, self.source, self.templates)
        self.present += 1
        self.arrived += ask.total
        if ask.total:
            self.gpu_present += 1
            self.asks[pod_key(pod)] = ask

    def bind(self, pod: Pod, claim: Callable[[str], ResourceClaim | None]) -> None:
        """The pod was bound; `claim` finds a claim by `namespace/name`."""
        key = pod_key(pod)
        self.bound += 1
        row = self.nodes.rows.get(pod.spec.node_name or "")
        ask = self.asks.get(key)
        if ask is not None:
            self.gpu_bound += 1
        if row is None:
            return
        shares: list[tuple[int, int]] = []
        if ask is not None:
            shares = (
                self._taken_devices(pod, claim)
                if self.source == "dra"
                else self.nodes.whole_gpus(row, ask.count)
            )
        taken = (row, pod_requests(pod).get("cpu", 0), shares)
        self.taken[key] = taken
        self.allocated += sum(share for _, share in shares)
        self.nodes.take(taken)

    def leave(self, pod: Pod, *, was_bound: bool) -> None:
        """The pod is gone; what it asked for stays arrived (the paper's axis only grows)."""
        key = pod_key(pod)
        ask = self.asks.pop(key, None)
        self.present -= 1
        if ask is not None:
            self.gpu_present -= 1
        if not was_bound:
            return
        self.bound -= 1
        if ask is not None:
            self.gpu_bound -= 1
        taken = self.taken.pop(key, None)
        if taken is not None:
            self.allocated -= sum(share for _, share in taken[2])
            self.nodes.take(taken, -1)

    # ------------------------------------------------------------------ observing
    def observe(self) -> None:
        """Add the cluster as it is now to the bucket of the current arrived percent."""
        if not self.arrived:
            return
        percent = round(100 * self.arrived / self.capacity)
        bucket = self.buckets.get(percent)
        if bucket is None:
            bucket = self.buckets[percent] = _Bucket()
        bucket.unallocated_sum += self._unallocated()
        bucket.fragmented_sum += self._fragmented()
        bucket.count += 1
        bucket.failed = self.present - self.bound
        bucket.failed_gpu = self.gpu_present - self.gpu_bound

    def report(self) -> GpuReport:
        samples = [
            GpuSample(
                arrived_percent=p,
                unallocated_percent=round(b.unallocated_sum / b.count, 2),
                fragmented_percent=round(b.fragmented_sum / b.count, 2),
                failed=b.failed,
                failed_gpu=b.failed_gpu,
            )
            for p, b in sorted(self.buckets.items())
        ]
        return GpuReport(
            source=self.source,
            gpus=round(self.capacity / GPU_MILLI),
            arrived_percent=round(100 * self.arrived / self.capacity, 2),
            unallocated_percent=round(self._unallocated(), 2),
            fragmented_percent=round(self._fragmented(), 2),
            typical_tasks=len(self.nodes.typical.shapes),
            samples=samples,
        )

    def _unallocated(self) -> float:
        return 100 * (self.capacity - self.allocated) / self.capacity

    def _fragmented(self) -> float:
        return 100 * self.nodes.fragmented() / self.capacity

    # ------------------------------------------------------------------ reading pods and claims
    def _taken_devices(self, pod: Pod, find: Callable[[str], ResourceClaim | None]) -> list[tuple[int, int]]:
        """(column, share) of each GPU device the pod's allocated claims hold."""
        namespace = pod.metadata.namespace or "default"
        names = [s.resource_claim_name for s in pod.status.resource_claim_statuses if s.resource_claim_name]
        names += [e.resource_claim_name for e in pod.spec.resource_claims if e.resource_claim_name]
        out: list[tuple[int, int]] = []
        for name in names:
            claim = find(f"{namespace}/{name}")
            allocation = claim.status.allocation if claim is not None else None
            if allocation is None:
                continue
            for result in allocation.devices.results:
                where = (
                    self.columns.get((result.pool, result.device)) if result.driver == GPU_DRIVER else None
                )
                if where is not None:
                    consumed = result.consumed_capacity.get(GPU_SHARE)
                    out.append((where[1], _amount(consumed) if consumed is not None else GPU_MILLI))
        return out


def _shape(pod: Pod, ask: _Ask) -> TaskShape | None:
    """The pod as a task shape for the typical tasks (None: not one the measure models)."""
    try:
        return TaskShape(pod_requests(pod).get("cpu", 0), ask.per_gpu, ask.count)
    except ValueError:
        return None


def _pod_ask(pod: Pod, source: str, templates: Mapping[tuple[str, str], ResourceClaimTemplate]) -> _Ask:
    """The pod's GPU request: its claim templates' requests of the GPU class, or its nvidia.com/gpu
    count. A share beside other GPUs is not a shape the measure models: counted by its total."""
    if source == "extended":
        count = pod_requests(pod).get(NVIDIA_GPU, 0)
        return _Ask(GPU_MILLI, count) if count else _Ask()
    whole = 0
    shares: list[int] = []
    namespace = pod.metadata.namespace or "default"
    for entry in pod.spec.resource_claims:
        template = templates.get((namespace, entry.resource_claim_template_name or ""))
        if template is None:
            continue  # a claim by name: what it holds is counted when it is allocated
        n, wanted = gpu_requests(template.spec.spec.devices.requests, GPU_DRIVER, GPU_SHARE)
        whole += n
        shares += [_amount(w) for w in wanted]
    if not shares:
        return _Ask(GPU_MILLI, whole) if whole else _Ask()
    if not whole and len(shares) == 1:
        return _Ask(shares[0], 1)
    return _Ask(whole * GPU_MILLI + sum(shares), 1)


def _amount(quantity: str | int | float) -> int:
    """A quantity as a whole number (a share: 1000 = one GPU; a count of GPUs); 0 when unreadable."""
    try:
        return quantity_value(quantity)
    except QuantityError:
        return 0
