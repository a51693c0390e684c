#!/usr/bin/env bash
# kubectl of the control plane's version, built and cached by build-tool.sh (which see); prints its directory.
exec "$(dirname "$0")/build-tool.sh" kubectl
