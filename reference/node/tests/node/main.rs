//! The node's tests, one binary (issue 31: 37 test binaries cost more to link than to run).
//! Each module is what was a file of its own; `support` is the in-process test client and the
//! federation helpers they share. The `sim` modules need the `sim` feature, which the node's
//! dev-dependency on itself turns on.

mod support;

mod audit_anchor;
mod auth_cache;
mod blobs;
mod bridge;
mod bridge_hostile;
mod bridge_real_peers;
mod capabilities;
mod cli;
mod crash;
mod delegations;
mod discovery_identity;
mod envelope_bounds;
mod envelopes;
mod events;
mod federation;
mod federation_capabilities;
mod federation_dns;
mod federation_hostile;
mod federation_interop;
mod federation_quirks;
mod federation_retired_keys;
mod federation_tls;
mod hostile;
mod hostile_network;
mod migrations;
mod net_hostile;
mod query_plans;
mod quirks;
mod realtime;
mod release_has_no_quirks;
mod search;
mod security_events;
mod service_has_no_sql;
mod sim;
mod sim_timers;
mod sim_tls;
mod threads;
mod tls;
mod token_lifecycle;
mod walkthrough_federation;
mod workflows;
mod write_group;
mod write_timeout;
