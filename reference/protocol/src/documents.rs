//! Serde models of the non-envelope documents: identity (v1.1 §6.2–§6.4), delegation link
//! (§13.1), capability token (§12.1), thread (§10.1) and node document (§15.2).
//!
//! Signatures over links and tokens are computed from their JSON (see [`crate::delegation`]
//! and [`crate::capability`]); these types are for building and reading them. Members a type
//! does not name are kept in `extra` so a read-modify-write does not drop them.

use crate::address::Address;
use crate::id::{CapabilityId, EnvelopeId, ThreadId};
use crate::thread::{Fork, LinkedThread, ThreadStatus};
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Identity types (v1.1 §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IdentityType {
    /// Natural person.
    Human,
    /// AI agent.
    Agent,
    /// Group address.
    Team,
    /// Automated system.
    Service,
    /// Proxied from email.
    Bridge,
    /// A node (federation signing).
    Node,
}

/// A published public key (v1.1 §6.2 `public_keys.signing[]` / `encryption[]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PublicKeyEntry {
    /// `Ed25519` or `X25519`.
    pub algorithm: String,
    /// Key id.
    pub key_id: String,
    /// base64url raw public key.
    pub public_key: String,
    /// `active`, `revoked`, …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Key scope, e.g. `["*"]` or `["send", "receive"]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Vec<String>>,
}

/// `public_keys`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PublicKeys {
    /// Signing keys.
    #[serde(default)]
    pub signing: Vec<PublicKeyEntry>,
    /// Encryption keys.
    #[serde(default)]
    pub encryption: Vec<PublicKeyEntry>,
}

/// `agent_info` (v1.1 §6.4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentInfo {
    /// Model provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Model name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// An identity document (v1.1 §6.2, agent fields §6.4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdentityDocument {
    /// `"1.1"`.
    pub loom: String,
    /// The address.
    pub id: Address,
    /// Identity type.
    #[serde(rename = "type")]
    pub kind: IdentityType,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// Hosting node domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// Creation time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Timestamp>,
    /// Keys.
    #[serde(default)]
    pub public_keys: PublicKeys,
    /// Delegations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delegations: Option<Vec<Value>>,
    /// Identity-level capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<Vec<String>>,
    /// Agents: the delegating identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delegator: Option<Address>,
    /// Agents: model information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_info: Option<AgentInfo>,
    /// Agents: scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delegation_scope: Option<Vec<String>>,
    /// Agents: expiry of the delegation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delegation_expires: Option<Timestamp>,
    /// Teams: members.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub members: Option<Vec<Address>>,
    /// Services: accountable operator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
    /// Aliases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aliases: Option<Vec<Address>>,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// Other members.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A delegation link (v1.1 §13.1, `key_id`/`signature_context` per §13.3.1 and the v1.1 node).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DelegationLink {
    /// Link id, if assigned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Who delegates.
    pub delegator: Address,
    /// Who receives authority.
    pub delegate: Address,
    /// Scopes (§13.2).
    pub scope: Vec<String>,
    /// When the link was made (required, §13.3).
    pub created_at: Timestamp,
    /// Expiry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Timestamp>,
    /// Whether it can be revoked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revocable: Option<bool>,
    /// Whether the delegate may delegate further.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_sub_delegation: Option<bool>,
    /// How many further links may follow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_sub_delegation_depth: Option<u64>,
    /// Delegator key that signed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_id: Option<String>,
    /// `LOOM-DELEGATION-SIG-v1` when context-prefixed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature_context: Option<String>,
    /// base64url signature (absent while building).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// Other members.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `scope` of a capability token (v1.1 §12.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapabilityScope {
    /// The thread.
    pub thread_id: ThreadId,
    /// Allowed envelope types.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envelope_types: Option<Vec<String>>,
    /// Deepest DAG depth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_depth: Option<u64>,
    /// Highest priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_priority: Option<crate::envelope::Priority>,
    /// `deny` or `allow`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_domains: Option<String>,
}

/// A capability token (v1.1 §12.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapabilityToken {
    /// `"1.1"`.
    pub loom: String,
    /// `cap_` + ULID.
    pub id: CapabilityId,
    /// Issuer.
    pub issued_by: Address,
    /// Holder.
    pub issued_to: Address,
    /// Creation time.
    pub created_at: Timestamp,
    /// Expiry.
    pub expires_at: Option<Timestamp>,
    /// Spent on first use.
    pub single_use: bool,
    /// Must equal the thread's `cap_epoch`.
    pub epoch: u64,
    /// Grants.
    pub grants: Vec<String>,
    /// Scope.
    pub scope: CapabilityScope,
    /// PoP key binding `{key_id}` (§12.6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cnf: Option<Value>,
    /// Signature object (absent while building).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<crate::envelope::EnvelopeSignature>,
}

/// A thread participant as the API shows it (v1.1 §10.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadParticipant {
    /// Identity.
    pub identity: Address,
    /// Role.
    pub role: String,
    /// Joined.
    pub joined_at: Timestamp,
    /// Left.
    pub left_at: Option<Timestamp>,
}

/// `encryption` of a thread (v1.1 §10.1).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ThreadEncryption {
    /// Enabled.
    pub enabled: bool,
    /// Profile.
    pub profile: Option<String>,
    /// Key epoch.
    pub key_epoch: u64,
}

/// The thread object of the API (v1.1 §10.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Thread {
    /// `thr_` + ULID.
    pub id: ThreadId,
    /// Root envelope.
    pub root_envelope_id: EnvelopeId,
    /// Subject.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// State.
    pub state: ThreadStatus,
    /// Created.
    pub created_at: Timestamp,
    /// Updated.
    pub updated_at: Timestamp,
    /// Participants.
    pub participants: Vec<ThreadParticipant>,
    /// Labels.
    #[serde(default)]
    pub labels: Vec<String>,
    /// Forks.
    #[serde(default)]
    pub forks: Vec<Fork>,
    /// Linked threads.
    #[serde(default)]
    pub linked_threads: Vec<LinkedThread>,
    /// Schema intent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// Capability epoch.
    pub cap_epoch: u64,
    /// Encryption.
    #[serde(default)]
    pub encryption: ThreadEncryption,
}

/// A node signing key in the node document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeSigningKey {
    /// `k_node_sign_…`.
    pub key_id: String,
    /// base64url raw Ed25519 public key.
    pub public_key: String,
    /// `Ed25519`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub algorithm: Option<String>,
    /// `active`, …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

/// Federation section of the node document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FederationInfo {
    /// `POST /v1/federation/deliver` URL.
    pub deliver_url: String,
    /// Requirements, e.g. `["LOOM-HTTP-SIG-1"]`.
    #[serde(default)]
    pub requirements: Vec<String>,
    /// `open`, `quarantine` or `allowlist`.
    pub policy: String,
}

/// The well-known node document (v1.1 §15.2): every member the section lists.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeDocument {
    /// `"1.1"`.
    pub loom: String,
    /// Node id.
    pub node_id: String,
    /// Domain.
    pub domain: String,
    /// API base URL.
    pub api_url: String,
    /// WebSocket URL.
    pub websocket_url: String,
    /// Federation endpoint, requirements and policy mode.
    pub federation: FederationInfo,
    /// Node signing keys.
    pub signing_keys: Vec<NodeSigningKey>,
    /// Supported protocol versions.
    pub supported_versions: Vec<String>,
    /// Supported profiles (protocol and E2EE).
    pub supported_profiles: Vec<String>,
    /// Other members.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
