//! Legal variants, the dual of quirks (issue 13): a quirk turns off one MUST check, so a case
//! that cannot fail is found; a legal variant makes one choice the spec leaves open or allows
//! differently from the reference node, so a case that fails a correct node is found.
//!
//! Built the rustls-BoGo way: the reference node is not touched. A **shim** — an axum layer in
//! front of its unchanged router ([`shim`]) — rewrites requests and responses at the HTTP
//! level so the node as seen over the wire makes the variant's choice: other member names and
//! layouts, other fitting error codes, other response shapes, stricter registration, no
//! optional routes. Each [`Variant`] names the spec sentence that allows its choice (or the
//! absence of a rule, with where the reading comes from). The self-test runs the whole
//! catalogue against the node under every variant and requires every case to pass, to be
//! `skipped`/`unsupported` with a reason, or — for the SHOULD cases a variant declares it does
//! not follow ([`Variant::departs`]) — to be `non-strict`.

mod list;
pub mod refuse_all;
pub mod shim;
pub mod ws_proxy;

pub use list::VARIANTS;
pub use refuse_all::{REFUSE_ALL, RefuseAll};

use crate::profile::Profile;
use crate::target::{
    Embedded, SetupError, TargetInfo, Transport, embedded_config, probe_embedded_with,
    start_embedded_wrapped,
};
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use loom_protocol::clock::Clock;
use shim::Shim;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// How a variant treats one request: the shim hands it the request and the rest of the stack.
pub type Handler = fn(Arc<Shim>, Request, Next) -> Pin<Box<dyn Future<Output = Response> + Send>>;

/// One legal choice, different from the reference node's.
pub struct Variant {
    /// Stable kebab-case name.
    pub name: &'static str,
    /// Where the sentence comes from (`v1.1 §15.2`, or `DESIGN.md §9` for conventions the
    /// spec does not define).
    pub section: &'static str,
    /// The sentence, verbatim (fragments of one passage joined by ` … `).
    pub quote: &'static str,
    /// Why the sentence allows the choice.
    pub reading: &'static str,
    /// What the variant does differently.
    pub choice: &'static str,
    /// SHOULD cases this variant knowingly does not follow (its choice is legal, the case
    /// recommends the other): they must come out `non-strict`, which proves they notice.
    pub departs: &'static [&'static str],
    /// The target profile an operator of such a node writes (empty: none needed).
    pub profile: &'static str,
    /// The shim's behaviour.
    pub handler: Handler,
}

impl std::fmt::Debug for Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Variant")
            .field("name", &self.name)
            .field("section", &self.section)
            .finish_non_exhaustive()
    }
}

/// Every variant, in list order.
pub fn all() -> Vec<&'static Variant> {
    VARIANTS.iter().collect()
}

/// The variant named `name`.
pub fn find(name: &str) -> Option<&'static Variant> {
    VARIANTS.iter().find(|v| v.name == name)
}

/// Starts the reference node behind `variant`'s shim on a loopback port over plain HTTP (no
/// variant concerns TLS: the §14.1 transport cases are `skipped` there, and each run is much
/// cheaper) and probes it with the variant's profile.
pub async fn start(
    variant: &'static Variant,
    clock: Arc<dyn Clock>,
    seed: u64,
) -> Result<(Embedded, TargetInfo), SetupError> {
    start_configured(variant, clock, seed, |_| {}).await
}

/// [`start`] with the node's configuration changed by `edit` last (a refuse-all mutant
/// whose missing feature is not on the HTTP side).
pub async fn start_configured(
    variant: &'static Variant,
    clock: Arc<dyn Clock>,
    seed: u64,
    edit: impl FnOnce(&mut loom_node::NodeConfig),
) -> Result<(Embedded, TargetInfo), SetupError> {
    let profile = Profile::parse(variant.profile)
        .map_err(|e| SetupError(format!("variant {}: profile: {e}", variant.name)))?;
    let mut config = embedded_config();
    let fed = crate::peer::Federation::embedded(&mut config, seed, clock.clone())
        .await
        .map_err(|e| SetupError(format!("the fake federation peers: {e}")))?;
    let mail = crate::mail::MailWorld::embedded(&mut config)
        .await
        .map_err(|e| SetupError(format!("the harness's mail world: {e}")))?;
    edit(&mut config);
    let shim = Shim::new(variant, clock.clone(), fed.clone());
    // The shim runs before the node's routing (the node's router is the fallback of an
    // empty one), so a variant may rewrite a path as well as a body.
    let node = start_embedded_wrapped(clock, seed, config, Transport::Plain, move |router| {
        shim.set_inner(router.clone());
        axum::Router::new()
            .fallback_service(router)
            .layer(axum::middleware::from_fn_with_state(shim, shim::dispatch))
    })
    .await?;
    let mut info = probe_embedded_with(&node, &profile).await?;
    info.federation = Some(fed);
    mail.learn(&info, node.smtp, None);
    info.mail = Some(mail);
    Ok((node, info))
}
