//! The profile's `[bridge]` section (Level 3): where a target of the user's takes mail and
//! where it relays mail to.
//!
//! ```toml
//! [bridge]
//! smtp = "mail.example.org:25"     # the target's SMTP listener
//! sink_listen = "0.0.0.0:2526"     # the harness's SMTP sink; the target relays there
//! harness_ip = "192.0.2.10"        # the address the target sees the harness connect from
//! dns_listen = "0.0.0.0:5354"      # optional: serve the harness's DNS records there (UDP)
//! mail_domain = "example.org"      # default: capabilities /bridge/mail_domain, else the domain
//! wait_secs = 30                   # how long outbound mail may take to reach the sink
//! [bridge.dkim]                    # the target's DKIM TXT records (default: capabilities
//! "loom._domainkey.example.org" = "v=DKIM1; k=rsa; p=…"   #  /bridge/dkim {name, record})
//! ```
//!
//! The target must see the harness's DNS records: point its resolver at `dns_listen`, or
//! preload the records `loom-conformance run` prints when a `[bridge]` section is given.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};

/// `[bridge]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BridgeSection {
    /// The target's SMTP listener, `host:port`.
    pub smtp: String,
    /// Where the harness's sink listens.
    pub sink_listen: SocketAddr,
    /// The address the target sees the harness connect from.
    pub harness_ip: IpAddr,
    /// Where the harness serves its DNS records (UDP), if at all.
    #[serde(default)]
    pub dns_listen: Option<SocketAddr>,
    /// The target's mail domain.
    #[serde(default)]
    pub mail_domain: Option<String>,
    /// Seconds outbound mail may take.
    #[serde(default = "default_wait")]
    pub wait_secs: f64,
    /// The target's DKIM records, name → TXT value.
    #[serde(default)]
    pub dkim: BTreeMap<String, String>,
}

fn default_wait() -> f64 {
    30.0
}
