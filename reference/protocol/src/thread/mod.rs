//! Threads: the envelope DAG (v1.1 §10.2, §10.7), rendering order (§10.3) and the
//! operation log with its state machine (§10.4–§10.6, §11).

pub mod dag;
pub mod order;
pub mod request;
pub mod state;

pub use dag::{DagEntry, Inserted, ThreadDag, ThreadLimits};
pub use order::rendering_order;
pub use request::check_op_for_thread;
pub use state::{
    Fork, LinkedThread, Participant, ParticipantRole, ThreadOp, ThreadState, ThreadStatus,
    state_transition,
};
