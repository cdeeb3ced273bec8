//! Federation, sending side (v1.1 §15.3–§15.6, §11.5–§11.6): the store-and-forward outbox.
//!
//! - **Queueing.** When the writer accepts a locally submitted envelope, every reader on
//!   another node (the acceptance core's readers: recipients, thread participants, the
//!   §11.5 operation audience) gets an outbox row for its node, in the same transaction as
//!   the envelope ([`Service::queue_remote_readers`]); a full queue refuses the envelope
//!   with `RATE_LIMIT_EXCEEDED` (v1.0 §14.4) and nothing is stored.
//! - **Delivery.** [`Service::federation_tick`] takes the rows due at the injected clock's
//!   now, by destination: expired rows give up, the rest go out in wrappers of at most 100
//!   envelopes, signed with LOOM-HTTP-SIG-1 (nonce from the seeded RNG), each envelope with
//!   `meta.origin_event_seq` only (§11.6). A verified receipt marks its accepted ids
//!   delivered; ids it does not list failed for good; anything else is retried with
//!   exponential backoff and jitter from the seeded RNG (`loom_protocol::federation::retry`).
//! - **Giving up.** At the TTL (default 72 h) or on a permanent refusal, the row fails and
//!   the node sends the original sender a `receipt` envelope with `receipt.failed@v1`
//!   content (reason `NODE_UNREACHABLE` or `DELIVERY_TIMEOUT` at expiry, §15.6), signed by the
//!   node's own identity `loom://loom-node@{domain}` in a new thread (a node is no
//!   participant of its users' threads, so it cannot post into them).
//!
//! Every time comes from the injected clock, so tests and turmoil runs cross a 72 h TTL
//! instantly; [`run_worker`] is the driver a running node uses.

use super::write_group::Submitter;
use super::{Caller, Service};
use crate::error::{ApiError, ApiResult};
use crate::outbound::{HttpUrl, TransportError};
use crate::store::Connection;
use crate::store::envelopes;
use crate::store::federation::{self as fed_store, NewOutboxItem, OutboxItem, OutboxRow, Queue};
use crate::store::resolvers::{LocalDirectory, local_directory};
use ed25519_dalek::VerifyingKey;
use loom_protocol::accept::{Acceptance, Directory, Effect, Origin, SpecRules, admit};
use loom_protocol::delegation::{DelegationResolver, LinkRef};
use loom_protocol::envelope::{SenderType, sign_envelope};
use loom_protocol::federation::limits::admit_to_queue;
use loom_protocol::federation::receipt::{ReceiptExpectation, verify_receipt};
use loom_protocol::federation::replication::remote_destinations;
use loom_protocol::federation::retry::{
    AttemptResult, FailureKind, NextStep, after_failure, classify_response, deadline, expired,
    failed_receipt_content,
};
use loom_protocol::federation::wrapper::{
    DeliveryWrapper, MAX_ENVELOPES_PER_WRAPPER, new_delivery_id,
};
use loom_protocol::http_sig::{NONCE_TTL_MS, RequestParts, sign_request};
use loom_protocol::id::{EnvelopeId, KeyId, KeyKind};
use loom_protocol::{Address, ErrorCode, Timestamp};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// Most outbox rows one pass takes.
pub const MAX_DUE_PER_TICK: usize = 5_000;

/// The local part of the node's own identity (failure receipts).
pub const NODE_IDENTITY_LOCAL: &str = "loom-node";

/// What one pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TickReport {
    /// Rows delivered.
    pub delivered: usize,
    /// Rows that failed for good.
    pub failed: usize,
    /// Rows left for a later attempt.
    pub retried: usize,
}

fn failure_kind(label: Option<&str>) -> Option<FailureKind> {
    match label? {
        "unreachable" => Some(FailureKind::Unreachable),
        "timeout" => Some(FailureKind::Timeout),
        other => Some(FailureKind::Transient(
            other
                .strip_prefix("http:")
                .and_then(|s| s.parse().ok())
                .unwrap_or(0),
        )),
    }
}

fn label(kind: FailureKind) -> String {
    match kind {
        FailureKind::Unreachable => "unreachable".into(),
        FailureKind::Timeout => "timeout".into(),
        FailureKind::Transient(s) => format!("http:{s}"),
    }
}

/// The node's own identity as the admission directory sees it (failure receipts).
struct NodeSelf<'a> {
    id: &'a Address,
    key_id: &'a str,
    key: VerifyingKey,
    local: LocalDirectory<'a>,
}

impl Directory for NodeSelf<'_> {
    fn registered_type(&self, identity: &Address) -> Option<String> {
        if identity == self.id {
            return Some("service".into());
        }
        self.local.registered_type(identity)
    }

    fn active_signing_key(&self, identity: &Address, key_id: &str) -> Option<VerifyingKey> {
        if identity == self.id {
            return (key_id == self.key_id).then_some(self.key);
        }
        self.local.active_signing_key(identity, key_id)
    }
}

impl DelegationResolver for NodeSelf<'_> {
    fn signing_keys(&self, identity: &Address) -> Option<Vec<(String, VerifyingKey)>> {
        self.local.signing_keys(identity)
    }

    fn identity_type(&self, identity: &Address) -> Option<SenderType> {
        SenderType::parse(&self.registered_type(identity)?)
    }

    fn is_revoked(&self, link: &LinkRef<'_>) -> bool {
        self.local.is_revoked(link)
    }
}

impl Service {
    /// Outbox rows for the remote readers of an envelope the writer just accepted (module
    /// docs), inside the writer's transaction.
    pub(crate) fn queue_remote_readers(&self, c: &Connection, a: &Acceptance) -> ApiResult<()> {
        let Some(readers) = a.effects.iter().find_map(|e| match e {
            Effect::PutEnvelope { readers, .. } => Some(readers),
            _ => None,
        }) else {
            return Ok(());
        };
        let destinations = remote_destinations(readers, &self.config.domain);
        if destinations.is_empty() {
            return Ok(());
        }
        let now = self.env.now();
        let at = now.to_rfc3339();
        let limits = self.config.federation.queue_limits();
        let id = a.facts.id.to_string();
        let sender = a.facts.sender.to_string();
        for (dest, who) in destinations {
            let (for_node, all) = fed_store::depth(c, Queue::Federation, &dest)?;
            admit_to_queue(for_node, all, 1, &limits)?;
            let recipients: Vec<String> = who.iter().map(ToString::to_string).collect();
            fed_store::queue(
                c,
                Queue::Federation,
                &NewOutboxItem {
                    destination: &dest,
                    envelope_id: &id,
                    sender: &sender,
                    recipients: &recipients,
                    queued_at: &at,
                    queued_ms: now.unix_ms(),
                },
            )?;
        }
        self.fed.queued.store(true, Ordering::SeqCst);
        Ok(())
    }

    /// Every outbox row, in queue order (tests, operators).
    pub fn outbox(&self) -> ApiResult<Vec<OutboxRow>> {
        Ok(fed_store::outbox(&self.store.read(), Queue::Federation)?)
    }

    /// When the next queued row is due.
    pub fn next_outbox_due(&self) -> ApiResult<Option<Timestamp>> {
        Ok(
            fed_store::next_due(&self.store.read(), Queue::Federation)?
                .map(Timestamp::from_unix_ms),
        )
    }

    /// One pass of the outbox worker at the injected clock's now (module docs).
    pub async fn federation_tick(&self) -> ApiResult<TickReport> {
        let _one = self.fed.tick.lock().await;
        let now = self.env.now();
        let every = i64::try_from(self.config.federation.nonce_purge_ms).unwrap_or(i64::MAX);
        let last = self.fed.last_purge_ms.load(Ordering::Relaxed);
        if every == 0 || now.unix_ms().saturating_sub(last) >= every {
            self.purge_nonces(now)?;
            self.fed
                .last_purge_ms
                .store(now.unix_ms(), Ordering::Relaxed);
        }
        let due = fed_store::due(
            &self.store.read(),
            Queue::Federation,
            now.unix_ms(),
            MAX_DUE_PER_TICK,
        )?;
        let mut by_dest: BTreeMap<String, Vec<OutboxItem>> = BTreeMap::new();
        for item in due {
            by_dest
                .entry(item.destination.clone())
                .or_default()
                .push(item);
        }
        let mut report = TickReport::default();
        for (dest, items) in by_dest {
            self.deliver_to(&dest, items, now, &mut report).await?;
        }
        Ok(report)
    }

    async fn deliver_to(
        &self,
        dest: &str,
        items: Vec<OutboxItem>,
        now: Timestamp,
        report: &mut TickReport,
    ) -> ApiResult<()> {
        let denied = self
            .rules
            .inbound()
            .decide_policy(&self.fed.policy, dest)
            .err();
        let mut live = Vec::new();
        for item in items {
            let queued = Timestamp::from_unix_ms(item.queued_ms);
            let last = failure_kind(item.last_failure.as_deref());
            if let Some(e) = &denied {
                self.give_up(&item, item.attempts, "policy", e.code, report)
                    .await?;
            } else if let Some(reason) = expired(queued, last, now, &self.fed.retry) {
                let failure = item
                    .last_failure
                    .clone()
                    .unwrap_or_else(|| "expired".into());
                self.give_up(&item, item.attempts, &failure, reason, report)
                    .await?;
            } else {
                live.push(item);
            }
        }
        if live.is_empty() {
            return Ok(());
        }
        let peer = match self.peer(dest).await {
            Ok(p) => p,
            Err(e) => {
                tracing::debug!(%dest, error = %e, "federation delivery: peer unreachable");
                self.all_failed(&live, FailureKind::Unreachable, now, report)
                    .await?;
                return Ok(());
            }
        };
        let mut ready = Vec::new();
        for item in live {
            let body = EnvelopeId::parse(&item.envelope_id)
                .ok()
                .map(|id| envelopes::body(&self.store.read(), &id))
                .transpose()?
                .flatten();
            match body {
                Some(b) => ready.push((item, outgoing(b))),
                // Retracted or erased before it left: nothing to deliver, nobody to tell.
                None => {
                    self.mark_failed(&item, item.attempts, "erased", ErrorCode::EnvelopeNotFound)?;
                    report.failed += 1;
                }
            }
        }
        while !ready.is_empty() {
            let rest = ready.split_off(ready.len().min(MAX_ENVELOPES_PER_WRAPPER));
            let batch = std::mem::replace(&mut ready, rest);
            self.send_batch(dest, &peer, batch, now, report).await?;
        }
        Ok(())
    }

    async fn send_batch(
        &self,
        dest: &str,
        peer: &super::federation::Peer,
        batch: Vec<(OutboxItem, Value)>,
        now: Timestamp,
        report: &mut TickReport,
    ) -> ApiResult<()> {
        let delivery_id = new_delivery_id(&mut self.env.ids());
        let (items, envs): (Vec<OutboxItem>, Vec<Value>) = batch.into_iter().unzip();
        let wrapper =
            DeliveryWrapper::new(&self.config.domain, Some(delivery_id.clone()), now, envs);
        let body = wrapper.to_body();
        let path = HttpUrl::parse(&peer.deliver_url)
            .map(|u| u.path)
            .unwrap_or_else(|_| loom_protocol::federation::wrapper::DELIVER_PATH.into());
        let nonce = self.env.ids().bytes32();
        let (key_id, key) = self.node_key();
        let signed = sign_request(
            &RequestParts {
                method: "POST",
                path: &path,
                body: &body,
            },
            &self.config.domain,
            key_id,
            key,
            now,
            &nonce[..16],
        );
        let headers: Vec<(&str, &str)> = if self.deviations.federation.unsigned_outbound {
            Vec::new()
        } else {
            signed.all_pairs()
        };
        let result = self
            .fed
            .client
            .request("POST", &peer.deliver_url, &headers, body)
            .await;
        let reply = match result {
            Err(TransportError::Unreachable(why)) => {
                tracing::debug!(%dest, %why, "federation delivery: unreachable");
                self.all_failed(&items, FailureKind::Unreachable, now, report)
                    .await?;
                return Ok(());
            }
            Err(TransportError::Timeout) => {
                self.all_failed(&items, FailureKind::Timeout, now, report)
                    .await?;
                return Ok(());
            }
            Ok(r) => r,
        };
        let answer: Value =
            loom_protocol::jcs::parse_strict_bytes(&reply.body).unwrap_or(Value::Null);
        let code = answer.pointer("/error/code").and_then(Value::as_str);
        match classify_response(reply.status, code) {
            AttemptResult::Delivered if (200..300).contains(&reply.status) => {
                let receipt = answer
                    .get("receipt")
                    .filter(|r| r.is_object())
                    .unwrap_or(&answer);
                let ids: Vec<String> = items.iter().map(|i| i.envelope_id.clone()).collect();
                let verified = verify_receipt(
                    receipt,
                    &peer.keys,
                    &ReceiptExpectation {
                        delivery_id: Some(&delivery_id),
                        delivering_node: &self.config.domain,
                        issuer_node: dest,
                        envelope_ids: &ids,
                    },
                );
                let Ok(v) = verified else {
                    self.all_failed(&items, FailureKind::Transient(reply.status), now, report)
                        .await?;
                    return Ok(());
                };
                let accepted: BTreeSet<&str> =
                    v.accepted_envelope_ids.iter().map(String::as_str).collect();
                // An envelope the peer refuses as `ENVELOPE_DUPLICATE` is one it already holds
                // (a re-send after a lost answer): delivered, as a whole-batch 409 is
                // (DESIGN.md §9, v1.1 §23.2).
                let duplicate_is_refusal =
                    self.deviations.federation.duplicate_rejection_is_failure;
                let (done, refused): (Vec<&OutboxItem>, Vec<&OutboxItem>) =
                    items.iter().partition(|i| {
                        accepted.contains(i.envelope_id.as_str())
                            || (!duplicate_is_refusal
                                && rejected_code(&answer, &i.envelope_id)
                                    == ErrorCode::EnvelopeDuplicate)
                    });
                self.delivered(&done, now, report)?;
                for item in refused {
                    let reason = rejected_code(&answer, &item.envelope_id);
                    self.give_up(item, item.attempts + 1, "rejected", reason, report)
                        .await?;
                }
            }
            AttemptResult::Delivered => {
                let all: Vec<&OutboxItem> = items.iter().collect();
                self.delivered(&all, now, report)?;
            }
            AttemptResult::Retry(kind) => {
                self.all_failed(&items, kind, now, report).await?;
            }
            AttemptResult::Rejected(code) => {
                for item in &items {
                    self.give_up(
                        item,
                        item.attempts + 1,
                        &format!("http:{}", reply.status),
                        code,
                        report,
                    )
                    .await?;
                }
            }
        }
        Ok(())
    }

    fn mark_failed(
        &self,
        item: &OutboxItem,
        attempts: u32,
        failure: &str,
        reason: ErrorCode,
    ) -> ApiResult<()> {
        let tx = self.store.begin()?;
        fed_store::mark_failed(
            &tx,
            Queue::Federation,
            item.id,
            attempts,
            failure,
            reason.as_str(),
            &self.env.now().to_rfc3339(),
        )?;
        tx.commit()?;
        Ok(())
    }

    fn purge_nonces(&self, now: Timestamp) -> ApiResult<()> {
        let tx = self.store.begin()?;
        fed_store::purge_nonces(&tx, now.unix_ms().saturating_sub(NONCE_TTL_MS))?;
        tx.commit()?;
        Ok(())
    }

    /// Marks `items` delivered in one transaction (one fsync per receipt, not per row).
    fn delivered(
        &self,
        items: &[&OutboxItem],
        now: Timestamp,
        report: &mut TickReport,
    ) -> ApiResult<()> {
        if items.is_empty() {
            return Ok(());
        }
        let at = now.to_rfc3339();
        let tx = self.store.begin()?;
        for item in items {
            fed_store::mark_delivered(&tx, Queue::Federation, item.id, &at)?;
        }
        tx.commit()?;
        report.delivered += items.len();
        Ok(())
    }

    /// Failed attempts of `items`: each retries with backoff or gives up at the TTL (§15.6);
    /// the retries are written in one transaction.
    async fn all_failed(
        &self,
        items: &[OutboxItem],
        kind: FailureKind,
        now: Timestamp,
        report: &mut TickReport,
    ) -> ApiResult<()> {
        let mut retries = Vec::new();
        for item in items {
            match self.next_step(item, kind, now) {
                NextStep::RetryAt(t) => retries.push((item, t)),
                NextStep::GiveUp(reason) => {
                    self.give_up(
                        item,
                        item.attempts.saturating_add(1),
                        &label(kind),
                        reason,
                        report,
                    )
                    .await?;
                }
            }
        }
        if !retries.is_empty() {
            let tx = self.store.begin()?;
            for (item, t) in &retries {
                fed_store::mark_retry(
                    &tx,
                    Queue::Federation,
                    item.id,
                    item.attempts.saturating_add(1),
                    &label(kind),
                    t.unix_ms(),
                )?;
            }
            tx.commit()?;
            report.retried += retries.len();
        }
        Ok(())
    }

    /// What follows a failed attempt of `item` (§15.6).
    fn next_step(&self, item: &OutboxItem, kind: FailureKind, now: Timestamp) -> NextStep {
        let dev = self.deviations.federation;
        let attempts = item.attempts.saturating_add(1);
        let queued = Timestamp::from_unix_ms(item.queued_ms);
        let policy = &self.fed.retry;
        if dev.no_retry {
            NextStep::GiveUp(loom_protocol::federation::retry::expiry_reason(Some(kind)))
        } else if dev.linear_backoff {
            let end = deadline(queued, policy);
            if now >= end {
                NextStep::GiveUp(loom_protocol::federation::retry::expiry_reason(Some(kind)))
            } else {
                NextStep::RetryAt(now.plus_ms(policy.base_delay_ms).min(end))
            }
        } else {
            let draw = self.env.ids().bytes32();
            let mut eight = [0u8; 8];
            eight.copy_from_slice(&draw[..8]);
            after_failure(
                queued,
                attempts,
                kind,
                now,
                policy,
                u64::from_le_bytes(eight),
            )
        }
    }

    /// Fails `item` for good and tells its sender (§15.6).
    async fn give_up(
        &self,
        item: &OutboxItem,
        attempts: u32,
        failure: &str,
        reason: ErrorCode,
        report: &mut TickReport,
    ) -> ApiResult<()> {
        let dev = self.deviations.federation;
        let reason = if dev.wrong_failure_reason
            && matches!(
                reason,
                ErrorCode::NodeUnreachable | ErrorCode::DeliveryTimeout
            ) {
            ErrorCode::InternalError
        } else {
            reason
        };
        self.mark_failed(item, attempts, failure, reason)?;
        report.failed += 1;
        tracing::info!(destination = %item.destination, envelope = %item.envelope_id, reason = reason.as_str(), "federation delivery failed");
        if dev.no_failure_receipt {
            return Ok(());
        }
        for r in &item.recipients {
            if let Ok(recipient) = Address::parse(r) {
                self.failure_receipt(item, &recipient, reason).await?;
            }
        }
        Ok(())
    }

    /// Stores the `receipt.failed@v1` envelope for the sender of `item` (module docs).
    pub(crate) async fn failure_receipt(
        &self,
        item: &OutboxItem,
        recipient: &Address,
        reason: ErrorCode,
    ) -> ApiResult<()> {
        let Ok(sender) = Address::parse(&item.sender) else {
            return Ok(());
        };
        let node_id = self.node_address()?;
        let (node_key_id, key) = self.node_key();
        let sign_id = format!("k_sign_{}", node_key_id.trim_start_matches("k_node_sign_"));
        let key_id = KeyId::parse(&sign_id, KeyKind::Signing).map_err(ApiError::internal)?;
        let now = self.env.now();
        let original_thread = EnvelopeId::parse(&item.envelope_id)
            .ok()
            .map(|id| envelopes::read(&self.store.read(), &id))
            .transpose()?
            .flatten()
            .map(|r| r.thread);
        let mut content = failed_receipt_content(&item.envelope_id, recipient, reason, now);
        if let Some(t) = original_thread {
            content["structured"]["parameters"]["thread_id"] = t.into();
        }
        let (id, thread) = {
            let mut ids = self.env.ids();
            (ids.envelope(), ids.thread())
        };
        let mut env = json!({
            "loom": "1.1",
            "id": id.to_string(),
            "thread_id": thread.to_string(),
            "parent_id": null,
            "type": "receipt",
            "from": {"identity": node_id.to_string(), "display": format!("{} delivery", self.config.domain), "key_id": sign_id, "type": "service"},
            "to": [{"identity": sender.to_string(), "role": "primary"}],
            "created_at": now.to_rfc3339(),
            "priority": "normal",
            "content": content,
            "attachments": [],
        });
        sign_envelope(&mut env, key, &key_id)?;
        let directory = NodeSelf {
            id: &node_id,
            key_id: &sign_id,
            key: key.verifying_key(),
            local: local_directory(&self.store),
        };
        let admitted = admit(
            env,
            Origin::Local { caller: &node_id },
            &directory,
            &SpecRules,
            &self.config.limits.envelope(),
            now,
        )?;
        let caller = Caller {
            identity: node_id.clone(),
            key_id: sign_id.clone(),
        };
        self.commit_from(admitted, Submitter::Local(caller)).await?;
        Ok(())
    }
}

/// An envelope as it leaves: the stored form with `meta` reduced to `origin_event_seq`
/// (§11.6 "preserved in federation"; the rest of `meta` is this node's bookkeeping).
fn outgoing(mut stored: Value) -> Value {
    let origin = stored.pointer("/meta/origin_event_seq").cloned();
    if let Some(o) = stored.as_object_mut() {
        o.remove("meta");
        if let Some(seq) = origin {
            o.insert("meta".into(), json!({"origin_event_seq": seq}));
        }
    }
    stored
}

/// The code a delivery answer's `rejected[]` gives for `envelope_id` (`ENVELOPE_INVALID` if
/// none): `error` is a code string (the existing v1.1 node, DESIGN.md §9) or a §24.1 error
/// object with `code`; the list is read at the top level or beside a nested `receipt`.
fn rejected_code(answer: &Value, envelope_id: &str) -> ErrorCode {
    answer
        .get("rejected")
        .or_else(|| answer.pointer("/receipt/rejected"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|r| r.get("envelope_id").and_then(Value::as_str) == Some(envelope_id))
        .and_then(|r| {
            let e = r.get("error")?;
            e.as_str().or_else(|| e.get("code")?.as_str())
        })
        .and_then(ErrorCode::parse)
        .unwrap_or(ErrorCode::EnvelopeInvalid)
}

/// The outbox driver of a running node: a pass whenever the writer queued something, and
/// otherwise when the next row is due — at most `FederationConfig::worker_idle_ms` apart (1 s
/// by default), so clock changes are seen; the simulator raises it so an idle node costs no
/// wake-ups over 72 simulated hours.
pub async fn run_worker(svc: Arc<Service>) {
    let f = &svc.config.federation;
    let pacing = super::worker::Pacing {
        name: "federation outbox",
        wake: &svc.fed.wake,
        idle_ms: i64::try_from(f.worker_idle_ms.max(1)).unwrap_or(i64::MAX),
        pause_ms: i64::try_from(f.retry_base_ms).unwrap_or(i64::MAX),
    };
    loop {
        let pass = svc.federation_tick().await.map(drop);
        let next = || svc.next_outbox_due().ok().flatten().map(|t| t.unix_ms());
        let wait = super::worker::wait_after(&pacing, pass, next, svc.env.now().unix_ms());
        super::worker::pause(&pacing, wait).await;
    }
}
