"""HTTP scheduler extenders called from kubesched's own scheduling cycle, as kube-scheduler calls them.

The config's `extenders` list keeps upstream's semantics (upstream `pkg/scheduler/extender.go`):

* filter runs after the plugins' Filter, extender after extender, each on the nodes the previous
  one kept, and only for pods it is interested in (`managedResources` empty, or a container's
  requests/limits name one of them). `FailedAndUnresolvableNodes` become UnschedulableAndUnresolvable
  node statuses (they win over `FailedNodes`, which become Unschedulable); a node dropped by an
  extender marks the pod's failure with the pseudo-plugin `Extender`, so any cluster event requeues
  it. A failure (transport, non-200, `Error`) fails the cycle, unless the extender is `ignorable`.
* prioritize calls all interested prioritizers in parallel; each node gains `score * weight * 10`
  (extenders score 0..10, plugins 0..100). Errors are ignored: that extender adds nothing. In
  `simulate --explain` the contribution shows up as the score `extender:<urlPrefix>`.
* bind: the first interested extender with a `bindVerb` binds instead of the Bind plugins (config
  validation allows at most one); an ignorable one that fails falls through to the plugins.
* preempt (`process_preemption`) speaks the protocol; the DefaultPreemption plugin does not call
  it yet.

`httpTimeout` (default 5 s) bounds each call; `enableHTTPS` without a CA means an unverified
connection, as upstream; `tlsConfig` supplies the CA, a client certificate and the server name.
The scheduler core stays free of I/O except through this object, which `Scheduler` receives when
the config has extenders. The wire types come from `kubesched.api.extender_v1`, which depends only on
`kubesched.api`: the protocol is shared by the client here and the server there.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import os
import ssl
import tempfile
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx2
import numpy as np

from kubesched.api.extender_v1 import (
    ExtenderArgs,
    ExtenderBindingArgs,
    ExtenderPreemptionArgs,
    MetaPod,
    MetaVictims,
    NodeList,
    Victims,
    WireError,
    decode_binding_result,
    decode_filter_result,
    decode_host_priority_list,
    decode_preemption_result,
    encode,
)
from kubesched.api.objects import Node, Pod
from kubesched.config.types import Extender as ExtenderConfig
from kubesched.config.types import ExtenderTLSConfig
from kubesched.framework.node_table import NodeSet, NodeTable
from kubesched.framework.status import Code, Status
from kubesched.framework.types import MAX_NODE_SCORE, Diagnosis

if TYPE_CHECKING:
    from kubesched.framework.scoring import ScoreOutcome

__all__ = [
    "DEFAULT_EXTENDER_TIMEOUT",
    "EXTENDER_PLUGIN",
    "ExtenderError",
    "Extenders",
    "FilterResult",
    "HTTPExtender",
]

log = logging.getLogger(__name__)

#: Seconds, when `httpTimeout` is unset or zero (upstream's DefaultExtenderTimeout).
DEFAULT_EXTENDER_TIMEOUT = 5.0
#: The pseudo-plugin recorded when extenders rejected nodes (upstream's framework.ExtenderName).
EXTENDER_PLUGIN = "Extender"
#: Extender scores are 0..10, node scores 0..100.
EXTENDER_SCORE_FACTOR = MAX_NODE_SCORE // 10


class ExtenderError(Exception):
    """An extender call failed: no answer, a non-200 answer, an undecodable one, or its `Error`."""


@dataclass(frozen=True, slots=True)
class FilterResult:
    """What one extender's filter kept, and why it rejected the others (node -> message)."""

    passed: list[str]
    failed: dict[str, str]
    failed_and_unresolvable: dict[str, str]


# --------------------------------------------------------------------------- TLS


def _pem(data: str) -> bytes:
    """`*Data` fields are base64 of PEM (Go's []byte in YAML); plain PEM is accepted too."""
    if "-----BEGIN" in data:
        return data.encode()
    return base64.b64decode(data)


@contextlib.contextmanager
def _pem_files(cert: bytes, key: bytes) -> Iterator[tuple[str, str]]:
    """`ssl` loads client certificates only from files: write them privately, load, delete."""
    paths: list[str] = []
    try:
        for content in (cert, key):
            fd, path = tempfile.mkstemp(prefix="kubesched-extender-", suffix=".pem")
            paths.append(path)
            with os.fdopen(fd, "wb") as fh:
                fh.write(content)
        yield paths[0], paths[1]
    finally:
        for path in paths:
            with contextlib.suppress(OSError):
                os.unlink(path)


def ssl_context(cfg: ExtenderConfig) -> ssl.SSLContext:
    """The client TLS settings upstream derives from `enableHTTPS` and `tlsConfig`."""
    tls = cfg.tls_config or ExtenderTLSConfig()
    has_ca = bool(tls.ca_file or tls.ca_data)
    ctx = ssl.create_default_context(
        cafile=tls.ca_file or None,
        cadata=_pem(tls.ca_data).decode() if tls.ca_data else None,
    )
    if tls.insecure or (cfg.enable_https and not has_ca):
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if tls.cert_file or tls.key_file:
        ctx.load_cert_chain(tls.cert_file or "", tls.key_file or None)
    elif tls.cert_data and tls.key_data:
        with _pem_files(_pem(tls.cert_data), _pem(tls.key_data)) as (cert, key):
            ctx.load_cert_chain(cert, key)
    return ctx


# --------------------------------------------------------------------------- one extender


class HTTPExtender:
    """One entry of `extenders`: the calls of the extender protocol over a pooled HTTP client.

    Thread-safe (prioritize calls run in parallel). `transport` replaces the network in tests.
    """

    def __init__(self, cfg: ExtenderConfig, *, transport: httpx2.BaseTransport | None = None) -> None:
        self.cfg = cfg
        self.url_prefix = (cfg.url_prefix or "").rstrip("/")
        self.weight = cfg.weight or 1
        timeout = cfg.http_timeout_seconds or DEFAULT_EXTENDER_TIMEOUT
        self.timeout = timeout
        self.managed = frozenset(r.name for r in cfg.managed_resources)
        tls = cfg.tls_config
        self._extensions: dict[str, Any] = (
            {"sni_hostname": tls.server_name} if tls and tls.server_name else {}
        )
        verify: ssl.SSLContext | bool = True
        if self.url_prefix.startswith("https:") or cfg.enable_https or tls is not None:
            verify = ssl_context(cfg)
        self._http = httpx2.Client(
            verify=verify,
            timeout=httpx2.Timeout(timeout),
            transport=transport,
            trust_env=False,
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )

    # -- what it does
    @property
    def name(self) -> str:
        """Upstream names an extender by its URL prefix."""
        return self.cfg.url_prefix or ""

    @property
    def ignorable(self) -> bool:
        return bool(self.cfg.ignorable)

    @property
    def node_cache_capable(self) -> bool:
        return bool(self.cfg.node_cache_capable)

    @property
    def is_filter(self) -> bool:
        return bool(self.cfg.filter_verb)

    @property
    def is_prioritizer(self) -> bool:
        return bool(self.cfg.prioritize_verb)

    @property
    def is_binder(self) -> bool:
        return bool(self.cfg.bind_verb)

    @property
    def supports_preemption(self) -> bool:
        return bool(self.cfg.preempt_verb)

    def is_interested(self, pod: Pod) -> bool:
        """True without managedResources; else if a container requests or limits one of them."""
        if not self.managed:
            return True
        for container in (*pod.spec.containers, *pod.spec.init_containers):
            res = container.resources
            if any(r in self.managed for r in res.requests) or any(r in self.managed for r in res.limits):
                return True
        return False

    def close(self) -> None:
        self._http.close()

    # -- transport
    def _send(self, verb: str, body: bytes) -> bytes:
        url = f"{self.url_prefix}/{verb}"
        try:
            resp = self._http.post(url, content=body, extensions=self._extensions)
        except httpx2.TimeoutException:
            raise ExtenderError(
                f"{verb} with extender at URL {url}: no answer within {self.timeout:g}s"
            ) from None
        except httpx2.HTTPError as exc:
            raise ExtenderError(f"{verb} with extender at URL {url}: {exc or type(exc).__name__}") from None
        if resp.status_code != 200:
            raise ExtenderError(f"failed {verb} with extender at URL {url}, code {resp.status_code}")
        return resp.content

    def _args(self, pod: Pod, nodes: NodeSet) -> ExtenderArgs:
        if self.node_cache_capable:
            return ExtenderArgs(pod=pod, node_names=nodes.names)
        return ExtenderArgs(pod=pod, nodes=NodeList(items=[info.node for info in nodes.infos]))

    # -- verbs
    def filter(self, pod: Pod, nodes: NodeSet) -> FilterResult:
        """The nodes the extender keeps; raises ExtenderError (it may name nodes we never sent)."""
        verb = self.cfg.filter_verb or ""
        body = self._send(verb, encode(self._args(pod, nodes)))
        try:
            result = decode_filter_result(body)
        except WireError as exc:
            raise ExtenderError(f"{verb} with extender at URL {self.url_prefix}/{verb}: {exc}") from None
        if result.error:
            raise ExtenderError(result.error)
        sent = set(nodes.names)
        passed: list[str]
        if self.node_cache_capable and result.node_names is not None:
            passed = result.node_names
        elif result.nodes is not None:
            passed = [n.metadata.name for n in result.nodes.items if isinstance(n, Node)]
        else:
            passed = []  # neither set: upstream keeps no node
        for name in passed:
            if name not in sent:
                raise ExtenderError(
                    f'extender "{self.name}" claims a filtered node "{name}" which is not found in the '
                    "input node list"
                )
        return FilterResult(
            passed, dict(result.failed_nodes or {}), dict(result.failed_and_unresolvable_nodes or {})
        )

    def prioritize(self, pod: Pod, nodes: NodeSet) -> dict[str, int]:
        """host -> score (0..10 expected; not range-checked, as upstream)."""
        verb = self.cfg.prioritize_verb or ""
        body = self._send(verb, encode(self._args(pod, nodes)))
        try:
            hosts = decode_host_priority_list(body)
        except WireError as exc:
            raise ExtenderError(f"{verb} with extender at URL {self.url_prefix}/{verb}: {exc}") from None
        scores: dict[str, int] = {}
        for hp in hosts:
            scores[hp.host] = scores.get(hp.host, 0) + hp.score
        return scores

    def bind(self, pod: Pod, node: str) -> None:
        verb = self.cfg.bind_verb or ""
        args = ExtenderBindingArgs(
            pod_name=pod.metadata.name,
            pod_namespace=pod.metadata.namespace,
            pod_uid=pod.metadata.uid,
            node=node,
        )
        body = self._send(verb, encode(args))
        try:
            result = decode_binding_result(body)
        except WireError as exc:
            raise ExtenderError(f"{verb} with extender at URL {self.url_prefix}/{verb}: {exc}") from None
        if result.error:
            raise ExtenderError(result.error)

    def process_preemption(
        self, pod: Pod, victims: dict[str, tuple[list[Pod], int]], table: NodeTable
    ) -> dict[str, tuple[list[Pod], int]]:
        """The candidates the extender keeps, victims resolved against the nodes' pods by UID.

        `victims`: node -> (victim pods, PDB violations). Upstream's checks: every returned node
        must keep at least one victim, and every UID must be a pod on that node.
        """
        verb = self.cfg.preempt_verb or ""
        if self.node_cache_capable:
            meta = {
                node: MetaVictims(pods=[MetaPod(uid=p.metadata.uid) for p in pods], num_pdb_violations=pdb)
                for node, (pods, pdb) in victims.items()
            }
            args = ExtenderPreemptionArgs(pod=pod, node_name_to_meta_victims=dict(meta))
        else:
            full = {
                node: Victims(pods=list(pods), num_pdb_violations=pdb)
                for node, (pods, pdb) in victims.items()
            }
            args = ExtenderPreemptionArgs(pod=pod, node_name_to_victims=dict(full))
        body = self._send(verb, encode(args))
        try:
            result = decode_preemption_result(body)
        except WireError as exc:
            raise ExtenderError(f"{verb} with extender at URL {self.url_prefix}/{verb}: {exc}") from None
        out: dict[str, tuple[list[Pod], int]] = {}
        for node, mv in (result.node_name_to_meta_victims or {}).items():
            uids = [p.uid for p in (mv.pods if mv is not None else None) or ()]
            if not uids:
                if self.ignorable:
                    continue
                raise ExtenderError(f'expected at least one victim pod on node "{node}"')
            row = table.index.get(node)
            on_node = (
                {pi.pod.metadata.uid: pi.pod for pi in table.infos[row].pods.values()}
                if row is not None
                else {}
            )
            resolved: list[Pod] = []
            for uid in uids:
                found = on_node.get(uid)
                if found is None:
                    raise ExtenderError(
                        f"extender: {self.name} claims to preempt pod (UID: {uid}) on node: {node}, but the "
                        "pod is not found on that node"
                    )
                resolved.append(found)
            out[node] = (resolved, mv.num_pdb_violations if mv is not None else 0)
        return out


# --------------------------------------------------------------------------- all of them


class Extenders:
    """The configured extenders, driven from the scheduling and binding cycles.

    `after_bind(pod, node)` runs after an extender bound a pod: the simulator applies the binding
    to its in-memory cluster there; live mode leaves it unset, the watch reports the binding.
    """

    def __init__(
        self,
        extenders: Sequence[HTTPExtender],
        *,
        after_bind: Callable[[Pod, str], None] | None = None,
    ) -> None:
        self.extenders = list(extenders)
        self.after_bind = after_bind
        self._pool: ThreadPoolExecutor | None = None

    @classmethod
    def from_config(
        cls, configs: Sequence[ExtenderConfig], *, after_bind: Callable[[Pod, str], None] | None = None
    ) -> Extenders | None:
        """None when the config lists no extenders, so the scheduler skips every hook."""
        if not configs:
            return None
        return cls([HTTPExtender(c) for c in configs], after_bind=after_bind)

    def __bool__(self) -> bool:
        """True when some extender filters or prioritizes (the scheduler then looks for more nodes)."""
        return any(e.is_filter or e.is_prioritizer for e in self.extenders)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False)
        for ext in self.extenders:
            ext.close()

    # ------------------------------------------------------------------ filter

    def run_filters(
        self, pod: Pod, feasible: NodeSet, node_to_status: dict[str, Status], diagnosis: Diagnosis
    ) -> tuple[NodeSet, Status | None]:
        """Filter extenders in order over what the plugins kept; (kept nodes, Error status or None)."""
        current = feasible
        for ext in self.extenders:
            if len(current) == 0:
                break
            if not ext.is_filter or not ext.is_interested(pod):
                continue
            try:
                result = ext.filter(pod, current)
            except ExtenderError as exc:
                if ext.ignorable:
                    log.warning(
                        "skipping extender %s as it returned error and has ignorable flag set: %s",
                        ext.name,
                        exc,
                    )
                    continue
                status = Status.as_error(exc)
                status.plugin = EXTENDER_PLUGIN
                return current, status
            for name, message in result.failed_and_unresolvable.items():
                node_to_status[name] = Status(
                    Code.UNSCHEDULABLE_AND_UNRESOLVABLE, message, plugin=EXTENDER_PLUGIN
                )
            for name, message in result.failed.items():
                if name not in result.failed_and_unresolvable:
                    node_to_status[name] = Status(Code.UNSCHEDULABLE, message, plugin=EXTENDER_PLUGIN)
            keep = set(result.passed)
            mask = np.fromiter((n in keep for n in current.names), dtype=np.bool_, count=len(current))
            current = current.select(mask)
        if len(current) != len(feasible):
            diagnosis.unschedulable_plugins.add(EXTENDER_PLUGIN)
        return current, None

    def accepts_node(self, pod: Pod, table: NodeTable, name: str) -> bool:
        """The nominated-node fast path: do the filter extenders keep this one node?"""
        nodes = table.subset([name])
        kept, error = self.run_filters(pod, nodes, {}, Diagnosis())
        return error is None and len(kept) == 1

    # ------------------------------------------------------------------ prioritize

    def process_preemption(
        self, pod: Pod, candidates: dict[str, tuple[list[Pod], int]], table: NodeTable
    ) -> dict[str, tuple[list[Pod], int]]:
        """Let every interested preempt-verb extender prune the candidates, in order (upstream
        `callExtenders`, `pkg/scheduler/framework/preemption/preemption.go`).

        An extender's error fails the preemption unless it is ignorable, which skips it.
        """
        current = candidates
        for ext in self.extenders:
            if not current:
                break
            if not ext.supports_preemption or not ext.is_interested(pod):
                continue
            try:
                current = ext.process_preemption(pod, current, table)
            except ExtenderError as exc:
                if ext.ignorable:
                    log.warning(
                        "skipping extender %s as it returned error and has ignorable flag set: %s",
                        ext.name,
                        exc,
                    )
                    continue
                raise
        return current

    def run_prioritize(self, pod: Pod, nodes: NodeSet, outcome: ScoreOutcome) -> None:
        """Add `score * weight * 10` of every interested prioritizer to the totals, in parallel."""
        callers = [e for e in self.extenders if e.is_prioritizer and e.is_interested(pod)]
        if not callers or len(nodes) == 0:
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max(4, len(self.extenders)), thread_name_prefix="extender")
        futures = [(ext, self._pool.submit(ext.prioritize, pod, nodes)) for ext in callers]
        names = nodes.names
        for ext, future in futures:
            try:
                scores = future.result()
            except Exception as exc:  # upstream ignores prioritize errors: that extender adds nothing
                log.info("extender %s prioritize failed (ignored): %s", ext.name, exc)
                continue
            added = np.fromiter(
                (scores.get(n, 0) * ext.weight * EXTENDER_SCORE_FACTOR for n in names),
                dtype=np.int64,
                count=len(names),
            )
            outcome.totals += added
            key = f"extender:{ext.name}"
            previous = outcome.by_plugin.get(key)
            outcome.by_plugin[key] = added if previous is None else previous + added

    # ------------------------------------------------------------------ bind

    def bind(self, pod: Pod, node: str) -> Status | None:
        """Bind through the first interested binder; Skip when none took the pod (plugins bind)."""
        for ext in self.extenders:
            if not ext.is_binder or not ext.is_interested(pod):
                continue
            try:
                ext.bind(pod, node)
            except ExtenderError as exc:
                if ext.ignorable:
                    log.warning("extender %s failed to bind %s (ignorable): %s", ext.name, pod.key, exc)
                    continue
                status = Status.as_error(exc)
                status.plugin = EXTENDER_PLUGIN
                return status
            if self.after_bind is not None:
                try:
                    self.after_bind(pod, node)
                except Exception as exc:
                    return Status.as_error(exc)
            return None
        return Status(Code.SKIP)
