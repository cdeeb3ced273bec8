//! Blobs (v1.1 §16.7): initiate, upload parts, complete, download. Downloads need an access
//! token and read access to the blob's thread (or a blob capability).

use crate::case::{Case, Finding, Mutant, Need, Strength, Verdict};
use crate::ctx::{Ctx, Ex, Ident, TestData, skip};
use serde_json::json;

const PART1: &[u8] = b"LOOM conformance blob, part one. ";
const PART2: &[u8] = b"Part two ends it.";

/// `owner` uploads a two-part blob bound to `thread`; returns its id.
async fn upload(cx: &mut Ctx, owner: &Ident, thread: &str) -> Result<String, Finding> {
    let req =
        json!({"filename": "conformance.txt", "mime_type": "text/plain", "thread_id": thread});
    let i = cx
        .net
        .call("POST", "/v1/blobs", Some(&owner.token), Some(&req))
        .await?;
    let body = cx.net.created_body(i)?;
    let id = body["blob_id"]
        .as_str()
        .or_else(|| body["id"].as_str())
        .unwrap_or_default()
        .to_owned();
    cx.net.expect_that(
        id.starts_with("blob_"),
        "POST /v1/blobs answers a blob_ id (v1.1 §8.4, §16.7)",
        format!("body = {body}"),
    )?;
    for (n, part) in [(1, PART1), (2, PART2)] {
        let i = cx
            .net
            .exchange(
                "PUT",
                &format!("/v1/blobs/{id}/parts/{n}"),
                &[("content-type", "application/octet-stream")],
                Some(part.to_vec()),
                Some(&owner.token),
            )
            .await?;
        let status = cx.net.transcript(i).status;
        cx.net.expect_that(
            (200..300).contains(&status),
            format!("PUT part {n} succeeds"),
            format!("HTTP {status}"),
        )?;
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
    let status = cx.net.transcript(i).status;
    cx.net.expect_that(
        (200..300).contains(&status),
        "POST /v1/blobs/{id}/complete succeeds",
        format!("HTTP {status}"),
    )?;
    Ok(id)
}

/// `who` downloads `id` and must get the uploaded bytes.
async fn downloads(cx: &mut Ctx, who: &Ident, id: &str) -> Verdict {
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
    cx.net.expect_that(
        cx.net.transcript(i).response_body == want,
        format!("the {} uploaded bytes, parts in order", want.len()),
        format!(
            "{} bytes: {}",
            cx.net.transcript(i).response_body.len(),
            crate::show::preview(&cx.net.transcript(i).response_body)
        ),
    )
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
    downloads(cx, &alice, &id).await?;
    let i = cx
        .net
        .exchange("GET", &format!("/v1/blobs/{id}"), &[], None, None)
        .await?;
    cx.net.expect_status(i, 401)?;
    cx.net.expect_error_shape(i)
}

async fn outsider_refused(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let carol = cx.identity("carol", "human").await?;
    let (t, _) = cx.start_thread(&alice, &[&bob]).await?;
    let id = upload(cx, &alice, &t).await?;
    downloads(cx, &bob, &id).await?;
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
    let status = cx.net.transcript(i).status;
    cx.net.expect_that(
        status == 403 || status == 404,
        "403 (or 404) for an authenticated identity without read access to the blob's thread (v1.1 §16.7)",
        format!("HTTP {status}: {}", crate::show::preview(&cx.net.transcript(i).response_body)),
    )?;
    cx.net.expect_error_shape(i)
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
        how: "The owner downloads a completed blob (200, control); the same GET /v1/blobs/{id} without Authorization must be 401 with a §24.1 body.",
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
        how: "A participant of the blob's thread downloads it (control); an authenticated non-participant without a capability must get 403 (or 404) with a §24.1 body.",
        interpretation: None,
        mutant: Mutant::Quirk("skip-blob-read-check"),
        run: |cx| Box::pin(outsider_refused(cx)),
    },
];
