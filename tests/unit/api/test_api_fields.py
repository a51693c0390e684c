"""Fields and kinds the Kubernetes v1.37 API does not have are refused, as its strict field
validation does; whatever a v1.37 server returns (`kubectl get -o yaml`) loads unchanged."""

from __future__ import annotations

import pytest

from kubesched.api.controllers import Deployment
from kubesched.api.loader import decode_object, load_documents
from kubesched.api.objects import Node, Pod
from kubesched.errors import InputError

POD = """\
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop}
spec:
  nodeSelector: {disk: ssd}
  containers:
  - name: app
    image: nginx
    resources:
      requests: {cpu: "64"}
"""

#: What `kubectl get nodes,pods,deploy,pvc -o yaml` prints, server-set fields and all.
KUBECTL_LIST = """\
apiVersion: v1
items:
- apiVersion: v1
  kind: Node
  metadata:
    annotations:
      node.alpha.kubernetes.io/ttl: "0"
      volumes.kubernetes.io/controller-managed-attach-detach: "true"
    creationTimestamp: "2026-11-30T10:00:00Z"
    labels: {kubernetes.io/hostname: node-1, kubernetes.io/os: linux, topology.kubernetes.io/zone: a}
    managedFields:
    - apiVersion: v1
      fieldsType: FieldsV1
      fieldsV1:
        f:metadata:
          f:labels:
            .: {}
            f:kubernetes.io/hostname: {}
        f:status:
          f:conditions:
            k:{"type":"Ready"}:
              .: {}
              f:status: {}
      manager: kubelet
      operation: Update
      subresource: status
      time: "2026-11-30T10:00:00Z"
    name: node-1
    resourceVersion: "8123"
    uid: 6b4a1c52-0f3e-4d2a-9c1e-2b7f1b0c9a11
  spec:
    podCIDR: 10.244.0.0/24
    podCIDRs: [10.244.0.0/24]
    providerID: kind://docker/kind/node-1
    taints: [{effect: NoSchedule, key: dedicated, value: gpu, timeAdded: null}]
  status:
    addresses: [{address: 172.18.0.2, type: InternalIP}, {address: node-1, type: Hostname}]
    allocatable: {cpu: "8", ephemeral-storage: 100Gi, hugepages-2Mi: "0", memory: 32Gi, pods: "110"}
    capacity: {cpu: "8", ephemeral-storage: 100Gi, hugepages-2Mi: "0", memory: 32Gi, pods: "110"}
    conditions:
    - lastHeartbeatTime: "2026-11-30T10:05:00Z"
      lastTransitionTime: "2026-11-30T10:00:00Z"
      message: kubelet is posting ready status
      reason: KubeletReady
      status: "True"
      type: Ready
    daemonEndpoints: {kubeletEndpoint: {Port: 10250}}
    features: {supplementalGroupsPolicy: true}
    images:
    - names: [registry.k8s.io/pause@sha256:abc, registry.k8s.io/pause:3.10]
      sizeBytes: 320368
    nodeInfo:
      architecture: amd64
      bootID: 3c1a
      containerRuntimeVersion: containerd://2.1.0
      kernelVersion: 6.12.0
      kubeProxyVersion: ""
      kubeletVersion: v1.37.2
      machineID: f00
      operatingSystem: linux
      osImage: Debian GNU/Linux 13
      systemUUID: b4r
    runtimeHandlers: [{features: {recursiveReadOnlyMounts: true, userNamespaces: true}, name: runc}]
- apiVersion: v1
  kind: Pod
  metadata:
    annotations: {kubectl.kubernetes.io/restartedAt: "2026-11-30T10:00:00Z"}
    creationTimestamp: "2026-11-30T10:01:00Z"
    generateName: checkout-7d9f8b6c5-
    labels: {app: checkout, pod-template-hash: 7d9f8b6c5}
    managedFields:
    - apiVersion: v1
      fieldsType: FieldsV1
      fieldsV1:
        f:metadata: {f:generateName: {}}
        f:spec:
          f:containers:
            k:{"name":"app"}:
              .: {}
      manager: kube-controller-manager
      operation: Update
      time: "2026-11-30T10:01:00Z"
    name: checkout-7d9f8b6c5-x2x4q
    namespace: shop
    ownerReferences:
    - {apiVersion: apps/v1, blockOwnerDeletion: true, controller: true, kind: ReplicaSet,
       name: checkout-7d9f8b6c5, uid: 0d2c}
    resourceVersion: "9001"
    uid: 1a2b
  spec:
    containers:
    - image: shop/checkout:1.4
      imagePullPolicy: IfNotPresent
      livenessProbe:
        failureThreshold: 3
        httpGet: {path: /healthz, port: http, scheme: HTTP}
        periodSeconds: 10
        successThreshold: 1
        timeoutSeconds: 1
      name: app
      ports: [{containerPort: 8080, name: http, protocol: TCP}]
      resources:
        limits: {memory: 512Mi}
        requests: {cpu: 250m, memory: 256Mi}
      terminationMessagePath: /dev/termination-log
      terminationMessagePolicy: File
      volumeMounts:
      - {mountPath: /var/run/secrets/kubernetes.io/serviceaccount, name: kube-api-access, readOnly: true}
    dnsPolicy: ClusterFirst
    enableServiceLinks: true
    nodeName: node-1
    preemptionPolicy: PreemptLowerPriority
    priority: 0
    restartPolicy: Always
    schedulerName: default-scheduler
    securityContext: {}
    serviceAccount: default
    serviceAccountName: default
    terminationGracePeriodSeconds: 30
    tolerations:
    - {effect: NoExecute, key: node.kubernetes.io/not-ready, operator: Exists, tolerationSeconds: 300}
    volumes:
    - name: kube-api-access
      projected:
        defaultMode: 420
        sources:
        - serviceAccountToken: {expirationSeconds: 3607, path: token}
        - configMap: {items: [{key: ca.crt, path: ca.crt}], name: kube-root-ca.crt}
        - downwardAPI: {items: [{fieldRef: {apiVersion: v1, fieldPath: metadata.namespace}, path: namespace}]}
  status:
    conditions:
    - {lastProbeTime: null, lastTransitionTime: "2026-11-30T10:01:00Z", status: "True", type: PodScheduled}
    containerStatuses:
    - allocatedResources: {cpu: 250m, memory: 256Mi}
      containerID: containerd://9f
      image: shop/checkout:1.4
      imageID: shop/checkout@sha256:9f
      lastState: {}
      name: app
      ready: true
      resources: {limits: {memory: 512Mi}, requests: {cpu: 250m, memory: 256Mi}}
      restartCount: 0
      started: true
      state: {running: {startedAt: "2026-11-30T10:01:05Z"}}
      user: {linux: {gid: 0, supplementalGroups: [0], uid: 0}}
      volumeMounts: [{mountPath: /var/run/secrets/kubernetes.io/serviceaccount, name: kube-api-access,
                      readOnly: true, recursiveReadOnly: Disabled}]
    hostIP: 172.18.0.2
    hostIPs: [{ip: 172.18.0.2}]
    observedGeneration: 1
    phase: Running
    podIP: 10.244.0.5
    podIPs: [{ip: 10.244.0.5}]
    qosClass: Burstable
    startTime: "2026-11-30T10:01:00Z"
- apiVersion: apps/v1
  kind: Deployment
  metadata:
    annotations: {deployment.kubernetes.io/revision: "1"}
    generation: 1
    name: checkout
    namespace: shop
  spec:
    progressDeadlineSeconds: 600
    replicas: 1
    revisionHistoryLimit: 10
    selector: {matchLabels: {app: checkout}}
    strategy: {rollingUpdate: {maxSurge: 25%, maxUnavailable: 25%}, type: RollingUpdate}
    template:
      metadata: {creationTimestamp: null, labels: {app: checkout}}
      spec:
        containers: [{image: "shop/checkout:1.4", name: app, resources: {requests: {cpu: 250m}}}]
  status:
    availableReplicas: 1
    conditions:
    - {lastTransitionTime: "2026-11-30T10:01:00Z", lastUpdateTime: "2026-11-30T10:01:00Z",
       message: ok, reason: MinimumReplicasAvailable, status: "True", type: Available}
    observedGeneration: 1
    readyReplicas: 1
    replicas: 1
    terminatingReplicas: 0
    updatedReplicas: 1
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: kube-root-ca.crt, namespace: shop}
  data: {ca.crt: "..."}
- apiVersion: cert-manager.io/v1
  kind: Certificate
  metadata: {name: web, namespace: shop}
  spec: {secretName: web-tls, anyField: 1}
kind: List
metadata:
  resourceVersion: ""
"""


def _error(text: str, source: str = "in.yaml") -> str:
    with pytest.raises(InputError) as err:
        load_documents(text, source)
    return str(err.value)


def test_a_kubectl_snapshot_loads_unchanged() -> None:
    skipped: dict[str, int] = {}
    objects = load_documents(KUBECTL_LIST, "snapshot.yaml", skipped=skipped)
    assert [type(o) for o in objects] == [Node, Pod, Deployment]
    assert skipped == {"ConfigMap": 1, "Certificate": 1}


@pytest.mark.parametrize(
    ("old", "new", "where"),
    [
        ("nodeSelector:", "nodeSelectr:", 'spec.nodeSelectr: unknown field (did you mean "nodeSelector"?)'),
        (
            "requests: {cpu",
            "request: {cpu",
            'spec.containers[0].resources.request: unknown field (did you mean "requests"?)',
        ),
        ("namespace: shop}", "namespace: shop, lables: {a: b}}", "metadata.lables: unknown field"),
        ("  containers:", "  priorityClass: high\n  containers:", "spec.priorityClass: unknown field"),
    ],
)
def test_a_misspelt_field_is_named_with_its_path(old: str, new: str, where: str) -> None:
    assert _error(POD.replace(old, new), "pod.yaml").startswith(f"pod.yaml: {where}")


def test_the_error_names_the_item_of_a_list_and_the_document() -> None:
    text = KUBECTL_LIST.replace("qosClass: Burstable", "qosClas: Burstable")
    assert _error(text) == 'in.yaml: items[1].status.qosClas: unknown field (did you mean "qosClass"?)'
    two = POD + "---\n" + POD.replace("image: nginx", "imag: nginx")
    assert _error(two).startswith("in.yaml: document 2: spec.containers[0].imag: unknown field")


def test_free_form_and_map_fields_take_any_key() -> None:
    text = POD.replace("nodeSelector: {disk: ssd}", "nodeSelector: {anything.example/x: y}")
    text = text.replace("name: web,", "name: web, annotations: {any/key: v},")
    (pod,) = load_documents(text, "pod.yaml")
    assert isinstance(pod, Pod)


def test_the_list_envelope_is_checked() -> None:
    text = "apiVersion: v1\nkind: List\nmetadata: {resourceVersion: ''}\nitem: []\n"
    assert _error(text) == 'in.yaml: item: unknown field (did you mean "items"?)'
    text = "apiVersion: v1\nkind: PodList\nmetadata: {resourceVersin: ''}\nitems: []\n"
    assert _error(text).startswith("in.yaml: metadata.resourceVersin: unknown field")


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("apiVersion: v1\nkind: Nod\n", 'kind: unknown kind "Nod" in v1 (did you mean "Node"?)'),
        ("kind: Nod\n", 'kind: unknown kind "Nod" (did you mean "Node"?)'),
        ("apiVersion: v1\nkind: Deployment\n", "apiVersion: Deployment is not in v1 (it is in apps/v1)"),
        (
            "apiVersion: v1\nkind: Ingress\n",
            "apiVersion: Ingress is not in v1 (it is in networking.k8s.io/v1)",
        ),
        (
            "apiVersion: apps/v1beta1\nkind: Deployment\n",
            "apiVersion: Kubernetes v1.37 does not serve apps/v1beta1 (served: apps/v1)",
        ),
    ],
)
def test_a_wrong_kind_is_named_as_a_wrong_kind(header: str, message: str) -> None:
    assert _error(header + "metadata: {name: x}\n") == f"in.yaml: {message}"


def test_kinds_of_groups_the_api_does_not_serve_are_left_out_unchecked() -> None:
    text = (
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles: []\n---\n"
        "apiVersion: example.com/v1\nkind: Widget\nspec: {anything: 1}\n---\n"
        "apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\nmetadata: {name: g}\n"
        "spec: {minMember: 2, futureField: 1}\n"
    )
    skipped: dict[str, int] = {}
    (group,) = load_documents(text, "in.yaml", skipped=skipped)
    assert type(group).__name__ == "PodGroup"
    assert skipped == {"KubeSchedulerConfiguration": 1, "Widget": 1}


def test_lenient_loading_reports_every_problem_and_keeps_the_objects() -> None:
    text = POD.replace("nodeSelector:", "nodeSelectr:").replace("requests:", "request:")
    text += "---\napiVersion: v1\nkind: Nod\nmetadata: {name: n}\n"
    lenient: list[InputError] = []
    skipped: dict[str, int] = {}
    (pod,) = load_documents(text, "in.yaml", skipped=skipped, lenient=lenient)
    assert isinstance(pod, Pod) and not pod.spec.node_selector
    assert [str(e) for e in lenient] == [
        'in.yaml: document 1: spec.nodeSelectr: unknown field (did you mean "nodeSelector"?)',
        'in.yaml: document 1: spec.containers[0].resources.request: unknown field (did you mean "requests"?)',
        'in.yaml: document 2: kind: unknown kind "Nod" in v1 (did you mean "Node"?)',
    ]
    assert skipped == {"Nod": 1}
    lenient.clear()
    load_documents(KUBECTL_LIST.replace("qosClass:", "qosClas:"), "in.yaml", lenient=lenient)
    assert [str(e) for e in lenient] == [
        'in.yaml: items[1].status.qosClas: unknown field (did you mean "qosClass"?)'
    ]


def test_an_embedded_object_is_checked_relative_to_itself() -> None:
    import yaml

    doc = yaml.safe_load(POD.replace("image: nginx", "imagePullPolicyy: Always\n    image: nginx"))
    with pytest.raises(InputError) as err:
        decode_object(doc)
    assert str(err.value).startswith("spec.containers[0].imagePullPolicyy: unknown field")
    lenient: list[InputError] = []
    assert isinstance(decode_object(doc, lenient=lenient), Pod)
    assert [e.path for e in lenient] == ["spec.containers[0].imagePullPolicyy"]


def test_items_of_a_typed_list_are_checked_against_the_lists_version() -> None:
    # `basic` is a v1beta1 device field, gone from resource.k8s.io/v1: right in the one, wrong in the other.
    item = "- metadata: {name: s}\n  spec: {driver: d, nodeName: n,"
    item += " pool: {name: p, generation: 1, resourceSliceCount: 1},"
    item += " devices: [{name: g, basic: {}}]}\n"
    text = "apiVersion: resource.k8s.io/v1beta1\nkind: ResourceSliceList\nitems:\n" + item
    load_documents(text, "in.yaml")
    v1 = text.replace("resource.k8s.io/v1beta1", "resource.k8s.io/v1")
    assert _error(v1).startswith("in.yaml: items[0].spec.devices[0].basic: unknown field")
