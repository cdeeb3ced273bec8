//! The `loom` and `loom-load` binaries end to end against a real node on 127.0.0.1:0.

mod support;

use serde_json::Value;
use sha2::Digest as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn loom(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_loom"))
        .args(args)
        .output()
        .unwrap()
}

fn ok(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {stdout}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn tempdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("loom-client-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn loom_walkthrough() {
    let node = support::start(false);
    let url = node.url.as_str();
    let dir = tempdir("cli");
    let (ak, bk) = (dir.join("alice.key"), dir.join("bob.key"));
    let (asess, bsess) = (dir.join("alice.session"), dir.join("bob.session"));

    ok(&loom(&["keygen", "--out", s(&ak)]));
    ok(&loom(&["keygen", "--out", s(&bk)]));
    assert_eq!(std::fs::read_to_string(&ak).unwrap().trim().len(), 64);
    // keygen does not overwrite by accident.
    let again = loom(&["keygen", "--out", s(&ak)]);
    assert_eq!(again.status.code(), Some(2));

    let doc = ok(&loom(&["discover", "--node", url]));
    assert!(doc.contains("\"domain\": \"node.test\""), "{doc}");

    let out = ok(&loom(&[
        "register",
        "--node",
        url,
        "--identity",
        "loom://alice@node.test",
        "--key",
        s(&ak),
    ]));
    assert!(out.contains("registered loom://alice@node.test"), "{out}");
    ok(&loom(&[
        "register",
        "--node",
        url,
        "--identity",
        "loom://bob@node.test",
        "--key",
        s(&bk),
        "--type",
        "human",
    ]));

    // An agent needs its delegator's signed delegation (v1.1 §6.4); a service its operator.
    let ck = dir.join("bot.key");
    ok(&loom(&["keygen", "--out", s(&ck)]));
    let missing = loom(&[
        "register",
        "--node",
        url,
        "--identity",
        "loom://bot.alice@node.test",
        "--key",
        s(&ck),
        "--type",
        "agent",
    ]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("delegator"));
    ok(&loom(&[
        "register",
        "--node",
        url,
        "--identity",
        "loom://bot.alice@node.test",
        "--key",
        s(&ck),
        "--type",
        "agent",
        "--delegator",
        "loom://alice@node.test",
        "--delegator-key",
        s(&ak),
        "--scope",
        "read.*",
        "--scope",
        "reply.routine",
    ]));
    ok(&loom(&[
        "register",
        "--node",
        url,
        "--identity",
        "loom://cron@node.test",
        "--key",
        s(&ck),
        "--type",
        "service",
        "--members",
        r#"{"operator": "Acme Ltd"}"#,
    ]));

    // A second registration fails with the node's §24.1 error printed field by field.
    let dup = loom(&[
        "register",
        "--node",
        url,
        "--identity",
        "loom://alice@node.test",
        "--key",
        s(&ak),
    ]);
    assert_eq!(dup.status.code(), Some(1));
    let err = String::from_utf8_lossy(&dup.stderr);
    assert!(
        err.contains("HTTP 409") && err.contains("code") && err.contains("request"),
        "{err}"
    );

    // login without --session prints the tokens.
    let tokens: Value = serde_json::from_str(&ok(&loom(&[
        "login",
        "--node",
        url,
        "--identity",
        "loom://alice@node.test",
        "--key",
        s(&ak),
    ])))
    .unwrap();
    assert!(tokens["access_token"].as_str().unwrap().starts_with("at_"));
    ok(&loom(&[
        "login",
        "--node",
        url,
        "--identity",
        "loom://alice@node.test",
        "--key",
        s(&ak),
        "--session",
        s(&asess),
    ]));
    ok(&loom(&[
        "login",
        "--node",
        url,
        "--identity",
        "loom://bob@node.test",
        "--key",
        s(&bk),
        "--type",
        "human",
        "--session",
        s(&bsess),
    ]));

    // send (the node comes from the session file), then reply in the thread.
    let sent = ok(&loom(&[
        "send",
        "--session",
        s(&asess),
        "--to",
        "loom://bob@node.test",
        "--text",
        "hi bob",
    ]));
    assert!(
        sent.starts_with("sent env_") && sent.contains("(event_seq 1)"),
        "{sent}"
    );
    let words: Vec<&str> = sent.split_whitespace().collect();
    let (env, thread) = (words[1], words[4]);
    assert!(thread.starts_with("thr_"), "{sent}");
    let reply = ok(&loom(&[
        "send",
        "--node",
        url,
        "--session",
        s(&bsess),
        "--to",
        "loom://alice@node.test",
        "--text",
        "hi alice",
        "--thread",
        thread,
        "--parent",
        env,
    ]));
    assert!(reply.contains("(event_seq 2)"), "{reply}");

    let threads = ok(&loom(&["threads", "--node", url, "--session", s(&asess)]));
    assert!(
        threads.contains(thread) && threads.contains("   2 env  "),
        "{threads}"
    );
    // Two lines a thread, each within 80 columns (issue 18).
    assert!(
        threads.lines().all(|l| l.chars().count() <= 80),
        "{threads}"
    );
    assert!(
        threads.contains("    loom://alice@node.test, loom://bob@node.test"),
        "{threads}"
    );
    let got: Value =
        serde_json::from_str(&ok(&loom(&["get", "--session", s(&asess), env]))).unwrap();
    assert_eq!(got["content"]["human"]["text"], "hi bob");
    let whole: Value =
        serde_json::from_str(&ok(&loom(&["get", "--session", s(&asess), thread]))).unwrap();
    assert_eq!(whole["thread"]["envelope_count"], 2, "{whole}");
    // The envelopes are the list itself, not the list route's `{envelopes: [...]}` wrapper.
    assert_eq!(
        whole["envelopes"].as_array().map(Vec::len),
        Some(2),
        "{whole}"
    );

    // A malformed thread id is refused by the node with a clear error.
    let bad = loom(&[
        "send",
        "--session",
        s(&asess),
        "--to",
        "loom://bob@node.test",
        "--text",
        "x",
        "--thread",
        "thr_not-a-ulid",
        "--parent",
        "env_01JMKB7X9Q2RVHF3KN4TYZPG00",
    ]);
    assert_eq!(bad.status.code(), Some(1));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("the node refused POST /v1/envelopes"), "{err}");

    // An unreachable node is exit 3; a missing key file is exit 2.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let down = loom(&["discover", "--node", &format!("http://127.0.0.1:{port}")]);
    assert_eq!(
        down.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&down.stderr)
    );
    let nokey = loom(&[
        "register",
        "--node",
        url,
        "--identity",
        "loom://c@node.test",
        "--key",
        "/nonexistent.key",
    ]);
    assert_eq!(nokey.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&nokey.stderr).contains("/nonexistent.key"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn loom_load_small_run_reports_every_success() {
    let node = support::start(false);
    let out = Command::new(env!("CARGO_BIN_EXE_loom-load"))
        .args([
            "--target",
            &node.url,
            "--identities",
            "3",
            "--concurrency",
            "2",
            "--count",
            "50",
            "--thread-length",
            "7",
            "--seed",
            "1",
            "--json",
        ])
        .output()
        .unwrap();
    let report: Value = serde_json::from_str(&ok(&out)).unwrap();
    assert_eq!(report["successes"], 50, "{report}");
    assert_eq!(report["failures"], 0, "{report}");
    assert_eq!(report["errors"].as_array().unwrap().len(), 0, "{report}");
    // 17/17/16 envelopes per identity in threads of ≤ 7: 3+3+3 threads.
    assert_eq!(report["threads"], 9, "{report}");
    assert!(report["envelopes_per_sec"].as_f64().unwrap() > 0.0);
    let l = &report["latency_ms"];
    assert!(l["p50"].as_f64().unwrap() <= l["p99"].as_f64().unwrap());
    assert!(l["p99"].as_f64().unwrap() <= l["max"].as_f64().unwrap());

    // The same seed again: the identities exist (409) with the same keys, so setup just
    // logs them in; new envelope ids (the wall clock moved) are accepted.
    let out = Command::new(env!("CARGO_BIN_EXE_loom-load"))
        .args([
            "--target",
            &node.url,
            "--identities",
            "3",
            "--concurrency",
            "2",
            "--count",
            "10",
            "--seed",
            "1",
        ])
        .output()
        .unwrap();
    let text = ok(&out);
    assert!(text.contains("(10 ok, 0 failed)"), "{text}");
}

#[test]
fn loom_load_growth_mode_times_reads_after_every_slice() {
    let node = support::start(false);
    let out = Command::new(env!("CARGO_BIN_EXE_loom-load"))
        .args([
            "--target",
            &node.url,
            "--identities",
            "2",
            "--concurrency",
            "2",
            "--count",
            "80",
            "--thread-length",
            "1",
            "--slice",
            "40",
            "--reads",
            "3",
            "--seed",
            "3",
            "--json",
        ])
        .output()
        .unwrap();
    let report: Value = serde_json::from_str(&ok(&out)).unwrap();
    let slices = report["slices"].as_array().unwrap();
    assert_eq!(slices.len(), 2, "{report}");
    assert_eq!(slices[0]["stored"], 40, "{report}");
    assert_eq!(slices[1]["stored"], 80, "{report}");
    for s in slices {
        assert_eq!(s["failures"], 0, "{report}");
        assert!(s["envelopes_per_sec"].as_f64().unwrap() > 0.0);
        for read in [
            "threads_page_ms",
            "events_page_ms",
            "search_ms",
            "control_ms",
        ] {
            assert!(s[read].as_f64().unwrap() > 0.0, "{read}: {report}");
        }
        // Two timing passes at least; more only while the control is slow (at most six).
        let passes = s["passes"].as_u64().unwrap();
        assert!((2..=6).contains(&passes), "{report}");
        // The search finds exactly the envelopes that carry the searched word (all in the
        // first slice: 20 per identity per slice).
        assert_eq!(s["read_items"][2], 20, "{report}");
    }
    // The first identity is in its own threads and in those written to it.
    assert_eq!(slices[0]["read_items"][0], 40, "{report}");
    assert_eq!(slices[1]["read_items"][0], 50, "{report}");
    assert!(report["flat"].is_boolean());
    assert!(
        report["baseline_control_ms"].as_f64().unwrap() > 0.0,
        "{report}"
    );
    assert!(report["slow_machine_slices"].is_u64(), "{report}");
}

#[test]
fn loom_load_reports_rate_limits() {
    // A node with the §14.3 default envelope limit (100/min per identity) but no auth limit.
    let mut config = loom_node::NodeConfig {
        domain: support::DOMAIN.into(),
        ..loom_node::NodeConfig::default()
    };
    config.rate_limits = loom_node::config::RateLimits::unlimited();
    config.rate_limits.envelopes_per_identity = 100;
    let node = support::start_with(config);
    let acked = tempdir("load-acked").join("acked.txt");
    let out = Command::new(env!("CARGO_BIN_EXE_loom-load"))
        .args([
            "--target",
            &node.url,
            "--identities",
            "1",
            "--concurrency",
            "2",
            "--count",
            "120",
            "--seed",
            "2",
            "--acked",
            s(&acked),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("100 ok, 20 failed"), "{text}");
    // --acked lists exactly the 100 envelopes answered 201, sorted, each one stored.
    let ids: Vec<String> = std::fs::read_to_string(&acked)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(ids.len(), 100, "{ids:?}");
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "sorted and distinct");
    let store = node.node.service().store.read();
    for id in &ids {
        let id = loom_protocol::id::EnvelopeId::parse(id).expect("an envelope id");
        assert!(
            loom_node::store::envelopes::read(&store, &id)
                .unwrap()
                .is_some(),
            "{id} was acknowledged, so it is stored"
        );
    }
    assert!(
        text.contains("429") && text.contains("RATE_LIMIT_EXCEEDED") && text.contains("note:"),
        "{text}"
    );
}

/// `loom <args…>` that must succeed, with `--session FILE` for `who`.
fn as_user(session: &Path, args: &[&str]) -> String {
    let mut all = args.to_vec();
    all.extend(["--session", s(session)]);
    ok(&loom(&all))
}

/// The E2EE walkthrough of the node README: two users exchange an encrypted message, a third
/// added later reads what is sealed after it joined and nothing from before (v1.1 §7.4,
/// §10.6); the node refuses cleartext in the E2EE thread and never sees the plaintext.
#[test]
fn e2ee_walkthrough() {
    let node = support::start(false);
    let url = node.url.as_str();
    let dir = tempdir("e2ee");
    let mut sessions = Vec::new();
    for who in ["alice", "bob", "carol"] {
        let (key, session) = (
            dir.join(format!("{who}.key")),
            dir.join(format!("{who}.session")),
        );
        let id = format!("loom://{who}@node.test");
        ok(&loom(&["keygen", "--out", s(&key)]));
        ok(&loom(&[
            "register",
            "--node",
            url,
            "--identity",
            &id,
            "--key",
            s(&key),
            "--e2ee",
        ]));
        ok(&loom(&[
            "login",
            "--node",
            url,
            "--identity",
            &id,
            "--key",
            s(&key),
            "--session",
            s(&session),
        ]));
        sessions.push(session);
    }
    let (alice, bob, carol) = (&sessions[0], &sessions[1], &sessions[2]);
    let sent = as_user(
        alice,
        &["send", "--to", "loom://bob@node.test", "--text", "hello"],
    );
    let thread = sent.split_whitespace().nth(4).unwrap().to_owned();

    // A thread is not E2EE until its owner says so; encrypting into it is refused clearly.
    let early = loom(&[
        "send",
        "--session",
        s(alice),
        "--to",
        "loom://bob@node.test",
        "--text",
        "x",
        "--thread",
        &thread,
        "--encrypt",
    ]);
    assert_eq!(early.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&early.stderr).contains("loom e2ee enable"));

    let enabled = as_user(alice, &["e2ee", "enable", "--thread", &thread]);
    assert!(
        enabled.contains("epoch 0") && enabled.contains("loom://bob@node.test"),
        "{enabled}"
    );
    let secret = "the launch moves to Thursday";
    let first = as_user(
        alice,
        &[
            "send",
            "--to",
            "loom://bob@node.test",
            "--text",
            secret,
            "--thread",
            &thread,
            "--encrypt",
        ],
    );
    let first_id = first.split_whitespace().nth(1).unwrap().to_owned();
    let plain = loom(&[
        "send",
        "--session",
        s(alice),
        "--to",
        "loom://bob@node.test",
        "--text",
        "in clear",
        "--thread",
        &thread,
    ]);
    assert_eq!(plain.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&plain.stderr).contains("ENCRYPTION_REQUIRED"));

    // Bob reads it; the node stored only ciphertext.
    let got: Value = serde_json::from_str(&as_user(bob, &["get", &first_id])).unwrap();
    assert_eq!(got["decrypted"]["human"]["text"], secret, "{got}");
    assert!(!got["content"].to_string().contains("Thursday"));
    assert_eq!(got["content"]["epoch"], 0);

    // An attachment is sealed too: the node holds a blob of ciphertext; Bob saves the file.
    let report = dir.join("report.txt");
    std::fs::write(&report, "revenue up 12%").unwrap();
    let with_file = as_user(
        alice,
        &[
            "send",
            "--to",
            "loom://bob@node.test",
            "--text",
            "numbers attached",
            "--thread",
            &thread,
            "--encrypt",
            "--attach",
            s(&report),
        ],
    );
    let file_id = with_file.split_whitespace().nth(1).unwrap().to_owned();
    let saved = dir.join("bob-files");
    let got: Value = serde_json::from_str(&as_user(
        bob,
        &["get", &file_id, "--save-attachments", s(&saved)],
    ))
    .unwrap();
    let att = &got["attachments"][0];
    assert_eq!(att["encryption"]["encrypted"], true, "{got}");
    assert_eq!(
        std::fs::read_to_string(saved.join("report.txt")).unwrap(),
        "revenue up 12%"
    );
    let plain_hash = format!(
        "sha256:{}",
        hex::encode(sha2::Sha256::digest(b"revenue up 12%"))
    );
    assert_ne!(
        att["hash"].as_str(),
        Some(plain_hash.as_str()),
        "the blob is not the plaintext"
    );

    // Carol joins: the epoch moves to 1; what Alice seals now is for all three.
    as_user(
        alice,
        &[
            "add-participant",
            "--thread",
            &thread,
            "loom://carol@node.test",
        ],
    );
    let later = "carol, welcome";
    let second = as_user(
        alice,
        &[
            "send",
            "--to",
            "loom://bob@node.test",
            "--text",
            later,
            "--thread",
            &thread,
            "--encrypt",
        ],
    );
    let second_id = second.split_whitespace().nth(1).unwrap().to_owned();
    let got: Value = serde_json::from_str(&as_user(carol, &["get", &second_id])).unwrap();
    assert_eq!(got["decrypted"]["human"]["text"], later, "{got}");
    assert_eq!(got["content"]["epoch"], 1);
    // Carol cannot read the earlier epoch: the node does not show her the envelope, and its
    // ciphertext (as Bob sees it) holds no key for her.
    let whole: Value = serde_json::from_str(&as_user(carol, &["get", &thread])).unwrap();
    for env in whole["envelopes"].as_array().unwrap() {
        if env["id"] == first_id.as_str() {
            assert!(env["decrypted"]["error"].is_string(), "{env}");
        }
    }
    let for_bob: Value = serde_json::from_str(&as_user(bob, &["get", &first_id])).unwrap();
    let carol_ident = loom_client::Identity::from_seed(
        "loom://carol@node.test",
        &loom_client::identity::parse_key_file(
            &std::fs::read_to_string(dir.join("carol.key")).unwrap(),
        )
        .unwrap(),
    )
    .unwrap();
    let why = loom_client::e2ee::open_envelope(&for_bob, &carol_ident).unwrap_err();
    assert!(why.contains("not a recipient"), "{why}");

    // Rotation moves every member to epoch 2.
    let rotated = as_user(alice, &["e2ee", "rotate", "--thread", &thread]);
    assert!(
        rotated.contains("epoch 2") && rotated.contains("loom://carol@node.test"),
        "{rotated}"
    );
    let third = as_user(
        bob,
        &[
            "send",
            "--to",
            "loom://alice@node.test",
            "--text",
            "ok",
            "--thread",
            &thread,
            "--encrypt",
        ],
    );
    let third_id = third.split_whitespace().nth(1).unwrap().to_owned();
    let got: Value = serde_json::from_str(&as_user(carol, &["get", &third_id])).unwrap();
    assert_eq!(
        (
            got["content"]["epoch"].as_u64(),
            got["decrypted"]["human"]["text"].as_str()
        ),
        (Some(2), Some("ok"))
    );
}
