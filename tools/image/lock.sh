#!/usr/bin/env bash
# Regenerate deploy/requirements.txt: pyproject.toml's runtime dependencies and everything they pull
# in, at the exact versions pip resolves today, installed into a throw-away venv.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
VENV="$(mktemp -d)"
trap 'rm -rf "$VENV"' EXIT
python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
mapfile -t deps < <(python3 -c "import tomllib; print('\n'.join(tomllib.load(open('$ROOT/pyproject.toml','rb'))['project']['dependencies']))")
"$VENV/bin/pip" install -q "${deps[@]}"
{
  echo "# Every package the kubesched image installs, at exact versions: pyproject.toml's runtime dependencies"
  echo "# and everything they pull in. Regenerate with tools/image/lock.sh after changing pyproject.toml;"
  echo "# tests/unit/test_image_files.py checks the two agree."
  "$VENV/bin/pip" freeze
} > "$ROOT/deploy/requirements.txt"
