//! Step 7 of a delivery: the answer, `{receipt, rejected}` with the signed receipt where the
//! existing v1.1 node reads it (DESIGN.md §9), or the first envelope's §24.1 error.

use super::DeliveryAnswer;
use crate::error::{ApiError, ApiResult};
use crate::service::Service;
use loom_protocol::Timestamp;
use loom_protocol::federation::DeliveryReceipt;
use serde_json::{Value, json};

impl Service {
    pub(super) fn receipt_answer(
        &self,
        delivery_id: &Option<String>,
        node: &str,
        outcomes: Vec<(Option<String>, Result<(), ApiError>)>,
        total: usize,
        now: Timestamp,
    ) -> ApiResult<DeliveryAnswer> {
        let mut accepted = Vec::new();
        let mut rejected = Vec::new();
        let mut first_error = None;
        for (id, r) in outcomes {
            match (id, r) {
                (Some(id), Ok(())) => accepted.push(id),
                (id, Err(e)) => {
                    rejected.push(json!({
                        "envelope_id": id,
                        "error": {"code": e.code.as_str(), "message": e.to_string(),
                                  "details": {"field": e.field, "reason": e.reason, "section": e.section}},
                    }));
                    first_error.get_or_insert(e);
                }
                (None, Ok(())) => {}
            }
        }
        let Some(receipt) = DeliveryReceipt::for_delivery(
            delivery_id.clone(),
            &self.config.domain,
            node,
            accepted,
            total,
            now,
        ) else {
            return Err(first_error.unwrap_or_else(|| {
                ApiError::bad_request("envelopes", "no envelope was accepted", "v1.1 §15.4")
            }));
        };
        let (key_id, key) = self.node_key();
        let dev = &self.deviations.federation;
        let receipt = if dev.unsigned_receipt {
            receipt.unsigned_value()
        } else {
            receipt.sign(key_id, key)
        };
        // DESIGN.md §9: the existing node reads the receipt under `receipt`.
        let body = if dev.no_receipt {
            json!({})
        } else if dev.top_level_receipt {
            let mut body = receipt;
            body["rejected"] = Value::Array(rejected);
            body
        } else {
            json!({"receipt": receipt, "rejected": rejected})
        };
        Ok(DeliveryAnswer { status: 202, body })
    }
}
