//! # loom-bridge
//!
//! The LOOM email bridge (v1.1 §21, v1.0 §19): SMTP in and out, SPF/DKIM/DMARC, and the
//! mapping between mail and envelopes. The node runs it when its configuration has a
//! `[bridge]` section; everything that decides is a pure function here, and the sockets are
//! a thin shell ([`smtp::server`], [`smtp::client`]).
//!
//! | module | spec | what |
//! |---|---|---|
//! | [`smtp::session`] | RFC 5321, 3207, 1870, 6152, 2920, 6531 | the inbound conversation, sans-IO |
//! | [`smtp::server`] | RFC 5321 §4.5.3 | sockets, timeouts, STARTTLS, connection cap |
//! | [`smtp::client`] | RFC 5321 §3.3 | one outbound transaction, a result per recipient |
//! | [`auth`] | v1.1 §21.2; RFC 7208, 6376, 8463, 7489 | SPF, DKIM, DMARC → `meta.bridge.auth_results`, quarantine or refusal |
//! | [`inbound`] | v1.1 §21.2, §20.2, §20.6, v1.0 §19.2 | mail → envelope drafts |
//! | [`outbound`] | v1.1 §21.3, v1.0 §19.3 | envelope → MIME, DKIM-signed; Bcc as separate messages |
//! | [`rules`] | v1.1 §21 | the steps above as a trait with the spec as default (quirks override one) |

pub mod auth;
pub mod bounce;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod inbound;
pub mod outbound;
pub mod rules;
pub mod smtp;
