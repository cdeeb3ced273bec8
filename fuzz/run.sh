#!/usr/bin/env bash
# Runs one fuzz target time-boxed on the stable toolchain:
#   fuzz/run.sh TARGET SECONDS [extra libFuzzer flags...]
# Installs cargo-fuzz (cargo install --locked) when it is missing. New corpus entries
# libFuzzer finds go to a scratch directory, not to fuzz/corpus/TARGET: commit only the
# inputs that matter (a fixed crash, a new seed), so the committed corpus stays small.
# cargo fuzz writes crash artifacts to fuzz/artifacts/TARGET/ (git-ignored).
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: fuzz/run.sh TARGET SECONDS [libFuzzer flags...]" >&2
    exit 2
fi
target=$1
seconds=$2
shift 2
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "run.sh: installing cargo-fuzz (cargo install --locked cargo-fuzz)" >&2
    cargo install --locked cargo-fuzz
fi

if [ ! -d "corpus/$target" ]; then
    echo "run.sh: no seed corpus at fuzz/corpus/$target (see fuzz/README.md)" >&2
    exit 2
fi

# libFuzzer writes new inputs to the first corpus directory; keep the committed seeds read-only
# by putting a scratch directory first.
scratch="${LOOM_FUZZ_SCRATCH:-${TMPDIR:-/tmp}/loom-fuzz-corpus}/$target"
mkdir -p "$scratch"

exec cargo fuzz run --sanitizer none "$target" "$scratch" "corpus/$target" -- \
    -max_total_time="$seconds" -print_final_stats=1 "$@"
