//! Graph and geometric partitioning, usable on its own (like METIS) and by
//! every parsim engine that owns a graph.
//!
//! - [`Graph`]: compressed sparse rows with 64-bit offsets, several vertex
//!   weights per vertex, edge weights, coordinates; [`io`] reads METIS,
//!   SNAP edge lists (text and u32 pairs), Matrix Market and coordinate
//!   files, and writes METIS graphs and gpmetis partition files.
//! - [`Method`]s behind one [`Partitioner`] interface: multilevel k-way
//!   (the default; [`Preset`]s `fast`, `default`, `strong`; the cut or the
//!   communication volume as [`Objective`]; pinned vertices, target part
//!   weights, contiguous parts, [`repartition`] with migration cost),
//!   recursive spectral bisection, recursive coordinate
//!   bisection, Hilbert curves, LDG and FENNEL streaming, size-constrained
//!   label propagation; and [`vertex_cut`](mod@vertex_cut) edge partitioning (hash, greedy, HDRF).
//! - [`metrics`]: edge cut, communication volume, imbalance per constraint,
//!   boundary vertices, neighbouring parts, empty parts. A part is balanced
//!   when its weight ≤ (1 + ε)·⌈W/k⌉ for every constraint.
//!
//! Every method is deterministic: the same (graph, k, ε, seed) gives the
//! same partition on every machine. There is no global state.
//!
//! ```
//! use parsim_partition::{io, Config, Method, Partitioner};
//! let g = io::parse_metis("4 4\n2 4\n1 3\n2 4\n1 3\n", "square.graph").unwrap();
//! let (parts, m) = Method::Multilevel.partition(&g, &Config::new(2)).unwrap();
//! assert_eq!(m.cut, 2);
//! assert!(m.balanced && parts.len() == 4);
//! ```

mod error;
pub mod geometric;
mod graph;
pub mod io;
pub mod label_propagation;
mod multilevel;
mod partition;
pub mod spectral;
pub mod streaming;
pub mod vertex_cut;

pub use error::{PartitionError, Result};
pub use graph::{Graph, MAX_TOTAL_EDGE_WEIGHT, MAX_TOTAL_WEIGHT};
pub use multilevel::{coarsen_map, multilevel_kway, refine_kway, repartition};
pub use partition::{metrics, Config, Limits, Metrics, Objective, Preset, FREE};
pub use vertex_cut::{vertex_cut, EdgePartition, VertexCut};

/// Anything that partitions a graph's vertices.
pub trait Partitioner {
    /// Partitions `g` as `cfg` asks; returns the part of each vertex and the metrics.
    fn partition(&self, g: &Graph, cfg: &Config) -> Result<(Vec<u32>, Metrics)>;
}

/// The vertex-partitioning methods.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Multilevel k-way (balance guaranteed or an error).
    Multilevel,
    /// Recursive spectral bisection (Fiedler vectors).
    Spectral,
    /// Recursive coordinate bisection (needs coordinates).
    Rcb,
    /// Hilbert space-filling curve (needs coordinates).
    Sfc,
    /// Linear deterministic greedy streaming, vertices in id order.
    Ldg,
    /// FENNEL streaming, vertices in id order.
    Fennel,
    /// Size-constrained label propagation.
    LabelPropagation,
}

impl Method {
    /// Parses `multilevel | spectral | rcb | sfc | ldg | fennel | lp`.
    pub fn parse(s: &str) -> Option<Method> {
        Some(match s {
            "multilevel" | "kway" => Method::Multilevel,
            "spectral" => Method::Spectral,
            "rcb" => Method::Rcb,
            "sfc" | "hilbert" => Method::Sfc,
            "ldg" => Method::Ldg,
            "fennel" => Method::Fennel,
            "lp" | "label-propagation" => Method::LabelPropagation,
            _ => return None,
        })
    }

    /// Every method.
    pub const ALL: [Method; 7] = [
        Method::Multilevel,
        Method::Spectral,
        Method::Rcb,
        Method::Sfc,
        Method::Ldg,
        Method::Fennel,
        Method::LabelPropagation,
    ];

    /// Whether the method guarantees the balance rule (the others report it).
    pub fn balanced(self) -> bool {
        matches!(self, Method::Multilevel)
    }
}

impl Partitioner for Method {
    fn partition(&self, g: &Graph, cfg: &Config) -> Result<(Vec<u32>, Metrics)> {
        if *self == Method::Multilevel {
            return multilevel_kway(g, cfg);
        }
        cfg.check(g)?;
        let parts = match self {
            Method::Spectral => spectral::spectral(g, cfg),
            Method::Rcb => geometric::rcb(g, cfg)?,
            Method::Sfc => geometric::sfc(g, cfg)?,
            Method::Ldg => streaming::stream_graph(g, cfg, streaming::Streaming::Ldg),
            Method::Fennel => streaming::stream_graph(g, cfg, streaming::Streaming::Fennel),
            Method::LabelPropagation => label_propagation::label_propagation(g, cfg, 10),
            Method::Multilevel => unreachable!(),
        };
        let m = metrics(g, &parts, cfg);
        Ok((parts, m))
    }
}
