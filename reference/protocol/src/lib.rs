//! # loom-protocol
//!
//! The pure core of the LOOM v1.1 protocol (canonical spec: `loom-protocol-v1.1.md`; v1.0 is
//! the historical baseline): the wire model, RFC 8785 canonical JSON, Ed25519 signing with
//! domain separation, envelope validation mapped to the §24.2 error registry, delegation
//! chains, capability tokens, the thread DAG and state machines, the task state machine and
//! LOOM-HTTP-SIG-1.
//!
//! Nothing here does IO or reads ambient time or randomness: time comes from a [`Clock`],
//! randomness from a seeded RNG, and lookups (keys, revocations, spent tokens, nonces) from
//! small traits the caller implements. Every rule lives in one function whose doc comment
//! names its section.

pub mod accept;
pub mod address;
pub mod bounds;
pub mod capability;
pub mod clock;
pub mod delegation;
pub mod documents;
pub mod e2ee;
pub mod envelope;
pub mod error;
pub mod federation;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod http_sig;
pub mod id;
pub mod identity_profile;
pub mod jcs;
pub mod keys;
pub mod policy;
pub mod realtime;
pub mod registration;
pub mod scope;
pub mod session;
pub mod task;
pub mod thread;
pub mod time;
pub mod workflow;

pub use address::Address;
pub use clock::{Clock, FixedClock, ManualClock, SystemClock};
pub use envelope::{Envelope, validate_envelope, verify_envelope_signature};
pub use error::{ErrorBody, ErrorCode, ProtocolError};
pub use id::{
    AttachmentId, BlobId, CapabilityId, EnvelopeId, EventId, IdGenerator, KeyId, KeyKind, ThreadId,
};
pub use time::Timestamp;

/// The protocol version this crate speaks on the wire (v1.1 §8.2).
pub const LOOM_VERSION: &str = "1.1";
