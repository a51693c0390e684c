"""`python -m kubesched.harness.controlplane` (what `make cluster` runs): a control plane for a
person, with fake nodes, kube-scheduler or the extender recipe on request, until Ctrl-C."""

from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Sequence

from kubesched.harness.controlplane.binaries import find_kubectl
from kubesched.harness.controlplane.plane import ControlPlane
from kubesched.harness.controlplane.process import ControlPlaneError
from kubesched.harness.extender_recipe import SCHEDULER_NAME, start_extender_recipe
from kubesched.harness.fake_nodes import ApiClient, create_fake_nodes

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kubesched.harness.controlplane",
        description="Start etcd + kube-apiserver on loopback for manual testing; Ctrl-C stops and cleans up.",
    )
    parser.add_argument("--nodes", type=int, default=0, help="create this many fake Ready nodes")
    parser.add_argument("--kube-scheduler", action="store_true", help="also run the upstream kube-scheduler")
    parser.add_argument(
        "--extender",
        action="store_true",
        help="also run `kubesched extender` (mutual TLS) and an upstream kube-scheduler calling it "
        "(profile extended-scheduler; see docs/extender.md)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (logs, etcd data) on exit")
    args = parser.parse_args(argv)

    stop_requested = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stop_requested
        stop_requested = True

    signal.signal(signal.SIGTERM, on_signal)
    # Ctrl-C (SIGINT) stops it, also when started from a shell that ignores SIGINT in background
    # jobs: Python keeps an inherited "ignore", and the control plane would then outlive its user.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with ControlPlane(keep_workdir=args.keep) as cp:
            if args.nodes:
                t0 = time.monotonic()
                with ApiClient.for_control_plane(cp) as client:
                    create_fake_nodes(client, args.nodes)
                print(f"created {args.nodes} fake nodes in {time.monotonic() - t0:.1f} s", flush=True)
            processes = [p for p in (cp.etcd, cp.apiserver) if p is not None]
            if args.kube_scheduler:
                processes.append(cp.start_kube_scheduler())
            if args.extender:
                recipe = start_extender_recipe(cp)
                processes += [recipe.extender, recipe.kube_scheduler]
                print(
                    f"kubesched extender: {recipe.url} (client certificate required)\n"
                    f"kube-scheduler calls it for pods with schedulerName: {SCHEDULER_NAME}\n"
                    f"  {recipe.curl('filter')}",
                    flush=True,
                )
            ready = ", ".join(f"{k} {v:.1f} s" for k, v in cp.startup_seconds.items())
            try:
                kubectl = f"  export PATH={find_kubectl()}:$PATH   # kubectl of the same version\n"
            except ControlPlaneError as exc:
                kubectl = f"  (no kubectl: {exc})\n"
            print(
                f"control plane ready ({ready})\n"
                f"  server:     {cp.server}\n"
                f"  logs:       {cp.workdir / 'logs'}\n"
                f"  export KUBECONFIG={cp.kubeconfig_path}\n"
                f"{kubectl}"
                "Ctrl-C to stop.",
                flush=True,
            )
            while not stop_requested:
                dead = [p for p in processes if not p.alive()]
                if dead:
                    print(f"{dead[0].name} exited; last lines:\n{dead[0].log_tail()}", file=sys.stderr)
                    return 1
                time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    except ControlPlaneError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print("stopped", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
