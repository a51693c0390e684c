#!/usr/bin/env bash
# Make the local base image for kubesched's Dockerfile from Debian's packages with mmdebstrap, and
# print its image name as the last line on stdout (everything else goes to stderr).
#
# Users build FROM a public slim Python image; this machine cannot pull one, so tests build FROM a
# base made here: Debian (the same release as the host) with python3, its venv module and CA
# certificates, nothing else (no compiler, no docs). The root filesystem tarball is cached outside
# the clone, keyed by this script and the host's Debian release, built into a temporary file and
# renamed into place under a flock (parallel test runs share it); the image is then committed into
# buildah's vfs storage once. Idempotent: ~1 s when both exist.
#
# Environment: KUBESCHED_KUBE_CACHE (cache root, default $HOME/.cache/kubesched), shared with tools/kube.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
log() { printf 'image/base.sh: %s\n' "$*" >&2; }
"$HERE/install-tools.sh"

SUITE="$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")"
PACKAGES="python3,python3-venv,ca-certificates"
KEY="$( { cat "$0"; printf '%s %s\n' "$SUITE" "$PACKAGES"; } | sha256sum | cut -c1-12)"
CACHE_ROOT="${KUBESCHED_KUBE_CACHE:-$HOME/.cache/kubesched}"
TARBALL="$CACHE_ROOT/image-base-$SUITE-$KEY.tar"
IMAGE="localhost/kubesched-base:$SUITE-$KEY"
BUILDAH=(buildah --storage-driver vfs)

have_image() { "${BUILDAH[@]}" inspect --type image "$IMAGE" >/dev/null 2>&1; }
if [[ -s "$TARBALL" ]] && have_image; then printf '%s\n' "$IMAGE"; exit 0; fi

mkdir -p "$CACHE_ROOT"
exec 9>"$TARBALL.lock"
flock -n 9 || { log "another process holds $TARBALL.lock; waiting for it"; flock 9; }

if [[ ! -s "$TARBALL" ]]; then
  start=$SECONDS
  log "making a Debian $SUITE root filesystem with $PACKAGES (mmdebstrap, ~1-2 min cold)"
  STAGE="$(mktemp "$TARBALL.partial.XXXXXX")"
  trap 'rm -f "$STAGE"' EXIT
  # minbase + the packages; documentation, man pages and locales are left out; apt's lists too.
  mmdebstrap --variant=minbase --include="$PACKAGES" --format=tar \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --aptopt='Acquire::Retries "3"' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' \
    "$SUITE" "$STAGE" >&2
  mv "$STAGE" "$TARBALL"
  trap - EXIT
  log "root filesystem made in $((SECONDS - start)) s ($(du -h "$TARBALL" | cut -f1))"
fi

if ! have_image; then
  ctr="$("${BUILDAH[@]}" from scratch)"
  trap '"${BUILDAH[@]}" rm "$ctr" >/dev/null 2>&1 || true' EXIT
  "${BUILDAH[@]}" add "$ctr" "$TARBALL" / >&2
  "${BUILDAH[@]}" config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env LANG=C.UTF-8 --cmd /usr/bin/python3 "$ctr" >&2
  "${BUILDAH[@]}" commit --quiet "$ctr" "$IMAGE" >&2
  log "committed $IMAGE"
fi
printf '%s\n' "$IMAGE"
