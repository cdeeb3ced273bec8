//! What a case works with, in three parts (issue 13, item 6): the **exchange** part
//! ([`Exchanges`]: one connection to the target and the record of every request, each named
//! by a typed [`Ex`] handle), the **provisioning** part ([`Provisioner`]: the identities the
//! case acts as) and the **assertion** part (the `expect_*` checks over the recorded
//! exchanges, `assert.rs`). [`TestData`] draws the case's ids, keys, times and envelopes from
//! its seed; [`shapes`] reads response shapes the spec leaves open.

mod assert;
pub mod data;
pub mod exchange;
pub mod feed;
pub mod ident;
pub mod provision;
pub mod shapes;
pub mod ws;

pub use crate::finding::Ex;
pub use data::TestData;
pub use exchange::Exchanges;
pub use ident::Ident;
pub use provision::Provisioner;

use crate::finding::Finding;
use crate::target::TargetInfo;
use loom_client::{Identity, Transcript};
use loom_protocol::clock::Clock;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// The per-case context.
pub struct Ctx {
    /// What the harness knows about the target.
    pub target: Arc<TargetInfo>,
    /// The connection, the recorded exchanges and the assertions over them.
    pub net: Exchanges,
    /// Ids, keys, times and envelope builders from the case's seed.
    pub data: TestData,
    prov: Provisioner,
    /// Multiplies every timeout (slow targets, `--timeout-scale`).
    pub timeout_scale: f64,
}

impl std::fmt::Debug for Ctx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ctx")
            .field("case", &self.data.tag())
            .finish_non_exhaustive()
    }
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
        Ok(Ctx {
            target,
            net: Exchanges::new(client),
            data: TestData::new(clock, run_seed, case_id),
            prov: Provisioner::default(),
            timeout_scale,
        })
    }

    /// Takes the recorded exchanges.
    pub fn take_transcripts(&mut self) -> Vec<Transcript> {
        self.net.take()
    }

    /// The refusals the case credited (the runner, when the case ends).
    pub fn take_refusals(&mut self) -> Vec<crate::finding::Refusal> {
        self.net.take_refusals()
    }

    /// Registers and logs in a fresh identity `name-<case tag>-<n>` of `kind` with the
    /// members its type requires; with `pool` provisioning, the case's next pooled identity
    /// of `kind` is logged in instead.
    pub async fn identity(&mut self, name: &str, kind: &str) -> Result<Ident, Finding> {
        self.prov
            .identity(&mut self.net, &mut self.data, &self.target, name, kind)
            .await
    }

    /// A fresh, unregistered identity of `kind` (no type members).
    pub fn fresh_identity(&mut self, name: &str, kind: &str) -> Result<Identity, Finding> {
        self.prov
            .fresh_identity(&mut self.data, &self.target, name, kind)
    }

    /// The members an identity of `kind` at `address` must carry (v1.1 §6.3/§6.4).
    pub async fn type_members(&mut self, address: &str, kind: &str) -> Result<Value, Finding> {
        self.prov
            .type_members(&mut self.net, &mut self.data, &self.target, address, kind)
            .await
    }

    /// The case's sponsoring human (the delegator of its agents), registered on first use.
    pub async fn sponsor(&mut self) -> Result<Identity, Finding> {
        self.prov
            .sponsor(&mut self.net, &mut self.data, &self.target)
            .await
    }

    /// Registers `id` (challenge, signed document) and returns the deciding exchange.
    pub async fn register(&mut self, id: &Identity) -> Result<Ex, Finding> {
        provision::register(&mut self.net, &self.target, id).await
    }

    /// Registers `id` and logs it in; a refusal is a setup `error`.
    pub async fn register_and_login(&mut self, id: Identity) -> Result<Ident, Finding> {
        provision::register_and_login(&mut self.net, &self.target, id).await
    }

    /// A fresh human identity that also publishes an X25519 encryption key (v1.1 §6.2, §7.1),
    /// registered and logged in: E2EE cases need members others can encrypt for. A profile
    /// pool's identities carry no key the harness holds, so such a target is `unsupported`.
    pub async fn e2ee_identity(&mut self, name: &str) -> Result<Ident, Finding> {
        if self.target.pool.is_some() {
            return Err(Finding::Unsupported(
                "E2EE cases register identities with their own X25519 keys; a profile pool's identities have keys the harness does not hold".into(),
            ));
        }
        let id = self.fresh_identity(name, "human")?.with_encryption_key();
        self.register_and_login(id).await
    }

    /// Starts a thread: `owner` sends a root message to `to`; returns (thread id, root). A
    /// refused root is an `error` of the case that needed the thread (its requirement was not
    /// reached); sending a message has cases of its own (issue 29, item 4).
    pub async fn start_thread(
        &mut self,
        owner: &Ident,
        to: &[&Ident],
    ) -> Result<(String, Value), Finding> {
        let t = self.data.thread_id();
        let root = self.data.signed_message(owner, &t, None, to, "thread root");
        let ex = self.net.send(owner, &root).await?;
        self.net
            .expect_created(ex)
            .map_err(crate::finding::setup_step(
                "starting a thread: the root message",
            ))?;
        Ok((t, root))
    }
}

/// A declared skip.
pub fn skip(reason: impl Into<String>) -> crate::finding::Verdict {
    Err(Finding::Skip(reason.into()))
}
