//! # loom-client
//!
//! A generic client of the LOOM v1.1 API — of *any* node, not only the reference one (it
//! depends on `loom-protocol` alone). Layers:
//!
//! - [`dial`]: the socket seam ([`Dial`]): tokio TCP, or turmoil with the `sim` feature
//!   (DESIGN.md §3, §8).
//! - [`tls`]: rustls (ring), TLS 1.3 only, ALPN `h2`/`http/1.1`, a caller-chosen trust.
//! - [`client`]: one keep-alive HTTP/1.1 or HTTP/2 connection ([`Client`]); every exchange
//!   comes back as a [`Transcript`].
//! - [`identity`]: registration with a signed proof (DESIGN.md §9) and login (v1.1 §14.2).
//! - [`envelope`]: signed envelopes with ids from an injected generator.
//! - [`api`]: typed helpers for the §15.2 and §16 endpoints.
//! - [`ws`]: the WebSocket client of the real-time stream (§17), over the same [`Dial`].
//! - [`load`]: the `loom-load` generator; [`growth`]: its flat-as-data-grows mode (`--slice`).
//!
//! Binaries: `loom` (the walkthrough CLI) and `loom-load`.

pub mod api;
pub mod client;
pub mod dial;
pub mod e2ee;
pub mod envelope;
pub mod error;
pub mod fedbench;
pub mod growth;
pub mod identity;
pub mod load;
pub mod tls;
pub mod transcript;
pub mod ws;
pub mod wsbench;

pub use client::{Client, NodeUrl, Reply};
#[cfg(feature = "sim")]
pub use dial::SimDial;
pub use dial::{Dial, TokioDial};
pub use envelope::{EnvelopeFactory, MessageDraft};
pub use error::{ApiErrorBody, ClientError};
pub use identity::{Identity, Session};
pub use tls::Trust;
pub use transcript::Transcript;
