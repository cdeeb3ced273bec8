//! Reading a remote node's well-known document (v1.1 §15.2; v1.0 §14.2) and its node signing
//! keys, and finding the key a signature names (with rotation).
//!
//! The reader is lenient about where members live, because the deployed documents differ:
//! - the version is `loom` (v1.1) or `loom_version` (v1.0 §14.2);
//! - node signing keys are `signing_keys` at the top level (our node) or
//!   `federation.signing_keys` (the existing v1.1 node); both are read, and one `key_id` with
//!   two different keys makes the document unusable;
//! - a key is `public_key` (base64url of the 32 raw bytes) or `public_key_pem` (SPKI PEM);
//!   `algorithm`, when given, is `Ed25519`; `status` absent means active;
//! - `deliver_url` is top level or under `federation`; when absent it defaults to §15.4's path
//!   on the `api_url` origin (or on `https://{domain}`);
//! - `identity_resolve_url` (a template with `{identity}`) is top level or under
//!   `federation`; the default is `{deliver origin}/v1/identity/{identity}` (DESIGN.md §9);
//! - the policy mode is `federation.policy` (v1.1) or `federation_policy` (a string, or the
//!   v1.0 object `{open, allowlist, denylist}`);
//! - v1.0's `public_keys_url` is reported so a caller can fetch keys published separately.
//!
//! It is strict where trust depends on it: the document's `domain` (or `node_id` when there
//! is no `domain`) must name the node it was fetched for, or its keys would verify another
//! node's requests; key entries that do not parse are skipped (they cannot verify anything)
//! and listed in [`NodeDocumentView::skipped_keys`].
//!
//! Rotation: a node publishes its new key as active and its old one with another status.
//! Only active keys verify new requests and receipts (a retired key is for verifying
//! historical material, v1.0 §7.4); an unknown `key_id` means the cached document may be
//! stale, so the caller re-fetches it once ([`should_refetch`], v1.0 §7.4 "re-fetch when a
//! key_id is unknown") before rejecting.

use crate::error::{ErrorCode, ProtocolError};
use crate::federation::node_name::{parse_node_name, same_node};
use crate::keys::public_key_from_any;
use crate::time::Timestamp;
use ed25519_dalek::VerifyingKey;
use serde_json::{Map, Value};

const SECTION: &str = "v1.1 §15.2";

/// A key's lifecycle state as published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyStatus {
    /// `active`, or no status given.
    Active,
    /// `retired`: kept for historical verification only.
    Retired,
    /// `revoked`.
    Revoked,
    /// Any other value; not usable.
    Other(String),
}

impl KeyStatus {
    /// Reads a `status` member (absent = active).
    pub fn parse(s: Option<&str>) -> KeyStatus {
        match s {
            None | Some("active") => KeyStatus::Active,
            Some("retired") => KeyStatus::Retired,
            Some("revoked") => KeyStatus::Revoked,
            Some(other) => KeyStatus::Other(other.to_owned()),
        }
    }

    /// The status text.
    pub fn as_str(&self) -> &str {
        match self {
            KeyStatus::Active => "active",
            KeyStatus::Retired => "retired",
            KeyStatus::Revoked => "revoked",
            KeyStatus::Other(s) => s,
        }
    }
}

/// One node signing key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeKey {
    /// `key_id`.
    pub key_id: String,
    /// The Ed25519 public key.
    pub public_key: VerifyingKey,
    /// Its status.
    pub status: KeyStatus,
}

/// The signing keys of one node.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NodeKeys {
    /// The node, normalized.
    pub node: String,
    /// Its keys, in document order.
    pub keys: Vec<NodeKey>,
}

/// What looking up a `key_id` found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyLookup<'a> {
    /// An active key.
    Found(&'a VerifyingKey),
    /// The key is published but not active.
    NotActive(&'a KeyStatus),
    /// No key has this id: the cached document may be stale ([`should_refetch`]).
    UnknownKeyId,
}

impl NodeKeys {
    /// The keys of `node` (name normalized).
    pub fn new(node: &str, keys: Vec<NodeKey>) -> NodeKeys {
        NodeKeys {
            node: crate::http_sig::normalize_node(node),
            keys,
        }
    }

    /// Looks up `key_id`.
    pub fn lookup(&self, key_id: &str) -> KeyLookup<'_> {
        match self.keys.iter().find(|k| k.key_id == key_id) {
            Some(k) if k.status == KeyStatus::Active => KeyLookup::Found(&k.public_key),
            Some(k) => KeyLookup::NotActive(&k.status),
            None => KeyLookup::UnknownKeyId,
        }
    }

    /// The active key `key_id`, or `SIGNATURE_INVALID` naming `field` (v1.1 §15.3: the
    /// signature is verified with a node signing key from the node document).
    pub fn active_key(&self, key_id: &str, field: &str) -> Result<&VerifyingKey, ProtocolError> {
        match self.lookup(key_id) {
            KeyLookup::Found(k) => Ok(k),
            KeyLookup::NotActive(s) => Err(ProtocolError::new(
                ErrorCode::SignatureInvalid,
                field,
                format!(
                    "key {key_id:?} of node {:?} is {}, not active",
                    self.node,
                    s.as_str()
                ),
                "v1.1 §15.3, v1.0 §7.4",
            )),
            KeyLookup::UnknownKeyId => Err(ProtocolError::new(
                ErrorCode::SignatureInvalid,
                field,
                format!(
                    "the node document of {:?} has no signing key {key_id:?}",
                    self.node
                ),
                "v1.1 §15.3, §15.2",
            )),
        }
    }
}

/// What a node document says, read leniently (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct NodeDocumentView {
    /// `loom` or `loom_version`.
    pub version: Option<String>,
    /// `node_id`.
    pub node_id: Option<String>,
    /// The node name: `domain`, or `node_id` when there is no `domain`; normalized.
    pub domain: String,
    /// `api_url`.
    pub api_url: Option<String>,
    /// `websocket_url`.
    pub websocket_url: Option<String>,
    /// Where to deliver (explicit or defaulted).
    pub deliver_url: String,
    /// Whether `deliver_url` was given (false: defaulted).
    pub deliver_url_given: bool,
    /// The identity resolution template, `{identity}` standing for the address.
    pub identity_resolve_url: String,
    /// `federation.requirements` (e.g. `LOOM-HTTP-SIG-1`).
    pub requirements: Vec<String>,
    /// The federation policy mode, when stated.
    pub policy: Option<String>,
    /// The node signing keys that parsed.
    pub keys: NodeKeys,
    /// Key entries that did not parse: `(path, reason)`.
    pub skipped_keys: Vec<(String, String)>,
    /// v1.0's `public_keys_url`, when given.
    pub public_keys_url: Option<String>,
    /// `supported_versions`.
    pub supported_versions: Vec<String>,
    /// `supported_profiles`.
    pub supported_profiles: Vec<String>,
}

fn invalid(field: &str, rule: impl Into<String>) -> ProtocolError {
    ProtocolError::invalid(field, rule, SECTION)
}

fn str_at<'a>(
    doc: &'a Map<String, Value>,
    fed: Option<&'a Map<String, Value>>,
    name: &str,
) -> Option<&'a str> {
    fed.and_then(|f| f.get(name))
        .and_then(Value::as_str)
        .or_else(|| doc.get(name).and_then(Value::as_str))
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// The `scheme://host[:port]` part of a URL.
pub fn url_origin(url: &str) -> Option<&str> {
    let (scheme, rest) = url.split_once("://")?;
    if scheme.is_empty() || rest.is_empty() {
        return None;
    }
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    (end > 0).then(|| &url[..scheme.len() + 3 + end])
}

/// Reads one key entry.
fn read_key(entry: &Value) -> Result<NodeKey, String> {
    let o = entry.as_object().ok_or("a key entry must be an object")?;
    let key_id = o
        .get("key_id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or("key_id is required")?;
    if let Some(alg) = o.get("algorithm")
        && alg.as_str() != Some("Ed25519")
    {
        return Err(format!("algorithm {alg} is not Ed25519"));
    }
    let material = o
        .get("public_key")
        .or_else(|| o.get("public_key_pem"))
        .and_then(Value::as_str)
        .ok_or("public_key or public_key_pem is required")?;
    let public_key = public_key_from_any(material).map_err(|e| e.reason.to_owned())?;
    Ok(NodeKey {
        key_id: key_id.to_owned(),
        public_key,
        status: KeyStatus::parse(o.get("status").and_then(Value::as_str)),
    })
}

/// Where a node document came from, as the node that fetched it knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocumentSource<'a> {
    /// Discovery: fetched from `url` over HTTPS, where the client verified the server
    /// certificate for the URL's host (SNI and name check; the node's client always does).
    Discovery {
        /// The URL fetched.
        url: &'a str,
    },
    /// The operator's configured peer entry for the node (`federation.peers`): fetched from
    /// `url` under the entry's `base`. The entry is the operator's statement of where the
    /// node lives; an `https` base is checked against its own host by the client, a plain
    /// `http` one is reached only on loopback/private addresses (`allow_private_http`).
    ConfiguredPeer {
        /// The configured base URL.
        base: &'a str,
        /// The URL fetched.
        url: &'a str,
    },
    /// DNS discovery (§15.1): `url` is where the node's `_loom` TXT `wellknown=` or
    /// `_loom._tcp` SRV record, asked of the DNS server the operator configured
    /// (`federation.dns_server`, off by default), points. §15.1 lets that location be another
    /// host (`api=https://loom.example.com/v1`), so the operator's choice of resolver is the
    /// trust statement here, as the peer entry is for [`DocumentSource::ConfiguredPeer`]: any
    /// `https` URL qualifies (the client verified the certificate for the URL's host),
    /// plain `http` never.
    DnsDiscovery {
        /// The URL fetched.
        url: &'a str,
    },
}

/// §15.2's discovery URL of `node`: `https://{node}/.well-known/loom.json`.
pub fn discovery_url(node: &str) -> String {
    format!(
        "https://{}/.well-known/loom.json",
        node.trim_end_matches('.').to_ascii_lowercase()
    )
}

/// The document URL under a configured peer base URL.
pub fn configured_document_url(base: &str) -> String {
    format!("{}/.well-known/loom.json", base.trim_end_matches('/'))
}

/// The one decision "is this node document authenticated for node `node`": whether its keys
/// may verify requests that carry `X-LOOM-Node: {node}` (v1.1 §15.3 "TLS server cert must
/// match domain", "signature verified using node signing key from Node Document"; §15.2
/// "Every node MUST serve `GET https://{domain}/.well-known/loom.json`"). It is, when both
/// hold:
/// 1. it came from where `node` is authoritatively found: §15.2's URL
///    `https://{node}/.well-known/loom.json` exactly ([`DocumentSource::Discovery`]: the TLS
///    certificate was verified for that host, so for `node` — another host, another scheme,
///    or a redirect target never qualifies), or the document URL under the operator's
///    configured peer entry for `node` ([`DocumentSource::ConfiguredPeer`]);
/// 2. the document names `node` in `domain` (or `node_id`) ([`read_node_document`]), so a
///    document served for one node can never lend its keys to another.
///
/// A caller stores the keys under `node` only after this passed.
pub fn authenticate_node_document(
    doc: &Value,
    node: &str,
    source: DocumentSource<'_>,
) -> Result<NodeDocumentView, ProtocolError> {
    let (url, expected) = match source {
        DocumentSource::Discovery { url } => (url, discovery_url(node)),
        DocumentSource::ConfiguredPeer { base, url } => (url, configured_document_url(base)),
        DocumentSource::DnsDiscovery { url } => {
            let https = url
                .get(..8)
                .is_some_and(|s| s.eq_ignore_ascii_case("https://"));
            if !https {
                return Err(ProtocolError::new(
                    ErrorCode::SignatureInvalid,
                    "X-LOOM-Node",
                    format!(
                        "the node document of {node:?} was found through DNS at {url}, which is not https: only TLS authenticates where DNS points"
                    ),
                    "v1.1 §15.1, §15.3",
                ));
            }
            return read_node_document(doc, node);
        }
    };
    let same = match (url_origin(url), url_origin(&expected)) {
        (Some(a), Some(b)) => a.eq_ignore_ascii_case(b) && url[a.len()..] == expected[b.len()..],
        _ => false,
    };
    if !same {
        return Err(ProtocolError::new(
            ErrorCode::SignatureInvalid,
            "X-LOOM-Node",
            format!(
                "the node document of {node:?} must come from {expected} (its domain's well-known URL or the configured peer entry), not {url}"
            ),
            "v1.1 §15.2, §15.3",
        ));
    }
    read_node_document(doc, node)
}

/// Reads the node document fetched for `expected_node` (see the module docs).
pub fn read_node_document(
    doc: &Value,
    expected_node: &str,
) -> Result<NodeDocumentView, ProtocolError> {
    let obj = doc
        .as_object()
        .ok_or_else(|| invalid("$", "the node document must be a JSON object"))?;
    let fed = obj.get("federation").and_then(Value::as_object);
    let node_id = obj
        .get("node_id")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let (name_field, raw_name) = match obj.get("domain").and_then(Value::as_str) {
        Some(d) => ("domain", d),
        None => (
            "node_id",
            node_id
                .as_deref()
                .ok_or_else(|| invalid("domain", "domain (or node_id) is required"))?,
        ),
    };
    let domain = parse_node_name(raw_name)
        .map_err(|why| invalid(name_field, format!("{name_field} {raw_name:?}: {why}")))?;
    if !same_node(&domain, expected_node) {
        return Err(ProtocolError::new(
            ErrorCode::SignatureInvalid,
            name_field,
            format!(
                "the document names node {domain:?} but was fetched for {expected_node:?}; its keys must not verify another node"
            ),
            "v1.1 §15.2, §15.3",
        ));
    }
    let version = obj
        .get("loom")
        .or_else(|| obj.get("loom_version"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let api_url = obj
        .get("api_url")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let websocket_url = obj
        .get("websocket_url")
        .and_then(Value::as_str)
        .map(str::to_owned);

    let mut keys: Vec<NodeKey> = Vec::new();
    let mut skipped_keys = Vec::new();
    let sources = [
        ("signing_keys", obj.get("signing_keys")),
        (
            "federation.signing_keys",
            fed.and_then(|f| f.get("signing_keys")),
        ),
    ];
    for (path, list) in sources {
        let Some(list) = list else { continue };
        let Some(list) = list.as_array() else {
            skipped_keys.push((path.to_owned(), "must be an array".to_owned()));
            continue;
        };
        for (i, entry) in list.iter().enumerate() {
            match read_key(entry) {
                Ok(k) => match keys.iter().find(|e| e.key_id == k.key_id) {
                    Some(e) if e.public_key != k.public_key => {
                        return Err(invalid(
                            &format!("{path}[{i}].key_id"),
                            format!(
                                "key id {:?} is published twice with different keys",
                                k.key_id
                            ),
                        ));
                    }
                    Some(_) => {}
                    None => keys.push(k),
                },
                Err(why) => skipped_keys.push((format!("{path}[{i}]"), why)),
            }
        }
    }

    let deliver_given = str_at(obj, fed, "deliver_url");
    let deliver_url = match deliver_given {
        // A node that names its delivery endpoint must name one: an empty URL is a broken
        // document, not a request for the default (fuzz target `node_document`).
        Some(u) if u.trim().is_empty() => {
            let at = if fed.is_some_and(|f| f.contains_key("deliver_url")) {
                "federation.deliver_url"
            } else {
                "deliver_url"
            };
            return Err(invalid(
                at,
                "the delivery endpoint must be a URL, not empty",
            ));
        }
        Some(u) => u.to_owned(),
        None => {
            let origin = api_url
                .as_deref()
                .and_then(url_origin)
                .map(str::to_owned)
                .unwrap_or_else(|| format!("https://{domain}"));
            format!("{origin}{}", super::wrapper::DELIVER_PATH)
        }
    };
    let identity_resolve_url = match str_at(obj, fed, "identity_resolve_url") {
        Some(u) => u.to_owned(),
        None => {
            let origin = url_origin(&deliver_url)
                .map(str::to_owned)
                .unwrap_or_else(|| format!("https://{domain}"));
            format!("{origin}/v1/identity/{{identity}}")
        }
    };
    let policy = fed
        .and_then(|f| f.get("policy"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| match obj.get("federation_policy") {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Object(p)) => match p.get("open").and_then(Value::as_bool) {
                Some(true) => Some("open".to_owned()),
                Some(false) => Some("allowlist".to_owned()),
                None => None,
            },
            _ => None,
        });
    Ok(NodeDocumentView {
        version,
        node_id,
        keys: NodeKeys::new(&domain, keys),
        domain,
        api_url,
        websocket_url,
        deliver_url,
        deliver_url_given: deliver_given.is_some(),
        identity_resolve_url,
        requirements: strings(fed.and_then(|f| f.get("requirements"))),
        policy,
        skipped_keys,
        public_keys_url: obj
            .get("public_keys_url")
            .and_then(Value::as_str)
            .map(str::to_owned),
        supported_versions: strings(obj.get("supported_versions")),
        supported_profiles: strings(obj.get("supported_profiles")),
    })
}

/// The §15.2 items a node document lacks under every legal spelling, in §15.2 order:
/// `node_id`, `domain`, `api_url`, `websocket_url`, `deliver_url`, `requirements`,
/// `signing_keys`, `supported_versions`, `supported_profiles`, `policy`. Empty means complete.
pub fn missing_members(doc: &Value) -> Vec<&'static str> {
    let empty = Map::new();
    let obj = doc.as_object().unwrap_or(&empty);
    let fed = obj.get("federation").and_then(Value::as_object);
    let has = |name: &str| obj.get(name).is_some_and(|v| !v.is_null());
    let has_fed = |name: &str| fed.and_then(|f| f.get(name)).is_some_and(|v| !v.is_null());
    let nonempty_array =
        |v: Option<&Value>| v.and_then(Value::as_array).is_some_and(|a| !a.is_empty());
    let mut missing = Vec::new();
    for (item, present) in [
        ("node_id", has("node_id")),
        ("domain", has("domain")),
        ("api_url", has("api_url")),
        ("websocket_url", has("websocket_url")),
        ("deliver_url", has("deliver_url") || has_fed("deliver_url")),
        (
            "requirements",
            has_fed("requirements") || has("requirements"),
        ),
        (
            "signing_keys",
            nonempty_array(obj.get("signing_keys"))
                || nonempty_array(fed.and_then(|f| f.get("signing_keys")))
                || has("public_keys_url"),
        ),
        ("supported_versions", has("supported_versions")),
        ("supported_profiles", has("supported_profiles")),
        ("policy", has_fed("policy") || has("federation_policy")),
    ] {
        if !present {
            missing.push(item);
        }
    }
    missing
}

/// The identity resolution URL for `identity`: the template with `{identity}` replaced by
/// the percent-encoded address (every byte but RFC 3986 unreserved ones), or the address
/// appended when the template has no placeholder.
pub fn identity_url(template: &str, identity: &str) -> String {
    let mut enc = String::with_capacity(identity.len() * 3);
    for b in identity.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            enc.push(char::from(b));
        } else {
            enc.push_str(&format!("%{b:02X}"));
        }
    }
    if template.contains("{identity}") {
        template.replace("{identity}", &enc)
    } else {
        format!("{}/{enc}", template.trim_end_matches('/'))
    }
}

/// Least time between two fetches of one node's document triggered by unknown key ids, so
/// a stream of requests naming made-up keys cannot make this node hammer the peer.
pub const REFETCH_MIN_INTERVAL_MS: i64 = 60_000;

/// Whether an unknown `key_id` should trigger a re-fetch of the node document (v1.0 §7.4
/// "re-fetch when a key_id is unknown"): yes, unless the last fetch was under
/// [`REFETCH_MIN_INTERVAL_MS`] ago.
pub fn should_refetch(last_fetch: Option<Timestamp>, now: Timestamp) -> bool {
    should_refetch_after(last_fetch, now, REFETCH_MIN_INTERVAL_MS)
}

/// [`should_refetch`] with a configured least interval `min_interval_ms` (a node may run
/// with a shorter one, e.g. a conformance target whose cases cannot wait a minute). v1.0
/// §7.4 sets no interval; the bound only keeps made-up key ids from hammering the peer.
pub fn should_refetch_after(
    last_fetch: Option<Timestamp>,
    now: Timestamp,
    min_interval_ms: i64,
) -> bool {
    last_fetch.is_none_or(|t| now.unix_ms().saturating_sub(t.unix_ms()) >= min_interval_ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::{public_key_to_b64url, public_key_to_spki_pem};
    use ed25519_dalek::SigningKey;
    use proptest::prelude::*;
    use serde_json::json;

    fn pk(seed: u8) -> VerifyingKey {
        SigningKey::from_bytes(&[seed; 32]).verifying_key()
    }

    #[test]
    fn a_document_is_authenticated_only_from_its_domain_or_its_configured_entry() {
        let d = ours();
        let disc = |url| DocumentSource::Discovery { url };
        // §15.2's URL for b.test (the client checked the certificate for that host).
        assert!(
            authenticate_node_document(&d, "b.test", disc("https://b.test/.well-known/loom.json"))
                .is_ok()
        );
        assert!(
            authenticate_node_document(&d, "B.Test.", disc("https://B.TEST/.well-known/loom.json"))
                .is_ok()
        );
        // Another host (a certificate for another name), plain http, another path or port.
        for url in [
            "https://evil.test/.well-known/loom.json",
            "http://b.test/.well-known/loom.json",
            "https://b.test/other/loom.json",
            "https://b.test:8443/.well-known/loom.json",
            "https://b.test.evil.test/.well-known/loom.json",
            "not a url",
        ] {
            let e = authenticate_node_document(&d, "b.test", disc(url)).unwrap_err();
            assert_eq!(
                (e.code, e.field.as_str(), e.section),
                (
                    ErrorCode::SignatureInvalid,
                    "X-LOOM-Node",
                    "v1.1 §15.2, §15.3"
                ),
                "{url}"
            );
        }
        // The operator's entry: exactly the document URL under the configured base.
        let peer = |base, url| DocumentSource::ConfiguredPeer { base, url };
        assert!(
            authenticate_node_document(
                &d,
                "b.test",
                peer(
                    "http://127.0.0.1:9/",
                    "http://127.0.0.1:9/.well-known/loom.json"
                )
            )
            .is_ok()
        );
        assert!(
            authenticate_node_document(
                &d,
                "b.test",
                peer(
                    "http://127.0.0.1:9",
                    "http://127.0.0.1:10/.well-known/loom.json"
                )
            )
            .is_err()
        );
        // Where the operator's DNS server pointed (§15.1 may name another host): https only,
        // and the document must still name the node.
        let dns = |url| DocumentSource::DnsDiscovery { url };
        assert!(
            authenticate_node_document(
                &d,
                "b.test",
                dns("https://loom.b-hosting.test:8443/.well-known/loom.json")
            )
            .is_ok()
        );
        let e =
            authenticate_node_document(&d, "b.test", dns("http://b.test/.well-known/loom.json"))
                .unwrap_err();
        assert_eq!(
            (e.code, e.field.as_str(), e.section),
            (
                ErrorCode::SignatureInvalid,
                "X-LOOM-Node",
                "v1.1 §15.1, §15.3"
            )
        );
        let e = authenticate_node_document(
            &d,
            "c.test",
            dns("https://loom.b-hosting.test/.well-known/loom.json"),
        )
        .unwrap_err();
        assert_eq!(e.field.as_str(), "domain");
        // The right place, but a document naming another node.
        let e =
            authenticate_node_document(&d, "c.test", disc("https://c.test/.well-known/loom.json"))
                .unwrap_err();
        assert_eq!(
            (e.code, e.field.as_str()),
            (ErrorCode::SignatureInvalid, "domain")
        );
    }

    fn ours() -> Value {
        json!({
            "loom": "1.1", "node_id": "b.test", "domain": "b.test",
            "api_url": "https://b.test:8443/v1", "websocket_url": "wss://b.test:8443/ws",
            "federation": {"deliver_url": "https://b.test:8443/v1/federation/deliver", "requirements": ["LOOM-HTTP-SIG-1"], "policy": "open"},
            "signing_keys": [{"key_id": "k_node_sign_1", "public_key": public_key_to_b64url(&pk(1)), "algorithm": "Ed25519", "status": "active"}],
            "supported_versions": ["1.1"], "supported_profiles": ["loom-core-1"],
        })
    }

    #[test]
    fn our_own_shape_is_complete_and_reads() {
        assert!(missing_members(&ours()).is_empty());
        let v = read_node_document(&ours(), "B.TEST.").unwrap();
        assert_eq!(v.domain, "b.test");
        assert_eq!(
            v.identity_resolve_url,
            "https://b.test:8443/v1/identity/{identity}"
        );
        assert_eq!(v.keys.lookup("k_node_sign_1"), KeyLookup::Found(&pk(1)));
        assert_eq!(v.policy.as_deref(), Some("open"));
        assert!(v.deliver_url_given);
    }

    #[test]
    fn the_existing_nodes_shape_reads() {
        let doc = json!({
            "loom_version": "1.1", "node_id": "remote.test",
            "federation": {"signing_keys": [
                {"key_id": "k_old", "public_key_pem": public_key_to_spki_pem(&pk(2)), "status": "retired"},
                {"key_id": "k_new", "public_key_pem": public_key_to_spki_pem(&pk(3))},
                {"key_id": "k_bad", "public_key_pem": "-----BEGIN PUBLIC KEY-----\n!!\n-----END PUBLIC KEY-----"}
            ]},
            "deliver_url": "http://127.0.0.1:9/v1/federation/deliver",
        });
        let v = read_node_document(&doc, "remote.test").unwrap();
        assert_eq!(v.version.as_deref(), Some("1.1"));
        assert_eq!(v.keys.lookup("k_new"), KeyLookup::Found(&pk(3)));
        assert_eq!(
            v.keys.lookup("k_old"),
            KeyLookup::NotActive(&KeyStatus::Retired)
        );
        assert_eq!(v.keys.lookup("k_none"), KeyLookup::UnknownKeyId);
        assert_eq!(v.skipped_keys.len(), 1);
        assert_eq!(
            v.identity_resolve_url,
            "http://127.0.0.1:9/v1/identity/{identity}"
        );
        assert_eq!(
            v.keys
                .active_key("k_old", "X-LOOM-Key-Id")
                .unwrap_err()
                .code,
            ErrorCode::SignatureInvalid
        );
        assert!(missing_members(&doc).contains(&"api_url"));
    }

    #[test]
    fn trust_critical_rules_are_strict() {
        let e = read_node_document(&ours(), "c.test").unwrap_err();
        assert_eq!(
            (e.code, e.field.as_str()),
            (ErrorCode::SignatureInvalid, "domain")
        );
        let mut twice = ours();
        twice["federation"]["signing_keys"] =
            json!([{"key_id": "k_node_sign_1", "public_key": public_key_to_b64url(&pk(9))}]);
        assert!(read_node_document(&twice, "b.test").is_err());
        let mut same_twice = ours();
        same_twice["federation"]["signing_keys"] = same_twice["signing_keys"].clone();
        assert_eq!(
            read_node_document(&same_twice, "b.test")
                .unwrap()
                .keys
                .keys
                .len(),
            1
        );
        assert!(read_node_document(&json!([]), "b.test").is_err());
        assert!(read_node_document(&json!({"loom": "1.1"}), "b.test").is_err());
    }

    #[test]
    fn defaults_and_urls() {
        let v = read_node_document(
            &json!({"domain": "d.test", "api_url": "https://api.d.test/v1"}),
            "d.test",
        )
        .unwrap();
        assert_eq!(v.deliver_url, "https://api.d.test/v1/federation/deliver");
        assert!(!v.deliver_url_given);
        assert_eq!(
            identity_url(&v.identity_resolve_url, "loom://bob@d.test"),
            "https://api.d.test/v1/identity/loom%3A%2F%2Fbob%40d.test"
        );
        assert_eq!(
            identity_url("https://x.test/id/", "a@b"),
            "https://x.test/id/a%40b"
        );
        assert_eq!(url_origin("https://a.test:1/x?y"), Some("https://a.test:1"));
        assert_eq!(url_origin("nonsense"), None);
        let v1 = json!({"loom_version": "1.0", "domain": "e.test", "federation_policy": {"open": false, "allowlist": ["x.test"]}, "public_keys_url": "https://e.test/.well-known/loom-keys"});
        let v = read_node_document(&v1, "e.test").unwrap();
        assert_eq!(v.policy.as_deref(), Some("allowlist"));
        assert!(v.public_keys_url.is_some());
        let t = |ms| Some(Timestamp::from_unix_ms(ms));
        assert!(should_refetch(None, Timestamp::from_unix_ms(0)));
        assert!(!should_refetch(t(0), Timestamp::from_unix_ms(59_999)));
        assert!(should_refetch(t(0), Timestamp::from_unix_ms(60_000)));
        assert!(!should_refetch_after(
            t(0),
            Timestamp::from_unix_ms(99),
            100
        ));
        assert!(should_refetch_after(
            t(0),
            Timestamp::from_unix_ms(100),
            100
        ));
        assert!(should_refetch_after(None, Timestamp::from_unix_ms(0), 100));
    }

    proptest! {
        /// The lenient reader never panics, whatever the document holds.
        #[test]
        fn reading_never_panics(v in crate::federation::testing::arb_json(), fed in crate::federation::testing::arb_json()) {
            let _ = read_node_document(&v, "b.test");
            let _ = missing_members(&v);
            let doc = json!({"domain": "b.test", "signing_keys": [v.clone()], "federation": fed, "deliver_url": v});
            let _ = read_node_document(&doc, "b.test");
        }
    }

    /// Regression (fuzz target `node_document`, `crash-0006ac02…`): an empty `deliver_url`
    /// was read as the endpoint.
    #[test]
    fn an_empty_deliver_url_is_refused_naming_it() {
        for (doc, field) in [
            (
                json!({"domain": "b.test", "federation": {"deliver_url": ""}}),
                "federation.deliver_url",
            ),
            (
                json!({"domain": "b.test", "deliver_url": "  "}),
                "deliver_url",
            ),
        ] {
            let e = read_node_document(&doc, "b.test").unwrap_err();
            assert_eq!((e.field.as_str(), e.section), (field, SECTION), "{e:?}");
        }
    }
}
