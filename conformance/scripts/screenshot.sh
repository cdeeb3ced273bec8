#!/usr/bin/env bash
# Renders the HTML certificate and takes headless-Chromium screenshots of its index and of one
# case page, to check the report renders (issue 5). Not part of CI.
#
#   conformance/scripts/screenshot.sh [OUT_DIR]     (default /tmp/cert-shots)
#
# Installs Debian's chromium with apt-get when no chromium is on PATH (needs root or sudo).
# Extra arguments for the run can be given in LOOM_CONFORMANCE_ARGS (e.g. "--target URL").
set -euo pipefail
cd "$(dirname "$0")/../.."

out="${1:-/tmp/cert-shots}"
cert=/tmp/cert
mkdir -p "$out"

chromium_bin=""
for c in chromium chromium-browser google-chrome; do
  if command -v "$c" >/dev/null 2>&1; then chromium_bin="$c"; break; fi
done
if [ -z "$chromium_bin" ]; then
  echo "screenshot.sh: installing chromium (Debian package)" >&2
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq chromium >/dev/null
  chromium_bin=chromium
fi

rm -rf "$cert"
# --no-fail: a failing target still gets a certificate to look at.
# shellcheck disable=SC2086
cargo run --quiet -p loom-conformance -- run --quiet --no-fail --report "html=$cert" ${LOOM_CONFORMANCE_ARGS:-}

shoot() { # URL PNG
  "$chromium_bin" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --screenshot="$2" --window-size=1280,2000 "$1" >/dev/null 2>&1
  echo "wrote $2"
}
shoot "file://$cert/index.html" "$out/index.png"
first_case="$(find "$cert/cases" -name '*.html' | sort | head -n 1)"
if [ -n "$first_case" ]; then
  shoot "file://$first_case" "$out/case.png"
fi
