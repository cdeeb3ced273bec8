//! The real-time protocol (v1.1 §17, v1.0 §16): what a client may send over the WebSocket,
//! parsed once into a typed [`ClientAction`]; the subscription [`Channel`]s and which events
//! each carries; presence (§17.5, v1.0 §16.4) and typing payloads; the heartbeat rule
//! (§17.4). The node's socket shell and the harness's client both read these; neither
//! re-reads raw frames.
//!
//! Readings where the spec is silent (node README "Choices where the spec is silent"):
//! - a frame is one JSON object with an `action` member (v1.1 §17.1 shows `subscribe`, §17.2
//!   `ack`, v1.0 §16.4 `presence.update`, v1.0 §16.5 `ping`); typing is `typing.start` /
//!   `typing.stop` with the thread in `thread_id` (top level, or inside `data` as presence
//!   carries its fields);
//! - `since` is an event id (§17.1 shows `evt_…`) or a cursor the node gave out; `ack`'s
//!   `cursor` likewise (§17.2 shows an `evt_…` value in `cursor`);
//! - the `identity` channel carries the events whose subject is that identity (its presence,
//!   its typing);
//! - members the action does not define are refused, so a misspelt `channels` is not silently
//!   a subscription to nothing.

use crate::address::Address;
use crate::error::{ErrorCode, ProtocolError};
use crate::id::ThreadId;
use crate::jcs;
use crate::time::Timestamp;
use serde_json::{Map, Value};

/// The §17.3 core event types (v1.0 §16.3 lists the same, without `receipt.failed`).
pub const EVENT_TYPES: &[&str] = &[
    "envelope.new",
    "envelope.retracted",
    "thread.updated",
    "thread.fork",
    "thread.merged",
    "participant.joined",
    "participant.left",
    "presence.update",
    "capability.revoked",
    "delegation.revoked",
    "receipt.delivered",
    "receipt.read",
    "receipt.failed",
    "typing.start",
    "typing.stop",
];

/// Presence statuses (v1.0 §16.4).
pub const PRESENCE_STATUSES: &[&str] = &["available", "busy", "away", "offline"];
/// Response-time hints (v1.0 §16.4).
pub const RESPONSE_TIMES: &[&str] = &["instant", "minutes", "hours", "days"];

/// Seconds between client pings (§17.4: "Clients MUST send `ping` every 30s").
pub const PING_INTERVAL_S: i64 = 30;
/// Seconds without a ping after which a node MAY terminate the connection (§17.4).
pub const PING_TIMEOUT_S: i64 = 90;

/// Bounds on what one connection may ask for (per-connection limits, v1.1 §14.3, §23).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RealtimeLimits {
    /// Largest inbound frame in bytes.
    pub max_frame_bytes: usize,
    /// Most channels in one subscription.
    pub max_channels: usize,
    /// Longest `custom_status` in characters.
    pub max_custom_status: usize,
    /// Most entries in `capabilities_active`.
    pub max_capabilities_active: usize,
}

impl Default for RealtimeLimits {
    fn default() -> Self {
        RealtimeLimits {
            max_frame_bytes: 16 * 1024,
            max_channels: 64,
            max_custom_status: 256,
            max_capabilities_active: 32,
        }
    }
}

/// One subscription channel (§17.1, v1.0 §16.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Channel {
    /// Every event the caller may read.
    AllThreads,
    /// Events of one thread.
    Thread(ThreadId),
    /// Events whose subject is one identity (its presence, its typing).
    Identity(Address),
}

/// What an event is about, for channel matching (parsed once per event, compared per
/// connection without allocating).
#[derive(Debug, Clone, Copy)]
pub struct EventSubject<'a> {
    /// The thread, when the event belongs to one.
    pub thread: Option<ThreadId>,
    /// The identity the event is about (`payload.identity`), when it names one.
    pub identity: Option<&'a Address>,
}

impl Channel {
    /// Whether an event about `subject` travels on this channel.
    pub fn carries(&self, subject: EventSubject<'_>) -> bool {
        match self {
            Channel::AllThreads => true,
            Channel::Thread(t) => subject.thread == Some(*t),
            Channel::Identity(a) => subject.identity == Some(a),
        }
    }

    /// The channel as the client wrote it (canonical form).
    pub fn to_json(&self) -> Value {
        match self {
            Channel::AllThreads => serde_json::json!({"type": "all_threads"}),
            Channel::Thread(t) => serde_json::json!({"type": "thread", "id": t.to_string()}),
            Channel::Identity(a) => serde_json::json!({"type": "identity", "id": a.to_string()}),
        }
    }
}

/// Whether any of `channels` carries an event about `subject`.
pub fn subscribed(channels: &[Channel], subject: EventSubject<'_>) -> bool {
    channels.iter().any(|c| c.carries(subject))
}

/// A presence update (v1.0 §16.4; visibility §17.5).
#[derive(Debug, Clone, PartialEq)]
pub struct Presence {
    /// `data.identity` as sent (it must be the sender's own, v1.0 §16.4).
    pub identity: Option<Address>,
    /// `available` | `busy` | `away` | `offline`.
    pub status: String,
    /// `instant` | `minutes` | `hours` | `days`.
    pub response_time: Option<String>,
    /// Capabilities the identity is acting under now.
    pub capabilities_active: Vec<String>,
    /// Load, 0 to 1.
    pub load: Option<f64>,
    /// Free text.
    pub custom_status: Option<String>,
}

impl Presence {
    /// The event payload for `identity`'s presence.
    pub fn to_payload(&self, identity: &Address) -> Value {
        let mut m = Map::new();
        m.insert("identity".into(), identity.to_string().into());
        m.insert("status".into(), self.status.clone().into());
        if let Some(r) = &self.response_time {
            m.insert("response_time".into(), r.clone().into());
        }
        if !self.capabilities_active.is_empty() {
            m.insert(
                "capabilities_active".into(),
                self.capabilities_active.clone().into(),
            );
        }
        if let Some(l) = self.load {
            m.insert("load".into(), l.into());
        }
        if let Some(c) = &self.custom_status {
            m.insert("custom_status".into(), c.clone().into());
        }
        Value::Object(m)
    }
}

/// One client frame, parsed.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientAction {
    /// `subscribe` (§17.1): replaces the connection's channels; `since` resumes.
    Subscribe {
        /// The channels, at least one.
        channels: Vec<Channel>,
        /// An event id or cursor to resume after.
        since: Option<String>,
    },
    /// `ack` (§17.2): the client has processed everything up to `cursor`.
    Ack {
        /// An event id or cursor.
        cursor: String,
    },
    /// `ping` (§17.4), echoed in the `pong`.
    Ping {
        /// The client's `ts`, if any.
        ts: Option<Value>,
    },
    /// `presence.update` (v1.0 §16.4).
    PresenceUpdate(Presence),
    /// `typing.start` (§17.3).
    TypingStart(ThreadId),
    /// `typing.stop` (§17.3).
    TypingStop(ThreadId),
}

impl ClientAction {
    /// The action's name, as the client wrote it.
    pub fn name(&self) -> &'static str {
        match self {
            ClientAction::Subscribe { .. } => "subscribe",
            ClientAction::Ack { .. } => "ack",
            ClientAction::Ping { .. } => "ping",
            ClientAction::PresenceUpdate(_) => "presence.update",
            ClientAction::TypingStart(_) => "typing.start",
            ClientAction::TypingStop(_) => "typing.stop",
        }
    }
}

fn bad(field: impl Into<String>, rule: impl Into<String>, section: &'static str) -> ProtocolError {
    ProtocolError::new(ErrorCode::EnvelopeInvalid, field, rule, section)
}

fn only_members(obj: &Map<String, Value>, allowed: &[&str], at: &str) -> Result<(), ProtocolError> {
    match obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        None => Ok(()),
        Some(k) => Err(bad(
            format!("{at}{k}"),
            format!(
                "unknown member; this action takes {}",
                allowed
                    .iter()
                    .map(|a| format!("`{a}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            "v1.1 §17",
        )),
    }
}

fn string<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    at: &str,
    section: &'static str,
) -> Result<Option<&'a str>, ProtocolError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.is_empty() => Ok(Some(s)),
        Some(_) => Err(bad(
            format!("{at}{key}"),
            "must be a non-empty string",
            section,
        )),
    }
}

/// Parses one inbound text frame (v1.1 §17, v1.0 §16): strict I-JSON, one object, a known
/// `action`, its members and nothing else. Errors name the member and the section.
pub fn parse_action(text: &str, limits: &RealtimeLimits) -> Result<ClientAction, ProtocolError> {
    if text.len() > limits.max_frame_bytes {
        return Err(ProtocolError::new(
            ErrorCode::PayloadTooLarge,
            "$",
            format!(
                "a frame may carry at most {} bytes; this one has {}",
                limits.max_frame_bytes,
                text.len()
            ),
            "v1.1 §14.3",
        ));
    }
    let value = jcs::parse_strict(text)
        .map_err(|e| bad("$", format!("not a strict JSON text: {e}"), "v1.1 §17"))?;
    let Value::Object(obj) = value else {
        return Err(bad("$", "a frame must be a JSON object", "v1.1 §17"));
    };
    let action = match obj.get("action") {
        Some(Value::String(a)) => a.as_str(),
        Some(_) => return Err(bad("action", "must be a string", "v1.1 §17.1")),
        None => {
            return Err(bad(
                "action",
                "required: subscribe, ack, ping, presence.update, typing.start or typing.stop",
                "v1.1 §17.1",
            ));
        }
    };
    match action {
        "subscribe" => parse_subscribe(&obj, limits),
        "ack" => {
            only_members(&obj, &["action", "cursor"], "")?;
            let cursor = string(&obj, "cursor", "", "v1.1 §17.2")?
                .ok_or_else(|| bad("cursor", "required", "v1.1 §17.2"))?;
            Ok(ClientAction::Ack {
                cursor: cursor.to_owned(),
            })
        }
        "ping" => {
            only_members(&obj, &["action", "ts"], "")?;
            Ok(ClientAction::Ping {
                ts: obj.get("ts").cloned(),
            })
        }
        "presence.update" => {
            only_members(&obj, &["action", "data"], "")?;
            match obj.get("data") {
                Some(Value::Object(d)) => {
                    parse_presence(d, limits).map(ClientAction::PresenceUpdate)
                }
                _ => Err(bad(
                    "data",
                    "required: an object with `status`",
                    "v1.0 §16.4",
                )),
            }
        }
        "typing.start" | "typing.stop" => {
            only_members(&obj, &["action", "thread_id", "data"], "")?;
            let inner = match obj.get("data") {
                None | Some(Value::Null) => None,
                Some(Value::Object(d)) => {
                    only_members(d, &["thread_id"], "data.")?;
                    string(d, "thread_id", "data.", "v1.1 §17.3")?
                }
                Some(_) => return Err(bad("data", "must be an object", "v1.1 §17.3")),
            };
            let top = string(&obj, "thread_id", "", "v1.1 §17.3")?;
            let raw = match (top, inner) {
                (Some(a), Some(b)) if a != b => {
                    return Err(bad(
                        "data.thread_id",
                        "differs from `thread_id`; name the thread once",
                        "v1.1 §17.3",
                    ));
                }
                (Some(a), _) | (None, Some(a)) => a,
                (None, None) => return Err(bad("thread_id", "required", "v1.1 §17.3")),
            };
            let thread =
                ThreadId::parse(raw).map_err(|e| bad("thread_id", e.to_string(), "v1.1 §5"))?;
            Ok(if action == "typing.start" {
                ClientAction::TypingStart(thread)
            } else {
                ClientAction::TypingStop(thread)
            })
        }
        other => Err(bad(
            "action",
            format!(
                "unknown action {other:?}; known: subscribe, ack, ping, presence.update, typing.start, typing.stop"
            ),
            "v1.1 §17",
        )),
    }
}

fn parse_subscribe(
    obj: &Map<String, Value>,
    limits: &RealtimeLimits,
) -> Result<ClientAction, ProtocolError> {
    only_members(obj, &["action", "channels", "since"], "")?;
    let Some(Value::Array(list)) = obj.get("channels") else {
        return Err(bad(
            "channels",
            "required: an array of channels ({\"type\": \"all_threads\"}, {\"type\": \"thread\", \"id\": …}, {\"type\": \"identity\", \"id\": …})",
            "v1.1 §17.1",
        ));
    };
    if list.is_empty() {
        return Err(bad(
            "channels",
            "must name at least one channel",
            "v1.1 §17.1",
        ));
    }
    if list.len() > limits.max_channels {
        return Err(ProtocolError::new(
            ErrorCode::PayloadTooLarge,
            "channels",
            format!(
                "at most {} channels per connection; {} given",
                limits.max_channels,
                list.len()
            ),
            "v1.1 §14.3",
        ));
    }
    let mut channels = Vec::with_capacity(list.len());
    for (i, c) in list.iter().enumerate() {
        let at = format!("channels[{i}].");
        let Value::Object(c) = c else {
            return Err(bad(
                format!("channels[{i}]"),
                "must be an object",
                "v1.1 §17.1",
            ));
        };
        let kind = string(c, "type", &at, "v1.1 §17.1")?
            .ok_or_else(|| bad(format!("{at}type"), "required", "v1.1 §17.1"))?;
        let channel = match kind {
            "all_threads" => {
                only_members(c, &["type"], &at)?;
                Channel::AllThreads
            }
            "thread" => {
                only_members(c, &["type", "id"], &at)?;
                let id = string(c, "id", &at, "v1.0 §16.1")?
                    .ok_or_else(|| bad(format!("{at}id"), "required", "v1.0 §16.1"))?;
                Channel::Thread(
                    ThreadId::parse(id)
                        .map_err(|e| bad(format!("{at}id"), e.to_string(), "v1.1 §5"))?,
                )
            }
            "identity" => {
                only_members(c, &["type", "id"], &at)?;
                let id = string(c, "id", &at, "v1.0 §16.1")?
                    .ok_or_else(|| bad(format!("{at}id"), "required", "v1.0 §16.1"))?;
                Channel::Identity(
                    Address::parse(id)
                        .map_err(|e| bad(format!("{at}id"), e.to_string(), "v1.1 §6.1"))?,
                )
            }
            other => {
                return Err(bad(
                    format!("{at}type"),
                    format!("unknown channel type {other:?}; known: all_threads, thread, identity"),
                    "v1.1 §17.1",
                ));
            }
        };
        if !channels.contains(&channel) {
            channels.push(channel);
        }
    }
    let since = string(obj, "since", "", "v1.1 §17.1")?.map(str::to_owned);
    Ok(ClientAction::Subscribe { channels, since })
}

fn parse_presence(
    d: &Map<String, Value>,
    limits: &RealtimeLimits,
) -> Result<Presence, ProtocolError> {
    const S: &str = "v1.0 §16.4";
    only_members(
        d,
        &[
            "identity",
            "status",
            "response_time",
            "capabilities_active",
            "load",
            "custom_status",
        ],
        "data.",
    )?;
    let one_of = |key: &str, allowed: &[&str]| -> Result<Option<String>, ProtocolError> {
        match string(d, key, "data.", S)? {
            None => Ok(None),
            Some(v) if allowed.contains(&v) => Ok(Some(v.to_owned())),
            Some(v) => Err(bad(
                format!("data.{key}"),
                format!("{v:?} is not one of {}", allowed.join(", ")),
                S,
            )),
        }
    };
    let status =
        one_of("status", PRESENCE_STATUSES)?.ok_or_else(|| bad("data.status", "required", S))?;
    let response_time = one_of("response_time", RESPONSE_TIMES)?;
    let identity = string(d, "identity", "data.", S)?
        .map(|a| Address::parse(a).map_err(|e| bad("data.identity", e.to_string(), "v1.1 §6.1")))
        .transpose()?;
    let capabilities_active = match d.get("capabilities_active") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) if a.len() <= limits.max_capabilities_active => a
            .iter()
            .enumerate()
            .map(|(i, v)| match v {
                Value::String(s) if !s.is_empty() && s.len() <= 128 => Ok(s.clone()),
                _ => Err(bad(
                    format!("data.capabilities_active[{i}]"),
                    "must be a non-empty string of at most 128 bytes",
                    S,
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(bad(
                "data.capabilities_active",
                format!(
                    "must be an array of at most {} strings",
                    limits.max_capabilities_active
                ),
                S,
            ));
        }
    };
    let load = match d.get("load") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_f64() {
            Some(l) if (0.0..=1.0).contains(&l) => Some(l),
            _ => return Err(bad("data.load", "must be a number from 0 to 1", S)),
        },
    };
    let custom_status = match string(d, "custom_status", "data.", S)? {
        Some(c) if c.chars().count() > limits.max_custom_status => {
            return Err(bad(
                "data.custom_status",
                format!("at most {} characters", limits.max_custom_status),
                S,
            ));
        }
        c => c.map(str::to_owned),
    };
    Ok(Presence {
        identity,
        status,
        response_time,
        capabilities_active,
        load,
        custom_status,
    })
}

/// Whether a connection last heard from at `last_ping` may be terminated at `now` (§17.4:
/// "Connections without ping for 90s MAY be terminated"); `timeout_s` is the node's setting,
/// [`PING_TIMEOUT_S`] by default.
pub fn heartbeat_overdue(last_ping: Timestamp, now: Timestamp, timeout_s: i64) -> bool {
    now.unix_ms() - last_ping.unix_ms() > timeout_s.saturating_mul(1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(t: &str) -> Result<ClientAction, ProtocolError> {
        parse_action(t, &RealtimeLimits::default())
    }

    #[test]
    fn subscribe_forms() {
        let a = parse(r#"{"action":"subscribe","channels":[{"type":"all_threads"},{"type":"all_threads"}],"since":"evt_01J0000000000000000000000A"}"#).unwrap();
        assert_eq!(
            a,
            ClientAction::Subscribe {
                channels: vec![Channel::AllThreads],
                since: Some("evt_01J0000000000000000000000A".into())
            }
        );
        let e = parse(r#"{"action":"subscribe","chanels":[]}"#).unwrap_err();
        assert_eq!(e.field, "chanels");
        let e = parse(r#"{"action":"subscribe","channels":[{"type":"room"}]}"#).unwrap_err();
        assert_eq!(e.field, "channels[0].type");
        let e =
            parse(r#"{"action":"subscribe","channels":[{"type":"thread","id":"x"}]}"#).unwrap_err();
        assert_eq!(e.field, "channels[0].id");
        let e = parse(r#"{"action":"subscribe","channels":[]}"#).unwrap_err();
        assert_eq!(e.field, "channels");
    }

    #[test]
    fn presence_is_validated_by_member() {
        let p = parse(r#"{"action":"presence.update","data":{"status":"busy","load":0.5,"custom_status":"Q1"}}"#).unwrap();
        let ClientAction::PresenceUpdate(p) = p else {
            panic!("{p:?}")
        };
        assert_eq!(p.status, "busy");
        for (frame, field) in [
            (
                r#"{"action":"presence.update","data":{"status":"asleep"}}"#,
                "data.status",
            ),
            (r#"{"action":"presence.update","data":{}}"#, "data.status"),
            (
                r#"{"action":"presence.update","data":{"status":"away","load":2}}"#,
                "data.load",
            ),
            (
                r#"{"action":"presence.update","data":{"status":"away","mood":"x"}}"#,
                "data.mood",
            ),
            (r#"{"action":"presence.update"}"#, "data"),
        ] {
            assert_eq!(parse(frame).unwrap_err().field, field, "{frame}");
        }
    }

    #[test]
    fn typing_takes_the_thread_once() {
        let t = "thr_01J0000000000000000000000A";
        assert_eq!(
            parse(&format!(r#"{{"action":"typing.start","thread_id":"{t}"}}"#)).unwrap(),
            ClientAction::TypingStart(ThreadId::parse(t).unwrap())
        );
        assert_eq!(
            parse(&format!(
                r#"{{"action":"typing.stop","data":{{"thread_id":"{t}"}}}}"#
            ))
            .unwrap(),
            ClientAction::TypingStop(ThreadId::parse(t).unwrap())
        );
        assert_eq!(
            parse(r#"{"action":"typing.start"}"#).unwrap_err().field,
            "thread_id"
        );
    }

    #[test]
    fn garbage_is_explained() {
        for (frame, field) in [
            ("not json", "$"),
            ("[1]", "$"),
            (r#"{"action":"dance"}"#, "action"),
            (r#"{"action":1}"#, "action"),
            (r#"{"action":"ack"}"#, "cursor"),
            (r#"{"action":"ping","x":1}"#, "x"),
            (r#"{"action":"ack","cursor":"1","cursor":"2"}"#, "$"),
        ] {
            assert_eq!(parse(frame).unwrap_err().field, field, "{frame}");
        }
        let big = format!(r#"{{"action":"ping","ts":"{}"}}"#, "x".repeat(20_000));
        assert_eq!(parse(&big).unwrap_err().code, ErrorCode::PayloadTooLarge);
    }

    #[test]
    fn channels_carry_their_events() {
        let t = ThreadId::parse("thr_01J0000000000000000000000A").unwrap();
        let a = Address::parse("loom://a@x.test").unwrap();
        let on_t = EventSubject {
            thread: Some(t),
            identity: None,
        };
        let of_a = EventSubject {
            thread: None,
            identity: Some(&a),
        };
        assert!(Channel::Thread(t).carries(on_t));
        assert!(!Channel::Thread(t).carries(of_a));
        assert!(Channel::Identity(a.clone()).carries(of_a));
        assert!(!Channel::Identity(a.clone()).carries(on_t));
        assert!(Channel::AllThreads.carries(of_a));
    }

    #[test]
    fn heartbeat_window() {
        let t0 = Timestamp::from_unix_ms(1_000_000);
        assert!(!heartbeat_overdue(t0, t0.plus_ms(90_000), PING_TIMEOUT_S));
        assert!(heartbeat_overdue(t0, t0.plus_ms(90_001), PING_TIMEOUT_S));
    }
}
