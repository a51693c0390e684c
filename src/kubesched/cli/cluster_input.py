"""The live cluster as input: `--kubeconfig`, `--context`, `--in-cluster`, read as one snapshot.

`explain`, `simulate`, `capacity` and `compare` share this one reader
(`kubesched.cluster.kube.snapshot`): GET requests only, every kind at one revision. Loading a big
cluster takes a while, so each kind read is named on stderr with its count when stderr is a
terminal, or when `--progress` asks for it (a CI log).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from kubesched.config.features import DEFAULT_GATES, FeatureGates
from kubesched.errors import InputError

if TYPE_CHECKING:
    from kubesched.api.loader import LoadedObjects
    from kubesched.cluster.kube.snapshot import Snapshot

__all__ = [
    "add_cluster_options",
    "cluster_given",
    "cluster_objects",
    "read_cluster",
    "refuse_paths_with_cluster",
]


def add_cluster_options(parser: argparse.ArgumentParser, *, implied: bool = False) -> None:
    """The connection flags. `implied`: the command always reads a cluster (explain), so with no
    flag it finds one as kubectl does; otherwise a flag must ask for the cluster."""
    default = "in-cluster, then $KUBECONFIG" if implied else "$KUBECONFIG, then ~/.kube/config"
    parser.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help=f"read the cluster of this kubeconfig, read-only (default: {default})",
    )
    parser.add_argument("--context", metavar="NAME", help="kubeconfig context (default: its current-context)")
    parser.add_argument(
        "--in-cluster",
        action="store_true",
        help="read the cluster this pod runs in, with its service account",
    )
    parser.add_argument(
        "--progress",
        action="store_true",
        help="name each kind read from the cluster, with its count, on stderr (default: when stderr "
        "is a terminal)",
    )


def cluster_given(args: argparse.Namespace) -> bool:
    """Whether the command line asks for a live cluster."""
    return bool(args.kubeconfig or args.context or args.in_cluster)


def refuse_paths_with_cluster(paths: Sequence[str], args: argparse.Namespace) -> None:
    if paths and cluster_given(args):
        raise InputError(
            "give PATHs of objects or a cluster (--kubeconfig, --context, --in-cluster), not both"
        )


def read_cluster(
    args: argparse.Namespace,
    *,
    command: str,
    kinds: Iterable[str] | None = None,
    all_pods: bool = False,
    gates: FeatureGates = DEFAULT_GATES,
) -> Snapshot:
    """The snapshot of the cluster the flags name (`kinds`, or every kind kubesched reads; kinds whose
    feature gate is off in `gates` are not read).

    `all_pods` keeps finished pods: a simulated Job counts them. Errors are InputErrors naming the
    server and where its address came from.
    """
    from kubesched.cluster.kube.client import ApiError, KubeClient, load_connection, where_from
    from kubesched.cluster.kube.snapshot import SNAPSHOT_KINDS, read_snapshot

    if args.in_cluster and not os.environ.get("KUBERNETES_SERVICE_HOST"):
        raise InputError(
            "not running in a cluster (KUBERNETES_SERVICE_HOST is not set)", source="--in-cluster"
        )
    if args.in_cluster and args.kubeconfig:
        raise InputError("give --kubeconfig or --in-cluster, not both", source="--in-cluster")
    connection = load_connection(args.kubeconfig, context=args.context)
    loud = args.progress or sys.stderr.isatty()
    with KubeClient(connection, name=command) as client:
        if loud:
            print(f"kubesched: reading the cluster at {client.server}", file=sys.stderr)
        try:
            snap = read_snapshot(
                client,
                sorted(kinds) if kinds is not None else list(SNAPSHOT_KINDS),
                all_pods=all_pods,
                on_kind=_print_kind if loud else None,
                gates=gates,
            )
        except InputError as err:
            raise InputError(
                f"{err.message} (server from {where_from(args.kubeconfig)})", source=err.source
            ) from None
        except ApiError as err:  # discovery of an unexpected kind; the lists themselves are handled
            raise InputError(str(err), source=client.server) from None
    if loud:
        at = f" at resourceVersion {snap.resource_version}" if snap.resource_version else ""
        print(
            f"kubesched: read {len(snap.objects)} objects of {len(snap.kinds)} kinds{at} "
            f"in {snap.seconds:.1f}s",
            file=sys.stderr,
        )
    return snap


def _print_kind(kind: str, count: int) -> None:
    print(f"kubesched: read {count} {kind}(s)", file=sys.stderr, flush=True)


def cluster_objects(
    args: argparse.Namespace, *, command: str, gates: FeatureGates = DEFAULT_GATES
) -> LoadedObjects:
    """Every kind a simulation reads, finished pods included; the snapshot's notes on stderr."""
    snap = read_cluster(args, command=command, all_pods=True, gates=gates)
    for note in snap.notes:
        print(f"kubesched: note: {note}", file=sys.stderr)
    return snap.objects
