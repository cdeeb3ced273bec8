#!/usr/bin/env bash
# Creates the mail peers' Python environment (idempotent): `setup.sh DIR`; afterwards
# `DIR/bin/python` runs with the pinned packages of requirements.txt.
# Needs python3 (3.9+) and PyPI (or a configured mirror) on first run. Uses a venv; where
# the venv module is missing (Debian without python3-venv) it installs into DIR/lib with
# `pip --target` and writes DIR/bin/python as a wrapper that puts DIR/lib on PYTHONPATH.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:?usage: setup.sh DIR}"
stamp="$dir/.requirements"
if [ -x "$dir/bin/python" ] && cmp -s "$here/requirements.txt" "$stamp"; then
    exit 0
fi
rm -rf "$dir"
if python3 -m venv "$dir" 2>/dev/null && [ -x "$dir/bin/python" ]; then
    "$dir/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt"
else
    rm -rf "$dir"
    mkdir -p "$dir/bin" "$dir/lib"
    python3 -m pip --version >/dev/null 2>&1 || python3 -m ensurepip --user >/dev/null
    python3 -m pip install --quiet --disable-pip-version-check --target "$dir/lib" \
        -r "$here/requirements.txt"
    printf '#!/bin/sh\nPYTHONPATH="%s${PYTHONPATH:+:$PYTHONPATH}" exec python3 "$@"\n' \
        "$dir/lib" > "$dir/bin/python"
    chmod +x "$dir/bin/python"
fi
cp "$here/requirements.txt" "$stamp"
