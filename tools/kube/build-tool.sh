#!/usr/bin/env bash
# Build a Kubernetes binary beside the control plane, the same version (tools/kube/go.mod), into the
# same cache root as build.sh, in a directory of its own, and print that directory as the last line on
# stdout. Everything else goes to stderr. Usage: build-tool.sh kubectl|kube-controller-manager
#
# kubectl: `make cluster` puts it on PATH; the docs tests run the README's and the guides' kubectl
# commands with it. kube-controller-manager: the integration tests that compare kubesched's simulated
# controllers with the real ones run it (tests/integration/test_workload_with_job_upstream.py).
#
# Each needs modules the control plane does not, so each has its own module (tools/kube/kubectl/,
# tools/kube/controller-manager/) whose k8s.io/kubernetes pin must equal ../go.mod's (checked here):
# adding one changes neither the control plane's go.mod nor its cache key.
# Cache key: the Kubernetes version + a hash of the module's go.mod, go.sum and `go version`.
# Idempotent: when the binary exists and reports the pinned version, it exits at once. A cold build
# takes ~2 min (kubectl) or ~5 min (kube-controller-manager) on 2 cores, less when build.sh has filled
# the Go build cache.
#
# Environment:
#   KUBESCHED_KUBECTL, KUBESCHED_KUBE_CONTROLLER_MANAGER
#                           a prebuilt binary: used as is, nothing is built.
#   KUBESCHED_KUBE_CACHE    cache root (default: $HOME/.cache/kubesched), shared with build.sh.
#   KUBESCHED_KUBE_NICE     niceness for the compiler (default 10).
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
TOOL="${1:?usage: $0 kubectl|kube-controller-manager}"
case "$TOOL" in
  kubectl) MODULE="$HERE/kubectl"; PREBUILT="${KUBESCHED_KUBECTL:-}"; VERSION_ARGS=(version --client)
           VERSION_PREFIX="Client Version: "; MINUTES=2 ;;
  kube-controller-manager) MODULE="$HERE/controller-manager"; PREBUILT="${KUBESCHED_KUBE_CONTROLLER_MANAGER:-}"
           VERSION_ARGS=(--version); VERSION_PREFIX="Kubernetes "; MINUTES=5 ;;
  *) printf 'build-tool.sh: unknown tool %s (kubectl or kube-controller-manager)\n' "$TOOL" >&2; exit 2 ;;
esac
log() { printf 'build-tool.sh %s: %s\n' "$TOOL" "$*" >&2; }

pin() { sed -n 's#^[[:space:]]*k8s.io/kubernetes \(v[0-9][0-9.]*\).*#\1#p' "$1" | head -n1; }
K8S_VERSION="$(pin "$HERE/go.mod")"
[[ -n "$K8S_VERSION" ]] || { log "cannot read the k8s.io/kubernetes version from $HERE/go.mod"; exit 1; }
[[ "$(pin "$MODULE/go.mod")" == "$K8S_VERSION" ]] || {
  log "$MODULE/go.mod pins k8s.io/kubernetes $(pin "$MODULE/go.mod"), $HERE/go.mod $K8S_VERSION: run update-gomod.sh"
  exit 1
}

check() {
  # Read all of the output before matching: `tool ... | grep -q` under pipefail fails at random when
  # grep exits first and the tool dies of SIGPIPE writing its second line.
  local out
  [[ -x "$1/$TOOL" ]] && out="$(timeout 30 "$1/$TOOL" "${VERSION_ARGS[@]}" 2>/dev/null)" &&
    grep -qx "$VERSION_PREFIX$K8S_VERSION" <<<"$out"
}

if [[ -n "$PREBUILT" ]]; then
  "$PREBUILT" "${VERSION_ARGS[@]}" >/dev/null 2>&1 || { log "$PREBUILT does not run"; exit 1; }
  dirname "$(readlink -f "$PREBUILT")"
  exit 0
fi

command -v go >/dev/null || { log "go is not on PATH (Go >= the 'go' line of $MODULE/go.mod is needed)"; exit 1; }
export GOWORK=off GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-trimpath
GO_VERSION="$(go env GOVERSION)"
KEY="$( { cat "$MODULE/go.mod" "$MODULE/go.sum"; printf '%s\n' "$GO_VERSION"; } | sha256sum | cut -c1-12)"
CACHE_ROOT="${KUBESCHED_KUBE_CACHE:-$HOME/.cache/kubesched}"
OUT="$CACHE_ROOT/$TOOL-$K8S_VERSION-$KEY"

if check "$OUT"; then printf '%s\n' "$OUT"; exit 0; fi

mkdir -p "$CACHE_ROOT"
# One build at a time per cache dir: parallel test workers may ask at once.
exec 9>"$OUT.lock"
flock -n 9 || { log "another build holds $OUT.lock; waiting for it"; flock 9; }
if check "$OUT"; then printf '%s\n' "$OUT"; exit 0; fi

log "building $TOOL $K8S_VERSION with $GO_VERSION into $OUT (~$MINUTES min cold on 2 cores)"
STAGE="$OUT.partial"
rm -rf "$STAGE"
mkdir -p "$STAGE"
start=$SECONDS
MAJOR="${K8S_VERSION#v}"; MAJOR="${MAJOR%%.*}"
MINOR="${K8S_VERSION#v*.}"; MINOR="${MINOR%%.*}"
NOW="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
LDFLAGS="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  LDFLAGS="$LDFLAGS -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=$MAJOR -X $p.gitMinor=$MINOR"
  LDFLAGS="$LDFLAGS -X $p.gitTreeState=clean -X $p.buildDate=$NOW"
done
cd "$MODULE"
nice -n "${KUBESCHED_KUBE_NICE:-10}" go build -ldflags "$LDFLAGS" -o "$STAGE/$TOOL" "k8s.io/kubernetes/cmd/$TOOL"
check "$STAGE" || { log "the built $TOOL does not report $K8S_VERSION"; exit 1; }
printf '%s %s\ngo %s\nkey %s\nbuilt %s in %s s\n' "$TOOL" "$K8S_VERSION" "$GO_VERSION" "$KEY" "$NOW" \
  "$((SECONDS - start))" > "$STAGE/BUILDINFO"
rm -rf "$OUT"
mv "$STAGE" "$OUT"
log "done in $((SECONDS - start)) s"
printf '%s\n' "$OUT"
