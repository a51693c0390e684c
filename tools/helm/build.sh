#!/usr/bin/env bash
# Build helm from the Go module pinned in this directory into the same cache root as the Kubernetes
# binaries (tools/kube/build.sh), in a directory of its own, and print that directory as the last line
# on stdout. Everything else goes to stderr. The chart tests (tests/integration/test_chart.py) use it.
#
# Cache key: helm's version + a hash of go.mod, go.sum and `go version`. Idempotent: when the binary
# exists and answers `helm version`, it exits at once. A cold build takes ~2-3 min on 2 cores.
#
# Environment:
#   KUBESCHED_HELM          a prebuilt helm binary: used as is, nothing is built.
#   KUBESCHED_KUBE_CACHE    cache root (default: $HOME/.cache/kubesched), shared with tools/kube.
#   KUBESCHED_KUBE_NICE     niceness for the compiler (default 10).
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
log() { printf 'helm/build.sh: %s\n' "$*" >&2; }

HELM_VERSION="$(sed -n 's#^[[:space:]]*helm.sh/helm/v3 \(v[0-9][0-9.]*\).*#\1#p' "$HERE/go.mod" | head -n1)"
[[ -n "$HELM_VERSION" ]] || { log "cannot read the helm.sh/helm/v3 version from $HERE/go.mod"; exit 1; }

# Output read whole before matching (a `| grep -q` pipe under pipefail can fail on SIGPIPE).
check() {
  local out
  [[ -x "$1/helm" ]] && out="$(timeout 30 "$1/helm" version --template '{{.Version}}' 2>/dev/null)" &&
    grep -qx "$HELM_VERSION" <<<"$out"
}

if [[ -n "${KUBESCHED_HELM:-}" ]]; then
  "$KUBESCHED_HELM" version >/dev/null 2>&1 || { log "KUBESCHED_HELM=$KUBESCHED_HELM does not run"; exit 1; }
  dirname "$(readlink -f "$KUBESCHED_HELM")"
  exit 0
fi

command -v go >/dev/null || { log "go is not on PATH (Go >= the 'go' line of $HERE/go.mod is needed)"; exit 1; }
export GOWORK=off GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-trimpath
GO_VERSION="$(go env GOVERSION)"
KEY="$( { cat "$HERE/go.mod" "$HERE/go.sum"; printf '%s\n' "$GO_VERSION"; } | sha256sum | cut -c1-12)"
CACHE_ROOT="${KUBESCHED_KUBE_CACHE:-$HOME/.cache/kubesched}"
OUT="$CACHE_ROOT/helm-$HELM_VERSION-$KEY"

if check "$OUT"; then printf '%s\n' "$OUT"; exit 0; fi

mkdir -p "$CACHE_ROOT"
exec 9>"$OUT.lock"
flock -n 9 || { log "another build holds $OUT.lock; waiting for it"; flock 9; }
if check "$OUT"; then printf '%s\n' "$OUT"; exit 0; fi

log "building helm $HELM_VERSION with $GO_VERSION into $OUT (~2-3 min cold on 2 cores)"
STAGE="$OUT.partial"
rm -rf "$STAGE"
mkdir -p "$STAGE"
start=$SECONDS
cd "$HERE"
nice -n "${KUBESCHED_KUBE_NICE:-10}" go build \
  -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" \
  -o "$STAGE/helm" helm.sh/helm/v3/cmd/helm
check "$STAGE" || { log "the built helm does not report $HELM_VERSION"; exit 1; }
printf 'helm %s\ngo %s\nkey %s\nbuilt in %s s\n' "$HELM_VERSION" "$GO_VERSION" "$KEY" "$((SECONDS - start))" > "$STAGE/BUILDINFO"
rm -rf "$OUT"
mv "$STAGE" "$OUT"
log "done in $((SECONDS - start)) s"
printf '%s\n' "$OUT"
