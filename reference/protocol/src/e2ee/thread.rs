//! E2EE rules a node enforces on a thread without seeing plaintext (v1.1 §7.4, §10.6, §11.8,
//! §21.4, §23.1). Readings where the spec is silent (README "Choices where the spec is
//! silent"):
//! - a thread becomes end-to-end encrypted through `encryption.epoch@v1` (§11.8 "Encryption is
//!   managed via thread operations"); an encrypted payload in a plain thread is the sender's
//!   choice, checked for form and never indexed (§16.6);
//! - in an E2EE thread a payload uses the thread's profile and exactly its current epoch: an
//!   older epoch belongs to a membership that no longer holds, a later one was never
//!   distributed;
//! - `encryption.epoch@v1` wraps the epoch's key for every current participant (§10.6
//!   "distribute secrets to current participants"), and may not go back.

use super::{EpochParameters, PayloadHead, ReplayMode, ReplayState};
use crate::address::Address;
use crate::error::{ErrorCode, ProtocolError};
use crate::thread::ThreadState;
use serde_json::{Map, Value};

/// The key of a sender's replay state: identity and `from.device_id` (§8.2, §23.1).
pub fn replay_key(sender: &Address, device_id: Option<&str>) -> String {
    format!("{sender}#{}", device_id.unwrap_or(""))
}

fn bridge_refused(field: &str, who: &Address) -> ProtocolError {
    ProtocolError::new(
        ErrorCode::CapabilityDenied,
        field,
        format!("{who} is a bridge identity; bridge identities cannot participate in E2EE threads"),
        "v1.1 §21.4",
    )
}

/// §21.4: no bridge identity joins an E2EE thread.
pub fn check_may_join(state: &ThreadState, who: &Address) -> Result<(), ProtocolError> {
    if state.encryption_enabled && who.is_bridge() {
        return Err(bridge_refused(
            "content.structured.parameters.identity",
            who,
        ));
    }
    Ok(())
}

/// `encryption.epoch@v1` (§10.6, §11.8): well-formed parameters, an epoch that does not go
/// back, a wrapped key for every current participant and no bridge participant (§21.4).
pub fn check_epoch_operation(
    state: &ThreadState,
    parameters: &Map<String, Value>,
) -> Result<EpochParameters, ProtocolError> {
    let params = EpochParameters::parse(parameters)?;
    if state.encryption_enabled && params.epoch < state.key_epoch {
        return Err(ProtocolError::invalid(
            "content.structured.parameters.epoch",
            format!(
                "the key epoch must not go back (the thread is at {})",
                state.key_epoch
            ),
            "v1.1 §10.6",
        ));
    }
    for (who, p) in &state.participants {
        if p.left_at.is_some() {
            continue;
        }
        if who.is_bridge() {
            return Err(bridge_refused("content.structured.parameters", who));
        }
        let name = who.to_string();
        if !params.wrapped_keys.iter().any(|w| w.to == name) {
            return Err(ProtocolError::invalid(
                "content.structured.parameters.wrapped_keys",
                format!("no wrapped key for current participant {name}"),
                "v1.1 §10.6",
            ));
        }
    }
    Ok(params)
}

/// An encrypted payload's place in its thread: in an E2EE thread it must use the thread's
/// profile and current epoch, go to no bridge identity, and carry a replay counter this
/// sender and device have not used (`mode`, §23.1). Returns the replay state to store
/// (none for a plain thread). Cleartext in an E2EE thread is refused before this, with
/// `ENCRYPTION_REQUIRED` ([`crate::policy::require_encryption`]).
pub fn check_payload(
    state: &ThreadState,
    sender: &Address,
    device_id: Option<&str>,
    recipients: &[Address],
    content: &PayloadHead,
    mode: ReplayMode,
) -> Result<Option<(String, ReplayState)>, ProtocolError> {
    if !state.encryption_enabled {
        return Ok(None);
    }
    if let Some(r) = recipients.iter().find(|r| r.is_bridge()) {
        return Err(bridge_refused("to", r));
    }
    if let Some(profile) = &state.encryption_profile
        && content.profile.id() != profile
    {
        return Err(ProtocolError::invalid(
            "content.profile",
            format!(
                "this thread uses {profile}; {} is not its profile",
                content.profile_name
            ),
            "v1.1 §7.4, §11.8",
        ));
    }
    if content.epoch != state.key_epoch {
        let why = if content.epoch < state.key_epoch {
            "is stale: the membership it was sealed for has changed"
        } else {
            "has not been distributed by encryption.epoch@v1"
        };
        return Err(ProtocolError::invalid(
            "content.epoch",
            format!(
                "epoch {} {why}; the thread's key epoch is {}",
                content.epoch, state.key_epoch
            ),
            "v1.1 §10.6",
        ));
    }
    let key = replay_key(sender, device_id);
    let next = match state.replay.get(&key) {
        None => ReplayState::first(content.epoch, content.replay_counter),
        Some(prev) => prev
            .accept(mode, content.epoch, content.replay_counter)
            .map_err(|v| ProtocolError::from(v.error(content.replay_counter, prev)))?,
    };
    Ok(Some((key, next)))
}
