//! 10,000 generated hostile messages through the bridge's receive path (issue 32, item 5):
//! none panics the node, and none that fails the authentication policy (DMARC `p=reject`
//! with neither SPF nor DKIM passing) becomes an envelope. Messages are built from a seed:
//! valid mail and mail from the policy-failing domain, each put through one of a dozen
//! hostile shapes (header injection, smuggling sequences, deep or broken MIME, bad
//! encodings, giant headers, random bytes, forged threading, NUL and control bytes).

use crate::support::*;
use loom_bridge::auth::Record;
use loom_bridge::outbound::Dkim;
use loom_bridge::smtp::session::Transaction;
use loom_node::config::BridgeConfig;
use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};
use std::net::SocketAddr;

const MESSAGES: usize = 10_000;

fn txt(name: &str, value: &str) -> Record {
    Record {
        name: name.into(),
        kind: "TXT".into(),
        value: value.into(),
    }
}

fn pick<'a>(rng: &mut ChaCha20Rng, items: &[&'a str]) -> &'a str {
    items[(rng.next_u32() as usize) % items.len()]
}

/// One hostile message from `from`; true when its `From` names `from` (one shape puts
/// another author there, with `from` only as the SMTP reverse path).
fn hostile(rng: &mut ChaCha20Rng, from: &str, n: usize) -> (Vec<u8>, bool) {
    let to = format!("alice@{DOMAIN}");
    let head =
        format!("From: <{from}>\r\nTo: {to}\r\nSubject: m{n}\r\nMessage-ID: <h{n}@x.test>\r\n");
    let shape = rng.next_u32() % 12;
    let authored = shape != 11;
    let mut m = match shape {
        0 => format!("{head}\r\nplain body {n}\r\n").into_bytes(),
        1 => format!("{head}Subject: second subject\r\nFrom: <ceo@{DOMAIN}>\r\n\r\nheader injection\r\n").into_bytes(),
        2 => format!("{head}\r\nfirst\r\n.\r\nMAIL FROM:<evil@x.test>\r\n").into_bytes(),
        3 => {
            let mut s = format!("{head}MIME-Version: 1.0\r\n");
            for d in 0..60 {
                s.push_str(&format!("Content-Type: multipart/mixed; boundary=\"b{d}\"\r\n\r\n--b{d}\r\n"));
            }
            s.push_str("\r\ndeep\r\n");
            s.into_bytes()
        }
        4 => format!("{head}Content-Type: multipart/mixed; boundary=\"x\"\r\n\r\n--x\r\nContent-Transfer-Encoding: base64\r\nContent-Disposition: attachment; filename=\"a\\0b/../../x\"\r\n\r\n!!!not base64!!!\r\n").into_bytes(),
        5 => {
            let mut s = head.clone();
            s.push_str("X-Long: ");
            s.push_str(&"a".repeat(20_000));
            s.push_str("\r\n\r\nlong header\r\n");
            s.into_bytes()
        }
        6 => {
            let mut b = head.into_bytes();
            b.extend_from_slice(b"\r\n");
            for _ in 0..(rng.next_u32() % 512) {
                b.push((rng.next_u32() & 0xff) as u8);
            }
            b
        }
        7 => format!("{head}In-Reply-To: <{}>\r\nReferences: {}\r\n\r\nforged threading\r\n", pick(rng, &["env_01JMKB7X9Q2RVHF3KN4TYZPG00@a.test", "", "<>", "<<<"]), "<x@y> ".repeat(200)).into_bytes(),
        8 => format!("{head}Content-Type: text/html\r\n\r\n<script>alert(1)</script><p>{}</p>\r\n", "<b>".repeat(500)).into_bytes(),
        9 => format!("{head}Content-Type: text/plain; charset=\"x-unknown\"\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n=ZZ=\r\n=C3=28\r\n").into_bytes(),
        10 => format!("{head}X-Priority: {}\r\nImportance: {}\r\n\r\n\u{0}\u{1}\u{7f} control\r\n", pick(rng, &["1", "9999999999999", "-1", ""]), pick(rng, &["high", "HIGH", "\u{202e}"])).into_bytes(),
        _ => format!("From: {}\r\nTo: {to}\r\n\r\nodd from\r\n", pick(rng, &["", "<>", "\"a\" <@>", "x@", "a@b@c", "=?utf-8?b?//4=?= <a@b.test>"])).into_bytes(),
    };
    // Lines end with CRLF only (the session refuses bare CR/LF before the bridge sees mail).
    let text = String::from_utf8_lossy(&m)
        .replace("\r\n", "\n")
        .replace('\r', "")
        .replace('\n', "\r\n");
    m = text.into_bytes();
    (m, authored)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_hostile_messages_never_panic_and_policy_failures_never_become_envelopes() {
    let good = Dkim::ed25519("good.test", "g", &[4u8; 32]).unwrap();
    let node = TestNode::with(|c| {
        let mut b = BridgeConfig::new("127.0.0.1:0".parse().unwrap());
        b.dns_records = vec![
            txt("good.test", "v=spf1 ip4:127.0.0.1 -all"),
            txt(&good.dns_name(), good.dns_record()),
            txt("_dmarc.good.test", "v=DMARC1; p=reject"),
            // The policy-failing domain: SPF authorizes no one, DMARC p=reject, no DKIM key.
            txt("reject.test", "v=spf1 -all"),
            txt("_dmarc.reject.test", "v=DMARC1; p=reject"),
        ];
        c.bridge = Some(b);
    });
    node.register("alice", "human", 1).await;
    let svc = node.node.service().clone();
    let count = |svc: &loom_node::Service| -> i64 {
        svc.store
            .read()
            .query_row("SELECT COUNT(*) FROM envelopes", [], |r| r.get(0))
            .unwrap()
    };
    let peer: SocketAddr = "127.0.0.1:40000".parse().unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(32);
    let (mut refused, mut stored, mut failing) = (0, 0, 0);
    for n in 0..MESSAGES {
        let rejecting = rng.next_u32() % 3 == 0;
        let from = if rejecting {
            format!("x{n}@reject.test")
        } else {
            format!("y{n}@good.test")
        };
        let (mut data, authored) = hostile(&mut rng, &from, n);
        // Authored by an address of the p=reject domain, unsigned, from an address its SPF
        // does not authorize: DMARC fails, and the policy refuses such mail.
        let fails_policy = rejecting && authored;
        if !rejecting && rng.next_u32() % 2 == 0 {
            data = good.sign(data.clone()).unwrap_or(data);
        }
        let before = if fails_policy { count(&svc) } else { 0 };
        let shown = String::from_utf8_lossy(&data[..data.len().min(300)]).into_owned();
        let verdict = svc
            .bridge_receive(
                peer,
                Transaction {
                    helo: "h.test".into(),
                    mail_from: from.clone(),
                    rcpt_to: vec![format!("alice@{DOMAIN}")],
                    data,
                    tls: false,
                },
            )
            .await;
        assert!(
            (200..600).contains(&verdict.code) && !verdict.text.contains('\n'),
            "message {n}: a reply line: {verdict:?}"
        );
        if fails_policy {
            failing += 1;
            assert!(
                verdict.code >= 500,
                "message {n} from {from} fails DMARC p=reject: {verdict:?}\n{shown}"
            );
            assert_eq!(
                count(&svc),
                before,
                "message {n} from {from} became an envelope"
            );
        }
        if verdict.code == 250 {
            stored += 1;
        } else {
            refused += 1;
        }
    }
    // Whatever the shape, nothing was ever attributed to the p=reject domain.
    let spoofed: i64 = svc
        .store
        .read()
        .query_row(
            "SELECT COUNT(*) FROM identities WHERE id LIKE 'bridge://%@reject.test'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(spoofed, 0, "bridge:// identities of the p=reject domain");
    eprintln!(
        "{MESSAGES} hostile messages: {stored} stored, {refused} refused ({failing} failing the policy)"
    );
    assert!(stored > MESSAGES / 3, "most good mail is stored: {stored}");
    assert!(failing > MESSAGES / 5);
}
