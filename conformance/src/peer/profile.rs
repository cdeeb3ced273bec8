//! The target profile's `[federation]` section (issue 15): where the target reaches the
//! harness's fake peers, how the target learns a peer, how to make it send now, and the
//! timers it declares. The spec defines no peer-registration API, so the profile says it.
//!
//! ```toml
//! [federation]
//! harness_address = "http://10.0.0.5:9900"  # the base URL the target uses to reach the harness
//! listen = "0.0.0.0:9900"                   # where the harness binds (default: 127.0.0.1:0
//!                                           # when harness_address is absent)
//! peer_domain = "peer-{n}.test"             # the fake peers' domains, {n} = 0, 1, 2, …
//! peers = 96                                # how many the target knows ("static" mode)
//! tls = false             # true: the peers speak TLS 1.3 as https://{peer_domain}:{port}
//!                         # with certificates from a per-run CA (default false here; the
//!                         # embedded node runs with true)
//! ca_file = "/tmp/loom-peer-ca.pem"  # tls = true: where the CA certificate PEM is written
//!                                    # (default: a fresh temporary file)
//! [federation.learn_peer]
//! mode = "request"        # "static" | "node-document" | "request"
//! method = "POST"
//! url = "{target}/v1/federation/nodes"
//! headers = { authorization = "Bearer {admin_token}" }
//! body = '{"node_id":"{peer_domain}","key_id":"{peer_key_id}","public_key_pem":"{peer_public_key_pem}","deliver_url":"{peer_deliver_url}"}'
//! [federation.send_now]
//! mode = "wait"           # "wait" | "request"
//! wait_secs = 10
//! [federation.block_peer] # absent: the policy case is `unsupported`
//! mode = "request"        # "static" | "request"
//! method = "POST"
//! url = "{target}/v1/federation/policy/block"
//! body = '{"node_id":"{peer_domain}"}'
//! [federation.timers]
//! ttl_ms = 3000           # absent: store-and-forward TTL cases are `unsupported`
//! refetch_min_interval_ms = 0  # absent: the key-rotation case is `unsupported`
//! ```
//!
//! `block_peer` says how a peer comes to be one the target's policy refuses (v1.1 §23.1):
//! `request` sends the templated request for a fresh peer (after `learn_peer`); `static`
//! means the target is configured to block the peers named by `domain` (`{n}` = 0, 1, …,
//! `count` of them), which the harness serves besides the ordinary ones.
//!
//! With `tls = true` (v1.1 §14.1: nodes talk TLS) the harness makes a certificate authority
//! for the run (its key never leaves the process), writes its certificate to `ca_file`, and
//! serves peer `n` as `https://peer-{n}.test:{port}` with a certificate for that name: the
//! target must trust the CA (`{peer_ca_pem_path}`, `{peer_ca_pem}`) and connect to the harness
//! address for each peer domain (`{peer_address}`, like curl's `--resolve`). The file is
//! written before the target is probed, so a target started after the harness can be given
//! it (`--peer-ca`).
//!
//! Placeholders (JSON-escaped inside `body`): `{target}`, `{peer_domain}`, `{peer_base_url}`,
//! `{peer_deliver_url}`, `{peer_identity_url}`, `{peer_node_document_url}`, `{peer_key_id}`,
//! `{peer_public_key_pem}`, `{peer_public_key_b64url}`, `{peer_address}` (the harness's
//! `host:port`, where every peer domain must lead), with `tls = true` also
//! `{peer_ca_pem_path}` and `{peer_ca_pem}`, plus every `[federation.vars]` entry (e.g.
//! `admin_token`). In `send_now` also what the target is asked to send (a node that federates
//! only queued envelopes needs them): `{envelope_id}`, `{envelope_ids_json}` (a JSON array,
//! inserted as JSON), `{recipient_node}` (the peer's domain), `{thread_id}` and
//! `{sender_token}` (a bearer token of the sending identity). In `learn_peer` and `send_now`,
//! `{user_token}` is the bearer token of an identity the harness registered on the target, for
//! requests that need a logged-in user besides an admin token.

use serde::Deserialize;
use std::collections::BTreeMap;

/// `[federation]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FederationSection {
    /// Base URL the target uses to reach the harness (`http://10.0.0.5:9900`).
    pub harness_address: Option<String>,
    /// Socket address the harness binds.
    pub listen: Option<String>,
    /// Peer domains, `{n}` replaced by the peer's index.
    #[serde(default = "default_domain")]
    pub peer_domain: String,
    /// How many peers the target knows (0: no bound).
    #[serde(default)]
    pub peers: u32,
    /// Whether the fake peers speak TLS 1.3 with certificates from a per-run CA (default
    /// `false` for a target of the user's: plain HTTP needs nothing trusted).
    pub tls: Option<bool>,
    /// `tls = true`: where the CA certificate (PEM) is written (default: a temporary file).
    pub ca_file: Option<String>,
    /// How the target learns a fake peer.
    #[serde(default)]
    pub learn_peer: Templated,
    /// How to make the target deliver its queue now.
    #[serde(default)]
    pub send_now: Templated,
    /// How a peer becomes one the target's federation policy refuses.
    #[serde(default)]
    pub block_peer: BlockPeer,
    /// Timers the target declares.
    pub timers: Option<Timers>,
    /// Extra placeholder values (`admin_token`, …).
    #[serde(default)]
    pub vars: BTreeMap<String, String>,
}

fn default_domain() -> String {
    "peer-{n}.test".into()
}

/// A mode, and for `mode = "request"` the templated request.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Templated {
    /// `static` / `node-document` / `request` (learn_peer); `wait` / `request` (send_now).
    pub mode: Option<String>,
    /// HTTP method.
    pub method: Option<String>,
    /// URL template.
    pub url: Option<String>,
    /// Header templates.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Body template.
    pub body: Option<String>,
    /// `send_now = wait`: longest wait for the target to deliver (seconds, default 10).
    pub wait_secs: Option<f64>,
}

impl Templated {
    /// Whether any part of the request names the placeholder `{name}`.
    pub fn mentions(&self, name: &str) -> bool {
        let p = format!("{{{name}}}");
        self.url
            .iter()
            .chain(self.body.iter())
            .chain(self.headers.values())
            .any(|t| t.contains(&p))
    }
}

/// `[federation.block_peer]`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlockPeer {
    /// `static` / `request` (absent: the policy case is `unsupported`).
    pub mode: Option<String>,
    /// `static`: the blocked peers' domains, `{n}` replaced by 0, 1, …
    pub domain: Option<String>,
    /// `static`: how many blocked peers the target is configured with.
    pub count: Option<u32>,
    /// `request`: HTTP method.
    pub method: Option<String>,
    /// `request`: URL template.
    pub url: Option<String>,
    /// `request`: header templates.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// `request`: body template.
    pub body: Option<String>,
}

impl BlockPeer {
    /// The request part, as a [`Templated`].
    pub fn request(&self) -> Templated {
        Templated {
            mode: self.mode.clone(),
            method: self.method.clone(),
            url: self.url.clone(),
            headers: self.headers.clone(),
            body: self.body.clone(),
            wait_secs: None,
        }
    }
}

/// `[federation.timers]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Timers {
    /// The store-and-forward TTL the target runs with (v1.1 §15.6 "configurable").
    pub ttl_ms: Option<u64>,
    /// The least time the target leaves between two re-fetches of one remote identity (or
    /// node) document for an unknown key id (v1.0 §7.4 sets none; 0 = re-fetches every time).
    pub refetch_min_interval_ms: Option<u64>,
}

impl FederationSection {
    /// The learn mode (default `static`).
    pub fn learn_mode(&self) -> &str {
        self.learn_peer.mode.as_deref().unwrap_or("static")
    }

    /// The send-now mode (default `wait`).
    pub fn send_mode(&self) -> &str {
        self.send_now.mode.as_deref().unwrap_or("wait")
    }

    /// Whether the fake peers speak TLS.
    pub fn tls(&self) -> bool {
        self.tls.unwrap_or(false)
    }

    /// Checks every member; errors name the field.
    pub fn check(&self) -> Result<(), String> {
        if self.tls()
            && let Some(a) = &self.harness_address
            && !a.starts_with("https://")
        {
            return Err(format!(
                "federation.harness_address must be an https:// URL when tls = true (the target connects with TLS), not {a:?}"
            ));
        }
        if !self.tls() && self.ca_file.is_some() {
            return Err(
                "federation.ca_file needs tls = true (the plain-HTTP peers have no CA)".into(),
            );
        }
        if self.ca_file.as_deref() == Some("") {
            return Err("federation.ca_file must be a file path, not empty".into());
        }
        if let Some(a) = &self.harness_address
            && !(a.starts_with("http://") || a.starts_with("https://"))
        {
            return Err(format!(
                "federation.harness_address must be an http:// or https:// URL, not {a:?}"
            ));
        }
        if let Some(l) = &self.listen
            && l.parse::<std::net::SocketAddr>().is_err()
        {
            return Err(format!(
                "federation.listen must be a socket address such as \"0.0.0.0:9900\", not {l:?}"
            ));
        }
        if !self.peer_domain.contains("{n}") {
            return Err(format!(
                "federation.peer_domain must contain {{n}} (each case uses a fresh peer), not {:?}",
                self.peer_domain
            ));
        }
        match self.learn_mode() {
            "static" | "node-document" => {}
            "request" => check_request("federation.learn_peer", &self.learn_peer)?,
            m => {
                return Err(format!(
                    "federation.learn_peer.mode must be \"static\", \"node-document\" or \"request\", not {m:?}"
                ));
            }
        }
        match self.send_mode() {
            "wait" => {}
            "request" => check_request("federation.send_now", &self.send_now)?,
            m => {
                return Err(format!(
                    "federation.send_now.mode must be \"wait\" or \"request\", not {m:?}"
                ));
            }
        }
        if let Some(w) = self.send_now.wait_secs
            && !(w.is_finite() && w > 0.0 && w <= 3600.0)
        {
            return Err(format!(
                "federation.send_now.wait_secs must be above 0 and at most 3600, not {w}"
            ));
        }
        if let Some(ttl) = self.timers.as_ref().and_then(|t| t.ttl_ms)
            && !(1..=3_600_000).contains(&ttl)
        {
            return Err(format!(
                "federation.timers.ttl_ms must be between 1 and 3600000 (a shortened TTL the cases can wait for), not {ttl}"
            ));
        }
        if let Some(r) = self.timers.as_ref().and_then(|t| t.refetch_min_interval_ms)
            && r > 86_400_000
        {
            return Err(format!(
                "federation.timers.refetch_min_interval_ms must be at most 86400000 (a day), not {r}"
            ));
        }
        match self.block_peer.mode.as_deref() {
            None => {}
            Some("static") => {
                let d = self.block_peer.domain.as_deref().unwrap_or("");
                if !d.contains("{n}") {
                    return Err(format!(
                        "federation.block_peer.domain must contain {{n}} when mode = \"static\", not {d:?}"
                    ));
                }
                if self.block_peer.count.unwrap_or(0) == 0 {
                    return Err(
                        "federation.block_peer.count must be at least 1 when mode = \"static\""
                            .into(),
                    );
                }
            }
            Some("request") => check_request("federation.block_peer", &self.block_peer.request())?,
            Some(m) => {
                return Err(format!(
                    "federation.block_peer.mode must be \"static\" or \"request\", not {m:?}"
                ));
            }
        }
        Ok(())
    }
}

fn check_request(field: &str, t: &Templated) -> Result<(), String> {
    let method = t
        .method
        .as_deref()
        .ok_or_else(|| format!("{field}.method is required when mode = \"request\""))?;
    if !matches!(method, "GET" | "POST" | "PUT" | "PATCH" | "DELETE") {
        return Err(format!(
            "{field}.method must be GET, POST, PUT, PATCH or DELETE, not {method:?}"
        ));
    }
    let url = t
        .url
        .as_deref()
        .ok_or_else(|| format!("{field}.url is required when mode = \"request\""))?;
    if !(url.starts_with("{target}") || url.starts_with("http://") || url.starts_with("https://")) {
        return Err(format!(
            "{field}.url must start with {{target}}, http:// or https://, not {url:?}"
        ));
    }
    Ok(())
}

/// Replaces every `{name}` of `template` with `vars[name]`; with `json`, values are
/// JSON-string-escaped (the template is a JSON body) — except placeholders whose name ends in
/// `_json`, which hold JSON text and are inserted as they are. Unknown placeholders are
/// errors that name them.
pub fn fill(
    template: &str,
    vars: &BTreeMap<String, String>,
    json: bool,
    field: &str,
) -> Result<String, String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        match after.find('}') {
            Some(end)
                if after[..end]
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_')
                    && end > 0 =>
            {
                let name = &after[..end];
                let v = vars.get(name).ok_or_else(|| {
                    format!(
                        "{field}: unknown placeholder {{{name}}} (known: {})",
                        vars.keys().cloned().collect::<Vec<_>>().join(", ")
                    )
                })?;
                if json && !name.ends_with("_json") {
                    let quoted = serde_json::to_string(v).unwrap_or_default();
                    out.push_str(&quoted[1..quoted.len() - 1]);
                } else {
                    out.push_str(v);
                }
                rest = &after[end + 1..];
            }
            _ => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Profile;

    #[test]
    fn a_full_section_parses() {
        let p = Profile::parse(
            "[federation]\nharness_address = \"http://10.0.0.5:9900\"\nlisten = \"0.0.0.0:9900\"\npeers = 8\n[federation.learn_peer]\nmode = \"request\"\nmethod = \"POST\"\nurl = \"{target}/v1/federation/nodes\"\nheaders = { authorization = \"Bearer {admin_token}\" }\nbody = '{\"node_id\":\"{peer_domain}\"}'\n[federation.send_now]\nmode = \"wait\"\nwait_secs = 5\n[federation.timers]\nttl_ms = 3000\n[federation.vars]\nadmin_token = \"t\"\n",
        )
        .expect("parses");
        let f = p.federation.expect("section");
        assert_eq!(f.learn_mode(), "request");
        assert_eq!(
            f.timers,
            Some(Timers {
                ttl_ms: Some(3000),
                refetch_min_interval_ms: None
            })
        );
        assert_eq!(f.peers, 8);
    }

    #[test]
    fn errors_name_the_field() {
        let bad = [
            (
                "[federation]\nharness_address = \"10.0.0.5\"\n",
                "federation.harness_address",
            ),
            ("[federation]\nlisten = \"nowhere\"\n", "federation.listen"),
            (
                "[federation]\ntls = true\nharness_address = \"http://10.0.0.5:9900\"\n",
                "federation.harness_address must be an https://",
            ),
            (
                "[federation]\nca_file = \"/tmp/ca.pem\"\n",
                "federation.ca_file needs tls = true",
            ),
            (
                "[federation]\ntls = true\nca_file = \"\"\n",
                "federation.ca_file must be a file path",
            ),
            (
                "[federation]\npeer_domain = \"peer.test\"\n",
                "federation.peer_domain",
            ),
            (
                "[federation.learn_peer]\nmode = \"dns\"\n",
                "federation.learn_peer.mode",
            ),
            (
                "[federation.learn_peer]\nmode = \"request\"\n",
                "federation.learn_peer.method",
            ),
            (
                "[federation.learn_peer]\nmode = \"request\"\nmethod = \"POST\"\n",
                "federation.learn_peer.url",
            ),
            (
                "[federation.send_now]\nmode = \"poke\"\n",
                "federation.send_now.mode",
            ),
            (
                "[federation.send_now]\nwait_secs = -1\n",
                "federation.send_now.wait_secs",
            ),
            (
                "[federation.timers]\nttl_ms = 0\n",
                "federation.timers.ttl_ms",
            ),
            (
                "[federation.timers]\nrefetch_min_interval_ms = 90000000\n",
                "federation.timers.refetch_min_interval_ms",
            ),
            (
                "[federation.block_peer]\nmode = \"static\"\ncount = 2\n",
                "federation.block_peer.domain",
            ),
            (
                "[federation.block_peer]\nmode = \"static\"\ndomain = \"b-{n}.test\"\n",
                "federation.block_peer.count",
            ),
            (
                "[federation.block_peer]\nmode = \"request\"\n",
                "federation.block_peer.method",
            ),
            (
                "[federation.block_peer]\nmode = \"deny\"\n",
                "federation.block_peer.mode",
            ),
            ("[federation]\nbogus = 1\n", "bogus"),
        ];
        for (text, field) in bad {
            let e = Profile::parse(text).expect_err(text);
            assert!(e.contains(field), "{text}: {e}");
        }
    }

    #[test]
    fn fill_escapes_json_and_names_unknown_placeholders() {
        let vars = BTreeMap::from([
            ("peer_domain".to_owned(), "peer-1.test".to_owned()),
            ("pem".to_owned(), "-----BEGIN\nX\"".to_owned()),
        ]);
        assert_eq!(
            fill(
                "{\"d\":\"{peer_domain}\",\"k\":\"{pem}\"}",
                &vars,
                true,
                "b"
            )
            .unwrap(),
            "{\"d\":\"peer-1.test\",\"k\":\"-----BEGIN\\nX\\\"\"}"
        );
        let e = fill("{nope}", &vars, false, "federation.learn_peer.url").unwrap_err();
        assert!(
            e.contains("federation.learn_peer.url") && e.contains("{nope}"),
            "{e}"
        );
    }

    /// The `send_now` placeholders of a node that federates only queued envelopes (issue 29):
    /// `_json` values go in as JSON, the others escaped.
    #[test]
    fn send_now_placeholders_fill_a_queue_request() {
        let out = crate::peer::Outgoing {
            envelope_ids: vec!["env_A".into(), "env_B".into()],
            thread_id: "thr_T".into(),
            sender_token: "at_\"x".into(),
        };
        let vars = out.vars("peer-3.test");
        let body = "{\"recipient_node\":\"{recipient_node}\",\"envelope_ids\":{envelope_ids_json},\"first\":\"{envelope_id}\",\"thread\":\"{thread_id}\"}";
        let filled = fill(body, &vars, true, "federation.send_now.body").unwrap();
        let v: serde_json::Value = serde_json::from_str(&filled).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"recipient_node": "peer-3.test", "envelope_ids": ["env_A", "env_B"], "first": "env_A", "thread": "thr_T"})
        );
        let auth = fill("Bearer {sender_token}", &vars, false, "h").unwrap();
        assert_eq!(auth, "Bearer at_\"x");
        let t = Templated {
            mode: Some("request".into()),
            headers: BTreeMap::from([("authorization".into(), "Bearer {user_token}".into())]),
            ..Templated::default()
        };
        assert!(t.mentions("user_token") && !t.mentions("admin_token"));
    }
}
