"""Fault scenarios on a real control plane, judged from a ledger of what really reached the API server.

Used by the fault suite (`tests/integration/test_faults.py`, small and fast) and by the side-by-side
benchmark (`benchmarks/fault_comparison.py`, the issue's sizes, kubesched next to kube-scheduler
v1.37.2). A scenario starts scheduler replicas, creates pending pods, injects a fault (kill -9,
SIGSTOP past the lease, an API-server restart with etcd compacted meanwhile, nodes deleted or
shrunk, pods deleted, SIGTERM), waits for the cluster to settle, and returns `Figures`.

The ledger is not the schedulers' word: every `pods/binding` request is in the API server's audit
log (`ControlPlane(audit_bindings=True)`) with its user (each replica has its own), the time the
server received it, the node and the answer; the pods and `Scheduled` Events are listed at the end;
the times of the faults are the ones this module noted when it caused them. A Binding counts as
successful when answered 2xx, or when its pod is bound to its node and no Binding of the pod was
answered 2xx: a replica killed mid-request gets its Binding logged as 504 although the write can
already be in etcd (`binds_that_took`). From that:

* `double_binds`: pods with two successful Bindings;
* `lost_pods`: pods not deleted by the scenario and still unbound when it settled;
* `binds_after_loss`: successful binds by a replica after it lost the Lease (after it resumed from a
  pause past the lease, or after the API server came back from an outage longer than renewDeadline),
  beyond `ON_THE_WIRE` seconds for requests already sent;
* `binds_to_deleted_nodes`: successful binds to a node deleted more than 1 s before;
* `overfilled_nodes`: shrunk nodes pushed over their new allocatable cpu by a bind received more than
  1 s after the shrink;
* `duplicate_scheduled_events`: pods with more than one `Scheduled` Event; `bound_without_event`:
  bound pods with none, except those bound by a replica that died before it could send the Event
  (killed by SIGKILL, or exited on losing the Lease while the API server was down, as kube-scheduler
  does too): those are `events_lost_with_process`. Events that fail during an outage are retried, so
  an outage alone loses none; the ledger waits out the retry schedule for them. `without_event`
  names the first few unexplained pods (who bound them, when) and the replicas' complaints;
* `takeover_seconds` (leader-kill, split-brain): from the leader's kill or pause to the first
  Binding another replica sent; `acquired_to_first_bind_seconds`: from the Lease's `acquireTime`
  (the new holder's) to that Binding, how ready the standby was when it got the Lease;
* `exit_code`, `exit_seconds`: how the replica that lost the Lease or got SIGTERM ended;
* `peak_rss_mib`: the largest resident set of the replicas.

Every process is started here and stopped by pid (`ManagedProcess`), also when a scenario fails.
"""

from kubesched.harness.faults.ledger import Bind, binds_that_took, first_bind_after, read_binds
from kubesched.harness.faults.model import Figures, Scale
from kubesched.harness.faults.replicas import FLAVOURS
from kubesched.harness.faults.scenarios import SCENARIOS, fault_control_plane, run_scenario

__all__ = [
    "FLAVOURS",
    "SCENARIOS",
    "Bind",
    "Figures",
    "Scale",
    "binds_that_took",
    "fault_control_plane",
    "first_bind_after",
    "read_binds",
    "run_scenario",
]
