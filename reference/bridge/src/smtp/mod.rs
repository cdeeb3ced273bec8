//! SMTP: the inbound conversation ([`session`], sans-IO), its socket shell ([`server`]) and
//! the outbound client ([`client`]).

pub mod client;
pub mod server;
pub mod session;
