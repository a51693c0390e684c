"""`kubesched extender --config FILE [--listen HOST:PORT] [--kubeconfig PATH] [--profile NAME]`.

Serves one profile of a KubeSchedulerConfiguration to a stock kube-scheduler over the extender
protocol (filter, prioritize, preempt, bind). Where the node cache comes from decides which
requests it can answer:

* no cache (default): kube-scheduler must send full Nodes (`nodeCacheCapable: false`); plugins see
  each node without its pods, which suits plugins that look only at the pod and the node;
* `--kubeconfig PATH` (or in a cluster, `--in-cluster`): informers keep Nodes and bound Pods, so
  `nodeCacheCapable: true` works, resource-aware plugins see what is running, and bind works;
* `--cluster-snapshot PATH...`: the nodes and pods of files (`kubectl get nodes,pods -A -o yaml`),
  fixed: for what-if runs, tests and benchmarks without an API server.

Bad flags or config: one line on stderr, exit 2. SIGTERM/SIGINT: uvicorn finishes the requests in
flight and the process exits 0.
"""

from __future__ import annotations

import argparse
import logging
import signal
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from kubesched.cli._flags import add_feature_gates_flag
from kubesched.errors import InputError

if TYPE_CHECKING:
    from kubesched.config import FeatureGates
    from kubesched.extender.engine import Binder
    from kubesched.extender.state import ClusterState

__all__ = ["add_extender_command", "extender"]

log = logging.getLogger("kubesched.extender")

DEFAULT_LISTEN = "127.0.0.1:8888"
VERB_FLAGS = ("filter", "prioritize", "preempt", "bind")


def add_extender_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `extender`; sets `func(args) -> int`."""
    p = subparsers.add_parser(
        "extender",
        help="serve a profile's plugins to a stock kube-scheduler (extender protocol v1)",
        description=(
            "Serve one profile of a KubeSchedulerConfiguration over the kube-scheduler extender protocol: "
            "POST <prefix>/filter, /prioritize, /preempt, /bind; GET /healthz, /readyz, /metrics, "
            "/openapi.json."
        ),
    )
    p.add_argument("--config", required=True, metavar="FILE", help="a KubeSchedulerConfiguration")
    p.add_argument(
        "--profile", metavar="NAME", help="schedulerName of the profile to serve (default: the first)"
    )
    p.add_argument(
        "--listen",
        default=DEFAULT_LISTEN,
        metavar="HOST:PORT",
        help=f"address to serve on (default {DEFAULT_LISTEN})",
    )
    source = p.add_mutually_exclusive_group()
    source.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help="watch the cluster (node cache for nodeCacheCapable, binding); default: no cache",
    )
    source.add_argument(
        "--in-cluster", action="store_true", help="as --kubeconfig, with the pod's service account"
    )
    source.add_argument(
        "--cluster-snapshot",
        nargs="+",
        metavar="PATH",
        help="a fixed node cache from files or directories of Nodes and Pods (YAML/JSON)",
    )
    p.add_argument(
        "--prefix", default="", metavar="PATH", help="URL path prefix of the verbs (default: none)"
    )
    for verb in VERB_FLAGS:
        p.add_argument(
            f"--{verb}-verb",
            default=verb,
            metavar="VERB",
            help=f"path segment of {verb} (default {verb!r}; '' disables it)",
        )
    p.add_argument("--tls-cert-file", metavar="FILE", help="serve HTTPS with this certificate (PEM)")
    p.add_argument(
        "--tls-private-key-file",
        "--tls-key-file",
        dest="tls_key_file",
        metavar="FILE",
        help="private key of --tls-cert-file (PEM)",
    )
    p.add_argument(
        "--client-ca-file",
        metavar="FILE",
        help="callers authenticate with a client certificate signed by this CA (mutual TLS)",
    )
    p.add_argument(
        "--token-file",
        metavar="FILE",
        help="callers may authenticate with `Authorization: Bearer <token>`, the token in FILE",
    )
    p.add_argument(
        "--allow-unauthenticated",
        action="store_true",
        help=(
            "serve bind and preempt without authentication even with cluster credentials "
            "(refused otherwise: anyone who can reach the port could bind pods as this extender)"
        ),
    )
    p.add_argument(
        "--max-body-bytes",
        type=int,
        default=None,
        metavar="N",
        help="largest request body accepted (default 64 MiB)",
    )
    p.add_argument(
        "--max-inflight-bytes",
        type=int,
        default=None,
        metavar="N",
        help="request bytes read or decoded at once across all requests; more gets 503 (default 128 MiB)",
    )
    p.add_argument(
        "--max-connections",
        type=int,
        default=None,
        metavar="N",
        help="connections open at once, a quarter of them per peer address; a new one closes the"
        " longest-idle one, or is closed on accept when all are in a request (default 4096, at most"
        " half the open-file limit)",
    )
    p.add_argument(
        "--log-level", default="info", choices=("debug", "info", "warning", "error"), help="log verbosity"
    )
    add_feature_gates_flag(p)
    p.set_defaults(func=extender)


def verb_paths(prefix: str, verbs: dict[str, str]) -> dict[str, str]:
    """`verb -> path` as kube-scheduler builds URLs: prefix without trailing '/', then '/' + verb."""
    base = "/" + prefix.strip("/") if prefix.strip("/") else ""
    paths: dict[str, str] = {}
    for verb, segment in verbs.items():
        segment = segment.strip("/")
        if segment:
            paths[verb] = f"{base}/{segment}"
    if len(set(paths.values())) != len(paths):
        raise InputError("two verbs share one path", source="--*-verb")
    return paths


def parse_listen(listen: str) -> tuple[str, int]:
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise InputError("expected HOST:PORT, e.g. 127.0.0.1:8888", source="--listen")
    return host.strip("[]") or "127.0.0.1", int(port)


def _read_token(path: str) -> str:
    try:
        token = Path(path).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", source=path) from None
    if not token:
        raise InputError("the token file is empty", source=path)
    return token


def _check_file(path: str | None, flag: str) -> None:
    if path is not None and not Path(path).is_file():
        raise InputError("no such file", source=f"{flag} {path}")


def extender(args: argparse.Namespace) -> int:
    """Build the engine and serve until signalled."""
    import uvicorn

    from kubesched.cli._flags import feature_gates
    from kubesched.cli._logging import configure_logging
    from kubesched.config import load_config
    from kubesched.extender.engine import ExtenderEngine
    from kubesched.extender.limits import DEFAULT_MAX_INFLIGHT_BYTES, ConnectionLimits
    from kubesched.extender.server import (
        DEFAULT_MAX_BODY_BYTES,
        ExtenderServer,
        ServerOptions,
        uvicorn_config,
    )
    from kubesched.framework.runtime import FrameworkError
    from kubesched.plugins import default_registry
    from kubesched.scheduler.profiles import profiles_from_config

    configure_logging(str(args.log_level))
    host, port = parse_listen(args.listen)
    paths = verb_paths(args.prefix, {verb: getattr(args, f"{verb}_verb") for verb in VERB_FLAGS})
    if bool(args.tls_cert_file) != bool(args.tls_key_file):
        raise InputError("--tls-cert-file and --tls-key-file go together", source="--tls-cert-file")
    if args.client_ca_file and not args.tls_cert_file:
        raise InputError("mutual TLS needs --tls-cert-file and --tls-key-file", source="--client-ca-file")
    for flag in ("tls_cert_file", "tls_key_file", "client_ca_file"):
        _check_file(getattr(args, flag), "--" + flag.replace("_", "-"))
    _refuse_open_writes(args, paths)
    max_body = args.max_body_bytes if args.max_body_bytes is not None else DEFAULT_MAX_BODY_BYTES
    if max_body <= 0:
        raise InputError("must be positive", source="--max-body-bytes")
    inflight = args.max_inflight_bytes if args.max_inflight_bytes is not None else DEFAULT_MAX_INFLIGHT_BYTES
    if inflight < max_body:
        raise InputError(f"must be at least --max-body-bytes ({max_body})", source="--max-inflight-bytes")
    limits = ConnectionLimits()
    if args.max_connections is not None:
        if args.max_connections < 1:
            raise InputError("must be at least 1", source="--max-connections")
        limits = ConnectionLimits(max_connections=args.max_connections)
    token = _read_token(args.token_file) if args.token_file else None

    gates = feature_gates(args)
    registry = default_registry(features=gates)
    cfg = load_config(args.config, registry, gates)
    specs = profiles_from_config(cfg, registry)
    if args.profile:
        chosen = [s for s in specs if s.scheduler_name == args.profile]
        if not chosen:
            names = ", ".join(s.scheduler_name for s in specs)
            raise InputError(f"no profile named {args.profile!r} (profiles: {names})", source="--profile")
        spec = chosen[0]
    else:
        spec = specs[0]

    state, binder, closers = _cluster_state(args, gates)
    try:
        try:
            engine = ExtenderEngine(spec, registry, state, binder=binder)
        except FrameworkError as exc:
            raise InputError(str(exc), source=args.config) from None
        options = ServerOptions(
            paths=paths,
            token=token,
            client_certificates=bool(args.client_ca_file),
            max_body_bytes=max_body,
            max_inflight_bytes=inflight,
        )
        server = ExtenderServer(engine, options)
        state.start()
        config = uvicorn_config(
            server.app,
            host,
            port,
            cert_file=args.tls_cert_file,
            key_file=args.tls_key_file,
            client_ca_file=args.client_ca_file,
            log_level="warning" if args.log_level != "debug" else "info",
            limits=limits,
        )
        scheme = "https" if args.tls_cert_file else "http"
        log.info(
            "serving profile %r on %s://%s:%d (%s); node cache: %s; callers: %s",
            spec.scheduler_name,
            scheme,
            host,
            port,
            ", ".join(f"{v} {p}" for v, p in paths.items()),
            _node_cache(args, state),
            _who_may_call(args),
        )
        uvicorn_server = uvicorn.Server(config)
        # uvicorn shuts down gracefully on SIGTERM/SIGINT, then re-raises the signal with the handler
        # it found installed: a no-op one makes the process end normally (exit 0) afterwards.
        previous = {sig: signal.signal(sig, _ignore) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            uvicorn_server.run()
        except SystemExit:  # uvicorn exits this way when it cannot bind; reported just below
            pass
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        if not uvicorn_server.started:
            raise InputError(
                f"cannot serve on {host}:{port} (address in use or not available)", source="--listen"
            )
        return 0
    finally:
        state.stop()
        for close in closers:
            close()


def _node_cache(args: argparse.Namespace, state: ClusterState) -> str:
    """Where the extender's node cache comes from, in the words of its flags (not a class name)."""
    if not state.has_node_cache:
        return "none (full Nodes only)"
    if args.cluster_snapshot:
        return f"the --cluster-snapshot files ({state.cache.node_count} nodes)"
    return "informers on the API server"


def _refuse_open_writes(args: argparse.Namespace, paths: dict[str, str]) -> None:
    """With cluster credentials, bind (and preempt) must not be served to whoever reaches the port."""
    authenticated = bool(args.client_ca_file or args.token_file)
    if authenticated or args.allow_unauthenticated or not (args.kubeconfig or args.in_cluster):
        return
    served = [verb for verb in ("bind", "preempt") if verb in paths]
    if served:
        raise InputError(
            f"refusing to serve {' and '.join(served)} without authentication while holding cluster "
            "credentials: give --client-ca-file (kube-scheduler's tlsConfig certFile/keyFile) or "
            "--token-file, disable the verb (e.g. --bind-verb ''), or pass --allow-unauthenticated",
            source="--kubeconfig" if args.kubeconfig else "--in-cluster",
        )


def _who_may_call(args: argparse.Namespace) -> str:
    ways = [w for w, on in (("client certificate", args.client_ca_file), ("token", args.token_file)) if on]
    return " or ".join(ways) if ways else "anyone (no authentication)"


def _ignore(signum: int, frame: FrameType | None) -> None:
    """Stands in for the default handlers while uvicorn serves (see `extender`)."""


def _cluster_state(
    args: argparse.Namespace, gates: FeatureGates
) -> tuple[ClusterState, Binder | None, list[Callable[[], None]]]:
    """The node cache and binder the flags ask for, and what to close on the way out."""
    from kubesched.extender.state import ClusterState, LiveClusterState

    if args.cluster_snapshot:
        from kubesched.api.loader import load_paths

        return ClusterState.from_objects(load_paths(args.cluster_snapshot)), None, []
    if args.kubeconfig or args.in_cluster:
        from kubesched.cluster.kube.binder import Binder
        from kubesched.cluster.kube.client import KubeClient, load_connection

        single = load_connection(args.kubeconfig or None)
        client = KubeClient(single, qps=0, burst=1, name="extender")
        binder = Binder(client)
        return LiveClusterState(client, gates=gates), binder.bind, [client.close]
    return ClusterState(), None, []
