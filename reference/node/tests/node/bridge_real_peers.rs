//! The bridge against mail software we did not write (issue 32): Python's `smtplib` sends a
//! message that `dkimpy` signed (rsa-sha256) to the node's SMTP port, and it must arrive as
//! an envelope whose `auth_results` pass; a LOOM reply must reach an `aiosmtpd` server and
//! verify under `dkimpy` (ed25519-sha256, RFC 8463), and fail to once tampered with.
//!
//! The peers live in `reference/bridge/peers/` and are installed by its `setup.sh` into a
//! venv under the target directory on first use (pinned versions, from PyPI).

use crate::support::*;
use loom_bridge::auth::Record;
use loom_bridge::outbound::Dkim;
use loom_node::config::BridgeConfig;
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn peers_dir() -> PathBuf {
    workspace().join("reference/bridge/peers")
}

/// The venv with the peers, created by the project's own script on first use.
fn python() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target"));
    let venv = if target.is_absolute() {
        target.join("mail-peers")
    } else {
        workspace().join(target).join("mail-peers")
    };
    let out = Command::new("bash")
        .arg(peers_dir().join("setup.sh"))
        .arg(&venv)
        .output()
        .expect("run reference/bridge/peers/setup.sh");
    assert!(
        out.status.success(),
        "installing the mail peers failed (python3 with venv and PyPI are needed):\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    venv.join("bin/python")
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn rsa_key_path() -> PathBuf {
    workspace().join("reference/bridge/tests/data/dkim-rsa-test.pem")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_smtplib_and_dkimpy_in_aiosmtpd_and_dkimpy_out() {
    let py = python();
    let peer = peers_dir().join("peer.py");
    let out_dir = std::env::temp_dir().join(format!("loom-mail-sink-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out_dir);

    // The outside world's MX: aiosmtpd.
    let sink_port = free_port();
    let mut sink = Killed(
        Command::new(&py)
            .arg(&peer)
            .args(["sink", "--port", &sink_port.to_string(), "--out"])
            .arg(&out_dir)
            .stdout(Stdio::piped())
            .spawn()
            .expect("start aiosmtpd"),
    );
    let mut ready = String::new();
    BufReader::new(sink.0.stdout.as_mut().unwrap())
        .read_line(&mut ready)
        .unwrap();
    assert_eq!(ready.trim(), "ready");

    // b.test publishes the RSA key dkimpy signs with, SPF for loopback and DMARC p=reject.
    let pem = std::fs::read_to_string(rsa_key_path()).unwrap();
    let theirs = Dkim::rsa_pem("b.test", "py", &pem).unwrap();
    let node = TestNode::with(|c| {
        let mut b = BridgeConfig::new("127.0.0.1:0".parse().unwrap());
        b.smarthost = Some(format!("127.0.0.1:{sink_port}"));
        b.dns_records = [
            ("b.test", "v=spf1 ip4:127.0.0.1 -all".to_string()),
            ("py._domainkey.b.test", theirs.dns_record().to_string()),
            ("_dmarc.b.test", "v=DMARC1; p=reject".to_string()),
        ]
        .into_iter()
        .map(|(name, value)| Record {
            name: name.into(),
            kind: "TXT".into(),
            value,
        })
        .collect();
        c.bridge = Some(b);
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let smtp_port = listener.local_addr().unwrap().port();
    let n = node.node.clone();
    tokio::spawn(async move { n.serve_smtp(listener, None).await });
    let alice = node.register("alice", "human", 1).await;

    // In: smtplib delivers a dkimpy-signed message.
    let sent = tokio::task::spawn_blocking({
        let (py, peer) = (py.clone(), peer.clone());
        move || {
            Command::new(py)
                .arg(peer)
                .args([
                    "send",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    &smtp_port.to_string(),
                ])
                .args([
                    "--mail-from",
                    "carol@b.test",
                    "--to",
                    &format!("alice@{DOMAIN}"),
                ])
                .args(["--domain", "b.test", "--selector", "py", "--key"])
                .arg(rsa_key_path())
                .args([
                    "--message-id",
                    "real1@b.test",
                    "--body",
                    "Hello from smtplib.",
                ])
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    let said = String::from_utf8_lossy(&sent.stdout);
    assert!(
        sent.status.success(),
        "smtplib: {said}{}",
        String::from_utf8_lossy(&sent.stderr)
    );
    assert!(said.starts_with("250"), "{said}");
    let (thread, env_id) =
        loom_node::store::bridge::find(&node.node.service().store.read(), "real1@b.test")
            .unwrap()
            .expect("stored");
    let env = node
        .get(&format!("/v1/envelopes/{env_id}"), &alice.token)
        .await
        .expect(200)
        .body;
    let auth = &env["meta"]["bridge"]["auth_results"];
    assert_eq!(
        (
            auth["spf"].clone(),
            auth["dkim"].clone(),
            auth["dmarc"].clone()
        ),
        (json!("pass"), json!("pass"), json!("pass")),
        "{auth}"
    );
    assert_eq!(auth["dkim_signatures"][0]["algorithm"], "rsa-sha256");
    assert_eq!(env["content"]["human"]["text"], "Hello from smtplib.");

    // Out: a LOOM reply reaches aiosmtpd, DKIM-signed ed25519-sha256 for a.test.
    let reply = crate::bridge::to_bridge(
        &node,
        &alice,
        thread.as_str(),
        Some(env_id.as_str()),
        "carol@b.test",
        "Hello back from LOOM.",
    );
    alice.send(&node, reply).await.expect(201);
    let report = node.node.service().bridge_tick().await.unwrap();
    assert_eq!(report.delivered, 1, "{report:?}");
    let eml = out_dir.join("1.eml");
    for _ in 0..100 {
        if eml.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let b = node.node.service().bridge().unwrap();
    let record = format!("{}={}", b.dkim.dns_name(), b.dkim.dns_record());
    let verify = |file: &Path| {
        Command::new(&py)
            .arg(&peer)
            .args(["verify", "--file"])
            .arg(file)
            .args(["--record", &record])
            .output()
            .unwrap()
    };
    let ok = verify(&eml);
    assert!(
        ok.status.success(),
        "dkimpy rejects the bridge's signature: {}{}",
        String::from_utf8_lossy(&ok.stdout),
        String::from_utf8_lossy(&ok.stderr)
    );
    // The control: the same verifier refuses the message once its body changed.
    let tampered = out_dir.join("tampered.eml");
    let text = std::fs::read_to_string(&eml).unwrap();
    assert!(text.contains("Hello back from LOOM."));
    std::fs::write(&tampered, text.replace("Hello back", "Goodbye")).unwrap();
    assert!(
        !verify(&tampered).status.success(),
        "dkimpy must refuse a tampered body"
    );
    drop(sink);
    let _ = std::fs::remove_dir_all(&out_dir);
}
