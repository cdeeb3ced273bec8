//! The workflow view (v1.1 §19.2: "Nodes SHOULD provide a dedicated workflow thread view"):
//! one run by its `workflow_id`, or every run of a thread, with step timeouts settled on the
//! injected clock. Readable by the thread's current participants only; others get
//! `THREAD_NOT_FOUND` for the run's thread, as for the thread itself (§8.3).

use super::{Caller, Service};
use crate::error::{ApiError, ApiResult};
use crate::store::workflows;
use loom_protocol::error::ErrorCode;
use loom_protocol::id::ThreadId;
use serde_json::{Value, json};

/// Most runs one thread listing returns.
pub const MAX_LISTED: usize = 100;

impl Service {
    fn may_read_thread(&self, caller: &Caller, thread: &ThreadId) -> ApiResult<bool> {
        let conn = self.store.read();
        let state = self.thread_state(&conn, thread)?;
        Ok(state.is_some_and(|s| {
            s.is_active_participant(&caller.identity) || self.deviations.reads.ignore_audience
        }))
    }

    /// `GET /v1/workflows/{id}`.
    pub fn get_workflow(&self, caller: &Caller, id: &str) -> ApiResult<Value> {
        let missing = || {
            ApiError::new(
                ErrorCode::EnvelopeNotFound,
                "workflow_id",
                format!("no workflow {id} this identity can read"),
                "v1.1 §19.2",
            )
        };
        let run = {
            let conn = self.store.read();
            workflows::get(&conn, id)?.ok_or_else(missing)?
        };
        let thread = ThreadId::parse(&run.thread).map_err(ApiError::internal)?;
        if !self.may_read_thread(caller, &thread)? {
            return Err(missing());
        }
        Ok(run.view(self.env.now()))
    }

    /// `GET /v1/threads/{id}/workflows`: the thread's runs, by id.
    pub fn thread_workflows(&self, caller: &Caller, id: &str) -> ApiResult<Value> {
        let thread = super::threads::parse_thread_id(id)?;
        if !self.may_read_thread(caller, &thread)? {
            return Err(ApiError::not_found(
                ErrorCode::ThreadNotFound,
                "thread_id",
                thread,
            ));
        }
        let runs = {
            let conn = self.store.read();
            workflows::in_thread(&conn, &thread.to_string(), MAX_LISTED)?
        };
        let now = self.env.now();
        Ok(json!({
            "thread_id": thread.to_string(),
            "workflows": runs.iter().map(|r| r.view(now)).collect::<Vec<_>>(),
        }))
    }
}
