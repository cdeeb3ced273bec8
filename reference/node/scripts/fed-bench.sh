#!/bin/sh
# Federated delivery between two release nodes on loopback (issue 15): a.test and b.test
# with durable stores, rate limits off, each the other's --peer; loom-fedbench posts COUNT
# messages alice@a.test → bob@b.test over 16 connections to a.test and waits until bob can
# read each on b.test. Prints envelopes/s and p50/p90/p99 delivery latency.
#
#   reference/node/scripts/fed-bench.sh BIN_DIR [COUNT]
#
# BIN_DIR holds copies of target/release/loom-node and target/release/loom-fedbench.
set -eu
BIN=$1
COUNT=${2:-5000}
PA=${PA:-18787}
PB=${PB:-18788}
WORK=$(mktemp -d)
trap 'kill $A $B 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"' EXIT INT TERM
for n in a b; do
  cat > "$WORK/$n.toml" <<TOML
[rate_limits]
envelopes_per_identity = 0
auth_per_ip = 0
thread_reads_per_identity = 0
federation_per_node = 0
TOML
done
"$BIN/loom-node" --config "$WORK/a.toml" --data "$WORK/a" --domain a.test --listen 127.0.0.1:$PA \
  --peer b.test=http://127.0.0.1:$PB --allow-private-http 2>"$WORK/a.log" &
A=$!
"$BIN/loom-node" --config "$WORK/b.toml" --data "$WORK/b" --domain b.test --listen 127.0.0.1:$PB \
  --peer a.test=http://127.0.0.1:$PA --allow-private-http 2>"$WORK/b.log" &
B=$!
for i in $(seq 50); do
  grep -q listening "$WORK/a.log" && grep -q listening "$WORK/b.log" && break
  sleep 0.1
done
"$BIN/loom-fedbench" --a http://127.0.0.1:$PA --b http://127.0.0.1:$PB --count "$COUNT" --concurrency 16
