//! Level 2, federation (v1.1 §15.3–§15.7, §23.2, §28.1; v1.0 §14.3–§14.4; loom-core-1 item
//! 5): cases that need the harness's fake federation peer ([`crate::peer`]).

mod enforce;
mod hello;
mod inbound;
mod kit;
mod outbound;

pub use enforce::CASES as ENFORCE;
pub use hello::CASES as HELLO;
pub use inbound::CASES as INBOUND;
pub use outbound::CASES as OUTBOUND;
