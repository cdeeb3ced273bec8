#!/usr/bin/env bash
# Flat as data grows (issue 14 "Done when"): a release loom-node with a durable store is
# filled to COUNT envelopes in COUNT threads (thread length 1) by loom-load's growth mode,
# in slices of SLICE envelopes; after each slice loom-load times a page of threads, a page
# of events and a search (median of READS rounds after a 1 s pause and 3 untimed rounds;
# default 101).
# Rate limits off, 16 identities, 16 connections, load tool on the same machine. Prints
# loom-load's table, the node's CPU per accepted envelope and the store size.
#
# usage: growth-bench.sh BIN_DIR [COUNT] [SLICE] [READS] [OUT_DIR]
#   BIN_DIR holds loom-node and loom-load (copies: other builds overwrite target/).
# Run it under the shared build lock so compiles do not skew it:
#   flock /work/.build.lock reference/node/scripts/growth-bench.sh /work/bins/NAME
set -euo pipefail
bin=${1:?usage: growth-bench.sh BIN_DIR [COUNT] [SLICE] [READS] [OUT_DIR]}
count=${2:-200000}
slice=${3:-20000}
reads=${4:-101}
out=${5:-$bin/results}
mkdir -p "$out"
tick=$(getconf CLK_TCK)
data=$(mktemp -d /tmp/loom-growth-XXXXXX)
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
LOOM_LOG=warn,loom_node=info "$bin/loom-node" --config "$data/node.toml" 2> "$data/node.log" > /dev/null &
pid=$!
for _ in $(seq 100); do
  grep -q 'listen=' "$data/node.log" 2>/dev/null && break
  sleep 0.05
done
port=$(grep -o 'listen=127.0.0.1:[0-9]*' "$data/node.log" | head -1 | cut -d: -f2)
before=$(awk '{print $14 + $15}' "/proc/$pid/stat")
"$bin/loom-load" --target "http://127.0.0.1:$port" --identities 16 --concurrency 16 \
  --count "$count" --thread-length 1 --slice "$slice" --reads "$reads" --seed 42 \
  | tee "$out/growth.txt" || true
after=$(awk '{print $14 + $15}' "/proc/$pid/stat")
kill -INT "$pid"; wait "$pid" || true
python3 -c "print(f'node CPU {($after - $before) / $tick * 1e6 / $count:.0f} us/env over the whole run (reads included)')" | tee -a "$out/growth.txt"
du -sh "$data/store" | tee -a "$out/growth.txt"
rm -rf "$data"
