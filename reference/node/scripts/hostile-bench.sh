#!/usr/bin/env bash
# The hostile-network numbers of issue 19 for a release loom-node on loopback:
#   1. close times: 200 sockets that never send a byte (idle_timeout_ms = 5000) and 200
#      request bodies at 1 byte/s (body_grace_ms = 2000, min_body_bytes_per_sec = 1024);
#   2. RSS at 2,000 idle keep-alive connections (each answered one request first);
#   3. descriptor exhaustion: `ulimit -n 1024`, 1,100 idle sockets held 20 s (idle timeout
#      30 s, the default), the node's log lines meanwhile and whether it answers afterwards.
#
# usage: hostile-bench.sh BIN_DIR
#   BIN_DIR holds loom-node (a copy: other builds overwrite target/). Needs python3.
#   flock /work/.build.lock reference/node/scripts/hostile-bench.sh /work/bins/NAME
set -euo pipefail
bin=${1:?usage: hostile-bench.sh BIN_DIR}
work=$(mktemp -d /tmp/loom-hostile-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

# start_node NAME NOFILE EXTRA_TOML -> sets $pid and $port; log in $work/NAME.log
start_node() {
  local name=$1 nofile=$2 extra=$3
  cat > "$work/$name.toml" <<TOML
domain = "bench.test"
listen = "127.0.0.1:0"
storage = "memory"
seed = 1
[rate_limits]
envelopes_per_identity = 0
auth_per_ip = 0
thread_reads_per_identity = 0
federation_per_node = 0
[connections]
$extra
TOML
  (ulimit -n "$nofile"; exec env LOOM_LOG=info "$bin/loom-node" --config "$work/$name.toml") \
    2> "$work/$name.log" &
  pid=$!
  for _ in $(seq 100); do
    grep -q 'listen=' "$work/$name.log" 2>/dev/null && break
    sleep 0.05
  done
  port=$(grep -o 'listen=127.0.0.1:[0-9]*' "$work/$name.log" | head -1 | cut -d: -f2)
}

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }

echo "== 1. close times"
start_node close 16384 $'idle_timeout_ms = 5000\nbody_grace_ms = 2000\nmin_body_bytes_per_sec = 1024'
python3 - "$port" <<'PY'
import socket, sys, time, threading, statistics
port = int(sys.argv[1])
def silent(out):
    s = socket.create_connection(("127.0.0.1", port)); t0 = time.monotonic()
    s.settimeout(60)
    try:
        s.recv(1)
    except OSError:
        pass
    out.append(time.monotonic() - t0)
def slow_body(out):
    s = socket.create_connection(("127.0.0.1", port)); t0 = time.monotonic()
    s.sendall(b"POST /v1/auth/challenge HTTP/1.1\r\nHost: b\r\nContent-Type: application/json; "
              b"charset=utf-8\r\nContent-Length: 100\r\n\r\n")
    s.settimeout(0.05); status = b""
    for _ in range(100):
        try:
            s.sendall(b" ")
        except OSError:
            break
        try:
            chunk = s.recv(64)
            status = status or chunk[:12]
            if not chunk or status:
                break
        except socket.timeout:
            pass
        except OSError:
            break
        time.sleep(0.95)
    out.append((time.monotonic() - t0, status))
for name, fn in (("silent sockets (idle_timeout_ms = 5000)", silent),
                 ("1 byte/s bodies (grace 2000 ms, 1024 B/s)", slow_body)):
    out = []; ts = [threading.Thread(target=fn, args=(out,)) for _ in range(200)]
    [t.start() for t in ts]; [t.join() for t in ts]
    times = [o if isinstance(o, float) else o[0] for o in out]
    extra = ""
    if not isinstance(out[0], float):
        extra = "; answers: " + ", ".join(sorted({(o[1].decode(errors='replace') or 'closed') for o in out}))
    print(f"{name}: {len(times)} closed after min {min(times):.2f} s, median "
          f"{statistics.median(times):.2f} s, max {max(times):.2f} s{extra}")
PY
kill "$pid"; wait "$pid" 2>/dev/null || true

echo "== 2. RSS at 2,000 idle connections"
start_node rss 16384 'idle_timeout_ms = 600000'
python3 - "$port" "$pid" <<'PY'
import socket, sys, time
port, pid = int(sys.argv[1]), sys.argv[2]
def rss():
    for l in open(f"/proc/{pid}/status"):
        if l.startswith("VmRSS:"):
            return int(l.split()[1])
req = b"GET /.well-known/loom.json HTTP/1.1\r\nHost: b\r\n\r\n"
for _ in range(20):
    s = socket.create_connection(("127.0.0.1", port)); s.sendall(req); s.recv(65536); s.close()
before = rss(); held = []
for _ in range(2000):
    s = socket.create_connection(("127.0.0.1", port)); s.sendall(req); held.append(s)
for s in held:
    s.settimeout(10); assert s.recv(65536).startswith(b"HTTP/1.1 200")
time.sleep(1)
after = rss()
print(f"RSS {before/1024:.1f} MiB idle -> {after/1024:.1f} MiB with 2000 idle keep-alive "
      f"connections ({(after-before)/2000:.1f} KiB each)")
PY
kill "$pid"; wait "$pid" 2>/dev/null || true

echo "== 3. descriptor exhaustion (ulimit -n 1024, 1,100 idle sockets held 20 s)"
start_node emfile 1024 $'idle_timeout_ms = 30000\nmax_connections = 100000'
lines_before=$(wc -l < "$work/emfile.log")
cpu0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
python3 - "$port" <<'PY'
import socket, sys, time
port = int(sys.argv[1])
held = [socket.create_connection(("127.0.0.1", port)) for _ in range(1100)]
time.sleep(20)
for s in held: s.close()
time.sleep(1)
s = socket.create_connection(("127.0.0.1", port)); s.settimeout(5)
s.sendall(b"GET /.well-known/loom.json HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n")
print("after the flood:", s.recv(64).split(b"\r\n")[0].decode())
PY
cpu1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
lines=$(( $(wc -l < "$work/emfile.log") - lines_before ))
echo "log lines during exhaustion: $lines ($(wc -c < "$work/emfile.log") bytes of log in total);" \
     "node CPU $(( (cpu1 - cpu0) * 1000 / $(getconf CLK_TCK) )) ms over ~21 s"
grep -E 'accept failed|accepting again' "$work/emfile.log" | sed 's/^/  /' | cut -c1-200
kill "$pid"; wait "$pid" 2>/dev/null || true
