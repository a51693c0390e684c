"""`kubesched record [FILE]`: watch a cluster's nodes and pods and write what happened as a Scenario.

The scenario replays with `kubesched simulate --scenario FILE`, under any profile, so yesterday's
traffic can be tried on a new configuration. Only GET/LIST/WATCH requests on nodes, pods and
PriorityClasses are made (a read-only user is enough); what is written is described in
`kubesched.simulate.record` and docs/scenarios.md. Ctrl-C (or SIGTERM) ends the recording early
and still writes the file.
"""

from __future__ import annotations

import argparse
import datetime
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from kubesched.cli._flags import go_duration
from kubesched.cli._output import check_writable, write_atomically
from kubesched.errors import InputError

__all__ = ["add_record_command"]


def add_record_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `record`; it sets `func(args) -> int`."""
    p = subparsers.add_parser(
        "record",
        help="watch a cluster's nodes and pods and write a scenario that simulate --scenario replays",
        description=(
            "Watch the nodes and pods of the cluster the kubeconfig points at for a while and write "
            "what happened as a kubesched.io/v1alpha1 Scenario: the cluster at the start, nodes and "
            "pods created, changed and deleted, and how long finished pods ran. Nothing secret is "
            "written (no env values, Secrets or ConfigMaps). Replay it with "
            "`kubesched simulate --scenario FILE [--config NEW-PROFILE]`."
        ),
    )
    p.add_argument(
        "file", nargs="?", default="-", metavar="FILE", help="where to write the scenario (default: stdout)"
    )
    p.add_argument(
        "--duration",
        type=go_duration,
        metavar="DURATION",
        help="how long to record, e.g. 30m or 2h (default: until Ctrl-C)",
    )
    p.add_argument(
        "--format",
        choices=("yaml", "json"),
        help="file format (default: json for a .json FILE, else yaml; json replays faster)",
    )
    p.add_argument("--name", metavar="NAME", help="the scenario's metadata.name (default: recorded-<time>)")
    p.add_argument("--kubeconfig", metavar="PATH", help="kubeconfig (default: in-cluster, then $KUBECONFIG)")
    p.add_argument("--context", metavar="NAME", help="kubeconfig context (default: its current-context)")
    p.set_defaults(func=_record)


def _record(args: argparse.Namespace) -> int:
    from kubesched.cluster.kube.client import KubeClient, load_connection
    from kubesched.config import format_duration
    from kubesched.simulate.record.run import Recorder, record_cluster
    from kubesched.simulate.scenario import dump_scenario, scenario_document

    if args.duration is not None and args.duration <= 0:
        raise InputError("must be positive", source="--duration")
    as_json = args.format == "json" if args.format else str(args.file).endswith(".json")
    check_writable(args.file)
    started = datetime.datetime.now(datetime.UTC)
    name = args.name or f"recorded-{started:%Y%m%d-%H%M%S}"
    recorder = Recorder()
    stop = threading.Event()
    connection = load_connection(args.kubeconfig, context=args.context)
    with KubeClient(connection, name="record") as client, _stop_on_signals(stop):
        print(
            f"kubesched record: watching {client.server} "
            + (f"for {format_duration(args.duration)}" if args.duration else "until Ctrl-C"),
            file=sys.stderr,
        )
        seconds = record_cluster(client, recorder, duration=args.duration, stop=stop)
    events = recorder.timeline()
    document = scenario_document(
        name,
        events,
        until=seconds,
        annotations={"kubesched.io/recorded-at": started.isoformat(timespec="seconds")},
    )
    write_atomically(args.file, dump_scenario(document, json=as_json))
    pods = sum(1 for e in events if e.action == "create" and e.ref.kind == "Pod")
    nodes = sum(1 for e in events if e.action == "create" and e.ref.kind == "Node")
    where = "stdout" if args.file == "-" else args.file
    print(
        f"kubesched record: {len(events)} events over {format_duration(round(seconds, 3))} "
        f"({nodes} nodes and {pods} pods created) written to {where}",
        file=sys.stderr,
    )
    return 0


@contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGINT and SIGTERM end the recording (which is then written) instead of the process."""

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    if threading.current_thread() is not threading.main_thread():
        yield  # signals reach the main thread only; an embedding caller stops us through `stop`
        return
    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
