//! Models shipped with parsim: PHOLD (the PDES benchmark) and a closed
//! queueing network.

mod phold;
mod queues;

pub use phold::Phold;
pub use queues::{QueueStats, Queues, Server};
