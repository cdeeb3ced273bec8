//! TOON through the bridge process in `benches/toon-bridge`.
//!
//! The toon-format crate turns on serde_json's `preserve_order` (and `float_roundtrip`);
//! Cargo unifies features across a workspace, so linking it here would switch every crate's
//! `serde_json::Map` to insertion order (DESIGN.md §3). The bridge is therefore its own crate,
//! excluded from the workspace with its own Cargo.lock. On first use `loom-tokens` builds it
//! with the Cargo that is running (a no-op when it is up to date, so it is never stale; the
//! first build downloads its 18 locked crates), which is how `cargo test --workspace` on a
//! clean clone gets it with no set-up step; `benches/toon-bridge/build.sh` does the same by
//! hand. `loom-tokens` starts it once and speaks JSON lines to it:
//! one request, one response, in order (protocol in `benches/toon-bridge/src/main.rs`).
//!
//! Values go to the bridge as JSON text with keys in this workspace's (sorted) order; the
//! bridge keeps that order, so TOON text lists keys in the same order as every other format.
//! Decoded values come back as JSON text and are compared here, by the same gate as the
//! other formats (with [`super::format::NumberPolicy::CanonicalForm`]).
//!
//! Fidelity check (issue 20, by hand, not in CI): toon-format 0.7.0's text was byte-identical
//! to the TypeScript reference `@toon-format/toon` 4.4.0 (run with Node on the same values) on
//! 434 of the 450 TOON texts of the built-in run; the 16 others differ only where JavaScript
//! numbers cannot hold the value exactly (18446744073709551615, -9223372036854775808) or are
//! printed with an exponent (`1e+21`, where toon-format writes `1000000000000000000000`).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Mutex, OnceLock};

use serde_json::{Value, json};

use super::format::EncodeFailure;

/// The toon-format release the bridge must be built from (pinned in its Cargo.toml).
pub const TOON_FORMAT_VERSION: &str = "0.7.0";

/// The TOON specification version that toon-format release implements.
pub const TOON_SPEC_VERSION: &str = "4.4";

/// Environment variable that names another bridge executable.
pub const BRIDGE_ENV: &str = "LOOM_TOON_BRIDGE";

/// The bridge executable as `build.sh` leaves it, relative to the repository root.
pub const BRIDGE_RELATIVE_PATH: &str = "benches/toon-bridge/target/release/loom-toon-bridge";

/// How to get a bridge, for error messages.
pub const BUILD_HINT: &str = "build it with `benches/toon-bridge/build.sh` (loom-tokens tries this itself on first use), or set LOOM_TOON_BRIDGE to its path";

/// A TOON array delimiter (TOON spec §11).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Delimiter {
    /// `,`, the default.
    #[default]
    Comma,
    /// `\t`, declared in each array header.
    Tab,
}

impl Delimiter {
    fn as_str(self) -> &'static str {
        match self {
            Delimiter::Comma => "comma",
            Delimiter::Tab => "tab",
        }
    }
}

/// The bridge crate's directory in this checkout.
fn bridge_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("toon-bridge")
}

/// Where the bridge is: `$LOOM_TOON_BRIDGE`, else [`BRIDGE_RELATIVE_PATH`] in this checkout.
pub fn default_path() -> PathBuf {
    match std::env::var_os(BRIDGE_ENV) {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => bridge_dir()
            .join("target/release")
            .join(format!("loom-toon-bridge{}", std::env::consts::EXE_SUFFIX)),
    }
}

/// Builds the in-checkout bridge with Cargo (`$CARGO`, else `cargo` on the PATH) into its own
/// target directory, exactly as `build.sh` does. Cargo's lock on that directory serializes
/// concurrent callers (parallel test binaries). When no Cargo can run, an existing build is
/// used as it is; the version handshake still refuses a stale one.
pub fn build_in_checkout() -> Result<(), String> {
    let dir = bridge_dir();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let status = Command::new(&cargo)
        .args([
            "build",
            "--release",
            "--locked",
            "--quiet",
            "--manifest-path",
        ])
        .arg(dir.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(dir.join("target"))
        .stdout(Stdio::null())
        .status();
    match status {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!(
            "`{cargo} build --manifest-path {}` failed ({s})",
            dir.join("Cargo.toml").display()
        )),
        Err(e) => Err(format!(
            "cannot run `{cargo}` to build the TOON bridge: {e}"
        )),
    }
}

/// The process-wide bridge at [`default_path`], built (when it is the in-checkout one) and
/// started on first use.
pub fn shared() -> &'static Bridge {
    static SHARED: OnceLock<Bridge> = OnceLock::new();
    SHARED.get_or_init(|| {
        let path = default_path();
        let overridden = std::env::var_os(BRIDGE_ENV).is_some_and(|p| !p.is_empty());
        if !overridden && let Err(why) = build_in_checkout() {
            eprintln!("loom-tokens: {why}; TOON will be measured only if a built bridge exists");
        }
        Bridge::at(path)
    })
}

struct Process {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Drop for Process {
    fn drop(&mut self) {
        // Closing stdin ends the bridge's read loop; kill in case it is stuck.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

enum State {
    NotStarted,
    Running(Process),
    Unavailable(String),
}

/// A connection to one bridge executable; requests are serialized by a mutex.
pub struct Bridge {
    path: PathBuf,
    state: Mutex<State>,
}

impl std::fmt::Debug for Bridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bridge").field("path", &self.path).finish()
    }
}

/// Why a request got no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BridgeError {
    /// No usable bridge (missing, wrong version, not speaking the protocol, or stopped).
    Unavailable(String),
    /// The bridge answered this request with an error.
    Refused(String),
}

impl Bridge {
    /// A bridge at `path`, not started yet.
    pub fn at(path: impl Into<PathBuf>) -> Bridge {
        Bridge {
            path: path.into(),
            state: Mutex::new(State::NotStarted),
        }
    }

    fn start(&self) -> Result<Process, String> {
        if !self.path.is_file() {
            return Err(format!(
                "not available: no TOON bridge at {}; {BUILD_HINT}",
                self.path.display()
            ));
        }
        let mut child = Command::new(&self.path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| {
                format!(
                    "not available: cannot start the TOON bridge {}: {e}",
                    self.path.display()
                )
            })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            return Err("not available: the TOON bridge has no pipes".to_string());
        };
        let mut p = Process {
            child,
            stdin,
            stdout: BufReader::new(stdout),
        };
        let not_a_bridge = |why: String| {
            format!(
                "not available: {} is not a working TOON bridge ({why}); {BUILD_HINT}",
                self.path.display()
            )
        };
        let version = exchange(&mut p, &json!({"op": "version"})).map_err(not_a_bridge)?;
        let found = version
            .get("ok")
            .and_then(|v| v.get("toon_format"))
            .and_then(Value::as_str)
            .ok_or_else(|| not_a_bridge(format!("version request answered with {version}")))?;
        if found != TOON_FORMAT_VERSION {
            return Err(format!(
                "not available: the TOON bridge {} uses toon-format {found}, expected {TOON_FORMAT_VERSION}; rebuild it with `benches/toon-bridge/build.sh`",
                self.path.display()
            ));
        }
        Ok(p)
    }

    /// Sends one request and returns the `ok` member of the answer.
    pub fn call(&self, request: &Value) -> Result<Value, BridgeError> {
        let mut state = self
            .state
            .lock()
            .map_err(|_| BridgeError::Unavailable("TOON bridge lock poisoned".to_string()))?;
        if matches!(*state, State::NotStarted) {
            *state = match self.start() {
                Ok(p) => State::Running(p),
                Err(why) => State::Unavailable(why),
            };
        }
        let p = match &mut *state {
            State::Running(p) => p,
            State::Unavailable(why) => return Err(BridgeError::Unavailable(why.clone())),
            State::NotStarted => {
                return Err(BridgeError::Unavailable(
                    "not available: the TOON bridge was not started".to_string(),
                ));
            }
        };
        let mut answer = match exchange(p, request) {
            Ok(a) => a,
            Err(why) => {
                // The stream may be out of step now: stop using this bridge.
                let why = format!("not available: the TOON bridge stopped working: {why}");
                *state = State::Unavailable(why.clone());
                return Err(BridgeError::Unavailable(why));
            }
        };
        if let Some(ok) = answer.get_mut("ok") {
            return Ok(ok.take());
        }
        match answer.get("error").and_then(Value::as_str) {
            Some(e) => Err(BridgeError::Refused(e.to_string())),
            None => {
                let why = format!("not available: the TOON bridge answered {answer}");
                *state = State::Unavailable(why.clone());
                Err(BridgeError::Unavailable(why))
            }
        }
    }

    /// TOON text for `value`.
    pub fn encode(&self, value: &Value, delimiter: Delimiter) -> Result<String, EncodeFailure> {
        let request = json!({"op": "encode", "delimiter": delimiter.as_str(), "value": value});
        match self.call(&request) {
            Ok(Value::String(text)) => Ok(text),
            Ok(other) => Err(EncodeFailure::Failed(format!(
                "the TOON bridge returned {other} instead of text"
            ))),
            Err(BridgeError::Unavailable(why)) => Err(EncodeFailure::Unavailable(why)),
            Err(BridgeError::Refused(e)) => Err(EncodeFailure::Failed(e)),
        }
    }

    /// The value TOON `text` stands for (strict decoding).
    pub fn decode(&self, text: &str) -> Result<Value, String> {
        self.call(&json!({"op": "decode", "text": text}))
            .map_err(|e| match e {
                BridgeError::Unavailable(why) | BridgeError::Refused(why) => why,
            })
    }
}

/// Writes one request line and reads one response line.
fn exchange(p: &mut Process, request: &Value) -> Result<Value, String> {
    let mut line = serde_json::to_string(request).map_err(|e| e.to_string())?;
    line.push('\n');
    p.stdin
        .write_all(line.as_bytes())
        .and_then(|()| p.stdin.flush())
        .map_err(|e| format!("cannot write to it: {e}"))?;
    let mut answer = String::new();
    let n = p
        .stdout
        .read_line(&mut answer)
        .map_err(|e| format!("cannot read from it: {e}"))?;
    if n == 0 {
        return Err("it closed its output".to_string());
    }
    serde_json::from_str(&answer).map_err(|e| format!("its answer is not JSON ({e})"))
}
