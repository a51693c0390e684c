"""`kubesched run`'s early start: the Node and Pod LISTs sent before the scheduler is built.

Before its first bind `kubesched run` spends most of its time importing and building the scheduler
(the plugins, the configuration, the framework), and only then would its informers ask the API
server for every Node and Pod. Once its ports are taken, `run` asks now instead: it reads the
connection settings the configuration file and the flags will give (`connection_hint`, without
validating the file), makes the scheduler's client with them and starts the two LISTs
(`kubesched.cluster.kube.initial_lists`), and only then imports and builds the rest. The server
reads, encodes and sends the lists meanwhile.

The validated configuration decides: when its connection (kubeconfig, QPS, burst) is the one guessed,
its client is this one and the informers take the pages received (`EarlyLists.matches`); otherwise
(or when the guess could not be made, or the kubeconfig was bad) the lists are dropped and `run` goes
on exactly as it did without them, with the same errors. Nothing is written to the cluster early:
a configuration found bad afterwards still ends the process with exit 2, having only read.
"""

from __future__ import annotations

import argparse
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kubesched.cluster.kube.client import KubeClient, load_connection
from kubesched.cluster.kube.initial_lists import InitialLists

if TYPE_CHECKING:
    from lightkube.config.kubeconfig import SingleConfig

__all__ = ["ConnectionHint", "EarlyLists", "connection_hint"]

log = logging.getLogger("kubesched.run")


@dataclass(frozen=True, slots=True)
class ConnectionHint:
    """The scheduler client's settings: clientConnection's kubeconfig ("" for none), QPS and burst."""

    kubeconfig: str
    qps: float
    burst: int


def connection_hint(args: argparse.Namespace) -> ConnectionHint | None:
    """What the config file's `clientConnection` and the flags will make of the scheduler's client,
    read from the file without validating it; None when the file does not say it plainly (the
    validated configuration then connects as usual)."""
    from kubesched.config.defaults import DEFAULT_CLIENT_BURST, DEFAULT_CLIENT_QPS
    from kubesched.config.loader import parse_document

    try:
        doc = parse_document(Path(args.config).read_text(encoding="utf-8"), args.config)
    except Exception:  # whatever it is, loading the file says it later, as it always did
        return None
    if not isinstance(doc, dict):
        return None
    cc: Any = doc.get("clientConnection") or {}
    if not isinstance(cc, dict):
        return None
    kubeconfig = args.kubeconfig if args.kubeconfig is not None else cc.get("kubeconfig") or ""
    qps = args.kube_api_qps if args.kube_api_qps is not None else cc.get("qps")
    burst = args.kube_api_burst if args.kube_api_burst is not None else cc.get("burst")
    qps = DEFAULT_CLIENT_QPS if qps is None else qps
    burst = DEFAULT_CLIENT_BURST if burst is None else burst
    if (
        not isinstance(kubeconfig, str)
        or isinstance(qps, bool)
        or not isinstance(qps, int | float)
        or isinstance(burst, bool)
        or not isinstance(burst, int)
    ):
        return None
    return ConnectionHint(kubeconfig, float(qps), burst)


class EarlyLists:
    """The scheduler's client made from a `ConnectionHint`, with the first LISTs on their way."""

    def __init__(self, hint: ConnectionHint, single: SingleConfig, client: KubeClient) -> None:
        self.hint = hint
        self.single = single
        self.client = client
        self.lists = InitialLists(client)

    @classmethod
    def start(cls, args: argparse.Namespace) -> EarlyLists | None:
        """Connect as the hint says and send the lists; None (nothing sent) when there is no hint or
        the connection cannot be set up (the validated configuration then reports why)."""
        hint = connection_hint(args)
        if hint is None:
            return None
        try:
            single = load_connection(hint.kubeconfig or None, master=args.master)
            client = KubeClient(single, qps=hint.qps, burst=hint.burst, name="scheduler")
        except Exception:  # a bad kubeconfig: the validated configuration's connection reports it
            return None
        early = cls(hint, single, client)
        early.lists.start()
        return early

    def matches(self, kubeconfig: str, qps: float, burst: int) -> bool:
        """Whether the validated configuration's client is this one."""
        return self.hint == ConnectionHint(kubeconfig, qps, burst)

    def close(self) -> None:
        """Drop the lists and the client (the configuration connects otherwise)."""
        self.lists.close()
        self.client.close()
