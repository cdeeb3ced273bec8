//! SMTP: the inbound conversation ([`session`], sans-IO), its socket shell ([`server`]) and
//! the outbound client ([`client`]), and a recording handler ([`sink`]) for the other end.

pub mod client;
pub mod server;
pub mod session;
pub mod sink;
