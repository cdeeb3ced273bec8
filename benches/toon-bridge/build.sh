#!/usr/bin/env bash
# Builds the TOON bridge where `loom-tokens` looks for it:
# benches/toon-bridge/target/release/loom-toon-bridge (whatever CARGO_TARGET_DIR says).
# Needs the crates in Cargo.lock (registry access once, or a warm cargo cache).
set -euo pipefail
cd "$(dirname "$0")"
cargo build --release --locked --target-dir target "$@"
