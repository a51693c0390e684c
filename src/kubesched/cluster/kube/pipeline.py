"""The bind pipeline: binding cycles between the scheduling loop and the API server, a bounded number.

Without a bound the loop places pods far faster than a rate-limited client can bind them (at
`qps: 50` about 2,000 decisions queued), and every queued decision is acted on long after it was
made: on nodes since deleted or shrunk, or by a process that has meanwhile lost its Lease. So:

* **Depth.** At most `depth` binding cycles are admitted at once (placed but not yet bound). The
  loop asks `has_room()` before it pops a pod and waits while the pipeline is full; each admitted
  cycle that runs whole (`submit`) has a worker thread of its own, so none ever waits for one.
  What such a cycle leaves for after it (its Event) is done by its worker once its place is free
  again; that worker counts as busy, so the next cycle still gets a thread of its own.
* **Rate limit first.** A cycle takes its client token *before* it runs, so the wait for a token is
  behind it when its decision is re-validated, and nothing stale sits between check and send.
* **Batches.** A cycle whose checks already ran and whose token is taken (`submit_batched`)
  needs no thread of its own: a batch thread takes every such cycle queued at the time and hands
  them to `send_batch` together (which `live_binding` pipelines on one connection), each cycle
  still counted as admitted until its answer is in. Cycles queue while a batch is out; a backlog
  starts another batch thread, up to a few.
* **One gate.** Every bind request passes `sending()` just before it goes out: it refuses
  (`BindRefused`) once the pipeline is suspended (leadership lost), closed (shutting down) or the
  fence says the Lease can no longer be trusted, and it counts the requests on the wire. Suspend and
  close take the same mutex, so once they return no new request starts: what is still on the wire
  is all that can land afterwards, and `drain()` waits (bounded) for exactly that.

The pipeline knows nothing of pods or the scheduler: a cycle is a callable. `LiveCluster` wires it
to the core (whose binding cycle re-validates the decision against its cache under the state lock
and asks `refusal()` there too) and to the API client.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from kubesched.cluster.kube.client import TokenBucket
from kubesched.scheduler.ports import BindRefused

__all__ = ["BATCH_SPLIT", "BATCH_THREADS", "BindPipeline", "BindRefused"]

log = logging.getLogger(__name__)

#: Batches of binds on the wire at once, at most (each on a connection of its own), and the binds
#: queued behind the batches out that start one more. Binds queue while a batch is out, so batches
#: grow with the server's latency: one batch at a time took 0.89x the CPU per pod of four at once
#: and gave 1.24x the pods/s (1000 nodes, load 25), but the API server answers a connection's
#: requests one after another, and at 5000 nodes pinned one connection bound 58 pods/s where one
#: request per thread bound 98 (load 30-37, one sample each). A backlog gets more connections.
BATCH_THREADS = 4
BATCH_SPLIT = 4

Fence = Callable[[], str | None]
"""Returns why binding is not safe right now (e.g. the Lease was not renewed in time), or None."""

Batch = Callable[[list[Any]], None]
"""Sends the binds of cycles admitted with `submit_batched`, all at once."""

Cycle = Callable[[], Callable[[], None] | None]
"""A binding cycle; what it returns (if anything) the worker runs once the cycle no longer counts as
admitted (work that need not hold a place in the pipeline, such as sending the cycle's Event)."""


class BindPipeline:
    """At most `depth` binding cycles in flight, each on a worker thread; one gate before each send."""

    def __init__(
        self,
        depth: int,
        *,
        limiter: TokenBucket | None = None,
        fence: Fence | None = None,
        on_done: Callable[[], None] | None = None,
        send_batch: Batch | None = None,
        batch_threads: int = BATCH_THREADS,
        name: str = "bind",
    ) -> None:
        if depth < 1:
            raise ValueError("the bind pipeline needs a depth of at least 1")
        self.depth = depth
        self._limiter = limiter
        self._fence = fence
        self._on_done = on_done
        mutex = threading.RLock()
        self._cond = threading.Condition(mutex)
        self._batch_ready = threading.Condition(mutex)  # idle batch threads wait on it
        self._send_batch = send_batch
        self._batch_threads = batch_threads
        self._batched: list[Any] = []
        self._batchers: list[threading.Thread] = []
        self._batchers_idle = 0  # batch threads waiting, woken ones included until they run
        self._batchers_woken = 0
        self._batch_stop = False
        self._admitted = 0
        self._after = 0  # workers busy with what a finished cycle left them
        self._on_wire = 0
        self._suspended: str | None = None
        self._closed: str | None = None
        self._wakeup = threading.Event()  # set on suspend/close: cuts short a wait for a token
        self._queue: queue.SimpleQueue[tuple[Cycle, bool] | None] = queue.SimpleQueue()  # None: stop
        self._workers: list[threading.Thread] = []
        self._name = name
        #: Requests refused at the gate, and cycles that raised (logged); they only grow.
        self.refused = 0
        self.crashed = 0

    # ------------------------------------------------------------------ the scheduling loop's side

    def has_room(self) -> bool:
        """Whether the loop may place another pod (fewer than `depth` cycles admitted)."""
        return self._admitted < self.depth

    def take_token_now(self) -> bool:
        """Take the client's rate-limiter token for a cycle if one is there now (for `submit`'s
        `token_taken`); False, and nothing taken, if the cycle would have to wait for it."""
        return self._limiter is None or self._limiter.try_take()

    def submit_batched(self, member: object) -> None:
        """Admit one cycle whose bind a batch thread sends with the others queued then
        (`send_batch`); its checks ran and its token is taken (`take_token_now`). Never blocks.

        While a batch is out the bind waits for the next one, unless `BATCH_SPLIT` wait already:
        then another batch thread (up to `batch_threads`) takes them."""
        if self._send_batch is None:
            raise RuntimeError("this pipeline sends no batches")
        with self._cond:
            self._admitted += 1
            self._batched.append(member)
            idle = self._batchers_idle - self._batchers_woken
            if len(self._batchers) > idle and len(self._batched) < BATCH_SPLIT:
                return  # a batch thread is busy (or woken): this bind goes in its next batch
            if idle:
                self._batchers_woken += 1
                self._batch_ready.notify()
            elif len(self._batchers) < self._batch_threads:
                batcher = threading.Thread(
                    target=self._serve_batches, name=f"{self._name}-batch-{len(self._batchers)}", daemon=True
                )
                self._batchers.append(batcher)
                batcher.start()

    def submit(self, cycle: Cycle, *, token_taken: bool = False) -> None:
        """Admit one binding cycle; never blocks (the loop checked `has_room()` before placing the pod).

        Cycles released at once (a Permit wait ending for a whole gang) may exceed `depth` briefly;
        more workers are started for them, so none waits for a thread. `token_taken`: the caller
        took the cycle's token (`take_token_now`), so the worker does not take another.
        """
        with self._cond:
            self._admitted += 1
            if len(self._workers) < self._admitted + self._after:
                worker = threading.Thread(
                    target=self._serve, name=f"{self._name}-{len(self._workers)}", daemon=True
                )
                self._workers.append(worker)
                worker.start()
        self._queue.put((cycle, token_taken))

    @property
    def admitted(self) -> int:
        """Binding cycles placed but not finished (running, waiting for a token, or on the wire)."""
        return self._admitted

    @property
    def on_wire(self) -> int:
        """Bind requests sent and not yet answered."""
        return self._on_wire

    # ------------------------------------------------------------------ the gate

    def refusal(self) -> str | None:
        """Why no bind may be sent now (None: it may). Cheap; called under the state lock too."""
        reason = self._closed or self._suspended
        if reason is None and self._fence is not None:
            reason = self._fence()
        return reason

    @contextlib.contextmanager
    def sending(self, requests: int = 1) -> Iterator[None]:
        """Wrap the request that binds (or a pipelined batch of `requests` binds): refuse it
        (BindRefused) or count it on the wire."""
        with self._cond:
            reason = self.refusal()
            if reason is not None:
                self.refused += requests
                raise BindRefused(reason)
            self._on_wire += requests
        try:
            yield
        finally:
            with self._cond:
                self._on_wire -= requests
                self._cond.notify_all()

    # ------------------------------------------------------------------ control

    def suspend(self, reason: str) -> None:
        """Refuse every bind from now on until `resume()` (leadership lost or not yet acquired)."""
        with self._cond:
            self._suspended = reason
        self._wakeup.set()

    def resume(self) -> None:
        with self._cond:
            self._suspended = None
            if self._closed is None:
                self._wakeup.clear()

    def close(self, reason: str) -> None:
        """Refuse every bind from now on, for good (the cycles still admitted are refused at the gate)."""
        with self._cond:
            if self._closed is None:
                self._closed = reason
        self._wakeup.set()

    def stop_workers(self) -> None:
        """End the worker threads once the cycles queued before this call have run."""
        with self._cond:
            workers = len(self._workers)
            self._batch_stop = True
            self._batch_ready.notify_all()
        for _ in range(workers):
            self._queue.put(None)

    def drain(self, timeout: float) -> bool:
        """Wait until no request is on the wire (or `timeout`); True if none is.

        Only requests already sent are waited for: once suspended or closed, the other admitted
        cycles are refused at the gate as soon as they get there.
        """
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._on_wire:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
        return True

    def wait_idle(self, timeout: float) -> bool:
        """Wait until every admitted cycle finished (or `timeout`); True if all did."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._admitted:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
        return True

    # ------------------------------------------------------------------ workers

    def _serve(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            cycle, token_taken = item
            after = None
            try:
                if not token_taken:
                    self._take_token()
                after = cycle()
            except Exception:
                self.crashed += 1
                log.exception("binding cycle failed")
            finally:
                with self._cond:
                    self._admitted -= 1
                    self._after += after is not None
                    self._cond.notify_all()
                if self._on_done is not None:
                    self._on_done()
            if after is not None:
                try:
                    after()
                except Exception:
                    log.exception("work after a binding cycle failed")
                finally:
                    with self._cond:
                        self._after -= 1

    def _serve_batches(self) -> None:
        """A batch thread: send every cycle `submit_batched` queued, all of it at a time."""
        send = self._send_batch
        assert send is not None
        while True:
            with self._cond:
                while not self._batched and not self._batch_stop:
                    self._batchers_idle += 1
                    self._batch_ready.wait()
                    self._batchers_idle -= 1
                    self._batchers_woken = max(0, self._batchers_woken - 1)
                if not self._batched:
                    return
                members, self._batched = self._batched, []
            try:
                send(members)
            except Exception:
                self.crashed += 1
                log.exception("sending a batch of binds failed")
            finally:
                with self._cond:
                    self._admitted -= len(members)
                    self._cond.notify_all()
                if self._on_done is not None:
                    self._on_done()

    def _take_token(self) -> None:
        """Wait for the client's rate limiter, unless binding stopped meanwhile (the gate refuses)."""
        if self._limiter is None or self.refusal() is not None:
            return
        wait = self._limiter.reserve()
        if wait > 0:
            self._wakeup.wait(wait)
