#!/usr/bin/env bash
# Install what building and running kubesched's image needs without a container daemon: buildah
# (daemonless builds, vfs storage, chroot isolation) and mmdebstrap (a Debian root filesystem to
# use as the local base image). Idempotent: when both commands are on PATH it exits at once.
# `make test` runs it (as .ci/run does through make); apt-get waits for the dpkg lock, since other
# processes on a shared machine may be installing too.
set -euo pipefail
log() { printf 'install-tools.sh: %s\n' "$*" >&2; }

missing=()
command -v buildah >/dev/null || missing+=(buildah)
command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ "$(id -u)" != 0 ]]; then
  log "missing ${missing[*]}: install them as root: apt-get install buildah mmdebstrap uidmap"
  exit 1
fi
command -v apt-get >/dev/null || { log "missing ${missing[*]} and no apt-get to install them"; exit 1; }
log "installing ${missing[*]} with apt-get"
export DEBIAN_FRONTEND=noninteractive
apt-get -o DPkg::Lock::Timeout=600 update -qq
apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends buildah mmdebstrap uidmap >&2
