//! Blobs (attachments, v1.1 §16.7): initiate, upload numbered parts, finalize, download.
//!
//! - `POST /v1/blobs {filename, mime_type, size_bytes?, thread_id?}` makes an `uploading`
//!   blob owned by the caller; a `thread_id` must be a thread the caller participates in.
//! - Parts are numbered from 1 and uploaded in order: part `n` may be the next one or a
//!   re-upload of an earlier one (a retry replaces it). Only the owner uploads. The total may
//!   not exceed `limits.max_blob_bytes` nor a declared `size_bytes` (`PAYLOAD_TOO_LARGE`).
//! - `complete` concatenates the parts, checks a declared size and fixes `size` and
//!   `sha256` (hex; `hash` is the `sha256:<hex>` form attachments carry, §8.1). A complete
//!   blob is immutable.
//! - Downloads need an access token (the route is authenticated) and read access (§16.7):
//!   the owner, a current participant of the blob's thread, or the holder of a stored
//!   capability token of that thread granting `read` (or `admin`). Anyone else gets
//!   `CAPABILITY_DENIED`.
//!
//! The registry has no code for an unknown blob; `ENVELOPE_NOT_FOUND` (404) with field
//! `blob_id` stands in. Changing a complete blob, or downloading an incomplete one, is
//! `STATE_TRANSITION_INVALID` (409).

use super::capabilities::thread_id_param;
use super::{Caller, Service};
use crate::error::{ApiError, ApiResult};
use crate::store::blobs::{self, Blob};
use crate::store::{Connection, Tx};
use loom_protocol::ErrorCode;
use loom_protocol::capability::Grant;
use loom_protocol::id::{BlobId, ThreadId};
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// Highest part number.
pub const MAX_PARTS: u32 = 10_000;

/// `POST /v1/blobs` body.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlobCreate {
    /// File name shown to recipients.
    pub filename: String,
    /// `type/subtype`.
    pub mime_type: String,
    /// Expected total size, if known.
    pub size_bytes: Option<u64>,
    /// The thread whose readers may download the blob.
    pub thread_id: Option<String>,
}

/// A downloaded blob.
#[derive(Debug, Clone)]
pub struct BlobContent {
    /// `mime_type` given at creation.
    pub mime_type: String,
    /// `filename` given at creation.
    pub filename: String,
    /// Hex SHA-256 of the bytes.
    pub sha256: String,
    /// The bytes.
    pub bytes: Vec<u8>,
}

fn bad(field: &str, reason: impl Into<String>) -> ApiError {
    ApiError::bad_request(field, reason, "v1.1 §16.7")
}

fn too_large(field: &str, reason: String) -> ApiError {
    ApiError::new(
        ErrorCode::PayloadTooLarge,
        field,
        reason,
        "v1.1 §16.7, §24.2",
    )
}

fn parse_blob_id(id: &str) -> ApiResult<BlobId> {
    BlobId::parse(id).map_err(|e| ApiError::bad_request("blob_id", e.to_string(), "v1.1 §8.4"))
}

/// RFC 6838 `type/subtype` of restricted-name characters, no parameters.
fn valid_mime(m: &str) -> bool {
    let name = |s: &str| {
        (1..=127).contains(&s.len())
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&^_.+-".contains(&b))
    };
    m.split_once('/').is_some_and(|(t, s)| name(t) && name(s))
}

fn valid_filename(f: &str) -> bool {
    (1..=255).contains(&f.len()) && !f.chars().any(|c| c.is_control() || c == '/' || c == '\\')
}

fn load(conn: &Connection, id: &BlobId) -> ApiResult<Blob> {
    blobs::get(conn, id)?
        .ok_or_else(|| ApiError::not_found(ErrorCode::EnvelopeNotFound, "blob_id", id))
}

impl Service {
    /// The blob, if `caller` owns it and it is still uploading.
    fn owned_uploading(&self, tx: &Tx<'_>, caller: &Caller, id: &BlobId) -> ApiResult<Blob> {
        let b = load(tx, id)?;
        if b.owner != caller.identity.to_string() {
            return Err(ApiError::new(
                ErrorCode::CapabilityDenied,
                "blob_id",
                "only the identity that initiated the upload may upload or finalize it",
                "v1.1 §16.7",
            ));
        }
        if b.complete {
            return Err(ApiError::new(
                ErrorCode::StateTransitionInvalid,
                "blob_id",
                "the blob is complete and cannot change",
                "v1.1 §16.7",
            ));
        }
        Ok(b)
    }

    /// `POST /v1/blobs` (§16.7): initiate an upload.
    pub fn create_blob(&self, caller: &Caller, req: &BlobCreate) -> ApiResult<Value> {
        if !valid_filename(&req.filename) {
            return Err(bad(
                "filename",
                "filename must be 1-255 bytes without control characters or path separators",
            ));
        }
        if !valid_mime(&req.mime_type) {
            return Err(bad(
                "mime_type",
                "mime_type must be type/subtype (RFC 6838 names, no parameters)",
            ));
        }
        let max = self.config.limits.max_blob_bytes;
        if let Some(size) = req.size_bytes
            && size > max
        {
            return Err(too_large(
                "size_bytes",
                format!("this node stores blobs of at most {max} bytes"),
            ));
        }
        let thread = req
            .thread_id
            .as_deref()
            .map(|t| thread_id_param("thread_id", t))
            .transpose()?;
        let tx = self.store.begin()?;
        if let Some(t) = &thread {
            self.participant_thread(&tx, caller, t, "thread_id")?;
        }
        let id = self.env.ids().blob();
        let now = self.env.now().to_rfc3339();
        blobs::insert(
            &tx,
            &blobs::NewBlob {
                id: &id,
                owner: &caller.identity,
                thread: thread.as_ref(),
                filename: &req.filename,
                mime_type: &req.mime_type,
                declared: req.size_bytes,
                at: &now,
            },
        )?;
        self.audit(
            &tx,
            &caller.identity.to_string(),
            "blob.created",
            &id.to_string(),
            json!({"thread_id": thread.map(|t| t.to_string()), "filename": req.filename, "mime_type": req.mime_type, "size_bytes": req.size_bytes}),
        )?;
        tx.commit()?;
        Ok(json!({
            "blob_id": id.to_string(),
            "status": "uploading",
            "upload_url_parts": format!("/v1/blobs/{id}/parts/{{n}}"),
            "complete_url": format!("/v1/blobs/{id}/complete"),
            "max_blob_bytes": max,
        }))
    }

    /// `PUT /v1/blobs/{id}/parts/{n}` (§16.7): store part `n` (raw bytes).
    pub fn put_blob_part(
        &self,
        caller: &Caller,
        id: &str,
        n: &str,
        bytes: &[u8],
    ) -> ApiResult<Value> {
        let bid = parse_blob_id(id)?;
        let n: u32 = n
            .parse()
            .ok()
            .filter(|n| (1..=MAX_PARTS).contains(n))
            .ok_or_else(|| bad("n", format!("part numbers are 1-{MAX_PARTS}")))?;
        let tx = self.store.begin()?;
        let b = self.owned_uploading(&tx, caller, &bid)?;
        let last = blobs::last_part(&tx, &bid)?;
        if n > last + 1 {
            return Err(bad(
                "n",
                format!("parts are uploaded in order: the next part is {}", last + 1),
            ));
        }
        let len = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        let total = blobs::uploaded_bytes(&tx, &bid, n)?.saturating_add(len);
        let max = self.config.limits.max_blob_bytes;
        if total > max {
            return Err(too_large(
                "$body",
                format!("the blob would be {total} bytes; this node stores at most {max}"),
            ));
        }
        if let Some(declared) = b.declared
            && total > declared
        {
            return Err(too_large(
                "$body",
                format!("the blob would be {total} bytes; size_bytes declared {declared}"),
            ));
        }
        blobs::put_part(&tx, &bid, n, bytes)?;
        self.audit(
            &tx,
            &caller.identity.to_string(),
            "blob.part_uploaded",
            &bid.to_string(),
            json!({"n": n, "size": len, "replaced": n <= last}),
        )?;
        tx.commit()?;
        Ok(json!({"blob_id": bid.to_string(), "n": n, "size": len, "uploaded_bytes": total}))
    }

    /// `POST /v1/blobs/{id}/complete` (§16.7): finalize; returns `{blob_id, size, sha256}`.
    pub fn complete_blob(&self, caller: &Caller, id: &str) -> ApiResult<Value> {
        let bid = parse_blob_id(id)?;
        let tx = self.store.begin()?;
        let b = self.owned_uploading(&tx, caller, &bid)?;
        let bytes = blobs::content(&tx, &bid)?;
        let size = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        if let Some(declared) = b.declared
            && declared != size
        {
            return Err(bad(
                "size_bytes",
                format!("{size} bytes were uploaded; size_bytes declared {declared}"),
            ));
        }
        let sha = hex::encode(Sha256::digest(&bytes));
        let now = self.env.now().to_rfc3339();
        blobs::complete(&tx, &bid, size, &sha, &now)?;
        self.audit(
            &tx,
            &caller.identity.to_string(),
            "blob.completed",
            &bid.to_string(),
            json!({"size": size, "sha256": sha}),
        )?;
        tx.commit()?;
        Ok(json!({
            "blob_id": bid.to_string(),
            "size": size,
            "sha256": sha,
            "hash": format!("sha256:{sha}"),
            "filename": b.filename,
            "mime_type": b.mime_type,
        }))
    }

    /// `GET /v1/blobs/{id}` (§16.7): the bytes, for the owner or a reader of its thread.
    /// `caller`: `None` reads without the check (the self-test's anonymous-download shim;
    /// the route always names a caller).
    pub fn get_blob(&self, caller: Option<&Caller>, id: &str) -> ApiResult<BlobContent> {
        let bid = parse_blob_id(id)?;
        let conn = self.store.read();
        let b = load(&conn, &bid)?;
        let readable = match caller {
            Some(c) => self.may_read_blob(&conn, c, &b)?,
            None => true,
        };
        if !readable {
            return Err(ApiError::new(
                ErrorCode::CapabilityDenied,
                "blob_id",
                "downloads need the owner, a participant of the blob's thread, or a read capability for it",
                "v1.1 §16.7",
            ));
        }
        if !b.complete {
            return Err(ApiError::new(
                ErrorCode::StateTransitionInvalid,
                "blob_id",
                "the upload is not complete",
                "v1.1 §16.7",
            ));
        }
        let bytes = blobs::content(&conn, &bid)?;
        Ok(BlobContent {
            mime_type: b.mime_type,
            filename: b.filename,
            sha256: b.sha256.unwrap_or_default(),
            bytes,
        })
    }

    /// §16.7 read access: owner, current participant of the blob's thread, or a stored
    /// `read` capability for that thread.
    fn may_read_blob(&self, conn: &Connection, caller: &Caller, b: &Blob) -> ApiResult<bool> {
        if b.owner == caller.identity.to_string() || self.deviations.reads.skip_blob_read_check {
            return Ok(true);
        }
        let Some(thread) = &b.thread_id else {
            return Ok(false);
        };
        let tid = ThreadId::parse(thread).map_err(ApiError::internal)?;
        let Some(state) = self.thread_state(conn, &tid)? else {
            return Ok(false);
        };
        Ok(state.is_active_participant(&caller.identity)
            || self.holds_grant(conn, &caller.identity, &state, Grant::Read)?)
    }
}
