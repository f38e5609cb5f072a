//! Vertex-centric graph engines over a partitioned graph.
//!
//! - [`Csr`]: the global graph (compact CSR, optional edge weights and layer
//!   labels), built in parallel and deterministically from a pair list.
//! - [`DistGraph`]: one rank's share of a *vertex* partition (any
//!   [`parsim_partition`] method, or a plain owner array): owned vertices,
//!   ghost copies of the remote neighbours they touch, and per-neighbour-rank
//!   exchange lists; [`DistGraph::exchange_changes`] sends only what changed,
//!   one buffer per neighbouring rank.
//! - [`pregel`]: Pregel supersteps — compute, message exchange, barrier —
//!   with combiners, exact global aggregators and vote-to-halt.
//! - [`gas`]: gather-apply-scatter over a *vertex cut* ([`CutGraph`]): high-degree
//!   vertices are replicated as mirrors and reconciled through their master.
//! - [`algorithms`]: PageRank, shortest paths and connected components on
//!   both engines, with the sequential code they are tested against.
//!
//! ```
//! use parsim_graph::{algorithms::Sssp, pregel, Csr, DistGraph};
//! // A path 0 - 1 - 2 - 3 on two ranks.
//! let (g, _) = Csr::from_pairs(4, vec![(0, 1), (1, 2), (2, 3)], None);
//! let owner = vec![0, 0, 1, 1];
//! let dist = parsim_comm::launch(2, |comm| {
//!     use parsim_comm::Comm;
//!     let d = DistGraph::build(comm.rank(), 2, &g, &owner)?;
//!     let r = pregel::run(&comm, &d, &owner, &Sssp { source: 0 }, 100)?;
//!     pregel::gather_values(&comm, &d, &r.values)
//! })?;
//! assert_eq!(dist[0].as_deref(), Some(&[0.0, 1.0, 2.0, 3.0][..]));
//! # Ok::<(), parsim_graph::GraphError>(())
//! ```
//!
//! Guarantees: results do not depend on the number of ranks or the
//! partition for programs that fold their messages in the order given
//! (sorted by sender) or combine exactly (min, max, integers); see [`pregel`].
#![forbid(unsafe_code)]

pub mod algorithms;
/// Engine-against-sequential checks shared by the tests (not part of the API).
#[doc(hidden)]
pub mod check;
mod csr;
mod dist;
mod error;
pub mod gas;
pub mod pregel;

pub use csr::{BuildStats, Csr};
pub use dist::{
    block_owner, block_range, deliver_by_id, deliver_pieces, exchange_in_rounds, Directory, DistGraph, DistPartition,
    Emit, GhostedAt, Owned, Propagated, Records, Rows, Sink,
};
pub use error::{GraphError, Result};
pub use gas::{CutGraph, GasProgram};
pub use pregel::{Aggregate, Context, VertexProgram};
