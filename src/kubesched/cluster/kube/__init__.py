"""The live cluster adapter: kubesched talking to a real kube-apiserver.

Small modules with one job each:

* `client`   - a connection (kubeconfig or in-cluster; auth and TLS from lightkube), a qps/burst
               token bucket, JSON requests and watch streams, `ApiError`.
* `informer` - list then watch one resource kind into the lean msgspec structs, with bookmarks,
               resume, relist on 410 Gone and reconnect backoff.
* `initial_lists` - the Node and Pod informers' first LISTs, sent early (while `kubesched run` is
               still starting) and handed to the informers.
* `binder`   - `POST pods/{name}/binding`; a 409 "already assigned" is final.
* `volumes`  - VolumeBinding's PreBind writes (PV claimRef, claim selected-node) and the wait until
               the PV controller reports the claims bound.
* `events`   - events.k8s.io/v1 Events (Scheduled, FailedScheduling, Preempted), sent off-thread.
* `status`   - the `PodScheduled=False` condition and `status.nominatedNodeName` patches.
* `leader`   - coordination.k8s.io/v1 Lease leader election.
* `workers`  - a bounded queue and worker threads for fire-and-forget calls (Events, patches).
* `live_port` - the ClusterPort over all of the above: binds through the pipeline's gate, writes.
* `live_feeds` - the informers wired to the core's handlers.
* `live_loop` - the scheduling loop thread; `live_binding` hands its binding cycles to `pipeline`.
* `live`     - `LiveCluster`: puts those together, with leadership and shutdown.

Nothing here is imported by the scheduler core; `kubesched run` wires it up (`kubesched.cli.run`).
"""
