"""Live scheduling throughput on a real kube-apiserver: raw bind rate, upstream kube-scheduler, kubesched.

One control plane (etcd + kube-apiserver from `kubesched.harness.controlplane`, which always starts the
API server with the benchmark flags: APF off, no max-inflight limits, etcd without fsync on tmpfs) serves
the whole run, so the three figures for a node count are measured against the same server and are
comparable. For each node count (fake Ready nodes shaped as scheduler_perf's `node-default.yaml`: 4 cpu,
32Gi, 110 pods; created incrementally, 1000 then 4000 more) three phases run, each in its own fresh
namespace, and its pods are deleted before the next phase starts:

raw
    Pods pre-created, then bound by this process with a tight loop of `POST pods/{name}/binding` from
    threads, each with its own keep-alive HTTPS connection and pre-encoded bodies. A short sweep over
    thread counts first picks the concurrency that binds fastest (more threads stop helping once the
    API server or this process's GIL is saturated); the full-size runs then use it, and the best
    of them is the figure. Each is timed from the first request sent to the last answer received.
    This is the ceiling any scheduler can reach through this API server on this machine; the CPU
    seconds of this client and of kube-apiserver + etcd during the run show which side limited it.
upstream
    The kube-scheduler binary built by the project (`ControlPlane.start_kube_scheduler`) with
    `clientConnection.qps: 5000, burst: 10000` and `leaderElect: false`, default profile.
kubesched
    `kubesched run` as a subprocess (the way a user starts it) with the same client limits and
    `leaderElect: false`, one profile with the default plugins. Both schedulers serve their endpoints
    as shipped: HTTPS with a certificate made at start, delegated authn/authz, the same flags.
baseline
    The same, from another source tree (`--baseline-src DIR`, e.g. `git archive` of an older commit,
    put first on PYTHONPATH): a before/after comparison measured in one run, on one API server.
    Phases may be repeated and interleaved (`--phases baseline kubesched baseline kubesched`).

For both schedulers the N pending pods (scheduler_perf's SchedulingBasic shape: one pause container
requesting 100m cpu and 500Mi memory) exist before the scheduler starts, and a watch on the namespace
records when each pod's `spec.nodeName` appears: pods/s is N / (last bind - first bind), so start-up and
informer sync are not counted (scheduler_perf leaves them out too). Peak RSS of each scheduler is its
`VmHWM` from `/proc/<pid>/status`, read just before it is stopped; its CPU seconds (start-up included)
and the API server's and etcd's over the phase are reported too, with the load average: on a shared
two-core machine rates move with whatever else runs, CPU seconds much less. So are the requests and
watch events the API server served per bound pod, by verb and resource (its `/metrics` before and
after the phase): what each scheduler costs the server, which limits the pinned rate. For kubesched,
`events_unsent_at_stop` is how many Events it still had queued when stopped right after the last
bind (from its shutdown log line): how far Events fell behind binds.

`--shape` picks the pending pods (scheduler_perf's workloads): `basic` (above), `anti-affinity` (anti-affine
to each other on the hostname), `spreading` (maxSkew 5 over three zones), `preemption` (every node runs
a low-priority pod that leaves too little room, so each pending pod evicts one), `dra` (one
ResourceClaim for one GPU per pod, 8 GPUs published per node; `--dra` is the same) and `gang` (basic
pods in gangs of GANG_SIZE, each a `scheduling.k8s.io/v1beta1` PodGroup of minCount its size: the API
server serves that version, and both schedulers run with GenericWorkload on, so each gang goes
through the pod-group cycle and GangScheduling's Permit).

`--pin` runs each scheduler phase twice: shared (every process anywhere, as above) and pinned, with
the scheduler alone on the first CPU this script may use (its affinity set before it execs) and etcd,
kube-apiserver and this script on the others, the same for both schedulers. On two cores the servers
take about half the CPU, so the shared pods/s mostly measures CPU per pod; the pinned one is what a
scheduler with a core of its own achieves.

`--threads` starts kubesched (and the baseline) through a launcher that names each OS thread after
its Python thread before it runs `python -m kubesched.cli`, and reports the scheduler's CPU and thread
switches per pod by thread (`thread_cpu_ms_per_pod`, `thread_switches_per_pod`: the scheduling loop,
the bind batches, the Event senders, the informers, the main thread that starts it all), so a change
to the live path shows which thread's cost it moved. Every scheduler phase reports its thread
switches per pod (`switches_per_pod`, all threads, voluntary and not).

Output: one JSON object per line for every figure (pods/s, CPU ms per pod, start to first bind, peak
RSS; `pinned` says which run), the ratios for each node count, and a final summary object. Every
process is started by this script and stopped by pid on the way out, even on failure.

    python benchmarks/live_throughput.py [--nodes 1000 5000] [--pods 2000 3000] [--shape SHAPE] [--pin]
        [--threads]
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import http.client
import itertools
import json
import os
import re
import ssl
import sys
import threading
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

import kubesched
from kubesched.cluster.kube.client import ApiError as KubeApiError
from kubesched.cluster.kube.client import KubeClient
from kubesched.harness.controlplane import ControlPlane, ManagedProcess
from kubesched.harness.controlplane.process import http_get
from kubesched.harness.differential.gated import GANG_GATES, NO_GATES, Gates
from kubesched.harness.fake_nodes import (
    ApiClient,
    ApiError,
    create_fake_nodes,
    create_namespace,
    pod_manifest,
)
from kubesched.harness.ports import free_port

#: scheduler_perf's pod-default.yaml requests.
POD_CPU = "100m"
POD_MEMORY = "500Mi"
#: Client limits for both schedulers (the issue's figures).
QPS = 5000
BURST = 10000
#: Concurrency levels tried for the raw bind rate, and pods bound per try.
RAW_SWEEP = (4, 8, 16, 32, 64)
RAW_SWEEP_PODS = 1000
#: Full-size raw runs at the chosen concurrency; the best is the figure (a ceiling is the best seen).
RAW_REPEATS = 2
#: Threads creating pods (a few keep-alive connections keep the API server busy without thrashing).
CREATE_THREADS = 8
#: Upper bounds, so a stuck scheduler ends the phase instead of the run hanging.
PHASE_TIMEOUT = 240.0
READY_TIMEOUT = 300.0  # start-up is not measured; 5000 nodes + slices sync slowly on a loaded machine
DELETE_TIMEOUT = 120.0
IDLE_SAMPLE_SECONDS = 2.0
#: Both schedulers serve a self-signed certificate made at start: readiness polls do not verify it.
UNVERIFIED = ssl.create_default_context()
UNVERIFIED.check_hostname = False
UNVERIFIED.verify_mode = ssl.CERT_NONE

KUBESCHED_CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {{qps: {qps}, burst: {burst}}}
leaderElection: {{leaderElect: false}}
profiles:
- schedulerName: {name}
"""


def emit(obj: dict[str, Any]) -> None:
    """One figure per line on stdout, flushed at once so a long run shows progress."""
    print(json.dumps(obj), flush=True)


def note(message: str) -> None:
    """Progress for the person watching, on stderr so stdout stays pure JSON lines."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def peak_rss_mib(pid: int) -> float | None:
    """`VmHWM` (the resident-set high-water mark) of a live process, in MiB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except (OSError, ValueError, IndexError):
        return None
    return None


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a live process (all its threads), from `/proc/<pid>/stat`.

    On a shared two-core machine the rates move with whatever else runs; CPU seconds per pod do
    much less, so they are reported next to each rate.
    """
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


#: `--threads`: how kubesched is started (`python -c NAMED_THREADS run ...`): every thread writes its
#: Python name into its OS name (`/proc/self/task/<tid>/comm`, 15 bytes kept) as it starts, then the
#: command runs as `python -m kubesched.cli` would. Nothing else changes.
NAMED_THREADS = """\
import runpy, threading
start = threading.Thread._bootstrap_inner
def named(self):
    try:
        with open(f"/proc/self/task/{threading.get_native_id()}/comm", "w") as comm:
            comm.write(self.name[:15])
    except OSError:
        pass
    start(self)
threading.Thread._bootstrap_inner = named
runpy.run_module("kubesched.cli", run_name="__main__", alter_sys=True)
"""


def thread_stats(pid: int) -> dict[str, tuple[float, int]]:
    """CPU seconds (user + system) and thread switches (voluntary and not) of a live process's
    threads, summed by OS thread name with a trailing `-N` dropped (`bind-batch-0`..`-3` are one)."""
    out: dict[str, tuple[float, int]] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = re.sub(r"-\d+$", "", (task / "comm").read_text().strip())
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            status = (task / "status").read_text()
        except OSError:  # a thread that has just exited
            continue
        switches = sum(int(n) for n in re.findall(r"^(?:non)?voluntary_ctxt_switches:\s*(\d+)", status, re.M))
        cpu, count = out.get(name, (0.0, 0))
        out[name] = (cpu + (int(fields[11]) + int(fields[12])) / tick, count + switches)
    return out


def load_average() -> float:
    """The 1-minute load average: how busy the machine was (other work skews every figure)."""
    return round(os.getloadavg()[0], 2)


# --------------------------------------------------------------------------- pods


def create_pods(
    api: ApiClient, namespace: str, count: int, scheduler: str, *, shape: str = "basic"
) -> list[str]:
    """`count` pending pods of `shape` for `scheduler`, named `pod-00000`... (see SHAPES)."""
    names = [f"pod-{i:05d}" for i in range(count)]
    labels, spec, cpu = SHAPES[shape]

    def make(name: str) -> None:
        manifest = pod_manifest(
            name,
            namespace=namespace,
            cpu=cpu,
            memory=POD_MEMORY,
            scheduler_name=scheduler,
            labels=labels,
            priority_class_name=HIGH_PRIORITY if shape == "preemption" else None,
            spec_overrides=spec,
        )
        if shape == "dra":
            api.post(
                f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims",
                {
                    "metadata": {"name": f"{name}-gpu"},
                    "spec": {
                        "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRA_DRIVER}}]}
                    },
                },
            )
            manifest["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": f"{name}-gpu"}]
            manifest["spec"]["containers"][0].setdefault("resources", {})["claims"] = [{"name": "gpu"}]
        api.post(f"/api/v1/namespaces/{namespace}/pods", manifest)

        if shape == "gang":
            manifest["spec"]["schedulingGroup"] = {"podGroupName": gang_of(name)}

    with ThreadPoolExecutor(CREATE_THREADS, thread_name_prefix="create") as pool:
        for _ in pool.map(make, names):
            pass  # re-raises the first failure
    if shape == "gang":  # after their pods: each gang is whole when its PodGroup lets it be queued
        create_gangs(api, namespace, names)
    return names


def gang_of(pod: str) -> str:
    """The PodGroup of pod `pod-NNNNN` in the gang shape: GANG_SIZE consecutive pods per group."""
    return f"gang-{int(pod.removeprefix('pod-')) // GANG_SIZE:05d}"


def create_gangs(api: ApiClient, namespace: str, pods: Sequence[str]) -> None:
    """One PodGroup per gang, minCount all of its pods (the last gang may be smaller)."""
    sizes: dict[str, int] = {}
    for pod in pods:
        sizes[gang_of(pod)] = sizes.get(gang_of(pod), 0) + 1

    def make(group: str) -> None:
        api.post(
            f"/apis/scheduling.k8s.io/v1beta1/namespaces/{namespace}/podgroups",
            {
                "metadata": {"name": group},
                "spec": {"schedulingPolicy": {"gang": {"minCount": sizes[group]}}},
            },
        )

    with ThreadPoolExecutor(CREATE_THREADS, thread_name_prefix="gangs") as pool:
        for _ in pool.map(make, sizes):
            pass


def create_victims(api: ApiClient, namespace: str, nodes: Sequence[str]) -> None:
    """The preemption shape's running pods: one low-priority pod per node, already bound, taking
    VICTIM_CPU of its 4 cpu, so each pending pod (PREEMPTOR_CPU) fits only by evicting one."""

    def make(i: int) -> None:
        manifest = pod_manifest(
            f"victim-{i:05d}", namespace=namespace, cpu=VICTIM_CPU, memory=POD_MEMORY, node_name=nodes[i]
        )
        api.post(f"/api/v1/namespaces/{namespace}/pods", manifest)

    with ThreadPoolExecutor(CREATE_THREADS, thread_name_prefix="victims") as pool:
        for _ in pool.map(make, range(len(nodes))):
            pass


def delete_pods(api: ApiClient, namespace: str) -> None:
    """Delete the namespace's pods at once (grace 0: no kubelet would ever confirm) and wait for it.

    No namespace controller runs, so deleting the namespace would leave its pods; a deletecollection
    removes them, bound or not, and the next phase starts with an empty pod cache.
    """
    api.request(
        "DELETE",
        f"/api/v1/namespaces/{namespace}/pods",
        {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0},
    )
    deadline = time.monotonic() + DELETE_TIMEOUT
    while api.get(f"/api/v1/namespaces/{namespace}/pods", limit=1).get("items"):
        if time.monotonic() > deadline:
            raise RuntimeError(f"pods of {namespace} still there after {DELETE_TIMEOUT:.0f} s")
        time.sleep(0.2)


DRA_DRIVER = "gpu.kubesched.bench"
DRA_GPUS_PER_NODE = 8
ZONES = ("zone-0", "zone-1", "zone-2")
HIGH_PRIORITY = "bench-high"
#: The preemption shape: running victims take 3500m of a node's 4 cpu, a pending pod asks 3 cpu,
#: so every pending pod evicts exactly one victim and a freed node takes one pending pod.
VICTIM_CPU = "3500m"
PREEMPTOR_CPU = "3"
#: Pod shapes (labels, spec fields, cpu request), as scheduler_perf's workloads of the same names:
#: SchedulingBasic; SchedulingPodAntiAffinity (anti-affine to each other on the hostname);
#: TopologySpreading (maxSkew 5 over three zones); PreemptionBasic (see VICTIM_CPU); and one
#: ResourceClaim for one GPU per pod, on nodes publishing 8 GPUs each in a ResourceSlice.
SHAPES: dict[str, tuple[dict[str, str], dict[str, Any], str]] = {
    "basic": ({}, {}, POD_CPU),
    "anti-affinity": (
        {"color": "green"},
        {
            "affinity": {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "labelSelector": {"matchLabels": {"color": "green"}},
                            "topologyKey": "kubernetes.io/hostname",
                        }
                    ]
                }
            }
        },
        POD_CPU,
    ),
    "spreading": (
        {"color": "blue"},
        {
            "topologySpreadConstraints": [
                {
                    "maxSkew": 5,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"color": "blue"}},
                }
            ]
        },
        POD_CPU,
    ),
    "preemption": ({}, {}, PREEMPTOR_CPU),
    "dra": ({}, {}, POD_CPU),
    "gang": ({}, {}, POD_CPU),
}
#: Pods per PodGroup in the gang shape (scheduler_perf's gang workloads use groups of this order).
GANG_SIZE = 16
#: Shapes in which a node takes at most one pending pod: `--pods` must not exceed `--nodes`.
ONE_POD_PER_NODE = ("anti-affinity", "preemption")


def create_priority_class(api: ApiClient) -> None:
    with contextlib.suppress(ApiError):  # created by an earlier node count
        api.post(
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            {"metadata": {"name": HIGH_PRIORITY}, "value": 1000},
        )


def publish_gpus(api: ApiClient, nodes: Sequence[str]) -> None:
    """A DeviceClass and one ResourceSlice of 8 GPUs per node, as a DRA driver would publish them."""
    with contextlib.suppress(ApiError):
        api.post(
            "/apis/resource.k8s.io/v1/deviceclasses",
            {
                "metadata": {"name": DRA_DRIVER},
                "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRA_DRIVER}"'}}]},
            },
        )

    def publish(node: str) -> None:
        devices = [
            {
                "name": f"gpu-{i}",
                "attributes": {"productName": {"string": "NVIDIA H100"}, "index": {"int": i}},
            }
            for i in range(DRA_GPUS_PER_NODE)
        ]
        with contextlib.suppress(ApiError):  # already published for a smaller node count
            api.post(
                "/apis/resource.k8s.io/v1/resourceslices",
                {
                    "metadata": {"name": f"{node}-gpus"},
                    "spec": {
                        "driver": DRA_DRIVER,
                        "nodeName": node,
                        "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                        "devices": devices,
                    },
                },
            )

    with ThreadPoolExecutor(CREATE_THREADS, thread_name_prefix="slices") as pool:
        for _ in pool.map(publish, nodes):
            pass


# --------------------------------------------------------------------------- raw binds


class RawBinder:
    """POST Bindings as fast as this process can: per-thread keep-alive connections, bodies pre-encoded.

    Deliberately not `KubeClient`: no rate limiter, no model layer, nothing but the request, so the
    figure is the API server's (plus the unavoidable cost of a Python HTTPS client).
    """

    def __init__(self, cp: ControlPlane) -> None:
        host, _, port = cp.server.removeprefix("https://").partition(":")
        self.host, self.port = host, int(port)
        self.context = ssl.create_default_context(cafile=str(cp.ca_file))
        self.headers = {
            "Authorization": f"Bearer {cp.token}",
            "Content-Type": "application/json",
            "Accept": "application/json",
        }

    def bind_all(self, namespace: str, pods: Sequence[str], nodes: Sequence[str], threads: int) -> float:
        """Bind each pod (nodes round-robin) from `threads` threads; seconds from first send to last reply."""
        requests = [
            (
                f"/api/v1/namespaces/{namespace}/pods/{pod}/binding",
                msgspec.json.encode(
                    {
                        "apiVersion": "v1",
                        "kind": "Binding",
                        "metadata": {"name": pod, "namespace": namespace},
                        "target": {"apiVersion": "v1", "kind": "Node", "name": nodes[i % len(nodes)]},
                    }
                ),
            )
            for i, pod in enumerate(pods)
        ]
        connections = [
            http.client.HTTPSConnection(self.host, self.port, timeout=60, context=self.context)
            for _ in range(threads)
        ]
        for conn in connections:  # handshakes before the clock starts: a scheduler's are done too
            conn.connect()
        counter = itertools.count()  # next() is atomic under the GIL: a lock-free work queue
        errors: list[str] = []
        go = threading.Barrier(threads + 1)

        def work(conn: http.client.HTTPSConnection) -> None:
            go.wait()
            while not errors:
                i = next(counter)
                if i >= len(requests):
                    return
                path, body = requests[i]
                conn.request("POST", path, body=body, headers=self.headers)
                resp = conn.getresponse()
                data = resp.read()
                if resp.status != 201:
                    errors.append(f"{path}: HTTP {resp.status}: {data[:300]!r}")

        workers = [threading.Thread(target=work, args=(c,), name=f"raw-bind-{i}") for i, c in
                   enumerate(connections)]  # fmt: skip
        for t in workers:
            t.start()
        go.wait()
        started = time.perf_counter()
        for t in workers:
            t.join()
        elapsed = time.perf_counter() - started
        for conn in connections:
            conn.close()
        if errors:
            raise RuntimeError(f"raw bind failed: {errors[0]}")
        return elapsed


# --------------------------------------------------------------------------- bind watcher


class _Spec(msgspec.Struct):
    nodeName: str = ""  # noqa: N815 - the wire name


class _Meta(msgspec.Struct):
    name: str = ""
    resourceVersion: str = ""  # noqa: N815 - the wire name


class _Pod(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)
    spec: _Spec = msgspec.field(default_factory=_Spec)


class _Event(msgspec.Struct):
    type: str
    object: _Pod


_event_decoder = msgspec.json.Decoder(_Event)


@dataclass
class BindWatch:
    """Watch one namespace from a resourceVersion and note when each pod's nodeName first appears.

    Decodes only name and nodeName, so following thousands of binds a second costs this process
    little CPU (it shares the two cores with the servers and the scheduler being measured).
    """

    client: KubeClient
    namespace: str
    expected: int
    resource_version: str
    bound_at: dict[str, float] = field(default_factory=dict)
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)
    #: Called (on the watch's thread) when the first pod is seen bound.
    on_first_bind: Callable[[], None] | None = None
    _close: Callable[[], None] | None = None
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="bind-watch", daemon=True)
        self._thread.start()

    def _remember_close(self, close: Callable[[], None]) -> None:
        self._close = close

    def _run(self) -> None:
        try:
            # The API server may end a watch early (it drops a watcher that falls behind, which a
            # loaded machine makes likely): resume from the last event seen until every pod is.
            while not self.done.is_set() and len(self.bound_at) < self.expected:
                self._follow()
        except BaseException as exc:  # reported by wait(); a closed stream on stop is expected
            if not self.done.is_set():
                self.error = exc
        finally:
            self.done.set()

    def _follow(self) -> None:
        """One watch request, from `resource_version` until it ends or every pod is seen bound."""
        params: dict[str, str | int] = {
            "watch": "true",
            "resourceVersion": self.resource_version,
            "timeoutSeconds": int(PHASE_TIMEOUT + READY_TIMEOUT),
        }
        path = f"/api/v1/namespaces/{self.namespace}/pods"
        with self.client.stream_lines(
            path, params, read_timeout=PHASE_TIMEOUT + READY_TIMEOUT, on_open=self._remember_close
        ) as lines:
            for line in lines:
                now = time.perf_counter()
                event = _event_decoder.decode(line)
                if event.type == "ERROR":  # e.g. 410 Gone: resuming from the same version cannot work
                    raise RuntimeError(f"the bind watch of {self.namespace} failed: {line[:300]!r}")
                pod = event.object
                name = pod.metadata.name
                self.resource_version = pod.metadata.resourceVersion or self.resource_version
                # Only the pending pods count: the preemption shape's victims are bound already
                # (and their deletion is an event with a nodeName too).
                if pod.spec.nodeName and name.startswith("pod-") and name not in self.bound_at:
                    self.bound_at[name] = now
                    if len(self.bound_at) == 1 and self.on_first_bind is not None:
                        self.on_first_bind()
                    if len(self.bound_at) >= self.expected:
                        return
        if not self.done.is_set():
            note(f"the bind watch of {self.namespace} ended at {len(self.bound_at)} binds; resuming")

    def wait(self, timeout: float, alive: Callable[[], bool]) -> bool:
        """True once every pod was seen bound; False on timeout or when `alive()` turns false."""
        deadline = time.monotonic() + timeout
        while not self.done.wait(0.5):
            if time.monotonic() > deadline or not alive():
                break
        if self.error is not None:
            raise RuntimeError(f"bind watch failed: {self.error}") from self.error
        return len(self.bound_at) >= self.expected

    def stop(self) -> None:
        if not self.done.is_set():
            self.done.set()
            close = self._close
            if close is not None:
                with contextlib.suppress(Exception):  # closing from another thread is best effort
                    close()
        if self._thread is not None:
            self._thread.join(10)


def current_resource_version(api: ApiClient, namespace: str) -> str:
    page = api.get(f"/api/v1/namespaces/{namespace}/pods", limit=1)
    return str((page.get("metadata") or {}).get("resourceVersion") or "")


# --------------------------------------------------------------------------- schedulers


def cpu_split() -> tuple[set[int], set[int]]:
    """For `--pin`: (the scheduler's core, everyone else's): the first CPU this process may use,
    and the others, where etcd, kube-apiserver and this process go."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        raise SystemExit(f"--pin needs at least two CPUs; this process may use {cpus}")
    return {cpus[0]}, set(cpus[1:])


def pin_tasks(pid: int, cpus: Collection[int]) -> None:
    """Move every thread of a running process onto `cpus` (threads it starts later inherit it).

    Twice, because a thread may be started by one not yet moved while the first pass runs.
    """
    for _ in range(2):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):  # a thread that has just exited
                os.sched_setaffinity(int(task.name), cpus)


def bytecode_on(src: Path) -> dict[str, str]:
    """Run kubesched from compiled bytecode, as an installed one runs (the image compiles it): the
    tree under `src` is byte-compiled once, and the environment variables that ask the scheduler to
    start with Python's bytecode cache off (PYTHONDONTWRITEBYTECODE, set by some sandboxes and CI)
    are blanked. Left set, every start compiled each of kubesched's modules from source: about
    0.3 CPU s and as much time to first bind, counted in kubesched's CPU per pod."""
    compileall.compile_dir(str(src / "kubesched"), quiet=1)
    return {"PYTHONDONTWRITEBYTECODE": ""}


class KubeschedProcess:
    """`kubesched run` as a subprocess with the benchmark's client limits (and `gates`); stopped by pid."""

    def __init__(
        self,
        cp: ControlPlane,
        name: str,
        src: Path | None = None,
        cpus: Collection[int] | None = None,
        gates: Gates = NO_GATES,
        named_threads: bool = False,
    ) -> None:
        self.port = free_port()
        config = cp.workdir / f"kubesched-bench-{self.port}.yaml"
        config.write_text(KUBESCHED_CONFIG.format(qps=QPS, burst=BURST, name=name))
        # Served as shipped and as upstream's phase serves: HTTPS with a self-signed certificate made
        # at start, delegated authn/authz, the same flags as `scheduler_args` gives kube-scheduler.
        args = [
            sys.executable, *(("-c", NAMED_THREADS) if named_threads else ("-m", "kubesched.cli")), "run",
            "--config", str(config),
            "--kubeconfig", str(cp.kubeconfig_path),
            "--bind-address", "127.0.0.1",
            "--secure-port", str(self.port),
            "--authorization-always-allow-paths", "/healthz,/readyz,/livez,/metrics",
            *gates.flags(),
        ]  # fmt: skip
        env = bytecode_on(src if src is not None else Path(kubesched.__file__).parent.parent)
        #: `time.perf_counter()` when the process was spawned (after the bytecode check above).
        self.spawned_at = time.perf_counter()
        self.proc = ManagedProcess(
            f"kubesched-{self.port}",
            args,
            cp.workdir / "logs" / f"kubesched-{self.port}.log",
            port=self.port,
            env=env | ({"PYTHONPATH": str(src)} if src is not None else {}),
            cpus=cpus,
        )

    def wait_ready(self) -> None:
        """Until `/readyz` answers 200 over HTTPS, as the upstream phase waits for kube-scheduler."""
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            if not self.proc.alive():
                raise RuntimeError(f"kubesched exited:\n{self.proc.log_tail()}")
            if http_get(f"https://127.0.0.1:{self.port}/readyz", UNVERIFIED, timeout=2)[0] == 200:
                return
            time.sleep(0.1)
        raise RuntimeError(f"kubesched not ready after {READY_TIMEOUT:.0f} s:\n{self.proc.log_tail()}")


@dataclass
class Bench:
    cp: ControlPlane
    api: ApiClient
    watch_client: KubeClient
    raw: RawBinder
    baseline_src: Path | None = None
    #: The pending pods' shape (SHAPES); "dra" needs GPUs published on the nodes.
    shape: str = "basic"
    #: The raw phase's thread counts tried, pods per try, and full-size runs (smaller in `--smoke`).
    raw_sweep: tuple[int, ...] = RAW_SWEEP
    raw_sweep_pods: int = RAW_SWEEP_PODS
    raw_repeats: int = RAW_REPEATS
    #: Seconds the servers' idle CPU is sampled before each scheduler phase.
    idle_sample_seconds: float = IDLE_SAMPLE_SECONDS
    #: `--threads`: kubesched's threads named, and its CPU and switches reported per thread.
    threads: bool = False
    seq: itertools.count[int] = field(default_factory=itertools.count)

    @property
    def gates(self) -> Gates:
        """What both schedulers (and the API server) run with: GenericWorkload for the gang shape."""
        return shape_gates(self.shape)

    def namespace(self, phase: str, nodes: int) -> str:
        name = f"bench-{nodes}-{phase}-{next(self.seq)}"
        create_namespace(self.api, name)
        return name

    # ---- (a) raw

    def raw_phase(self, nodes: list[str], pods: int) -> dict[str, Any]:
        sweep: dict[str, float] = {}
        for threads in self.raw_sweep:
            ns = self.namespace("raw-sweep", len(nodes))
            names = create_pods(self.api, ns, self.raw_sweep_pods, "no-scheduler")
            seconds = self.raw.bind_all(ns, names, nodes, threads)
            sweep[str(threads)] = round(self.raw_sweep_pods / seconds, 1)
            delete_pods(self.api, ns)
        best = max(self.raw_sweep, key=lambda t: sweep[str(t)])
        note(f"raw sweep at {len(nodes)} nodes (threads -> binds/s): {sweep}; using {best}")
        runs: list[tuple[float, float, float]] = []  # seconds, client CPU, API server + etcd CPU
        for _ in range(self.raw_repeats):
            ns = self.namespace("raw", len(nodes))
            names = create_pods(self.api, ns, pods, "no-scheduler")
            client0, server0 = time.process_time(), self.server_cpu()
            seconds = self.raw.bind_all(ns, names, nodes, best)
            runs.append((seconds, time.process_time() - client0, self.server_cpu() - server0))
            delete_pods(self.api, ns)
        seconds, client_cpu, server_cpu = min(runs)
        return {
            "phase": "raw",
            "nodes": len(nodes),
            "pods": pods,
            "seconds": round(seconds, 3),
            "pods_per_second": round(pods / seconds, 1),
            "threads": best,
            "runs_pods_per_second": [round(pods / r[0], 1) for r in runs],
            "sweep_binds_per_second": sweep,
            # Who was busy during the best run: this client, or the API server and etcd.
            "client_cpu_seconds": round(client_cpu, 2),
            "apiserver_etcd_cpu_seconds": round(server_cpu, 2),
            "load_average_1m": load_average(),
        }

    def server_cpu(self) -> float:
        """CPU seconds used so far by kube-apiserver and etcd together."""
        return sum(self.servers_cpu())

    def servers_cpu(self) -> tuple[float, float]:
        """CPU seconds used so far by kube-apiserver and by etcd."""
        used = [
            cpu_seconds(proc.pid) if proc is not None else None for proc in (self.cp.apiserver, self.cp.etcd)
        ]
        return used[0] or 0.0, used[1] or 0.0

    def idle_server_cores(self) -> float:
        """The cores kube-apiserver and etcd use with no scheduler running (their own loops): over a
        long phase on a loaded machine this background is a good part of their CPU per pod."""
        before, t0 = self.server_cpu(), time.perf_counter()
        time.sleep(self.idle_sample_seconds)
        return (self.server_cpu() - before) / (time.perf_counter() - t0)

    def server_counters(self) -> Counters:
        """The API server's request and watch-event counters so far (its `/metrics`)."""
        return server_counters(self.watch_client.get("/metrics").body.decode("utf-8", "replace"))

    # ---- (b) and (c)

    @contextlib.contextmanager
    def servers_on(self, cpus: Collection[int] | None) -> Iterator[None]:
        """etcd, kube-apiserver and this process on `cpus` for the block (None: left where they are)."""
        if cpus is None:
            yield
            return
        everything = os.sched_getaffinity(0)
        servers = [proc.pid for proc in (self.cp.etcd, self.cp.apiserver) if proc is not None]
        for pid in [*servers, os.getpid()]:
            pin_tasks(pid, cpus)
        try:
            yield
        finally:
            for pid in [*servers, os.getpid()]:
                pin_tasks(pid, everything)

    def scheduler_phase(
        self, phase: str, node_names: Sequence[str], pods: int, pin: tuple[set[int], set[int]] | None = None
    ) -> dict[str, Any]:
        """One scheduler binds `pods` pending pods; with `pin`, (its core, the servers' cores)."""
        nodes = len(node_names)
        scheduler_name = "default-scheduler" if phase == "upstream" else "kubesched"
        ns = self.namespace(phase, nodes)
        if self.shape == "preemption":
            create_victims(self.api, ns, node_names)
        create_pods(self.api, ns, pods, scheduler_name, shape=self.shape)
        with self.servers_on(pin[1] if pin else None):
            figures = self._run_scheduler(phase, ns, pods, scheduler_name, pin[0] if pin else None)
        if self.shape == "preemption":  # that the shape did what it is for: one eviction per pod
            left = self.api.get(f"/api/v1/namespaces/{ns}/pods").get("items") or []
            figures["victims_evicted"] = nodes - sum(
                p["metadata"]["name"].startswith("victim-") for p in left
            )
        delete_pods(self.api, ns)
        head = {"phase": phase, "nodes": nodes, "pods": pods, "shape": self.shape, "pinned": pin is not None}
        return head | figures

    def _run_scheduler(
        self, phase: str, ns: str, pods: int, scheduler_name: str, cpus: Collection[int] | None
    ) -> dict[str, Any]:
        watch = BindWatch(self.watch_client, ns, pods, current_resource_version(self.api, ns))
        at_first_bind: list[tuple[float, float]] = []
        watch.on_first_bind = lambda: at_first_bind.append(self.servers_cpu())
        watch.start()
        idle_cores = self.idle_server_cores()
        counters0 = self.server_counters()
        started = time.perf_counter()
        server0 = self.servers_cpu()
        proc: ManagedProcess | None = None
        try:
            if phase == "upstream":
                proc = self.cp.start_kube_scheduler(
                    {
                        "clientConnection": {"qps": QPS, "burst": BURST},
                        "leaderElection": {"leaderElect": False},
                        "profiles": [{"schedulerName": scheduler_name}],
                    },
                    extra_args=self.gates.flags(),
                    cpus=cpus,
                )
            else:
                src = self.baseline_src if phase == "baseline" else None
                kubesched = KubeschedProcess(self.cp, scheduler_name, src, cpus, self.gates, self.threads)
                proc = kubesched.proc
                kubesched.wait_ready()
            complete = watch.wait(PHASE_TIMEOUT, proc.alive)
            server_end = self.servers_cpu()
            apiserver_cpu, etcd_cpu = (b - a for a, b in zip(server0, server_end, strict=True))
            binding_cpu = sum(server_end) - sum(at_first_bind[0]) if at_first_bind else None
            counters = self.server_counters() - counters0
            rss = peak_rss_mib(proc.pid)
            threads = thread_stats(proc.pid)  # first: the whole, read after, is never less than its parts
            cpu = cpu_seconds(proc.pid)
            if not proc.alive():
                raise RuntimeError(f"{phase} scheduler exited:\n{proc.log_tail()}")
        finally:
            if proc is not None:
                proc.stop()
            watch.stop()
        times = sorted(watch.bound_at.values())
        bound = len(times)
        span = times[-1] - times[0] if bound > 1 else 0.0
        unsent = {} if phase == "upstream" else {"events_unsent_at_stop": unsent_events(proc.log_path)}
        by_thread: dict[str, Any] = {}
        if self.threads and phase != "upstream" and bound:
            # Busiest first; threads that neither ran a clock tick nor ever waited are left out.
            ranked = sorted(
                ((k, v) for k, v in threads.items() if any(v)), key=lambda kv: (-kv[1][0], -kv[1][1])
            )
            by_thread = {
                "thread_cpu_ms_per_pod": {k: round(c / bound * 1000, 3) for k, (c, _) in ranked},
                "thread_switches_per_pod": {k: round(n / bound, 2) for k, (_, n) in ranked},
            }
        switches = sum(n for _, n in threads.values())
        extra = unsent | by_thread
        return extra | {
            "bound": bound,
            "complete": complete,
            "seconds": round(span, 3),
            "pods_per_second": round(bound / span, 1) if span > 0 else None,
            "start_to_first_bind_seconds": round(times[0] - started, 2) if times else None,
            "peak_rss_mib": rss,
            # From process start to stop: informer lists and start-up included.
            "scheduler_cpu_seconds": round(cpu, 2) if cpu is not None else None,
            "cpu_ms_per_pod": round(cpu / bound * 1000, 2) if cpu is not None and bound else None,
            # Thread switches of all its threads, voluntary (waits) and not (preempted), per pod.
            "switches_per_pod": round(switches / bound, 2) if bound else None,
            # What the scheduler cost the API server over the phase (start-up included), the limit
            # of the pinned rate: CPU per process, and requests and watch events sent per bound pod.
            "apiserver_etcd_cpu_seconds": round(apiserver_cpu + etcd_cpu, 2),
            "apiserver_cpu_seconds": round(apiserver_cpu, 2),
            "etcd_cpu_seconds": round(etcd_cpu, 2),
            "apiserver_etcd_cpu_ms_per_pod": round((apiserver_cpu + etcd_cpu) / bound * 1000, 2)
            if bound
            else None,
            # From the first bind seen to the last: what a pod costs the servers once start-up is
            # over, and the share of a core they used then (near 1 with one core of their own: the
            # servers, not the scheduler, set the rate).
            "apiserver_etcd_cpu_ms_per_pod_binding": round(binding_cpu / bound * 1000, 2)
            if binding_cpu is not None and bound
            else None,
            "apiserver_etcd_cores_binding": round(binding_cpu / span, 2)
            if binding_cpu is not None and span
            else None,
            # The same without the servers' background (their CPU with no scheduler, sampled just
            # before): what the pods themselves cost them.
            "apiserver_etcd_idle_cores": round(idle_cores, 3),
            "apiserver_etcd_cpu_ms_per_pod_binding_over_idle": round(
                max(0.0, binding_cpu - idle_cores * span) / bound * 1000, 2
            )
            if binding_cpu is not None and bound
            else None,
            "apiserver_requests_per_pod": counters.per_pod("requests", bound),
            "apiserver_watch_events_per_pod": counters.per_pod("watch_events", bound),
            "load_average_1m": load_average(),
        }


_SAMPLE = re.compile(r"^(apiserver_request_total|apiserver_watch_events_total)\{([^}]*)\} (\S+)$", re.M)
_LABEL = re.compile(r'(\w+)="([^"]*)"')


@dataclass
class Counters:
    """Sums of the API server's `apiserver_request_total` by verb and resource (with subresource,
    group when not core), and of `apiserver_watch_events_total` by resource; subtract two to get a
    phase's. The server counts a request when it ends: a watch still open is not in them yet."""

    requests: dict[str, float] = field(default_factory=dict)
    watch_events: dict[str, float] = field(default_factory=dict)

    def __sub__(self, before: Counters) -> Counters:
        def minus(now: dict[str, float], then: dict[str, float]) -> dict[str, float]:
            return {k: v - then.get(k, 0.0) for k, v in now.items() if v - then.get(k, 0.0) > 0}

        return Counters(minus(self.requests, before.requests), minus(self.watch_events, before.watch_events))

    def per_pod(self, which: str, pods: int) -> dict[str, float]:
        """`which` ("requests" or "watch_events") per pod, largest first; counts of 1 and 2 say little
        about a scheduler's per-pod cost, so rows below 0.01 per pod are left out."""
        counts: dict[str, float] = getattr(self, which)
        if not pods:
            return {}
        rows = sorted(counts.items(), key=lambda kv: -kv[1])
        return {k: round(v / pods, 3) for k, v in rows if v / pods >= 0.01}


def server_counters(text: str) -> Counters:
    """Counters from the API server's Prometheus text."""
    out = Counters()
    for metric, labels_text, value in _SAMPLE.findall(text):
        labels = dict(_LABEL.findall(labels_text))
        resource = labels.get("resource", "")  # a non-resource path's is in `subresource`
        if labels.get("subresource"):
            resource += "/" + labels["subresource"]
        if labels.get("group"):
            resource += "." + labels["group"]
        if metric == "apiserver_request_total":
            key, table = f"{labels.get('verb', '')} {resource}", out.requests
        else:
            key, table = resource, out.watch_events
        table[key] = table.get(key, 0.0) + float(value)
    return out


def shape_gates(shape: str) -> Gates:
    return GANG_GATES if shape == "gang" else NO_GATES


def unsent_events(log: Path) -> int:
    """Events kubesched still had queued when it was stopped (right after the last bind), from the
    line its Event queue logs at shutdown: how far Events fell behind binds."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return 0
    # Events wait in an outbox that one call sends: its own line counts the Events, the calls'
    # line (older trees: one call per Event) the calls.
    found = re.findall(r"events: (\d+) Events not sent at shutdown", text) or re.findall(
        r"events: (\d+) calls not made at shutdown", text
    )
    return int(found[-1]) if found else 0


def label(figure: dict[str, Any]) -> str:
    """A phase's name, marked when its scheduler ran pinned to its own core."""
    return f"{figure['phase']} pinned" if figure.get("pinned") else str(figure["phase"])


def _by_phase(figures: list[dict[str, Any]], key: str) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for f in figures:
        out.setdefault(f"{label(f)}@{f['nodes']}", []).append(f.get(key))
    return out


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a and b else None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, nargs="+", default=[1000, 5000], help="node counts, ascending")
    parser.add_argument("--pods", type=int, nargs="+", default=[2000, 3000], help="pods per phase, per count")
    parser.add_argument(
        "--keep-workdir", action="store_true", help="keep the control plane's dir (every process's log)"
    )
    parser.add_argument(
        "--phases",
        nargs="+",
        default=["raw", "upstream", "kubesched"],
        choices=["raw", "upstream", "kubesched", "baseline"],
        help="phases in order; repeat them to interleave runs",
    )
    parser.add_argument(
        "--shape",
        choices=list(SHAPES),
        default="basic",
        help="the pending pods (see SHAPES): anti-affinity and preemption need --pods <= --nodes",
    )
    parser.add_argument(
        "--dra",
        action="store_true",
        help="--shape dra: every node publishes 8 GPUs in a ResourceSlice; every pod claims one",
    )
    parser.add_argument(
        "--pin",
        action="store_true",
        help="run each scheduler phase twice: shared, then with the scheduler alone on one core and "
        "etcd, kube-apiserver and this process on the others",
    )
    parser.add_argument(
        "--threads",
        action="store_true",
        help="name kubesched's OS threads and report its CPU and thread switches per pod by thread",
    )
    parser.add_argument(
        "--baseline-src",
        type=Path,
        metavar="DIR",
        help="a kubesched source tree (its src/ directory) for the baseline phase",
    )
    parser.add_argument(
        "--smoke", action="store_true", help="20 nodes, 20 pods, a one-step raw sweep (CI: not a measurement)"
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.nodes, args.pods = [20], [20]
    if args.dra:
        args.shape = "dra"
    if args.shape in ONE_POD_PER_NODE and any(p > n for n, p in zip(args.nodes, args.pods, strict=False)):
        parser.error(f"--shape {args.shape} places one pod per node: give --pods <= --nodes")
    pin = cpu_split() if args.pin else None
    if "baseline" in args.phases and args.baseline_src is None:
        parser.error("the baseline phase needs --baseline-src")
    if len(args.pods) != len(args.nodes) or args.nodes != sorted(args.nodes):
        parser.error("give one --pods value per --nodes value, node counts ascending")

    run_started = time.monotonic()
    figures: list[dict[str, Any]] = []
    ratios: list[dict[str, Any]] = []
    gates = shape_gates(args.shape)
    plane = ControlPlane(
        keep_workdir=args.keep_workdir, runtime_config=gates.runtime_config(), feature_gates=gates.values
    )
    with plane as cp:
        startup = ", ".join(f"{k} {v:.1f} s" for k, v in cp.startup_seconds.items())
        note(f"control plane ready: {cp.server} ({startup}); logs in {cp.workdir / 'logs'}")
        with (
            ApiClient.for_control_plane(cp) as api,
            KubeClient.from_kubeconfig(
                str(cp.kubeconfig_path), qps=0, burst=1, name="bench-watch"
            ) as watcher,
        ):
            bench = Bench(
                cp, api, watcher, RawBinder(cp), args.baseline_src, shape=args.shape, threads=args.threads
            )
            if args.shape == "preemption":
                create_priority_class(api)
            if args.smoke:
                bench.raw_sweep, bench.raw_sweep_pods, bench.raw_repeats = (4,), 20, 1
                bench.idle_sample_seconds = 0.2
            node_names: list[str] = []
            for count, pods in zip(args.nodes, args.pods, strict=True):
                t0 = time.monotonic()
                node_names += create_fake_nodes(
                    api,
                    count - len(node_names),
                    start=len(node_names),
                    concurrency=8,
                    zones=ZONES if args.shape == "spreading" else (),
                )
                if args.shape == "dra":
                    publish_gpus(api, node_names)
                note(f"{count} nodes ready ({time.monotonic() - t0:.1f} s to add them)")
                by_phase: dict[str, float | None] = {}
                for phase in args.phases:
                    runs = [None] if phase == "raw" or pin is None else [None, pin]
                    for pinned in runs:
                        note(
                            f"{phase}{' pinned' if pinned else ''}: {pods} {args.shape} pods on {count} nodes"
                        )
                        if phase == "raw":
                            figure = bench.raw_phase(node_names, pods)
                        else:
                            figure = bench.scheduler_phase(phase, node_names[:count], pods, pinned)
                        figures.append(figure)
                        by_phase[label(figure)] = figure["pods_per_second"]
                        emit(figure)
                entry: dict[str, Any] = {
                    "ratios": True,
                    "nodes": count,
                    "kubesched_over_upstream": ratio(by_phase.get("kubesched"), by_phase.get("upstream")),
                    "kubesched_over_raw": ratio(by_phase.get("kubesched"), by_phase.get("raw")),
                    "upstream_over_raw": ratio(by_phase.get("upstream"), by_phase.get("raw")),
                }
                if pin is not None:
                    entry["pinned_kubesched_over_upstream"] = ratio(
                        by_phase.get("kubesched pinned"), by_phase.get("upstream pinned")
                    )
                ratios.append(entry)
                emit(entry)
    emit(
        {
            "summary": "live_throughput",
            "cores": os.cpu_count(),
            "load_average_1m_at_end": load_average(),
            "wall_seconds": round(time.monotonic() - run_started, 1),
            "pod_shape": {
                "shape": args.shape,
                "cpu": SHAPES[args.shape][2],
                "memory": POD_MEMORY,
                "image": "pause",
            },
            "pinned": {"scheduler": sorted(pin[0]), "servers": sorted(pin[1])} if pin else None,
            "client": {"qps": QPS, "burst": BURST},
            # A list per phase: phases may be repeated (interleaved before/after runs).
            "pods_per_second": _by_phase(figures, "pods_per_second"),
            "peak_rss_mib": _by_phase([f for f in figures if "peak_rss_mib" in f], "peak_rss_mib"),
            "cpu_ms_per_pod": _by_phase([f for f in figures if "cpu_ms_per_pod" in f], "cpu_ms_per_pod"),
            "ratios": ratios,
            "targets": {"kubesched_over_upstream": ">= 1.0", "kubesched_over_raw": ">= 0.8"},
        }
    )
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except KubeApiError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
