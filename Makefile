# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck unit bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,ray]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/kubesched simulate --config examples/demo/scheduler-config.yaml examples/demo/cluster

test: $(STAMP) lint typecheck kube-binaries image-tools helm browser
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup tests

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/python -m pytest -q tests/unit

bench: $(STAMP)
	$(BIN)/python benchmarks/simulate_throughput.py

clean:
	rm -rf $(VENV) build dist src/*.egg-info

# The real control plane for integration tests and benchmarks: kube-apiserver, kube-scheduler and etcd
# built from the Go module pinned in tools/kube, cached outside the clone (~6 min cold on 2 cores, instant after);
# kubectl and kube-controller-manager (the Job controller the WorkloadWithJob test compares with) beside them.
.PHONY: kube-binaries cluster image-tools image helm
kube-binaries:
	tools/kube/build.sh
	tools/kube/build-kubectl.sh
	tools/kube/build-tool.sh kube-controller-manager

# buildah + mmdebstrap (apt-get, idempotent) for tests/integration/test_image.py, and the image itself:
# deploy/Dockerfile FROM a Debian base made locally (cached outside the clone), no daemon needed.
image-tools:
	tools/image/install-tools.sh
image: image-tools
	tools/image/build.sh

# helm, built from the Go module pinned in tools/helm into the same cache as the Kubernetes binaries.
helm:
	tools/helm/build.sh

# etcd + kube-apiserver on loopback for a person: prints `export KUBECONFIG=...`; Ctrl-C stops it.
# e.g. make cluster CLUSTER_ARGS="--nodes 100 --kube-scheduler"
CLUSTER_ARGS ?=
cluster: $(STAMP) kube-binaries
	$(BIN)/python -m kubesched.harness.controlplane $(CLUSTER_ARGS)

# Debian's Chromium for the HTML report's browser test (tests/e2e/test_html_report.py); once, idempotent.
.PHONY: browser
browser:
	tools/browser/install-chromium.sh >/dev/null
