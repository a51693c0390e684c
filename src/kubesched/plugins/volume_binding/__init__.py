"""VolumeBinding: a pod's claims must be bound — or bindable on the node — before it runs there.

What upstream does (upstream `pkg/scheduler/framework/plugins/volumebinding/`), and how it maps here:

* **PreFilter** resolves the pod's claims (`persistentVolumeClaim` volumes and the claims of
  generic ephemeral volumes, `<pod>-<volume>`). It returns Skip for a pod without claims and
  rejects the pod (UnschedulableAndUnresolvable) when a claim does not exist (`persistentvolumeclaim
  "x" not found`; for an ephemeral volume `waiting for ephemeral volume controller to create the
  persistentvolumeclaim "x"`), is being deleted, is `Lost` (`... bound to non-existent
  persistentvolume ...`), belongs to another pod (ephemeral), or is unbound while its class binds
  immediately (`pod has unbound immediate PersistentVolumeClaims`: the PV controller binds those, not
  the scheduler). It narrows no candidate nodes (v1.37.2).
* **Filter** checks, per node: every bound claim's PV node affinity (`node(s) didn't match
  PersistentVolume's node affinity`) and that its PV exists (`node(s) unavailable due to one or more
  pvc(s) bound to non-existent pv(s)`); then for each unbound WaitForFirstConsumer claim, the
  smallest available static PV of its class that fits it (capacity ≥ request, access modes, volume
  mode, label selector, PV node affinity, not claimed by another claim, not chosen for another claim
  of the pod), or else dynamic provisioning (the class has a provisioner other than
  `kubernetes.io/no-provisioner` and its `allowedTopologies` admit the node) — otherwise `node(s)
  didn't find available persistent volumes to bind`. All of a node's reasons go into one
  UnschedulableAndUnresolvable status.
* **Reserve** records the node's choices in the plugin's assume cache: the chosen PVs count as
  claimed, so the next pod cannot take them; claims to provision count as provisioned for that node
  (the `volume.kubernetes.io/selected-node` annotation upstream sets). **Unreserve** undoes that.
* **PreBind** performs the binding. When the Handle implements `VolumeBinder` (live mode) it asks
  it to bind each claim to its PV or to provision it for the node, waiting up to
  `bindTimeoutSeconds`; a failure is an Error and the pod is retried. The simulator's Handle has no
  PV/PVC write API: there the assumed binding is committed in the assume cache, and later pods see
  the claim bound to that PV (or provisioned for that node).

* **Capacity** (CSIStorageCapacity): a claim to provision whose class's provisioner is a CSIDriver
  with `storageCapacity: true` and that requests storage needs, on the node, a CSIStorageCapacity of
  its class whose `nodeTopology` selects the node and whose `maximumVolumeSize` (else `capacity`)
  holds the request — otherwise `node(s) did not have enough free storage`. On each node the first
  claim to provision that fails decides the reason (claims with a selected node first, then the
  others from the smallest request up, as upstream orders them).
* **Score** (StorageCapacityScoring, beta and on by default since v1.37; with the gate off PreScore
  skips every pod and `shape` is refused): PreScore never skips, so
  every pod gets a VolumeBinding score on every node, 0 unless the node has volumes to choose. Per
  storage class `u = requested * 100 // capacity` (100 when the capacity is 0 or too small) is
  mapped through `shape` (default: 0 -> 10, 100 -> 0, scores x10, so the tightest fit is *least*
  preferred), and the node scores the rounded mean over classes. The classes are those of the
  static PVs chosen on the node (their capacities summed) if there are any; otherwise those of the
  claims to provision there with a CSIStorageCapacity (the class's capacity on the node, requests
  summed). When several CSIStorageCapacity objects serve the same node and class, upstream takes
  whichever its lister yields first (not defined); kubesched takes the first by namespace and name.

Not modelled: VolumeAttributesClass.

As upstream's `volumebinding` package: `args`, `claims` (the claims and the PreFilter state),
`assume_cache`, `binder` (resolving and evaluating claims; `VolumeBinder` for live binding),
`scorer` and `plugin`.
"""

from kubesched.plugins.volume_binding.args import VolumeBindingArgs, default_shape
from kubesched.plugins.volume_binding.assume_cache import AssumeCache
from kubesched.plugins.volume_binding.binder import VolumeBinder
from kubesched.plugins.volume_binding.claims import ERR_UNBOUND_IMMEDIATE
from kubesched.plugins.volume_binding.plugin import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
    VolumeBinding,
)

__all__ = [
    "ERR_REASON_BIND_CONFLICT",
    "ERR_REASON_NODE_CONFLICT",
    "ERR_REASON_NOT_ENOUGH_SPACE",
    "ERR_REASON_PV_NOT_EXIST",
    "ERR_UNBOUND_IMMEDIATE",
    "AssumeCache",
    "VolumeBinder",
    "VolumeBinding",
    "VolumeBindingArgs",
    "default_shape",
]
