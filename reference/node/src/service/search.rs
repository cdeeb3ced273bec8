//! Search (v1.1 §16.6): full text over cleartext `content.human.text`, the structured
//! intent and parameters (`envelope_search`), and thread subject, labels and participants
//! (`thread_search`), both SQLite FTS5 indexes the envelope pipeline keeps. Encrypted
//! content is never indexed, so nothing about it can be found ("nodes MUST NOT claim
//! decrypted content search").
//!
//! Results are only what the caller may read: envelopes the caller is a recorded reader of
//! or sits in the thread of, each then passing the same audience check as
//! `GET /v1/envelopes/{id}` (§8.3); threads the caller currently participates in.
//!
//! The query is never handed to FTS5 as syntax: the whitespace-separated terms go to the
//! store as [`crate::store::search::Terms`], which quotes each and AND-s them, so no user
//! input can make a syntax error. An empty query (without an `intent` filter), control characters or
//! more than [`MAX_TERMS`] terms or [`MAX_QUERY_LEN`] bytes are `ENVELOPE_INVALID` naming `q`.

use super::capabilities::thread_id_param;
use super::{Caller, Service};
use crate::error::{ApiError, ApiResult};
use crate::store::{Connection, search};
use loom_protocol::id::ThreadId;
use serde::Deserialize;
use serde_json::{Value, json};

/// Longest accepted query, in bytes.
pub const MAX_QUERY_LEN: usize = 512;
/// Most accepted terms.
pub const MAX_TERMS: usize = 16;
/// Default page size.
pub const DEFAULT_LIMIT: usize = 20;

/// `GET /v1/search` parameters.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchQuery {
    /// Free text.
    pub q: Option<String>,
    /// Only this thread.
    pub thread_id: Option<String>,
    /// Only envelopes with this exact structured intent.
    pub intent: Option<String>,
    /// Most envelopes (and most threads) returned.
    pub limit: Option<usize>,
}

fn bad(field: &str, reason: impl Into<String>) -> ApiError {
    ApiError::bad_request(field, reason, "v1.1 §16.6")
}

/// The terms of the user's text (split at whitespace, at most [`MAX_TERMS`]), refused as
/// `ENVELOPE_INVALID` naming `q` when too long or holding control characters. Empty for an
/// empty query. The store turns them into its index's query form
/// ([`crate::store::search::Terms`]), so no input is ever index syntax.
pub fn query_terms(q: &str) -> ApiResult<Vec<&str>> {
    if q.len() > MAX_QUERY_LEN {
        return Err(bad("q", format!("q is longer than {MAX_QUERY_LEN} bytes")));
    }
    if q.chars().any(char::is_control) {
        return Err(bad("q", "q must not contain control characters"));
    }
    let terms: Vec<&str> = q.split_whitespace().collect();
    if terms.len() > MAX_TERMS {
        return Err(bad("q", format!("q has more than {MAX_TERMS} terms")));
    }
    Ok(terms)
}

impl Service {
    /// `GET /v1/search` (§16.6): `{envelopes, threads}`, best match first (FTS5 bm25, ties by
    /// thread and `event_seq`). Envelopes are returned whole, as `GET /v1/envelopes/{id}`
    /// would; threads as `{id, subject, state, labels, participants}`.
    pub fn search(&self, caller: &Caller, q: &SearchQuery) -> ApiResult<Value> {
        let terms = query_terms(q.q.as_deref().unwrap_or(""))?;
        let text = search::Terms::of(&terms);
        let intent = q.intent.as_deref().filter(|i| !i.is_empty());
        if text.is_none() && intent.is_none() {
            return Err(bad("q", "q (search terms) or intent is required"));
        }
        let limit = q.limit.unwrap_or(DEFAULT_LIMIT);
        if limit == 0 || limit > self.config.limits.max_page_size {
            return Err(bad(
                "limit",
                format!("limit must be 1-{}", self.config.limits.max_page_size),
            ));
        }
        let thread = q
            .thread_id
            .as_deref()
            .map(|t| thread_id_param("thread_id", t))
            .transpose()?;
        let conn = self.store.read();
        let envelopes =
            self.search_envelopes(&conn, caller, text.as_ref(), intent, thread.as_ref(), limit)?;
        let threads = match (&text, intent) {
            (Some(text), None) => {
                let found = search::threads(&conn, &caller.identity, text, thread.as_ref(), limit)?;
                let mut out = Vec::new();
                for (id, s) in found {
                    let participants: Vec<String> = s
                        .participants
                        .iter()
                        .filter(|(_, p)| p.left_at.is_none())
                        .map(|(a, _)| a.to_string())
                        .collect();
                    out.push(json!({"id": id, "subject": s.subject, "state": s.state.as_str(), "labels": s.labels, "participants": participants}));
                }
                out
            }
            // Intent is an envelope attribute: an intent search finds no threads.
            _ => Vec::new(),
        };
        Ok(json!({"q": q.q, "envelopes": envelopes, "threads": threads, "limit": limit}))
    }

    fn search_envelopes(
        &self,
        conn: &Connection,
        caller: &Caller,
        text: Option<&search::Terms>,
        intent: Option<&str>,
        thread: Option<&ThreadId>,
        limit: usize,
    ) -> ApiResult<Vec<Value>> {
        let mut out = Vec::new();
        let query = search::SearchQuery {
            caller: &caller.identity,
            text,
            intent,
            thread,
        };
        // The thread's membership comes with each row, so no thread state is loaded: a
        // search over threads long gone from the thread cache costs what a fresh one does.
        search::envelopes(conn, &query, |body, member| -> ApiResult<bool> {
            let env: Value = serde_json::from_str(body).map_err(ApiError::internal)?;
            if self.check_visible_as(&env, caller, member).is_ok() {
                out.push(env);
            }
            Ok(out.len() < limit)
        })?;
        Ok(out)
    }
}
