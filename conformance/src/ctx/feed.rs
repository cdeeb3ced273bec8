//! The event feed (v1.1 §16.8): every event of an identity, following the node's pages, so a
//! case finds its own events however much other activity the identity has.

use super::{Exchanges, Ident, shapes};
use crate::finding::Finding;
use loom_client::api::encode_component;
use serde_json::Value;

/// Pages followed at most.
const MAX_PAGES: usize = 50;

impl Exchanges {
    /// Every event of `who` from `GET /v1/events` (after the event id `since`, if given),
    /// following `has_more`/`next_cursor` pages (at most 50). The list may be the body or its
    /// `events` member (or another list member, [`shapes::list`]).
    pub async fn events(
        &mut self,
        who: &Ident,
        since: Option<&str>,
    ) -> Result<Vec<Value>, Finding> {
        let mut out = Vec::new();
        let mut cursor = since.map(str::to_owned);
        for page in 0..MAX_PAGES {
            // The first page starts after the event id `since`; later pages resume at the
            // node's `next_cursor`.
            let path = match &cursor {
                Some(c) if page == 0 => format!("/v1/events?since={}", encode_component(c)),
                Some(c) => format!("/v1/events?cursor={}", encode_component(c)),
                None => "/v1/events".to_owned(),
            };
            let ex = self.get(&path, &who.token).await?;
            let body = self.ok_body(ex)?;
            let list = shapes::list(&body, &["events"]);
            self.expect_at(
                ex,
                list.is_some(),
                "a list of events (v1.1 §16.8)",
                crate::show::preview(&self.transcript(ex).response_body),
            )?;
            out.extend(list.unwrap_or_default());
            let next = body["next_cursor"].as_str().map(str::to_owned);
            if body["has_more"] != Value::Bool(true) || next.is_none() || next == cursor {
                break;
            }
            cursor = next;
        }
        Ok(out)
    }
}
