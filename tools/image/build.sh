#!/usr/bin/env bash
# Build kubesched's image (deploy/Dockerfile) with buildah, without a daemon (vfs storage, chroot
# isolation), FROM the local Debian base of tools/image/base.sh; print the image name as the last line
# on stdout (progress goes to stderr).
#
#   tools/image/build.sh                      # kubesched's image
#   tools/image/build.sh plugins DIR IMAGE    # deploy/plugins.Dockerfile: IMAGE plus the plugin package in DIR
#
# The tag is a hash of everything the build reads (Dockerfile, the context's files, the base), so an
# unchanged tree is not rebuilt (~1 s); older tags of the same repository are removed, because vfs
# keeps a full copy of every image. The host's CA bundle is mounted for pip (PIP_CERT), for machines
# whose way to PyPI re-signs TLS. Build time and size are appended to $CACHE_ROOT/image-builds.log.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
log() { printf 'image/build.sh: %s\n' "$*" >&2; }
BUILDAH=(buildah --storage-driver vfs)
CACHE_ROOT="${KUBESCHED_KUBE_CACHE:-$HOME/.cache/kubesched}"
HOST_CA="${KUBESCHED_HOST_CA:-/etc/ssl/certs/ca-certificates.crt}"

kind="${1:-kubesched}"
case "$kind" in
  kubesched)
    base="$("$ROOT/tools/image/base.sh" | tail -n1)"
    repo=localhost/kubesched
    dockerfile="$ROOT/deploy/Dockerfile"
    context="$ROOT"
    files=(deploy/Dockerfile deploy/requirements.txt pyproject.toml README.md .dockerignore)
    inputs() { cd "$ROOT" && { sha256sum "${files[@]}"; find src -type f ! -path '*/__pycache__/*' ! -name '*.pyc' ! -path '*.egg-info/*' -print0 | sort -z | xargs -0 sha256sum; }; }
    args=(--build-arg "BASE=$base")
    ;;
  plugins)
    [[ $# -eq 3 ]] || { log "usage: $0 plugins PLUGIN_PACKAGE_DIR KUBESCHED_IMAGE"; exit 2; }
    context="$(cd "$2" && pwd)"
    base="$3"
    repo="localhost/kubesched-plugins-$(basename "$context")"
    dockerfile="$ROOT/deploy/plugins.Dockerfile"
    inputs() { sha256sum "$dockerfile"; cd "$context" && find . -type f ! -path '*/__pycache__/*' ! -name '*.pyc' ! -path '*.egg-info/*' -print0 | sort -z | xargs -0 sha256sum; }
    args=(--build-arg "KUBESCHED_IMAGE=$base")
    ;;
  *) log "unknown image kind $kind (kubesched or plugins)"; exit 2 ;;
esac
"$ROOT/tools/image/install-tools.sh"

key="$( { inputs; printf '%s\n' "$base"; "${BUILDAH[@]}" inspect --type image --format '{{.FromImageID}}' "$base" 2>/dev/null || true; } | sha256sum | cut -c1-12)"
image="$repo:$key"
if "${BUILDAH[@]}" inspect --type image "$image" >/dev/null 2>&1; then
  log "$image is up to date"
  printf '%s\n' "$image"
  exit 0
fi

mkdir -p "$CACHE_ROOT"
exec 9>"$CACHE_ROOT/image-build-$(basename "$repo").lock"
flock 9
if ! "${BUILDAH[@]}" inspect --type image "$image" >/dev/null 2>&1; then
  log "building $image FROM $base"
  start=$SECONDS
  ca=()
  [[ -f "$HOST_CA" ]] && ca=(--volume "$HOST_CA:/run/host-ca.crt:ro" --build-arg PIP_CERT=/run/host-ca.crt)
  "${BUILDAH[@]}" bud --isolation chroot --network host --quiet "${args[@]}" "${ca[@]}" \
    -f "$dockerfile" -t "$image" "$context" >&2
  seconds=$((SECONDS - start))
  size="$("${BUILDAH[@]}" images --format '{{.Size}}' "$image" | head -n1)"
  printf '%s %s built in %s s, %s\n' "$(date -u +%FT%TZ)" "$image" "$seconds" "$size" >> "$CACHE_ROOT/image-builds.log"
  log "built $image in $seconds s ($size)"
  # vfs stores every image whole: drop this repository's older builds.
  "${BUILDAH[@]}" images --format '{{.Name}}:{{.Tag}}' | grep -x "$repo:.*" | grep -vx "$image" \
    | xargs -r "${BUILDAH[@]}" rmi >/dev/null 2>&1 || true
fi
printf '%s\n' "$image"
