//! `agent.toml`: who the agent is, where its node is, what work it holds. Unknown keys are
//! errors naming the key; relative paths are relative to the file.

use crate::encoding::Encoding;
use crate::run::PackageSpec;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The PLSP engine.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlspConfig {
    /// `reference` (the deterministic IMF engine) or `chat` (OpenAI-compatible;
    /// `PLSP_BASE_URL`, `PLSP_API_KEY`, `PLSP_MODEL` as `loom-plsp run` reads them).
    #[serde(default = "reference")]
    pub engine: String,
}

fn reference() -> String {
    "reference".into()
}

/// The whole file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// The node's base URL.
    pub node: String,
    /// The agent's address (`loom://…`, type `agent`).
    pub identity: String,
    /// The agent's key file (32-byte seed, hex; `loom keygen`).
    pub key: PathBuf,
    /// The delegation chain file (`[link]`, written by `loom-agent enroll`).
    pub chain: PathBuf,
    /// Journal and run workspaces.
    pub data: PathBuf,
    /// How results are written (`json` or `loom-notation`).
    #[serde(default)]
    pub content_encoding: Encoding,
    /// The longest wait between reads of the event feed, in ms (the WebSocket stream wakes
    /// the agent sooner).
    #[serde(default = "poll_ms")]
    pub poll_ms: u64,
    /// A CA certificate (PEM) for an `https` node.
    #[serde(default)]
    pub ca_cert: Option<PathBuf>,
    /// The process packages the agent holds.
    #[serde(default)]
    pub packages: Vec<PackageSpec>,
    /// PLSP programs, when the agent runs them.
    #[serde(default)]
    pub plsp: Option<PlspConfig>,
}

fn poll_ms() -> u64 {
    2000
}

impl AgentConfig {
    /// Reads and checks `path`.
    pub fn load(path: &Path) -> Result<AgentConfig, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let mut c: AgentConfig =
            toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let base = path.parent().unwrap_or(Path::new("."));
        let fix = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        };
        fix(&mut c.key);
        fix(&mut c.chain);
        fix(&mut c.data);
        if let Some(ca) = &mut c.ca_cert {
            fix(ca);
        }
        for p in &mut c.packages {
            fix(&mut p.path);
        }
        loom_protocol::Address::parse(&c.identity)
            .map_err(|e| format!("{}: identity: {e}", path.display()))?;
        if let Some(p) = &c.plsp
            && p.engine != "reference"
            && p.engine != "chat"
        {
            return Err(format!(
                "{}: plsp.engine: {:?}: expected \"reference\" or \"chat\"",
                path.display(),
                p.engine
            ));
        }
        if c.poll_ms == 0 {
            return Err(format!("{}: poll_ms: must be at least 1", path.display()));
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_reads_with_paths_relative_to_it_and_bad_keys_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("agent.toml");
        std::fs::write(
            &p,
            r#"node = "http://127.0.0.1:8787"
identity = "loom://bot.alice@a.test"
key = "bot.key"
chain = "bot.chain.json"
data = "state"
content_encoding = "loom-notation"
[[packages]]
path = "pkgs/market-sizing"
model = "scripted:scripts/smoke.yaml"
[plsp]
"#,
        )
        .unwrap();
        let c = AgentConfig::load(&p).unwrap();
        assert_eq!(c.key, dir.path().join("bot.key"));
        assert_eq!(c.packages[0].path, dir.path().join("pkgs/market-sizing"));
        assert_eq!(c.content_encoding, Encoding::LoomNotation);
        assert_eq!(c.plsp.unwrap().engine, "reference");
        std::fs::write(&p, "node = \"x\"\nidentity = \"loom://b@a.test\"\nkey = \"k\"\nchain = \"c\"\ndata = \"d\"\nmodel = 1\n").unwrap();
        let e = AgentConfig::load(&p).unwrap_err();
        assert!(e.contains("model"), "{e}");
        std::fs::write(
            &p,
            "node = \"x\"\nidentity = \"bob\"\nkey = \"k\"\nchain = \"c\"\ndata = \"d\"\n",
        )
        .unwrap();
        assert!(AgentConfig::load(&p).unwrap_err().contains("identity"));
    }
}
