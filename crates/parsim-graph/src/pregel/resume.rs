//! Pregel checkpoints at superstep boundaries: every owned vertex's value
//! and whether it is active (by global id), the messages waiting for the
//! next superstep (by destination global id), and the aggregators. A
//! restart on another partition keeps its own vertices and their messages.

use bytemuck::Pod;
use parsim_ckpt::{Bytes, Checkpointer, CkptError};
use parsim_comm::Comm;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::dist::DistGraph;
use crate::error::{GraphError, Result};

#[derive(Serialize, Deserialize)]
struct Piece<V> {
    /// Supersteps done.
    step: u64,
    /// (global id, value, active).
    vertices: Vec<(u32, V, bool)>,
    /// (destination global id, source) of every waiting message …
    inbox: Vec<(u32, u32)>,
    /// … and their bytes, in the same order.
    messages: Bytes,
    aggregated: Vec<f64>,
}

fn err(e: CkptError) -> GraphError {
    match e {
        CkptError::Comm(c) => GraphError::Comm(c),
        other => GraphError::Checkpoint(other.to_string()),
    }
}

/// The state a run resumes from on this rank.
pub(super) struct Resumed<V, M> {
    pub step: u64,
    pub values: Vec<V>,
    pub active: Vec<bool>,
    pub inbox: Vec<(u32, u32, M)>,
    pub aggregated: Vec<f64>,
}

/// What the superstep loop hands to the checkpointer.
pub(super) struct State<'s, V, M> {
    pub step: u64,
    pub values: &'s [V],
    pub active: &'s [bool],
    pub inbox: &'s [(u32, u32, M)],
    pub aggregated: &'s [f64],
}

/// Checkpointing as the superstep loop sees it (implemented only for
/// serialisable vertex values).
pub(super) trait Saver<V, M> {
    fn resume(&mut self, g: &DistGraph) -> Result<Option<Resumed<V, M>>>;
    fn superstep(&mut self, g: &DistGraph, s: State<'_, V, M>) -> Result<()>;
}

pub(super) struct CkSaver<'a, 'c, C: Comm>(pub &'a mut Checkpointer<'c, C>);

impl<C: Comm, V: Clone + Serialize + DeserializeOwned, M: Pod> Saver<V, M> for CkSaver<'_, '_, C> {
    fn resume(&mut self, g: &DistGraph) -> Result<Option<Resumed<V, M>>> {
        let Some(mut r) = self.0.take_restart() else { return Ok(None) };
        let n_own = g.owned();
        let mut values: Vec<Option<V>> = vec![None; n_own];
        let mut active = vec![false; n_own];
        let mut out =
            Resumed { step: 0, values: Vec::new(), active: Vec::new(), inbox: Vec::new(), aggregated: Vec::new() };
        let w = std::mem::size_of::<M>();
        for k in 0..r.manifest.ranks {
            let p: Piece<V> = r.read(k).map_err(err)?;
            out.step = p.step;
            out.aggregated = p.aggregated;
            for (gid, v, a) in p.vertices {
                if let Some(l) = g.local(gid).filter(|&l| l < n_own) {
                    values[l] = Some(v);
                    active[l] = a;
                }
            }
            if p.messages.0.len() != p.inbox.len() * w {
                return Err(GraphError::Checkpoint(format!("piece {k}: message bytes do not match the inbox")));
            }
            for (i, &(dst, src)) in p.inbox.iter().enumerate() {
                if let Some(l) = g.local(dst).filter(|&l| l < n_own) {
                    let m: M = bytemuck::pod_read_unaligned(&p.messages.0[i * w..(i + 1) * w]);
                    out.inbox.push((l as u32, src, m));
                }
            }
        }
        out.values = values
            .into_iter()
            .enumerate()
            .map(|(l, v)| v.ok_or_else(|| GraphError::Checkpoint(format!("no value for vertex {}", g.global(l)))))
            .collect::<Result<_>>()?;
        out.active = active;
        Ok(Some(out))
    }

    fn superstep(&mut self, g: &DistGraph, s: State<'_, V, M>) -> Result<()> {
        if !self.0.boundary(s.step).map_err(err)?.checkpoint {
            return Ok(());
        }
        let mut messages = Vec::with_capacity(s.inbox.len() * std::mem::size_of::<M>());
        for (_, _, m) in s.inbox {
            messages.extend_from_slice(bytemuck::bytes_of(m));
        }
        let piece = Piece {
            step: s.step,
            vertices: (0..g.owned()).map(|l| (g.global(l), s.values[l].clone(), s.active[l])).collect(),
            inbox: s.inbox.iter().map(|&(l, src, _)| (g.global(l as usize), src)).collect(),
            messages: Bytes(messages),
            aggregated: s.aggregated.to_vec(),
        };
        let meta = json!({"vertices": g.owned()});
        self.0.save(s.step, json!(s.step), meta, json!({"ranks": g.ranks()}), &piece).map_err(err)
    }
}
