//! The exchange part of a case's context: one connection to the target and the record of
//! every request and response the case made, each named by a typed [`Ex`] handle. Reports show
//! all of them; a failure or an error names the one that decided it.

use super::Ident;
use crate::finding::{Ex, Finding, Refusal, Verdict};
use loom_client::{Client, Transcript};
use serde_json::Value;

/// The connection and the recorded exchanges of one case.
pub struct Exchanges {
    client: Client,
    transcripts: Vec<Transcript>,
    /// The refusals the case's assertions credited, in order.
    refusals: std::sync::Mutex<Vec<Refusal>>,
}

impl std::fmt::Debug for Exchanges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exchanges")
            .field("recorded", &self.transcripts.len())
            .finish_non_exhaustive()
    }
}

impl Exchanges {
    /// Records the exchanges made over `client`.
    pub fn new(client: Client) -> Exchanges {
        Exchanges {
            client,
            transcripts: Vec::new(),
            refusals: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Every exchange so far.
    pub fn transcripts(&self) -> &[Transcript] {
        &self.transcripts
    }

    /// Takes the recorded exchanges (the runner, when the case ends).
    pub fn take(&mut self) -> Vec<Transcript> {
        std::mem::take(&mut self.transcripts)
    }

    /// Records a refusal an assertion credited.
    pub(crate) fn credit(&self, probe: Ex, control: Option<Ex>) {
        self.refusals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(Refusal { probe, control });
    }

    /// Takes the credited refusals (the runner, when the case ends).
    pub fn take_refusals(&mut self) -> Vec<Refusal> {
        std::mem::take(
            self.refusals
                .get_mut()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// The last exchange, if any.
    pub fn last(&self) -> Option<Ex> {
        self.transcripts.len().checked_sub(1).map(Ex)
    }

    /// Records an exchange the case made outside HTTP (a TLS handshake), so a failure of it
    /// is shown like any other.
    pub fn record(&mut self, t: Transcript) -> Ex {
        self.transcripts.push(t);
        Ex(self.transcripts.len() - 1)
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
    ) -> Result<Ex, Finding> {
        let t = self
            .client
            .exchange(method, path, headers, body, token)
            .await
            .map_err(|e| Finding::Error(format!("{method} {path}: {e}")))?;
        Ok(self.record(t))
    }

    /// A JSON request with an optional bearer token.
    pub async fn call(
        &mut self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<&Value>,
    ) -> Result<Ex, Finding> {
        let bytes = body.map(|b| serde_json::to_vec(b).unwrap_or_default());
        self.exchange(method, path, &[], bytes, token).await
    }

    /// GET with a token.
    pub async fn get(&mut self, path: &str, token: &str) -> Result<Ex, Finding> {
        self.call("GET", path, Some(token), None).await
    }

    /// POSTs a (signed) envelope as `from` to `/v1/envelopes` (v1.1 §16.1).
    pub async fn send(&mut self, from: &Ident, env: &Value) -> Result<Ex, Finding> {
        self.call("POST", "/v1/envelopes", Some(&from.token), Some(env))
            .await
    }

    /// Posts `probe`, which must not be accepted, then `control` — the same envelope with only
    /// the property under test made valid — and credits the probe's refusal beside the accepted
    /// control ([`Exchanges::expect_refused_beside`]; `codes` empty: any 4xx §24.1 error).
    pub async fn send_probe_and_control(
        &mut self,
        from: &Ident,
        probe: &Value,
        control: &Value,
        what: &str,
        codes: &[&str],
        why: &str,
    ) -> Verdict {
        let p = self.send(from, probe).await?;
        let wanted = if codes.is_empty() {
            "a refusal: 4xx with a §24.1 error body".to_owned()
        } else {
            format!("a refusal with {} (v1.1 §24.2)", codes.join(" or "))
        };
        self.expect_not_accepted(p, &wanted)?;
        let c = self.send(from, control).await?;
        self.expect_refused_beside(p, c, what, codes, why)
    }

    /// The recorded exchange `ex`.
    pub fn transcript(&self, ex: Ex) -> &Transcript {
        &self.transcripts[ex.0]
    }

    /// The response status of `ex`.
    pub fn status(&self, ex: Ex) -> u16 {
        self.transcript(ex).status
    }

    /// The JSON response body of `ex` (`Null` when it is not JSON).
    pub fn json(&self, ex: Ex) -> Value {
        self.transcript(ex).json().unwrap_or(Value::Null)
    }

    /// The response body of `ex` as text (lossy).
    pub fn text(&self, ex: Ex) -> String {
        String::from_utf8_lossy(&self.transcript(ex).response_body).into_owned()
    }

    /// The §24.1 `error.code` of `ex`, if its body carries one.
    pub fn error_code(&self, ex: Ex) -> Option<String> {
        self.json(ex)
            .pointer("/error/code")
            .and_then(Value::as_str)
            .map(str::to_owned)
    }
}
