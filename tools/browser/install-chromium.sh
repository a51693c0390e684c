#!/usr/bin/env bash
# Install Debian's headless-capable Chromium for the HTML report's browser test, once.
#
# Idempotent: does nothing when `chromium` is already on PATH (or $KUBESCHED_CHROMIUM points at a
# browser). apt-get waits for the dpkg lock, since other jobs on a shared machine may hold it.
# Needs root (as in CI) or sudo; prints the browser's path on success.
set -euo pipefail

if [[ -n "${KUBESCHED_CHROMIUM:-}" ]]; then
    echo "$KUBESCHED_CHROMIUM"
    exit 0
fi
if command -v chromium >/dev/null 2>&1; then
    command -v chromium
    exit 0
fi

SUDO=""
if [[ "$(id -u)" != 0 ]]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo -n"
    else
        echo "install-chromium: need root (or sudo) to run apt-get install chromium" >&2
        exit 1
    fi
fi
APT=(-o DPkg::Lock::Timeout=600 -o Acquire::Retries=3)
export DEBIAN_FRONTEND=noninteractive
echo "install-chromium: installing Debian's chromium package (once)..." >&2
$SUDO apt-get "${APT[@]}" update -qq >&2
$SUDO apt-get "${APT[@]}" install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2
command -v chromium
