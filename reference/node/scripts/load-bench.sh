#!/usr/bin/env bash
# Throughput of a release loom-node with a durable store, measured with loom-load on the same
# machine (issue 14 "Done when"): rate limits off, 16 identities, 16 connections, COUNT
# envelopes, thread length 50 and 1. Node CPU per accepted envelope comes from
# /proc/PID/stat (utime + stime) read before and after each run.
#
# usage: load-bench.sh BIN_DIR [COUNT] [OUT_DIR]
#   BIN_DIR holds loom-node and loom-load (copies: other builds overwrite target/).
# Run it under the shared build lock so compiles do not skew it:
#   flock /work/.build.lock reference/node/scripts/load-bench.sh /work/bins/NAME 20000
set -euo pipefail
bin=${1:?usage: load-bench.sh BIN_DIR [COUNT] [OUT_DIR]}
count=${2:-20000}
out=${3:-$bin/results}
mkdir -p "$out"
tick=$(getconf CLK_TCK)

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

run_one() {
  local tl=$1 data port pid before after ok
  data=$(mktemp -d /tmp/loom-bench-XXXXXX)
  cat > "$data/node.toml" <<TOML
domain = "bench.test"
listen = "127.0.0.1:0"
storage = { dir = "$data/store" }
seed = 1
[rate_limits]
envelopes_per_identity = 0
auth_per_ip = 0
thread_reads_per_identity = 0
federation_per_node = 0
TOML
  LOOM_LOG=warn,loom_node=info "$bin/loom-node" --config "$data/node.toml" 2> "$data/node.log" &
  pid=$!
  for _ in $(seq 100); do
    grep -q 'listen=' "$data/node.log" 2>/dev/null && break
    sleep 0.05
  done
  port=$(grep -o 'listen=127.0.0.1:[0-9]*' "$data/node.log" | head -1 | cut -d: -f2)
  before=$(cpu_ticks "$pid")
  "$bin/loom-load" --target "http://127.0.0.1:$port" --identities 16 --concurrency 16 \
    --count "$count" --thread-length "$tl" --seed 42 --json > "$out/tl$tl.json" || true
  after=$(cpu_ticks "$pid")
  kill -INT "$pid"; wait "$pid" || true
  ok=$(grep -o '"successes":[0-9]*' "$out/tl$tl.json" | cut -d: -f2)
  python3 - "$out/tl$tl.json" "$before" "$after" "$tick" "$ok" "$tl" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
before, after, tick, ok, tl = (int(x) for x in sys.argv[2:7])
cpu_us = (after - before) / tick * 1e6 / max(ok, 1)
l = r["latency_ms"]
print(f"thread-length {tl:>2}: {r['envelopes_per_sec']:8.0f} env/s  ok {r['successes']} failed {r['failures']}  "
      f"p50 {l['p50']:.2f} ms  p99 {l['p99']:.2f} ms  node CPU {cpu_us:.0f} us/env")
PY
  rm -rf "$data"
}

for tl in 50 1; do run_one "$tl"; done | tee "$out/summary.txt"
