//! Blobs (v1.1 §16.7): initiate, upload parts, complete, download. Downloads need an access
//! token and read access to the blob's thread (or a blob capability).

use crate::case::{Case, Ex, Finding, Mutant, Need, Strength, Verdict};
use crate::ctx::{Ctx, Ident, shapes};
use crate::finding::setup_step;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::json;

pub(super) const PART1: &[u8] = b"LOOM conformance blob, part one. ";
pub(super) const PART2: &[u8] = b"Part two ends it.";

/// `owner` uploads a two-part blob bound to `thread`; returns its id. Every step is setup for
/// the download cases: a node whose upload works otherwise makes them an `error` naming the
/// step, not a failure. §16.7 leaves the part encoding open: a part goes as raw bytes
/// (`application/octet-stream`), and when the node refuses that (400 or 415) as JSON
/// `{"data_base64": …}` (standard base64, also under `data` and `content_base64`).
pub(super) async fn upload(cx: &mut Ctx, owner: &Ident, thread: &str) -> Result<String, Finding> {
    let size = PART1.len() + PART2.len();
    let req = json!({
        "filename": "conformance.txt",
        "mime_type": "text/plain",
        "size_bytes": size,
        "thread_id": thread,
    });
    let i = cx
        .net
        .call("POST", "/v1/blobs", Some(&owner.token), Some(&req))
        .await?;
    let body = cx.net.created_body(i).map_err(setup_step(
        "initiate the upload with POST /v1/blobs (v1.1 §16.7)",
    ))?;
    let id = shapes::created_id(&body, "blob_id").unwrap_or_default();
    cx.net
        .expect_at(
            i,
            id.starts_with("blob_"),
            "POST /v1/blobs answers a blob_ id (v1.1 §8.4, §16.7)",
            format!("body = {}", crate::show::compact(&body)),
        )
        .map_err(setup_step("read the blob id"))?;
    for (n, part) in [(1, PART1), (2, PART2)] {
        let path = format!("/v1/blobs/{id}/parts/{n}");
        let mut i = cx
            .net
            .exchange(
                "PUT",
                &path,
                &[("content-type", "application/octet-stream")],
                Some(part.to_vec()),
                Some(&owner.token),
            )
            .await?;
        if matches!(cx.net.status(i), 400 | 415) {
            let b64 = STANDARD.encode(part);
            let json_part = json!({"data_base64": b64, "data": b64, "content_base64": b64, "encoding": "base64"});
            i = cx
                .net
                .call("PUT", &path, Some(&owner.token), Some(&json_part))
                .await?;
        }
        cx.net.expect_ok(i).map_err(setup_step(&format!(
            "upload part {n} with PUT {path} (v1.1 §16.7)"
        )))?;
    }
    let i = cx
        .net
        .call(
            "POST",
            &format!("/v1/blobs/{id}/complete"),
            Some(&owner.token),
            None,
        )
        .await?;
    cx.net.expect_ok(i).map_err(setup_step(
        "complete the upload with POST /v1/blobs/{id}/complete (v1.1 §16.7)",
    ))?;
    Ok(id)
}

/// The bytes a download answered: the body, or — when the node answers JSON — the base64 of
/// its `data_base64`, `data` or `content_base64` member.
fn downloaded(cx: &Ctx, i: crate::ctx::Ex) -> Vec<u8> {
    let t = cx.net.transcript(i);
    let json = t
        .header("content-type")
        .is_some_and(|c| c.to_ascii_lowercase().starts_with("application/json"));
    if json {
        let v = cx.net.json(i);
        for m in ["data_base64", "data", "content_base64"] {
            if let Some(b) = v[m].as_str().and_then(|s| STANDARD.decode(s).ok()) {
                return b;
            }
        }
    }
    t.response_body.clone()
}

/// `who` downloads `id` and must get the uploaded bytes.
async fn downloads(cx: &mut Ctx, who: &Ident, id: &str) -> Verdict {
    downloaded_by(cx, who, id).await.map(|_| ())
}

/// [`downloads`], returning the download exchange.
async fn downloaded_by(cx: &mut Ctx, who: &Ident, id: &str) -> Result<Ex, Finding> {
    let i = cx
        .net
        .exchange(
            "GET",
            &format!("/v1/blobs/{id}"),
            &[],
            None,
            Some(&who.token),
        )
        .await?;
    cx.net.expect_ok(i)?;
    let want = [PART1, PART2].concat();
    let got = downloaded(cx, i);
    cx.net.expect_that(
        got == want,
        format!("the {} uploaded bytes, parts in order", want.len()),
        format!("{} bytes: {}", got.len(), crate::show::preview(&got)),
    )?;
    Ok(i)
}

async fn roundtrip(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let (t, _) = cx.start_thread(&alice, &[&bob]).await?;
    let id = upload(cx, &alice, &t).await?;
    downloads(cx, &alice, &id).await?;
    downloads(cx, &bob, &id).await
}

async fn needs_token(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let (t, _) = cx.start_thread(&alice, &[&bob]).await?;
    let id = upload(cx, &alice, &t).await?;
    let c = downloaded_by(cx, &alice, &id)
        .await
        .map_err(crate::finding::setup_step(
            "the owner's own download (the control)",
        ))?;
    let i = cx
        .net
        .exchange("GET", &format!("/v1/blobs/{id}"), &[], None, None)
        .await?;
    cx.net
        .expect_refused_beside(i, c, "the same download with a bearer token", &[], "")
}

async fn outsider_refused(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let carol = cx.identity("carol", "human").await?;
    let (t, _) = cx.start_thread(&alice, &[&bob]).await?;
    let id = upload(cx, &alice, &t).await?;
    let c = downloaded_by(cx, &bob, &id)
        .await
        .map_err(setup_step("the participant's download (control)"))?;
    let i = cx
        .net
        .exchange(
            "GET",
            &format!("/v1/blobs/{id}"),
            &[],
            None,
            Some(&carol.token),
        )
        .await?;
    cx.net
        .expect_refused_beside(i, c, "the same download by a participant", &[], "")
}

const NEEDS: &[Need] = &[Need::Provisioning, Need::Blobs];

/// Blob cases.
pub const CASES: &[Case] = &[
    Case {
        id: "core.blobs.upload.roundtrip",
        level: 1,
        strength: Strength::Should,
        spec: &["v1.1 §16.7"],
        requirement: "Initiate, upload parts, complete and download return the bytes to the owner and to a thread participant.",
        covers: &["R-16.7-03"],
        needs: NEEDS,
        how: "Alice uploads a two-part blob bound to her thread with Bob and completes it; Alice and Bob each download the exact bytes.",
        interpretation: None,
        mutant: Mutant::NotApplicable(
            "§16.7 lists the upload endpoints without a requirement keyword",
        ),
        run: |cx| Box::pin(roundtrip(cx)),
    },
    Case {
        id: "core.blobs.download.requires-token",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §16.7"],
        requirement: "Blob downloads MUST require an auth token.",
        covers: &["R-16.7-01", "R-8.4-05"],
        needs: NEEDS,
        how: "The owner downloads a completed blob (control); the same GET /v1/blobs/{id} without Authorization must be refused with a §24.1 4xx error (no sentence names 401). Upload steps are setup: parts go as octet-stream, or as JSON base64 when the node refuses that.",
        interpretation: None,
        mutant: Mutant::Quirk("anonymous-blob-download"),
        run: |cx| Box::pin(needs_token(cx)),
    },
    Case {
        id: "core.blobs.download.outsider-refused",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §16.7"],
        requirement: "Blob downloads MUST require thread read capability or an explicit blob capability.",
        covers: &["R-16.7-02"],
        needs: NEEDS,
        how: "A participant of the blob's thread downloads it (control); an authenticated non-participant without a capability must be refused (4xx with a §24.1 body: 403 and 404 are usual). Upload steps are setup.",
        interpretation: None,
        mutant: Mutant::Quirk("skip-blob-read-check"),
        run: |cx| Box::pin(outsider_refused(cx)),
    },
];
