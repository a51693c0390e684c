"""`kubesched run --config FILE [kube-scheduler's flags]`: schedule pods in a real cluster.

The composition root of live mode: config -> API clients -> LiveCluster (informers, scheduling loop,
binding pool, the config's HTTP extenders) -> leader election -> health/metrics endpoints (HTTPS
with delegated authentication and authorization on --secure-port, as kube-scheduler; plain HTTP
only with --insecure-listen), and an orderly shutdown.

Where the cluster is: `--kubeconfig`, else the config's `clientConnection.kubeconfig`, else the
in-cluster service account when `KUBERNETES_SERVICE_HOST` is set, else `$KUBECONFIG` /
`~/.kube/config`; `--master` overrides the server address.

Lifecycle: take the endpoints' ports, send the first Node and Pod LISTs (`run_early`: the API
server prepares them while the configuration is read and the scheduler built), start informers
(which take those lists) and wait for them to sync, then (with
`leaderElection.leaderElect`) wait to acquire the Lease; only the leader schedules. The endpoints
are served once the first scheduling attempt is over (1 s at the latest; at once when the API server
cannot be reached), so that building them does not delay the first bind. SIGTERM or
SIGINT stops popping pods, drops the binds not yet sent, waits briefly for those on the wire, flushes
Events with what time is left, releases the Lease and exits 0, within about 2 s whatever the load.
Losing the Lease (or renewals failing past `renewDeadline`) shuts the bind pipeline's gate at once
and exits 1 (as kube-scheduler does), so the restarted process starts clean. A bad config,
kubeconfig, flag or address is one line on stderr and exit 2; so is a kube-scheduler flag kubesched
cannot honour.

Heavy imports happen inside `run`, so `kubesched --help` and the other commands stay fast.
"""

from __future__ import annotations

import argparse
import gc
import logging
import signal
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from kubesched.errors import InputError

if TYPE_CHECKING:
    from kubesched.cli.run_early import EarlyLists
    from kubesched.cluster.kube.leader import LeaderElector
    from kubesched.cluster.kube.live import LiveCluster
    from kubesched.config import FeatureGates, KubeSchedulerConfiguration
    from kubesched.framework.registry import Registry
    from kubesched.metrics import SchedulerMetrics
    from kubesched.serving.health import HealthServer
    from kubesched.serving.options import ServingOptions
    from kubesched.serving.secure import SecureServing

__all__ = ["add_run_command", "run"]

log = logging.getLogger("kubesched.run")

EXIT_LOST_LEASE = 1
#: Seconds a shutdown may take in all (SIGTERM: well inside any pod's grace period), and how much of
#: it goes to stopping the scheduler (requests on the wire, Events) before the Lease is released.
SHUTDOWN_SECONDS = 2.0
STOP_CLUSTER_SECONDS = 1.2
#: The main thread waits for the end in slices this long. Python runs a signal handler only on the
#: main thread, and only when that thread is running: a SIGTERM the kernel hands to one of the other
#: threads (it may, when the main thread already has a signal pending) only sets a flag, and a main
#: thread asleep in an untimed wait would never look at it. Seen once in make test: no "received
#: SIGTERM" line, killed after 30 s.
SIGNAL_POLL_SECONDS = 0.25
#: The endpoints are served once the first scheduling attempt is over (the first bind goes first),
#: or this long after informers started syncing or the loop started, at the latest; at once if the
#: API server cannot be reached. Their ports are taken at start, so a probe meanwhile waits in the
#: backlog. Polled this often while the first attempt runs.
SERVE_WITHIN_SECONDS = 1.0
FIRST_ATTEMPT_POLL_SECONDS = 0.005
#: The executable starts `run` with the cyclic garbage collector off (`kubesched.cli.entry`); it is
#: turned on once the informers synced, or after this long at the latest: an API server that cannot
#: be reached at start-up means retries, and their exceptions are cyclic garbage.
START_WITHOUT_GC_SECONDS = 30.0


#: The cyclic collector's thresholds once serving. A scheduling cycle allocates thousands of
#: short-lived containers, so the default 700 started a young collection every cycle or two and
#: every tenth of those walked the middle generation: 0.14 CPU s for 3,000 pods on 1,000 nodes
#: (267 young, 24 middle and 1 full collection). As `simulate`'s run thresholds (virtual_time).
SERVING_GC_THRESHOLD = (10_000, 20, 10)


def collect_from_now() -> None:
    """Turn the cyclic collector on, if start-up ran without it, after freezing what start-up built.

    Modules, the configuration and the informers' first lists live as long as the process: frozen
    (`gc.freeze`), the collections that follow no longer walk them. Measured on `kubesched run` with
    3,000 pods on 1,000 nodes: collections took 0.41 CPU s of 5.8, 0.11 of them before the
    informers synced; 0.14-0.16 CPU s with start-up uncollected and frozen.
    """
    if not gc.isenabled():
        gc.freeze()
        gc.set_threshold(*SERVING_GC_THRESHOLD)
        gc.enable()


def add_run_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `run`; sets `func(args) -> int`. Takes kube-scheduler's flags (see `kube_flags`)."""
    from kubesched.cli._flags import add_unsupported
    from kubesched.cli.kube_flags import add_kube_scheduler_flags
    from kubesched.cli.serving_flags import add_serving_flags

    p = subparsers.add_parser(
        "run",
        help="schedule pods in a real cluster (list/watch, bind, Events, leader election)",
        description=(
            "Run as a (secondary) scheduler against a Kubernetes API server: schedule the unbound pods "
            "whose spec.schedulerName names one of the config's profiles. Takes kube-scheduler's flags; "
            "serves /healthz, /livez, /readyz and /metrics over HTTPS on --secure-port with delegated "
            "authentication and authorization, as kube-scheduler does."
        ),
        allow_abbrev=False,  # as Go's pflag: a flag is spelt out, never guessed from a prefix
    )
    p.add_argument("--config", required=True, metavar="FILE", help="a KubeSchedulerConfiguration")
    p.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help="kubeconfig (default: the config's, in-cluster, then $KUBECONFIG)",
    )
    p.add_argument(
        "--insecure-listen",
        metavar="HOST:PORT",
        help="also serve the endpoints over plain HTTP, without authentication (e.g. 127.0.0.1:10251)",
    )
    p.add_argument(
        "--bind-depth",
        "--bind-workers",
        dest="bind_depth",
        type=int,
        default=32,
        metavar="N",
        help="pods placed but not yet bound, at most: the scheduling loop waits while N binds are "
        "pending, so no decision waits long before it is re-checked and sent (default 32)",
    )
    p.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        help="log verbosity (default info, or from --v)",
    )
    add_unsupported(
        p,
        "--listen",
        "",
        message=(
            "replaced: the endpoints are served over HTTPS on --bind-address and --secure-port, as "
            "kube-scheduler serves them; --insecure-listen HOST:PORT serves plain HTTP"
        ),
    )
    add_serving_flags(p)
    add_kube_scheduler_flags(p)
    # A scheduler's heap is large: see `kubesched.cli.entry` for why it is not torn down at exit.
    p.set_defaults(func=run, exit_without_teardown=True, collect_once_started=True)


def run(args: argparse.Namespace) -> int:
    """Run until signalled (exit 0) or until the Lease is lost (exit 1).

    Start-up order: the flags; the ports (a busy one is exit 2 before the cluster is touched); the
    first Node and Pod LISTs (`run_early`: the API server prepares them while the rest is imported
    and built); the configuration, validated; the clients, the scheduler and its informers.
    """
    from kubesched.cli._flags import feature_gates, reject_unsupported
    from kubesched.cli._logging import configure_logging
    from kubesched.cli.kube_flags import log_level
    from kubesched.cli.serving_flags import serving_options

    at_the_latest = threading.Timer(START_WITHOUT_GC_SECONDS, collect_from_now)
    at_the_latest.daemon = True
    if not gc.isenabled():
        at_the_latest.start()
    reject_unsupported(args)
    # At debug level: one line per scheduling attempt (kubesched.decisions), not HTTP wire traces.
    configure_logging(log_level(args), args.logging_format)
    if args.bind_depth < 1:
        raise InputError("must be at least 1", source="--bind-depth")
    gates = feature_gates(args)
    if args.write_config_to:  # takes no port and never touches the cluster
        from kubesched.config import dump_config

        _write_config(args.write_config_to, dump_config(_load_config(args, gates)[1]))
        return 0
    serving = serving_options(args)
    if args.insecure_listen:  # a bad address is bad input: exit 2 before touching the cluster
        from kubesched.metrics import parse_listen

        parse_listen(args.insecure_listen, flag="--insecure-listen")
    endpoints = _Endpoints(serving, _no_auth_client, args.insecure_listen)
    endpoints.listen()
    early: EarlyLists | None = None
    try:
        from kubesched.cli.run_early import EarlyLists

        early = EarlyLists.start(args)
        return _run_with(args, gates, endpoints, early)
    except BaseException:  # bad input after the ports were taken: give them back, drop the lists
        if early is not None:
            early.close()
        endpoints.stop(0.5)
        raise
    finally:
        at_the_latest.cancel()


def _load_config(
    args: argparse.Namespace, gates: FeatureGates
) -> tuple[Registry, KubeSchedulerConfiguration]:
    """The plugin registry and the configuration file with the flags written over it, validated."""
    from kubesched.cli.kube_flags import apply_flags
    from kubesched.config import load_config
    from kubesched.plugins import default_registry

    registry = default_registry(features=gates)
    return registry, apply_flags(load_config(args.config, registry, gates), args, registry, gates)


def _no_auth_client(kubeconfig: str | None) -> Any:
    raise AssertionError("the endpoints' auth client is set once the configuration is read")


def _run_with(
    args: argparse.Namespace, gates: FeatureGates, endpoints: _Endpoints, early: EarlyLists | None
) -> int:
    """Everything after the ports: the configuration, the clients (the early one when the
    configuration connects as it did), the scheduler, and the run itself."""
    from kubesched.cluster.kube.client import KubeClient, load_connection, where_from
    from kubesched.cluster.kube.initial_lists import InitialLists
    from kubesched.cluster.kube.leader import ApiLeaseLock, LeaderElector, default_identity
    from kubesched.cluster.kube.live import LiveCluster, LiveOptions
    from kubesched.metrics import SchedulerMetrics

    registry, cfg = _load_config(args, gates)
    conn = cfg.client_connection
    le = cfg.leader_election
    assert conn is not None and le is not None  # filled in by defaulting
    qps, burst = float(conn.qps or 0), int(conn.burst or 0)
    initial_lists: InitialLists | None = None
    if early is not None and early.matches(conn.kubeconfig or "", qps, burst):
        single, client, initial_lists = early.single, early.client, early.lists
    else:
        if early is not None:
            early.close()
        single = load_connection(conn.kubeconfig or None, master=args.master)
        client = KubeClient(single, qps=qps, burst=burst, name="scheduler")
    # kube-scheduler gives Events and leader election their own clients (and rate limiters), so
    # neither starves binds, and binds never delay a Lease renewal.
    events_client = KubeClient(single, qps=qps, burst=burst, name="events")
    lease_client = KubeClient(single, qps=qps, burst=burst, name="leader-election")

    def connect(kubeconfig: str | None) -> KubeClient:
        """A client for TokenReviews / SubjectAccessReviews (their own rate limiter, as upstream)."""
        return KubeClient(
            load_connection(kubeconfig) if kubeconfig else single, qps=qps, burst=burst, name="auth"
        )

    endpoints.connect = connect
    try:
        metrics = SchedulerMetrics()
        elector = None
        lease = f"{le.resource_namespace}/{le.resource_name}"
        if le.leader_elect:
            elector = LeaderElector(
                ApiLeaseLock(
                    lease_client, le.resource_namespace or "kube-system", le.resource_name or "kubesched"
                ),
                default_identity(),
                lease_duration=le.lease_duration_seconds,
                renew_deadline=le.renew_deadline_seconds,
                retry_period=le.retry_period_seconds,
            )
        cluster = LiveCluster(
            cfg,
            registry,
            client,
            events_client=events_client,
            metrics=metrics,
            options=LiveOptions(bind_depth=args.bind_depth),
            initial_lists=initial_lists,
            fence=elector.fence if elector is not None else None,
        )
        origin = "--master" if args.master else where_from(conn.kubeconfig or None)
        return _Runner(cluster, metrics, elector, lease, endpoints, origin).run()
    finally:
        client.close()
        events_client.close()
        lease_client.close()


def _write_config(path: str, text: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror or exc}", source=f"--write-config-to {path}") from None


class _Endpoints:
    """Where /healthz, /livez, /readyz and /metrics are served: HTTPS with delegated auth, and plain
    HTTP only when asked. The transport is this module's; what the checks mean is `_Runner`'s.

    `listen()` takes the ports (`run` calls it before anything is sent to the cluster, so a port in
    use is exit 2 before the cluster is touched);
    `start()` builds the servers on them, which imports the ASGI stack and makes the certificate:
    `_Runner` calls it after the first scheduling attempt (see SERVE_WITHIN_SECONDS).
    """

    def __init__(
        self, serving: ServingOptions, connect: Callable[[str | None], Any], insecure_listen: str | None
    ):
        self.serving = serving
        self.connect = connect
        self.insecure_listen = insecure_listen
        self.secure: SecureServing | None = None
        self.insecure: HealthServer | None = None
        self._secure_socket: socket.socket | None = None
        self._insecure_socket: socket.socket | None = None
        self.started = False

    def listen(self) -> None:
        """Bind and listen on the ports asked for; InputError naming the flag when one cannot be."""
        from kubesched.serving.sockets import listen

        if self.serving.secure_port:
            try:
                self._secure_socket = listen(self.serving.bind_address, self.serving.secure_port)
            except OSError as exc:
                raise InputError(str(exc), source="--secure-port") from None
        if self.insecure_listen:
            from kubesched.metrics import parse_listen

            try:
                self._insecure_socket = listen(*parse_listen(self.insecure_listen))
            except OSError as exc:
                self.stop()
                raise InputError(str(exc), source="--insecure-listen") from None

    def start(self, health: Callable[[], HealthServer]) -> None:
        """Serve `health()`'s app on the ports `listen()` took (once; later calls do nothing)."""
        if self.started:
            return
        self.started = True
        from kubesched.serving.secure import SecureServing

        app = health()
        # Each line is written before its server answers: a caller that gets an answer (its
        # connection waited in the backlog) finds the line already there.
        if self._secure_socket is not None:
            self.secure = SecureServing(app.app, self.serving, self.connect)
            log.info(
                "serving /healthz /livez /readyz /metrics on %s (certificate: %s; client CA: %s)",
                self.secure.url,
                self.secure.certificate,
                self.secure.client_ca,
            )
            try:
                self.secure.start(self._secure_socket)
            except OSError as exc:
                self.secure.stop()
                raise InputError(str(exc), source="--secure-port") from None
        if self._insecure_socket is not None:
            app.port = self._insecure_socket.getsockname()[1]
            log.warning(
                "serving /healthz /livez /readyz /metrics over plain HTTP on %s, without authentication",
                app.url,
            )
            try:
                app.start(sock=self._insecure_socket)
            except OSError as exc:
                raise InputError(str(exc), source="--insecure-listen") from None
            self.insecure = app

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving within about `timeout` (a shutdown has a budget; see `_Runner._shutdown`)."""
        if self.secure is not None:
            self.secure.stop(timeout)
        if self.insecure is not None:
            self.insecure.stop(timeout)
        for sock in (self._secure_socket, self._insecure_socket):
            if sock is not None:
                sock.close()


class _Runner:
    """Starts the pieces in order, waits for a signal or a lost Lease, and stops them in order."""

    def __init__(
        self,
        cluster: LiveCluster,
        metrics: SchedulerMetrics,
        elector: LeaderElector | None,
        lease: str,
        endpoints: _Endpoints,
        origin: str = "",
    ) -> None:
        from kubesched.cluster.kube.health import LiveHealth

        self.cluster = cluster
        self.metrics = metrics
        self.elector = elector
        self.lease = lease
        self.stopping = threading.Event()
        self.lost = threading.Event()
        self.elector_thread: threading.Thread | None = None
        self.endpoints = endpoints
        #: Where the API server address came from (a kubeconfig, in-cluster, --master), for errors.
        self.origin = origin
        self.health = LiveHealth(cluster, elector, lease=lease, stopping=self.stopping)

    def _health_server(self) -> HealthServer:
        from kubesched.serving.health import HealthServer

        return HealthServer(
            self.endpoints.insecure_listen or "127.0.0.1:0",
            self.metrics,
            live_checks=self.health.live_checks(),
            ready_checks=self.health.ready_checks(),
        )

    # ------------------------------------------------------------------ lifecycle

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if not self.stopping.is_set():
            log.info("received %s: shutting down", signal.Signals(signum).name)
        self.stopping.set()

    def run(self) -> int:
        previous = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            log.info("profiles: %s", ", ".join(sorted(self.cluster.profile_names)))
            if self.cluster.extenders is not None:
                # The config's extenders are called from every scheduling cycle: say which, so a slow
                # or failing extender in the logs can be traced back to the config.
                urls = ", ".join(e.name for e in self.cluster.extenders.extenders)
                log.info("calling extenders: %s", urls)
            if self._start_informers() and self._wait_for_sync():
                collect_from_now()
                self.cluster.start_loop()
                self._lead()
                self._serve_after_first_attempt()
                while not self.stopping.wait(SIGNAL_POLL_SECONDS):
                    pass  # wakes to run a signal handler another thread's delivery left pending
            return self._shutdown()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _start_informers(self) -> bool:
        """Discover kinds and start informers, retrying while the API server is unreachable (the
        endpoints are served from the first failure on, so probes see a live, unready scheduler).

        Authentication and authorization failures are not retried: they will not fix themselves.
        """
        from kubesched.cluster.kube.client import ApiError
        from kubesched.cluster.kube.informer import Backoff

        backoff = Backoff()
        while not self.stopping.is_set():
            try:
                self.cluster.start_informers()
                return True
            except ApiError as exc:
                server = self.cluster.client.server
                if exc.code in (401, 403):
                    raise InputError(f"refused: {exc} (server from {self.origin})", source=server) from None
                delay = backoff.next()
                log.warning(
                    "cannot reach the API server %s (from %s): %s; retrying in %.1f s",
                    server,
                    self.origin,
                    exc.message if exc.is_transport else exc,
                    delay,
                )
                self.endpoints.start(self._health_server)
                self.stopping.wait(delay)
        return False

    def _wait_for_sync(self) -> bool:
        log.info("waiting for informers to sync")
        # On the informers' own events (the loop starts the moment the last one syncs), looking
        # at `stopping` at least every 0.1 s. A long sync (a big cluster) is served meanwhile.
        serve_at = time.monotonic() + SERVE_WITHIN_SECONDS
        while not (self.cluster.wait_for_sync(0.1) and self.cluster.has_synced()):
            if self.stopping.is_set():
                return False
            if time.monotonic() > serve_at:
                self.endpoints.start(self._health_server)
        log.info("informers synced: %s", ", ".join(sorted(self.cluster.informers)))
        return True

    def _serve_after_first_attempt(self) -> None:
        """Serve the endpoints once the first scheduling attempt is over: building them (the ASGI
        stack's imports, the certificate: about 0.1 CPU s) does not hold up the first bind.

        A standby (not leading), or a leader with nothing to schedule, serves within
        SERVE_WITHIN_SECONDS at the latest.
        """
        serve_at = time.monotonic() + SERVE_WITHIN_SECONDS
        while (
            self.cluster.leading
            and not self.cluster.attempts
            and time.monotonic() < serve_at
            and not self.stopping.wait(FIRST_ATTEMPT_POLL_SECONDS)
        ):
            pass
        if not self.stopping.is_set():
            self.endpoints.start(self._health_server)

    def _lead(self) -> None:
        elector = self.elector
        if elector is None:
            self.cluster.set_leading(True)
            return
        gauge = self.metrics.leader.labels(self.lease)
        gauge.set(0)

        def started() -> None:
            log.info("leading %s as %s", self.lease, elector.identity)
            gauge.set(1)
            self.cluster.set_leading(True)

        def stopped() -> None:
            self.cluster.set_leading(False)  # first: the bind gate shuts before anything else happens
            gauge.set(0)

        def elect() -> None:
            if elector.run(started, stopped):
                self.lost.set()
            self.stopping.set()

        self.elector_thread = threading.Thread(target=elect, name="leader-election", daemon=True)
        self.elector_thread.start()

    def _shutdown(self) -> int:
        # Order matters: no new pods and no new binds, then the requests already on the wire, then
        # the Lease (a standby must not start binding while ours are still landing), then the
        # endpoints. Everything is bounded: SHUTDOWN_SECONDS in all.
        deadline = time.monotonic() + SHUTDOWN_SECONDS
        lost = self.lost.is_set()
        if lost:
            log.error("leader election lost; exiting")
        self.cluster.stop(STOP_CLUSTER_SECONDS)
        if self.elector is not None:
            self.elector.stop()
            if self.elector_thread is not None:
                # Its run() releases the Lease on the way out; an API server that does not answer
                # in time leaves the Lease to expire instead of holding the exit up.
                self.elector_thread.join(max(0.1, deadline - time.monotonic() - 0.3))
        self.endpoints.stop(max(0.1, deadline - time.monotonic()))
        log.info(
            "stopped: %d pods scheduled, %d bind conflicts, %d decisions dropped before their bind",
            self.cluster.scheduled,
            self.cluster.bind_conflicts,
            self.cluster.abandoned,
        )
        return EXIT_LOST_LEASE if lost else 0
