"""docs/extender.md's recipe (`make cluster CLUSTER_ARGS=--extender`): the upstream kube-scheduler
calls `kubesched extender` over mutual TLS, the extender filters and binds, and the curl line it
prints reaches the extender with the wire format the doc shows."""

from __future__ import annotations

import json
import subprocess
import time
import uuid

from kubesched.harness.controlplane import ControlPlane
from kubesched.harness.extender_recipe import SCHEDULER_NAME, start_extender_recipe
from kubesched.harness.fake_nodes import ApiClient, create_node, create_pod, fake_node, get_pod


def test_the_recipe_schedules_through_the_extender(
    control_plane: ControlPlane, api: ApiClient, namespace: str
) -> None:
    run = uuid.uuid4().hex[:6]
    label = "kubesched.test/recipe"
    hello, plain = f"recipe-hello-{run}", f"recipe-plain-{run}"
    create_node(api, fake_node(hello, labels={label: run, "node": "hello"}))
    create_node(api, fake_node(plain, labels={label: run}))
    recipe = start_extender_recipe(control_plane)
    try:
        for i in range(3):
            create_pod(
                api, f"r{i}", namespace=namespace, scheduler_name=SCHEDULER_NAME, node_selector={label: run}
            )
        deadline = time.monotonic() + 90
        placed: dict[str, str] = {}
        while len(placed) < 3:
            assert time.monotonic() < deadline, f"not bound: {placed}\n{recipe.kube_scheduler.log_tail()}"
            placed = {
                f"r{i}": n
                for i in range(3)
                if (n := get_pod(api, f"r{i}", namespace)["spec"].get("nodeName"))
            }
            time.sleep(0.3)
        assert set(placed.values()) == {plain}  # NodeFilterLabel in the extender keeps them off node=hello

        args = {"Pod": get_pod(api, "r0", namespace), "NodeNames": [hello, plain]}
        out = subprocess.run(
            ["sh", "-c", recipe.curl("filter").replace("-d @args.json", "-d @-") + " -s"],
            input=json.dumps(args), capture_output=True, text=True, timeout=30, check=True,
        ).stdout  # fmt: skip
        result = json.loads(out)
        assert result["NodeNames"] == [plain]
        assert result["FailedAndUnresolvableNodes"] == {hello: "node(s) had label node=hello"}
    finally:
        recipe.kube_scheduler.stop()
        recipe.extender.stop()
