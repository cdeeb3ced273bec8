//! Enrolling an agent: its human registers it as an `agent` identity whose document carries
//! the human's signed delegation (v1.1 §6.3, §6.4) and registers the §13.1 link on the node
//! (§16.5). The link is the agent's `from.delegation_chain` (§13.5, §18.2).

use loom_client::{Client, ClientError, Dial, Identity};
use serde_json::{Value, json};

/// Who enrols whom, for what, until when.
#[derive(Debug)]
pub struct Enrolment<'a> {
    /// The delegating human (logged in: `human_client` carries its token).
    pub human: &'a Identity,
    /// The agent's address and key (type and members are set here).
    pub agent: &'a Identity,
    /// The scopes granted (no wildcard: [`crate::scope::needed_for`]).
    pub scope: &'a [String],
    /// `created_at` of the link (the caller's clock).
    pub created_at: &'a str,
    /// `expires_at` of the link and the document's `delegation_expires`.
    pub expires_at: &'a str,
}

/// Registers the agent (a 409 for an agent registered before is fine: the link is what
/// grants), then posts the link with the human's session. Answers the chain (`[link]`).
pub async fn enroll<D: Dial>(
    e: &Enrolment<'_>,
    human_client: &mut Client<D>,
    agent_client: &mut Client<D>,
) -> Result<Value, ClientError> {
    let members = e
        .human
        .delegate_agent(e.agent.address(), e.scope, e.expires_at);
    let agent = e.agent.clone().with_type("agent").with_members(members);
    match agent.register(agent_client).await {
        Err(err) if err.status() != Some(409) => return Err(err),
        _ => {}
    }
    let link = signed_link(
        e.human,
        e.agent.address(),
        e.scope,
        e.created_at,
        e.expires_at,
    )?;
    human_client
        .expect("POST", "/v1/delegations", Some(&link), 201)
        .await?;
    Ok(json!([link]))
}

/// The §13.1 link from `human` to `agent` for `scope`, revocable, without sub-delegation,
/// signed by the human (§13.3.1).
pub fn signed_link(
    human: &Identity,
    agent: &str,
    scope: &[String],
    created_at: &str,
    expires_at: &str,
) -> Result<Value, ClientError> {
    let mut link = json!({
        "delegator": human.address(),
        "delegate": agent,
        "scope": scope,
        "created_at": created_at,
        "expires_at": expires_at,
        "revocable": true,
        "allow_sub_delegation": false,
    });
    loom_protocol::delegation::sign_delegation_link(
        &mut link,
        human.signing_key(),
        human.key_id_typed(),
    )
    .map_err(|err| ClientError::Input(format!("signing the delegation link: {err}")))?;
    Ok(link)
}

/// The leaf scope of a chain (what the agent may do, §13.3 step 6).
pub fn leaf_scope(chain: &Value) -> Result<Vec<String>, String> {
    let leaf = chain
        .as_array()
        .and_then(|a| a.last())
        .ok_or("the delegation chain is not a non-empty array of links (v1.1 §13.1)")?;
    leaf.get("scope")
        .and_then(Value::as_array)
        .ok_or("the chain's last link has no scope array (v1.1 §13.1)")?
        .iter()
        .map(|s| {
            s.as_str()
                .map(str::to_owned)
                .ok_or_else(|| "a scope entry is not a string (v1.1 §13.2)".to_owned())
        })
        .collect()
}
