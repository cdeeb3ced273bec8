//! The single writer with group commit (issue 14). Admission — parsing, validation,
//! canonicalization, Ed25519, delegation chains — runs in each request's own task, with no
//! lock. Admitted envelopes queue here; one task at a time is the *leader*: it takes every
//! queued envelope, decides and applies them in queue order inside one transaction, commits
//! once (one WAL fsync for the group) and only then hands each request its answer. A refusal
//! is decided before anything is written, except a failure while applying (a full outbox):
//! then the group is rolled back and run again with a savepoint per envelope, so only that
//! envelope is refused (`Service::run_group`). Then it passes
//! leadership to the first envelope that queued meanwhile, so no request waits behind
//! batches that are not its own.
//!
//! The leader is an ordinary request task (no thread of its own), so the node behaves the
//! same under tokio and inside the turmoil simulator, where one seed must give one trace.
//! The leader runs the batch on its own worker thread ([`needs_block_in_place`] says when
//! it hands that worker's other tasks to a new thread first).
//!
//! Order and caches: envelopes are decided in the order they queued, each against the
//! state the earlier ones left (the transaction sees their rows; thread runtimes changed by
//! the batch are held in an overlay). The shared thread cache takes the overlay only after
//! the commit succeeded; a failed commit answers every envelope of the group with
//! `INTERNAL_ERROR` and changes no cache.

use super::idempotency::{Claim, Outcome, replay_for};
use super::{Caller, Document, Service};
use crate::error::{ApiError, ApiResult};
use crate::store::accept::{WriterView, apply};
use crate::store::batch::{self, Deferred};
use crate::store::idempotency::{self, Remembered, Response};
use crate::store::{envelopes, federation, threads};
use loom_protocol::accept::{Acceptance, Admitted, Context, Origin, ThreadRuntime, decide};
use loom_protocol::id::ThreadId;
use loom_protocol::thread::ThreadLimits;
use rusqlite::Connection;
use serde_json::Value;
use sha2::Digest;
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// Most envelopes one transaction takes.
pub const MAX_GROUP: usize = 256;

/// The queue of admitted envelopes and who leads.
#[derive(Debug, Default)]
pub struct WriteGroup {
    queue: Mutex<Queue>,
}

#[derive(Debug, Default)]
struct Queue {
    jobs: VecDeque<Job>,
    leading: bool,
}

#[derive(Debug)]
struct Job {
    admitted: Admitted,
    submitter: Submitter,
    /// A local request's `Idempotency-Key`: its result is remembered in the same
    /// transaction, and a twin already remembered is replayed instead of decided.
    claim: Option<Claim>,
    slot: Arc<Slot>,
}

/// Who hands an envelope to the writer.
#[derive(Debug, Clone)]
pub(crate) enum Submitter {
    /// A local client (§16.1); remote readers get outbox rows (§15.6).
    Local(Caller),
    /// A delivering node (§15.4) and the sender's `meta.origin_event_seq` (§11.6). An
    /// identical re-delivery of a stored envelope is accepted again without storing it.
    Federated {
        /// The delivering node.
        node: String,
        /// `meta.origin_event_seq` as received.
        origin_event_seq: Option<u64>,
    },
    /// The email bridge (§21.2), for the `bridge://` sender `caller`; `meta` becomes
    /// `meta.bridge`.
    Bridge {
        /// The bridged sender (its key is the node's bridge key).
        caller: Caller,
        /// `meta.bridge`.
        meta: Value,
        /// The mail's Message-ID, recorded with the (visible) envelope in the same
        /// transaction, with the `bridge.inbound` audit entry (§21.2, §25.1).
        message_id: Option<String>,
    },
}

/// Where a request waits for its answer or for leadership.
#[derive(Debug, Default)]
struct Slot {
    result: Mutex<Option<ApiResult<Document>>>,
    lead: AtomicBool,
    abandoned: AtomicBool,
    notify: Notify,
    /// Also woken: the waiter of a request that queued several envelopes.
    shared: Option<Arc<Notify>>,
}

impl Slot {
    fn finish(&self, r: ApiResult<Document>) {
        *self.result.lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
        self.wake();
    }

    fn wake(&self) {
        self.notify.notify_one();
        if let Some(s) = &self.shared {
            s.notify_one();
        }
    }

    fn has_result(&self) -> bool {
        self.result
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
    }

    fn take(&self) -> Option<ApiResult<Document>> {
        self.result.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// Whether the leader must run its batch under `block_in_place`: only on a multi-threaded
/// runtime with a single worker, where blocking that worker would stop every connection
/// while SQLite waits for the disk. With two or more workers the leader blocks its own
/// worker, and the others take over the tasks queued on it (tokio's work stealing);
/// handing the worker to a new thread instead (`block_in_place`) cost two thread switches
/// per group, measured at ~10% of the node's CPU per envelope and ~20% of its throughput
/// under load (issue 14, node README "Benchmarks"). At most one worker blocks this way:
/// there is one leader at a time. A current-thread runtime (the turmoil simulator, tests)
/// runs the batch in place either way.
fn needs_block_in_place() -> bool {
    match tokio::runtime::Handle::try_current() {
        Ok(h) => {
            h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread
                && h.metrics().num_workers() < 2
        }
        Err(_) => false,
    }
}

impl WriteGroup {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `job`; true when the caller becomes the leader.
    fn enqueue(&self, job: Job) -> bool {
        let mut q = self.lock();
        q.jobs.push_back(job);
        !std::mem::replace(&mut q.leading, true)
    }

    /// Queues `jobs` back to back, in order; true when the caller becomes the leader.
    fn enqueue_all(&self, jobs: Vec<Job>) -> bool {
        let mut q = self.lock();
        q.jobs.extend(jobs);
        !std::mem::replace(&mut q.leading, true)
    }

    /// The leader's batch: everything queued, up to [`MAX_GROUP`].
    fn take(&self) -> Vec<Job> {
        let mut q = self.lock();
        let n = q.jobs.len().min(MAX_GROUP);
        q.jobs.drain(..n).collect()
    }

    /// Passes leadership to the first waiting envelope, or ends it.
    fn hand_off(q: &mut Queue) {
        match q
            .jobs
            .iter()
            .find(|j| !j.slot.abandoned.load(Ordering::SeqCst))
        {
            Some(next) => {
                next.slot.lead.store(true, Ordering::SeqCst);
                next.slot.wake();
            }
            None => q.leading = false,
        }
    }
}

/// Keeps the queue moving when a waiting request is dropped (its client went away): a
/// leadership handed to it passes on.
struct Abandon<'a> {
    group: &'a WriteGroup,
    slot: &'a Arc<Slot>,
    armed: bool,
}

impl Drop for Abandon<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let mut q = self.group.lock();
        self.slot.abandoned.store(true, Ordering::SeqCst);
        if self.slot.lead.swap(false, Ordering::SeqCst) {
            WriteGroup::hand_off(&mut q);
        }
    }
}

/// [`Abandon`] for the several slots of one request.
struct AbandonAll<'a> {
    group: &'a WriteGroup,
    slots: &'a [Arc<Slot>],
    armed: bool,
}

impl Drop for AbandonAll<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let mut q = self.group.lock();
        let mut led = false;
        for slot in self.slots {
            slot.abandoned.store(true, Ordering::SeqCst);
            led |= slot.lead.swap(false, Ordering::SeqCst);
        }
        if led {
            WriteGroup::hand_off(&mut q);
        }
    }
}

/// What the writer decided for one envelope of a group.
#[derive(Debug)]
enum Decided {
    /// Answer with this stored document (already stored; nothing to write).
    Stored(Value),
    /// Accepted: the effects to apply, and the receipt time they were decided at (RFC 3339).
    Accept(Box<Acceptance>, String),
}

/// Why a group transaction was rolled back.
#[derive(Debug)]
enum GroupAbort {
    /// A statement of the group failed.
    Sql(rusqlite::Error),
    /// Applying an envelope failed outside a savepoint: run the group again with one.
    Retry,
}

impl From<rusqlite::Error> for GroupAbort {
    fn from(e: rusqlite::Error) -> Self {
        GroupAbort::Sql(e)
    }
}

impl std::fmt::Display for GroupAbort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GroupAbort::Sql(e) => e.fmt(f),
            GroupAbort::Retry => f.write_str("apply failed outside a savepoint"),
        }
    }
}

/// Thread runtimes as the batch changed them.
#[derive(Debug, Default)]
struct Overlay(BTreeMap<ThreadId, Held>);

#[derive(Debug)]
enum Held {
    /// The thread as of the batch so far.
    Loaded(Box<ThreadRuntime>),
    /// The thread does not exist.
    Absent,
    /// Changed in the store outside its runtime (a fork target): read it from the store.
    Stale,
}

impl Service {
    /// Decides, applies and durably commits an admitted envelope from `submitter` in the
    /// writer's next group; the stored envelope, or why it was refused.
    pub(crate) async fn commit_from(
        &self,
        admitted: Admitted,
        submitter: Submitter,
    ) -> ApiResult<Document> {
        self.commit_claimed(admitted, submitter, None).await
    }

    /// [`Service::commit_from`] with the request's `Idempotency-Key`, if any.
    pub(crate) async fn commit_claimed(
        &self,
        admitted: Admitted,
        submitter: Submitter,
        claim: Option<Claim>,
    ) -> ApiResult<Document> {
        let slot = Arc::new(Slot::default());
        let group = &self.write_group;
        let mut lead = group.enqueue(Job {
            admitted,
            submitter,
            claim,
            slot: slot.clone(),
        });
        let mut guard = Abandon {
            group,
            slot: &slot,
            armed: true,
        };
        loop {
            if lead {
                self.lead_one_batch();
                lead = false;
            }
            if let Some(r) = slot.take() {
                guard.armed = false;
                return r;
            }
            slot.notify.notified().await;
            if slot.lead.swap(false, Ordering::SeqCst) {
                lead = true;
            }
        }
    }

    /// Commits several admitted envelopes, queued back to back in the given order (a
    /// federated delivery's wrapper), and returns each one's answer in the same order.
    pub(crate) async fn commit_many(
        &self,
        items: Vec<(Admitted, Submitter)>,
    ) -> Vec<ApiResult<Document>> {
        if items.is_empty() {
            return Vec::new();
        }
        let shared = Arc::new(Notify::new());
        let slots: Vec<Arc<Slot>> = items
            .iter()
            .map(|_| {
                Arc::new(Slot {
                    shared: Some(shared.clone()),
                    ..Slot::default()
                })
            })
            .collect();
        let jobs = items
            .into_iter()
            .zip(&slots)
            .map(|((admitted, submitter), slot)| Job {
                admitted,
                submitter,
                claim: None,
                slot: slot.clone(),
            })
            .collect();
        let group = &self.write_group;
        let mut lead = group.enqueue_all(jobs);
        let mut guard = AbandonAll {
            group,
            slots: &slots,
            armed: true,
        };
        loop {
            if lead {
                self.lead_one_batch();
                lead = false;
            }
            if slots.iter().all(|s| s.has_result()) {
                guard.armed = false;
                return slots
                    .iter()
                    .map(|s| {
                        s.take()
                            .unwrap_or_else(|| Err(ApiError::internal("missing group result")))
                    })
                    .collect();
            }
            if slots.iter().any(|s| s.lead.swap(false, Ordering::SeqCst)) {
                lead = true;
                continue;
            }
            shared.notified().await;
        }
    }

    fn lead_one_batch(&self) {
        let jobs = self.write_group.take();
        let run = || self.commit_batch(jobs);
        if needs_block_in_place() {
            tokio::task::block_in_place(run)
        } else {
            run()
        }
        let mut q = self.write_group.lock();
        WriteGroup::hand_off(&mut q);
    }

    fn commit_batch(&self, jobs: Vec<Job>) {
        let conn = self.store.conn();
        // Optimistic first: no savepoint per envelope (each costs two statements and a copy
        // of every page it touches into the savepoint journal). A refusal decided before any
        // write needs no undo; should applying an accepted envelope fail, the whole group is
        // rolled back and run again with a savepoint each, so only that envelope fails.
        let mut attempt = self.run_group(&conn, &jobs, false);
        if let Err(GroupAbort::Retry) = attempt {
            attempt = self.run_group(&conn, &jobs, true);
        }
        drop(conn);
        tracing::debug!(group = jobs.len(), ok = attempt.is_ok(), "group commit");
        match attempt {
            Ok((overlay, results)) => {
                self.threads.merge(overlay);
                if self.fed.queued.swap(false, Ordering::SeqCst) {
                    self.fed.wake.notify_one();
                }
                let accepted = results.iter().filter(|r| r.is_ok()).count();
                for (job, r) in jobs.iter().zip(results) {
                    job.slot.finish(r);
                }
                self.checkpoint_if_due(accepted);
            }
            Err(e) => {
                self.fed.queued.store(false, Ordering::SeqCst);
                let err = ApiError::internal(format!("group commit: {e}"));
                for job in &jobs {
                    job.slot.finish(Err(err.clone()));
                }
            }
        }
    }

    /// Signs an audit checkpoint once `audit_checkpoint_rows` envelopes were accepted since
    /// the last (v1.1 §25.1; issue 36): the unsigned tail a crash leaves stays bounded by rows,
    /// not only by `audit_checkpoint_secs`. Runs after the group's clients were answered.
    fn checkpoint_if_due(&self, accepted: usize) {
        let limit = self.config.audit_checkpoint_rows;
        let n = u64::try_from(accepted).unwrap_or(u64::MAX);
        let since = self.unanchored.fetch_add(n, Ordering::Relaxed) + n;
        if limit > 0
            && since >= limit
            && let Err(e) = self.audit_checkpoint()
        {
            tracing::warn!(error = %e, "audit checkpoint failed");
        }
    }

    /// One group transaction over `jobs`, in order. `savepoints`: each envelope in its own
    /// savepoint (a failed apply rolls back only its effects); without, a failed apply
    /// aborts the transaction with [`GroupAbort::Retry`].
    fn run_group(
        &self,
        conn: &Connection,
        jobs: &[Job],
        savepoints: bool,
    ) -> Result<(Overlay, Vec<ApiResult<Document>>), GroupAbort> {
        let mut overlay = Overlay::default();
        let mut results = Vec::with_capacity(jobs.len());
        batch::transaction(conn, |c| {
            let mut search = Deferred::default();
            for job in jobs {
                let mut mine = Deferred::default();
                let r = if savepoints {
                    batch::savepoint(c, |c| self.accept_in_batch(c, job, &mut overlay, &mut mine))?
                } else {
                    match self.decide_in_batch(c, job, &mut overlay) {
                        Ok(Decided::Accept(a, at)) => {
                            match self.apply_in_batch(c, job, &a, &at, &mut mine) {
                                Ok(text) => Ok((Decided::Accept(a, at), text)),
                                Err(_) => return Err(GroupAbort::Retry),
                            }
                        }
                        Ok(stored) => Ok((stored, None)),
                        Err(e) => Err(e),
                    }
                };
                results.push(match r {
                    Ok((Decided::Accept(mut a, _), text)) => {
                        overlay.advance(&a);
                        search.absorb(mine);
                        // The answer is the stored document, moved out, not copied, with
                        // the text its row was written with.
                        Ok(Document {
                            value: std::mem::take(&mut a.envelope),
                            text,
                        })
                    }
                    Ok((Decided::Stored(v), _)) => Ok(v.into()),
                    Err(e) => Err(e),
                });
            }
            search.flush(c)?;
            Ok((overlay, results))
        })
        .inspect(|_| self.store.committed())
    }

    /// One envelope of a batch in its savepoint: decide, then apply the effects; with the
    /// stored document's text when it was stored.
    fn accept_in_batch(
        &self,
        c: &Connection,
        job: &Job,
        overlay: &mut Overlay,
        search: &mut Deferred,
    ) -> ApiResult<(Decided, Option<String>)> {
        let decided = self.decide_in_batch(c, job, overlay)?;
        let text = match &decided {
            Decided::Accept(a, at) => self.apply_in_batch(c, job, a, at, search)?,
            Decided::Stored(_) => None,
        };
        Ok((decided, text))
    }

    /// One envelope of a batch, decided against the writer's view; reads only (a refusal
    /// leaves nothing to undo).
    fn decide_in_batch(
        &self,
        c: &Connection,
        job: &Job,
        overlay: &mut Overlay,
    ) -> ApiResult<Decided> {
        let f = &job.admitted.facts;
        if let Some(replayed) = self.replay_claim(c, job)? {
            return Ok(replayed);
        }
        overlay.load(f.thread, &self.threads, c)?;
        let view = WriterView {
            conn: c,
            thread: overlay.get(&f.thread),
        };
        let now = self.env.now();
        let limit = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        let node = self.node_address()?;
        let (caller, delivered) = match &job.submitter {
            Submitter::Local(caller) | Submitter::Bridge { caller, .. } => {
                (&caller.identity, false)
            }
            Submitter::Federated { .. } => (&node, true),
        };
        let admission = self.admission(caller, delivered);
        let ctx = Context {
            now,
            node_id: &self.config.domain,
            limits: ThreadLimits {
                max_envelopes_per_thread: limit(self.config.limits.max_envelopes_per_thread),
                max_pending_parents: limit(self.config.limits.max_pending_parents),
            },
            replay_mode: self.config.e2ee_replay_mode,
            rules: &*admission,
        };
        let origin = match &job.submitter {
            Submitter::Local(caller) => Origin::Local {
                caller: &caller.identity,
            },
            Submitter::Federated {
                node,
                origin_event_seq,
            } => Origin::Federated {
                node,
                origin_event_seq: *origin_event_seq,
            },
            Submitter::Bridge { meta, .. } => Origin::Bridge { meta },
        };
        let decision = match decide(&job.admitted, origin, &view, &ctx) {
            Err(e)
                if e.code == loom_protocol::ErrorCode::EnvelopeDuplicate
                    && matches!(job.submitter, Submitter::Federated { .. })
                    && !self.deviations.federation.reject_identical_redelivery =>
            {
                // §23.2: an identical re-delivery is accepted again, not stored twice; a
                // different envelope under a stored id stays ENVELOPE_DUPLICATE.
                let stored = federation::signed_hash(c, &f.id.to_string())?;
                let mine = hex::encode(sha2::Sha256::digest(&job.admitted.canonical));
                if stored.as_deref() != Some(mine.as_str()) {
                    return Err(e.into());
                }
                if !self.deviations.federation.store_redelivered_twice {
                    let body = envelopes::body(c, &f.id)?;
                    return Ok(Decided::Stored(
                        body.unwrap_or_else(|| job.admitted.envelope.clone()),
                    ));
                }
                // The `store_redelivered_twice` deviation: the copy is stored again as a row
                // of its own (a key the node draws), its body unchanged, so it is listed twice.
                let mut copy = job.admitted.clone();
                copy.facts.id = self.env.ids().envelope();
                decide(&copy, origin, &view, &ctx)?
            }
            other => other?,
        };
        Ok(Decided::Accept(Box::new(decision), now.to_rfc3339()))
    }

    /// Writes an accepted envelope's effects (and its outbox rows, §15.6); returns the
    /// stored document's text.
    fn apply_in_batch(
        &self,
        c: &Connection,
        job: &Job,
        a: &Acceptance,
        at: &str,
        search: &mut Deferred,
    ) -> ApiResult<Option<String>> {
        let text = apply(c, a, at, &mut || self.new_event_id(), search)?;
        if let Submitter::Bridge {
            caller,
            meta,
            message_id,
        } = &job.submitter
        {
            self.record_bridged(c, a, at, caller, meta, message_id.as_deref())?;
        }
        if let Submitter::Local(caller) = &job.submitter {
            self.queue_remote_readers(c, a)?;
            self.queue_mail_recipients(c, a)?;
            if let Some(claim) = &job.claim {
                idempotency::remember_in(
                    c,
                    &caller.identity,
                    &claim.key,
                    &Remembered {
                        route: claim.route.clone(),
                        request_hash: claim.request_hash.clone(),
                        status: 201,
                        response: Response::Success(a.envelope.clone()),
                    },
                    at,
                )?;
            }
        }
        Ok(text)
    }

    /// The result already remembered for `job`'s `Idempotency-Key` (a twin that committed
    /// first, in this group or an earlier one), replayed instead of deciding again; the
    /// §14.4 conflict when the key named another request.
    fn replay_claim(&self, c: &Connection, job: &Job) -> ApiResult<Option<Decided>> {
        let (Some(claim), Submitter::Local(caller)) = (&job.claim, &job.submitter) else {
            return Ok(None);
        };
        let Some(r) = idempotency::get_in(c, &caller.identity, &claim.key)? else {
            return Ok(None);
        };
        match replay_for(r, &claim.route, &claim.request_hash)? {
            Outcome::Ok(_, doc) => Ok(Some(Decided::Stored(doc.value))),
            Outcome::Err(e) => Err(e),
        }
    }
}

impl Overlay {
    fn get(&self, id: &ThreadId) -> Option<&ThreadRuntime> {
        match self.0.get(id) {
            Some(Held::Loaded(rt)) => Some(rt),
            _ => None,
        }
    }

    /// Brings `id` into the overlay: from the shared cache, else from the store.
    fn load(
        &mut self,
        id: ThreadId,
        cache: &super::envelopes::ThreadCache,
        c: &Connection,
    ) -> ApiResult<()> {
        let stale = match self.0.get(&id) {
            Some(Held::Loaded(_) | Held::Absent) => return Ok(()),
            Some(Held::Stale) => true,
            None => false,
        };
        let cached = if stale { None } else { cache.get(&id) };
        let held = match cached {
            Some(rt) => Held::Loaded(Box::new(rt)),
            None => match threads::load_runtime(c, &id)? {
                Some(rt) => Held::Loaded(Box::new(rt)),
                None => Held::Absent,
            },
        };
        self.0.insert(id, held);
        Ok(())
    }

    fn advance(&mut self, a: &Acceptance) {
        let entry = self.0.entry(a.facts.thread).or_insert(Held::Absent);
        if !matches!(entry, Held::Loaded(_)) {
            *entry = Held::Loaded(Box::new(ThreadRuntime {
                dag: Default::default(),
                state: a.next_state.clone(),
                last_event_seq: 0,
            }));
        }
        if let Held::Loaded(rt) = entry {
            a.advance(rt);
        }
        for t in &a.evict {
            self.0.insert(*t, Held::Stale);
        }
    }
}

impl super::envelopes::ThreadCache {
    /// Takes a committed batch's thread runtimes.
    fn merge(&self, overlay: Overlay) {
        let mut map = self.lock();
        for (id, held) in overlay.0 {
            match held {
                Held::Loaded(rt) => {
                    map.insert(id, *rt);
                }
                Held::Stale => {
                    map.remove(&id);
                }
                Held::Absent => {}
            }
        }
        super::envelopes::ThreadCache::bound(&mut map);
    }
}
