//! The provisioning part of a case's context: the identities a case acts as. With `register`
//! provisioning each is fresh (`name-<case tag>-<n>@domain`), registered over the DESIGN.md §9
//! API with the members its type needs and the profile's registration extras, then logged in
//! (v1.1 §14.2); with `pool` provisioning the case logs in the next pooled identity of the type.
//!
//! Setup is lenient (issue 13, item 4): public keys are sent as SPKI PEM without a trailing
//! newline (DESIGN.md §9), agents carry a full `agent_info` (provider, model, version), a
//! challenge id is read from `challenge_id` or `challenge` and sent as both. Every request is
//! recorded, so an `error` shows the exchange that stopped it.

use super::shapes::challenge_id;
use super::{Exchanges, Ident, TestData};
use crate::finding::{Ex, Finding};
use crate::target::TargetInfo;
use ed25519_dalek::{SigningKey, VerifyingKey};
use loom_client::Identity;
use loom_protocol::keys::{public_key_to_spki_pem, sign_b64url};
use loom_protocol::registration::{registration_document_hash, registration_text};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// SPKI PEM of `key` without a trailing newline (DESIGN.md §9: a node may trim whitespace
/// before hashing the registration document; the trimmed form hashes the same either way).
pub fn pem(key: &VerifyingKey) -> String {
    public_key_to_spki_pem(key).trim_end().to_owned()
}

/// The registration request for `id` answering the challenge (`challenge_id`, `nonce`):
/// the document (PEMs trimmed, `extra` members added where the document has none of that
/// name) and `registration_proof` over its DESIGN.md §9 hash.
pub fn registration_request(
    id: &Identity,
    extra: &Map<String, Value>,
    challenge: &str,
    nonce: &str,
) -> Value {
    let mut doc = id.registration_document();
    if let Some(keys) = doc["signing_keys"].as_array_mut() {
        for k in keys {
            if let Some(p) = k["public_key_pem"]
                .as_str()
                .map(|p| p.trim_end().to_owned())
            {
                k["public_key_pem"] = p.into();
            }
        }
    }
    if let Some(o) = doc.as_object_mut() {
        for (k, v) in extra {
            o.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    sign_registration(
        doc,
        id.address(),
        id.signing_key(),
        id.key_id(),
        challenge,
        nonce,
    )
}

/// Adds `registration_proof` to `doc`: the key `key_id` signs the DESIGN.md §9 text binding
/// `identity`, the key, the document hash and `nonce`.
pub fn sign_registration(
    mut doc: Value,
    identity: &str,
    key: &SigningKey,
    key_id: &str,
    challenge: &str,
    nonce: &str,
) -> Value {
    let hash = registration_document_hash(&doc);
    let text = registration_text(identity, key_id, &hash, nonce);
    doc["registration_proof"] = json!({
        "challenge_id": challenge,
        "key_id": key_id,
        "signature": sign_b64url(key, None, text.as_bytes()),
    });
    doc
}

/// The identities of one case.
#[derive(Debug, Default)]
pub struct Provisioner {
    registered: u32,
    /// The human who delegates to the case's agents (§6.4), registered on first use.
    sponsor: Option<Identity>,
    /// Pooled identities handed out so far, by type (`pool` provisioning).
    pooled: BTreeMap<String, usize>,
}

impl Provisioner {
    /// A fresh, unregistered identity `name-<case tag>-<n>` of `kind` (no type members).
    pub fn fresh_identity(
        &mut self,
        data: &mut TestData,
        target: &TargetInfo,
        name: &str,
        kind: &str,
    ) -> Result<Identity, Finding> {
        self.registered += 1;
        let local = format!("{name}-{}-{}", data.tag(), self.registered);
        let address = format!("loom://{local}@{}", target.domain);
        let seed = data.seed32();
        Ok(Identity::from_seed(&address, &seed)
            .map_err(|e| Finding::Error(format!("identity {address}: {e}")))?
            .with_type(kind))
    }

    /// Registers (or, with `pool` provisioning, picks) and logs in an identity of `kind`.
    pub async fn identity(
        &mut self,
        net: &mut Exchanges,
        data: &mut TestData,
        target: &TargetInfo,
        name: &str,
        kind: &str,
    ) -> Result<Ident, Finding> {
        if target.pool.is_some() {
            return self.pooled_identity(net, target, kind).await;
        }
        let id = self.fresh_identity(data, target, name, kind)?;
        let members = self
            .type_members(net, data, target, id.address(), kind)
            .await?;
        register_and_login(net, target, id.with_members(members)).await
    }

    async fn pooled_identity(
        &mut self,
        net: &mut Exchanges,
        target: &TargetInfo,
        kind: &str,
    ) -> Result<Ident, Finding> {
        let k = self.pooled.get(kind).copied().unwrap_or(0);
        self.pooled.insert(kind.to_owned(), k + 1);
        let id = match target.pooled(kind, k) {
            Some(Ok(id)) => id,
            Some(Err(e)) => return Err(Finding::Error(format!("setup: profile pool: {e}"))),
            None => {
                return Err(Finding::Error(format!(
                    "setup: this case needs {} identities of type {kind}, the profile's pool lists {}; add [[provisioning.identity]] entries",
                    k + 1,
                    target.pooled_count(kind)
                )));
            }
        };
        login(net, &id).await.map_err(|f| {
            Finding::Error(format!(
                "setup: could not log in pooled identity {} ({}); check its key_id and seed_hex in the profile",
                id.address(),
                reason(&f)
            ))
        })
    }

    /// The members an identity of `kind` at `address` must carry (v1.1 §6.3/§6.4): an agent
    /// is delegated (scope `*`, 30 days) by the case's sponsoring human and carries the
    /// profile's `agent_info` (default: provider, model and version of the harness); a team
    /// has an empty members list and routing policy `all`; a service names the harness as its
    /// operator.
    pub async fn type_members(
        &mut self,
        net: &mut Exchanges,
        data: &mut TestData,
        target: &TargetInfo,
        address: &str,
        kind: &str,
    ) -> Result<Value, Finding> {
        Ok(match kind {
            "agent" => {
                let expires = data.now_plus_days(30);
                let sponsor = self.sponsor(net, data, target).await?;
                let mut m = sponsor.delegate_agent(address, &["*".to_owned()], &expires);
                m["agent_info"] = target.agent_info.clone();
                m
            }
            "team" => json!({"members": [], "routing_policy": "all"}),
            "service" => json!({"operator": "LOOM conformance harness"}),
            _ => json!({}),
        })
    }

    /// The case's sponsoring human, registered on first use.
    pub async fn sponsor(
        &mut self,
        net: &mut Exchanges,
        data: &mut TestData,
        target: &TargetInfo,
    ) -> Result<Identity, Finding> {
        if let Some(s) = &self.sponsor {
            return Ok(s.clone());
        }
        let id = self.fresh_identity(data, target, "sponsor", "human")?;
        let ident = register_and_login(net, target, id).await?;
        self.sponsor = Some(ident.id.clone());
        Ok(ident.id)
    }
}

/// The text of a finding, for setup errors.
fn reason(f: &Finding) -> String {
    match f {
        Finding::Fail {
            expected, actual, ..
        } => format!("expected {expected}; got {actual}"),
        Finding::Skip(m) | Finding::Unsupported(m) | Finding::Error(m) => m.clone(),
    }
}

/// Registers `id` on the target: the registration challenge, then the signed document with
/// the profile's registration extras. Returns the deciding exchange: the challenge when the
/// node refused it (a node may refuse a registered address already there), otherwise the
/// registration.
pub async fn register(
    net: &mut Exchanges,
    target: &TargetInfo,
    id: &Identity,
) -> Result<Ex, Finding> {
    let ex = net
        .call(
            "POST",
            "/v1/identity/challenge",
            None,
            Some(&json!({"identity": id.address(), "key_id": id.key_id()})),
        )
        .await?;
    if !net.transcript(ex).is_success() {
        return Ok(ex);
    }
    let ch = net.json(ex);
    let req = registration_request(
        id,
        &target.registration_extra,
        &challenge_id(&ch),
        ch["nonce"].as_str().unwrap_or(""),
    );
    net.call("POST", "/v1/identity", None, Some(&req)).await
}

/// Logs `id` in (v1.1 §14.2): challenge, then Ed25519 over the raw nonce; the challenge id
/// is sent as `challenge_id` and as `challenge` (DESIGN.md §9). Every exchange is recorded.
pub async fn login(net: &mut Exchanges, id: &Identity) -> Result<Ident, Finding> {
    login_with(net, id, id.signing_key(), id.key_id()).await
}

/// [`login`] with another key of the identity.
pub async fn login_with(
    net: &mut Exchanges,
    id: &Identity,
    key: &SigningKey,
    key_id: &str,
) -> Result<Ident, Finding> {
    let (ex, _) = token_request(net, id.address(), key, key_id).await?;
    let t = net.ok_body(ex)?;
    let access = t["access_token"].as_str().unwrap_or_default().to_owned();
    net.expect_at(
        ex,
        !access.is_empty(),
        "an access_token in the token response (v1.1 §14.2)",
        format!("body = {}", crate::show::compact(&t)),
    )?;
    Ok(Ident {
        id: id.clone(),
        token: access,
        refresh: t["refresh_token"].as_str().unwrap_or_default().to_owned(),
    })
}

/// The challenge and token exchanges of a login as `identity` with `key`/`key_id`; returns
/// the last exchange (the token request, or the challenge when that was refused) and whether
/// the token request was made.
pub async fn token_request(
    net: &mut Exchanges,
    identity: &str,
    key: &SigningKey,
    key_id: &str,
) -> Result<(Ex, bool), Finding> {
    let ex = net
        .call(
            "POST",
            "/v1/auth/challenge",
            None,
            Some(&json!({"identity": identity, "key_id": key_id})),
        )
        .await?;
    if !net.transcript(ex).is_success() {
        return Ok((ex, false));
    }
    let ch = net.json(ex);
    let id = challenge_id(&ch);
    let sig = sign_b64url(key, None, ch["nonce"].as_str().unwrap_or("").as_bytes());
    let ex = net
        .call(
            "POST",
            "/v1/auth/token",
            None,
            Some(&json!({"identity": identity, "key_id": key_id, "challenge_id": id, "challenge": id, "signature": sig})),
        )
        .await?;
    Ok((ex, true))
}

/// Registers `id` and logs it in; a refusal is a harness `error` that names the exchange's
/// status, §24.1 code and message and what to configure (setup is lenient, assertions strict).
pub async fn register_and_login(
    net: &mut Exchanges,
    target: &TargetInfo,
    id: Identity,
) -> Result<Ident, Finding> {
    let ex = register(net, target, &id).await?;
    let t = net.transcript(ex);
    if !t.is_success() {
        // The cause and the fix are added by `setup::name_trouble`, which sees the exchange.
        return Err(Finding::Error(format!(
            "setup: could not register {} ({} {} answered HTTP {}{})",
            id.address(),
            t.method,
            t.path,
            t.status,
            crate::show::error_summary(t)
        )));
    }
    login(net, &id).await.map_err(|f| {
        Finding::Error(format!(
            "setup: registered {} but could not log in ({})",
            id.address(),
            reason(&f)
        ))
    })
}
