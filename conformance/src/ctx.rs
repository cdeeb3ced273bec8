//! What a case works with: a connection to the target, identities provisioned for it alone,
//! deterministic ids, and assertions that turn a disagreement into expected vs. actual with
//! the deciding exchange. Every exchange a case makes is recorded for the report.

use crate::case::{Finding, Verdict, fail};
use crate::target::TargetInfo;
use loom_client::api::encode_component;
use loom_client::{Client, EnvelopeFactory, Identity, MessageDraft, Transcript};
use loom_protocol::clock::Clock;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::time::Duration;

/// An identity the harness provisioned, with its session.
#[derive(Debug, Clone)]
pub struct Ident {
    /// Address, key and type.
    pub id: Identity,
    /// The bearer access token.
    pub token: String,
    /// The refresh token.
    pub refresh: String,
}

impl Ident {
    /// `loom://…`.
    pub fn address(&self) -> &str {
        self.id.address()
    }

    /// Signs an envelope in place (context-prefixed, v1.1 §7.3).
    pub fn sign(&self, env: &mut Value) {
        // Signing a JSON object cannot fail; a non-object is the case's bug.
        let _ = self.id.sign(env);
    }
}

/// The per-case context.
pub struct Ctx {
    /// What the harness knows about the target.
    pub target: Arc<TargetInfo>,
    client: Client,
    factory: EnvelopeFactory<Arc<dyn Clock>>,
    case_tag: String,
    transcripts: Vec<Transcript>,
    /// Multiplies every timeout (slow targets, `--timeout-scale`).
    pub timeout_scale: f64,
    registered: u32,
    /// The human who delegates to the case's agents (§6.4), registered on first use.
    sponsor: Option<Identity>,
    /// Pooled identities handed out so far, by type (`pool` provisioning).
    pooled: std::collections::BTreeMap<String, usize>,
}

impl std::fmt::Debug for Ctx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ctx")
            .field("case", &self.case_tag)
            .finish_non_exhaustive()
    }
}

/// The seed of a case's ids: the run seed mixed with the case ID, so a case draws the same
/// ids whatever else runs and in whatever order.
pub fn case_seed(run_seed: u64, case_id: &str) -> u64 {
    let h = Sha256::digest(format!("{run_seed}/{case_id}").as_bytes());
    u64::from_be_bytes(h[..8].try_into().unwrap_or([0; 8]))
}

impl Ctx {
    /// A context for `case_id` against `target`.
    pub fn new(
        target: Arc<TargetInfo>,
        case_id: &str,
        run_seed: u64,
        clock: Arc<dyn Clock>,
        timeout_scale: f64,
    ) -> Result<Ctx, Finding> {
        let client = target.client(Duration::from_secs_f64(10.0 * timeout_scale))?;
        let seed = case_seed(run_seed, case_id);
        Ok(Ctx {
            target,
            client,
            factory: EnvelopeFactory::new(clock, seed),
            case_tag: format!("{:08x}", seed as u32),
            transcripts: Vec::new(),
            timeout_scale,
            registered: 0,
            sponsor: None,
            pooled: std::collections::BTreeMap::new(),
        })
    }

    /// Every exchange so far.
    pub fn transcripts(&self) -> &[Transcript] {
        &self.transcripts
    }

    /// Takes the recorded exchanges.
    pub fn take_transcripts(&mut self) -> Vec<Transcript> {
        std::mem::take(&mut self.transcripts)
    }

    /// Index of the last exchange, for [`Finding::Fail::decisive`].
    fn last(&self) -> Option<usize> {
        self.transcripts.len().checked_sub(1)
    }

    /// Sends a request; records and returns the exchange. A transport failure is a harness
    /// `error` (the target's readiness was already established).
    pub async fn exchange(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<Vec<u8>>,
        token: Option<&str>,
    ) -> Result<usize, Finding> {
        let t = self
            .client
            .exchange(method, path, headers, body, token)
            .await
            .map_err(|e| Finding::Error(format!("{method} {path}: {e}")))?;
        self.transcripts.push(t);
        Ok(self.transcripts.len() - 1)
    }

    /// A JSON request with an optional bearer token.
    pub async fn call(
        &mut self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<&Value>,
    ) -> Result<usize, Finding> {
        let bytes = body.map(|b| serde_json::to_vec(b).unwrap_or_default());
        self.exchange(method, path, &[], bytes, token).await
    }

    /// GET with a token.
    pub async fn get(&mut self, path: &str, token: &str) -> Result<usize, Finding> {
        self.call("GET", path, Some(token), None).await
    }

    /// The recorded exchange `i`.
    pub fn t(&self, i: usize) -> &Transcript {
        &self.transcripts[i]
    }

    /// The JSON body of exchange `i` (Null when not JSON).
    pub fn json(&self, i: usize) -> Value {
        self.transcripts[i].json().unwrap_or(Value::Null)
    }

    /// POSTs a signed envelope as `from`.
    pub async fn send(&mut self, from: &Ident, env: &Value) -> Result<usize, Finding> {
        self.call("POST", "/v1/envelopes", Some(&from.token), Some(env))
            .await
    }

    /// Registers and logs in a fresh identity `name-<case tag>-<n>` of `kind` on the target,
    /// with the members its type requires ([`Ctx::type_members`]).
    /// With `pool` provisioning, the case's next pooled identity of `kind` is logged in
    /// instead (nothing is registered).
    pub async fn identity(&mut self, name: &str, kind: &str) -> Result<Ident, Finding> {
        if self.target.pool.is_some() {
            return self.pooled_identity(kind).await;
        }
        let id = self.fresh_identity(name, kind)?;
        let members = self.type_members(id.address(), kind).await?;
        self.register_and_login(id.with_members(members)).await
    }

    /// The case's next pooled identity of `kind`, logged in.
    async fn pooled_identity(&mut self, kind: &str) -> Result<Ident, Finding> {
        let k = self.pooled.get(kind).copied().unwrap_or(0);
        self.pooled.insert(kind.to_owned(), k + 1);
        let id = match self.target.pooled(kind, k) {
            Some(Ok(id)) => id,
            Some(Err(e)) => return Err(Finding::Error(format!("setup: profile pool: {e}"))),
            None => {
                return Err(Finding::Error(format!(
                    "setup: this case needs {} identities of type {kind}, the profile's pool lists {}; add [[provisioning.identity]] entries",
                    k + 1,
                    self.target.pooled_count(kind)
                )));
            }
        };
        let s = id.login(&mut self.client).await.map_err(|e| {
            Finding::Error(format!(
                "setup: could not log in pooled identity {} ({e}); check its key_id and seed_hex in the profile",
                id.address()
            ))
        })?;
        Ok(Ident {
            id,
            token: s.access_token,
            refresh: s.refresh_token,
        })
    }

    /// A fresh, unregistered identity `name-<case tag>-<n>` of `kind` (no type members).
    pub fn fresh_identity(&mut self, name: &str, kind: &str) -> Result<Identity, Finding> {
        self.registered += 1;
        let local = format!("{name}-{}-{}", self.case_tag, self.registered);
        let address = format!("loom://{local}@{}", self.target.domain);
        let seed = self.factory.bytes32();
        Ok(Identity::from_seed(&address, &seed)
            .map_err(|e| Finding::Error(format!("identity {address}: {e}")))?
            .with_type(kind))
    }

    /// The members an identity of `kind` at `address` must carry (v1.1 §6.3/§6.4): an agent
    /// is delegated (scope `*`, 30 days) by the case's sponsoring human; a team has an empty
    /// members list and routing policy `all`; a service names the harness as its operator.
    pub async fn type_members(&mut self, address: &str, kind: &str) -> Result<Value, Finding> {
        Ok(match kind {
            "agent" => {
                let expires = self.factory.now().plus_ms(30 * 24 * 3_600_000).to_rfc3339();
                self.sponsor()
                    .await?
                    .delegate_agent(address, &["*".to_owned()], &expires)
            }
            "team" => serde_json::json!({"members": [], "routing_policy": "all"}),
            "service" => serde_json::json!({"operator": "LOOM conformance harness"}),
            _ => serde_json::json!({}),
        })
    }

    /// The case's sponsoring human, registered on first use.
    pub async fn sponsor(&mut self) -> Result<Identity, Finding> {
        if let Some(s) = &self.sponsor {
            return Ok(s.clone());
        }
        let id = self.fresh_identity("sponsor", "human")?;
        let ident = self.register_and_login(id).await?;
        self.sponsor = Some(ident.id.clone());
        Ok(ident.id)
    }

    /// Registers `id` and logs it in, recording both exchanges; a target that refuses is a
    /// harness `error` naming what to configure (setup is lenient, assertions strict).
    pub async fn register_and_login(&mut self, id: Identity) -> Result<Ident, Finding> {
        let setup = |what: &str, e: loom_client::ClientError| {
            Finding::Error(format!(
                "setup: could not {what} {} ({e}); the target must allow identity registration (DESIGN.md §9) or the profile must list identities",
                id.address()
            ))
        };
        id.register(&mut self.client)
            .await
            .map_err(|e| setup("register", e))?;
        let s = id
            .login(&mut self.client)
            .await
            .map_err(|e| setup("log in", e))?;
        Ok(Ident {
            id,
            token: s.access_token,
            refresh: s.refresh_token,
        })
    }

    /// Every event of `who` from `GET /v1/events` (after `since`, if given), following
    /// `has_more`/`next_cursor` pages (at most 50), so a case finds its own events however
    /// many other activity the identity has (pooled identities are shared by every case).
    pub async fn events(
        &mut self,
        who: &Ident,
        since: Option<&str>,
    ) -> Result<Vec<Value>, Finding> {
        let mut out = Vec::new();
        let mut cursor = since.map(str::to_owned);
        for page in 0..50 {
            // The first page starts after the event id `since`; later pages resume at the
            // node's `next_cursor`.
            let path = match &cursor {
                Some(c) if page == 0 => format!("/v1/events?since={}", encode_component(c)),
                Some(c) => format!("/v1/events?cursor={}", encode_component(c)),
                None => "/v1/events".to_owned(),
            };
            let i = self.get(&path, &who.token).await?;
            let body = self.body_of(i, 200)?;
            out.extend(body["events"].as_array().cloned().unwrap_or_default());
            let next = body["next_cursor"].as_str().map(str::to_owned);
            if body["has_more"] != Value::Bool(true) || next.is_none() || next == cursor {
                break;
            }
            cursor = next;
        }
        Ok(out)
    }

    /// 32 fresh bytes from the case's seed (keys of identities a case builds by hand).
    pub fn seed32(&mut self) -> [u8; 32] {
        self.factory.bytes32()
    }

    /// A fresh `thr_` id.
    pub fn thread_id(&mut self) -> String {
        self.factory.thread_id()
    }

    /// A fresh `env_` id.
    pub fn envelope_id(&mut self) -> String {
        self.factory.envelope_id()
    }

    /// `address` spelled in upper case after the scheme (`loom://ALICE-…@DOMAIN`): the same
    /// identity compared case-insensitively, not its canonical form (v1.1 §6.1).
    pub fn upper_case_address(address: &str) -> String {
        match address.split_once("://") {
            Some((scheme, rest)) => format!("{scheme}://{}", rest.to_uppercase()),
            None => address.to_uppercase(),
        }
    }

    /// The harness clock's now shifted by `ms` (negative: in the past), RFC 3339.
    pub fn now_plus_ms(&self, ms: i64) -> String {
        self.factory.now().plus_ms(ms).to_rfc3339()
    }

    /// The harness clock's now shifted by whole days.
    pub fn now_plus_days(&self, days: i64) -> String {
        self.now_plus_ms(days * 24 * 3_600_000)
    }

    /// The harness clock's now (RFC 3339).
    pub fn now(&self) -> String {
        self.factory.now().to_rfc3339()
    }

    /// An unsigned message from `from` to `to` in `thread`, replying to `parent`.
    pub fn message(
        &mut self,
        from: &Ident,
        thread: &str,
        parent: Option<&str>,
        to: &[&Ident],
        text: &str,
    ) -> Value {
        let draft = MessageDraft {
            thread_id: Some(thread.to_owned()),
            parent_id: parent.map(str::to_owned),
            to: to.iter().map(|i| i.address().to_owned()).collect(),
            text: text.to_owned(),
        };
        let mut env = self
            .factory
            .message(&from.id, &draft)
            .unwrap_or(Value::Null);
        if let Some(o) = env.as_object_mut() {
            o.remove("signature");
        }
        env
    }

    /// `message`, signed.
    pub fn signed_message(
        &mut self,
        from: &Ident,
        thread: &str,
        parent: Option<&str>,
        to: &[&Ident],
        text: &str,
    ) -> Value {
        let mut env = self.message(from, thread, parent, to, text);
        from.sign(&mut env);
        env
    }

    /// An unsigned `thread_op` from `from`.
    pub fn op(&mut self, from: &Ident, thread: &str, intent: &str, parameters: Value) -> Value {
        let mut env = self
            .factory
            .thread_op(&from.id, thread, intent, parameters)
            .unwrap_or(Value::Null);
        if let Some(o) = env.as_object_mut() {
            o.remove("signature");
        }
        env
    }

    /// Starts a thread: `owner` sends a root message to `to`; returns (thread id, root).
    pub async fn start_thread(
        &mut self,
        owner: &Ident,
        to: &[&Ident],
    ) -> Result<(String, Value), Finding> {
        let t = self.thread_id();
        let root = self.signed_message(owner, &t, None, to, "thread root");
        let i = self.send(owner, &root).await?;
        self.expect_status(i, 201)?;
        Ok((t, root))
    }

    // ----- assertions -----

    /// The status of exchange `i` must be `want`.
    pub fn expect_status(&self, i: usize, want: u16) -> Verdict {
        let t = self.t(i);
        if t.status == want {
            return Ok(());
        }
        Err(Finding::Fail {
            expected: format!("HTTP {want}"),
            actual: format!("HTTP {}{}", t.status, error_summary(t)),
            decisive: Some(i),
        })
    }

    /// Exchange `i` must be a §24.1 error with `status` and `code`.
    pub fn expect_error(&self, i: usize, status: u16, code: &str) -> Verdict {
        let t = self.t(i);
        let body = t.json().unwrap_or(Value::Null);
        let got_code = body.pointer("/error/code").and_then(Value::as_str);
        if t.status == status && got_code == Some(code) {
            return self.expect_error_shape(i);
        }
        Err(Finding::Fail {
            expected: format!("HTTP {status} with error code {code} (v1.1 §24.2)"),
            actual: format!("HTTP {}{}", t.status, error_summary(t)),
            decisive: Some(i),
        })
    }

    /// Exchange `i` must be a rejection (4xx) with a §24.1 body carrying `code`.
    pub fn expect_rejected_with(&self, i: usize, code: &str) -> Verdict {
        let status = loom_protocol::ErrorCode::parse(code).map_or(400, |c| c.http_status());
        self.expect_error(i, status, code)
    }

    /// Exchange `i` must be a refusal: a 4xx with a §24.1 body (for rules whose error code the
    /// spec does not name).
    pub fn expect_refused(&self, i: usize) -> Verdict {
        let st = self.t(i).status;
        self.expect_that(
            (400..500).contains(&st),
            "a 4xx refusal with a §24.1 error body",
            format!("HTTP {st}"),
        )?;
        self.expect_error_shape(i)
    }

    /// Exchange `i` must carry a §24.1 body: `error.code` from the registry, `message`,
    /// `request_id` and `timestamp`.
    pub fn expect_error_shape(&self, i: usize) -> Verdict {
        let body = self.json(i);
        let e = &body["error"];
        let mut missing = Vec::new();
        if e["code"]
            .as_str()
            .and_then(loom_protocol::ErrorCode::parse)
            .is_none()
        {
            missing.push("error.code from the §24.2 registry");
        }
        for m in ["message", "request_id", "timestamp"] {
            if !e[m].is_string() {
                missing.push(m);
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        Err(Finding::Fail {
            expected: "a §24.1 error body {error: {code, message, details, request_id, timestamp}}"
                .into(),
            actual: format!(
                "missing {}: {}",
                missing.join(", "),
                preview(&self.t(i).response_body)
            ),
            decisive: Some(i),
        })
    }

    /// `what` must equal `want`.
    pub fn expect_eq(&self, what: &str, want: &Value, got: &Value) -> Verdict {
        if want == got {
            return Ok(());
        }
        Err(Finding::Fail {
            expected: format!("{what} = {want}"),
            actual: format!("{what} = {got}"),
            decisive: self.last(),
        })
    }

    /// `cond` must hold; otherwise fail with expected/actual texts.
    pub fn expect_that(
        &self,
        cond: bool,
        expected: impl Into<String>,
        actual: impl Into<String>,
    ) -> Verdict {
        if cond {
            return Ok(());
        }
        let mut f = fail(expected, actual);
        if let Finding::Fail { decisive, .. } = &mut f {
            *decisive = self.last();
        }
        Err(f)
    }

    /// A declared skip.
    pub fn skip(&self, reason: impl Into<String>) -> Verdict {
        Err(Finding::Skip(reason.into()))
    }

    /// The JSON body of a successful exchange `i` (status `want`), or a failure.
    pub fn body_of(&self, i: usize, want: u16) -> Result<Value, Finding> {
        self.expect_status(i, want)?;
        Ok(self.json(i))
    }

    /// A placeholder JSON value for unreachable branches.
    pub fn null() -> Value {
        json!(null)
    }
}

/// ` (CODE: reason)` of an error body, or a body preview.
fn error_summary(t: &Transcript) -> String {
    match t.json() {
        Some(v) if v.pointer("/error/code").is_some() => format!(
            " with {} ({})",
            v["error"]["code"].as_str().unwrap_or("?"),
            v.pointer("/error/details/reason")
                .and_then(Value::as_str)
                .or(v.pointer("/error/message").and_then(Value::as_str))
                .unwrap_or("")
        ),
        _ if t.response_body.is_empty() => " with an empty body".into(),
        _ => format!(": {}", preview(&t.response_body)),
    }
}

/// The first 200 characters of a body.
pub fn preview(body: &[u8]) -> String {
    let s = String::from_utf8_lossy(body);
    let mut p: String = s.chars().take(200).collect();
    if s.chars().count() > 200 {
        p.push('…');
    }
    p
}
