#!/usr/bin/env bash
# Creates the mail peers' Python environment (idempotent): `setup.sh VENV_DIR`.
# Needs python3 (3.9+) with venv, and PyPI (or a configured mirror) on first run.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${1:?usage: setup.sh VENV_DIR}"
stamp="$venv/.requirements"
if [ -x "$venv/bin/python" ] && cmp -s "$here/requirements.txt" "$stamp"; then
    exit 0
fi
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt"
cp "$here/requirements.txt" "$stamp"
