//! An identity the harness provisioned on the target, with its session.

use loom_client::Identity;
use serde_json::Value;

/// An identity the harness provisioned, with its session (v1.1 §14.2 tokens).
#[derive(Debug, Clone)]
pub struct Ident {
    /// Address, key and type.
    pub id: Identity,
    /// The bearer access token.
    pub token: String,
    /// The refresh token.
    pub refresh: String,
}

impl Ident {
    /// `loom://…`.
    pub fn address(&self) -> &str {
        self.id.address()
    }

    /// Signs an envelope in place (context-prefixed, v1.1 §7.3).
    pub fn sign(&self, env: &mut Value) {
        // Signing a JSON object cannot fail; a non-object is the case's bug.
        let _ = self.id.sign(env);
    }
}
