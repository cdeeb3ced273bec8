//! The catalogue: every case, by area. IDs are stable and never renumbered; a retired case
//! keeps its ID reserved (listed in [`RETIRED`]).

/// A case that sends a message with exactly one structural rule broken (the change `$f`
/// applies before signing, so only that rule is wrong) and expects `400 ENVELOPE_INVALID`,
/// the code §24.2 names for an envelope that "fails schema or DAG rules". Proven able to
/// fail by the reference node's `skip-envelope-validation` quirk.
macro_rules! invalid_case {
    ($id:literal, $spec:expr, $covers:expr, $req:literal, $how:literal, $f:ident) => {
        invalid_case!(
            $id,
            $spec,
            $covers,
            $req,
            $how,
            $f,
            expect: "400 ENVELOPE_INVALID"
        )
    };
    ($id:literal, $spec:expr, $covers:expr, $req:literal, $how:literal, $f:ident, expect: $expect:literal) => {
        $crate::case::Case {
            id: $id,
            level: 1,
            strength: $crate::case::Strength::Must,
            spec: $spec,
            requirement: $req,
            covers: $covers,
            needs: &[$crate::case::Need::Provisioning],
            how: concat!(
                $how,
                "; the envelope is otherwise valid and correctly signed; expect ",
                $expect,
                "."
            ),
            interpretation: None,
            mutant: $crate::case::Mutant::Quirk("skip-envelope-validation"),
            run: |cx| Box::pin($f(cx)),
        }
    };
}

mod addresses;
mod api;
mod audience;
mod auth;
mod blobs;
mod bridge;
mod capabilities;
mod compliance;
mod delegation;
mod discovery;
pub mod e2ee;
mod envelopes;
mod errors;
mod events;
mod federation;
mod forks;
mod idempotency;
mod identifiers;
mod identity;
mod identity_types;
mod limits;
mod ops;
mod ratelimit;
mod realtime;
mod search;
mod signatures;
mod structure;
mod tasks;
mod thread_kit;
mod threads;
mod transport;
mod workflows;

use crate::case::Case;

/// IDs that once existed and must never be reused.
pub const RETIRED: &[&str] = &[
    // RFC 4648 §3.2 keeps `=` padding unless the referring spec drops it and v1.1 does not
    // (§7.3 "Store signature value as base64url"), so refusing a padded value is not
    // required: the case failed correct nodes (issue 13, class 5).
    "core.signature.value.padded",
];

/// Every case, in catalogue order (area by area).
pub fn all() -> Vec<&'static Case> {
    let areas: [&'static [Case]; 34] = [
        discovery::CASES,
        envelopes::CASES,
        signatures::CASES,
        threads::CASES,
        ops::CASES,
        forks::CASES,
        capabilities::CASES,
        audience::CASES,
        tasks::CASES,
        delegation::CASES,
        ratelimit::CASES,
        idempotency::CASES,
        search::CASES,
        events::CASES,
        blobs::CASES,
        compliance::CASES,
        identity::CASES,
        identity_types::CASES,
        addresses::CASES,
        auth::CASES,
        api::CASES,
        errors::CASES,
        transport::CASES,
        limits::CASES,
        structure::CASES,
        identifiers::CASES,
        federation::HELLO,
        federation::INBOUND,
        federation::ENFORCE,
        federation::OUTBOUND,
        bridge::CASES,
        e2ee::CASES,
        realtime::CASES,
        workflows::CASES,
    ];
    areas.iter().flat_map(|a| a.iter()).collect()
}

/// The case with `id`.
pub fn find(id: &str) -> Option<&'static Case> {
    all().into_iter().find(|c| c.id == id)
}
