//! The catalogue: every case, by area. IDs are stable and never renumbered; a retired case
//! keeps its ID reserved (listed in [`RETIRED`]).

mod api;
mod auth;
mod discovery;
mod envelopes;
mod errors;
mod identity;
mod transport;

use crate::case::Case;

/// IDs that once existed and must never be reused.
pub const RETIRED: &[&str] = &[];

/// Every case, in catalogue order (area by area).
pub fn all() -> Vec<&'static Case> {
    let areas: [&'static [Case]; 7] = [
        discovery::CASES,
        envelopes::CASES,
        identity::CASES,
        auth::CASES,
        api::CASES,
        errors::CASES,
        transport::CASES,
    ];
    areas.iter().flat_map(|a| a.iter()).collect()
}

/// The case with `id`.
pub fn find(id: &str) -> Option<&'static Case> {
    all().into_iter().find(|c| c.id == id)
}
