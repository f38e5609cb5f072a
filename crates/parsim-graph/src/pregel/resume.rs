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

use crate::dist::{deliver_pieces, Directory, DistGraph, Emit, Records};
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

/// Record kinds of a restart's routing: a vertex's value, a waiting message.
const VALUE: u8 = 0;
const MESSAGE: u8 = 1;

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
    /// Each old piece is read by one rank (piece `k` by rank `k mod p`, one
    /// piece per rank per round), which sends every vertex's value and
    /// waiting messages to the vertex's new owner through
    /// [`deliver_pieces`]: no rank reads the whole checkpoint. Collective.
    fn resume(&mut self, g: &DistGraph) -> Result<Option<Resumed<V, M>>> {
        let Some(mut r) = self.0.take_restart() else { return Ok(None) };
        let comm = self.0.comm();
        let w = std::mem::size_of::<M>();
        let n_own = g.owned();
        let wants: Vec<u32> = (0..n_own).map(|i| g.global(i)).collect();
        let dir = Directory::new(comm, g.global_vertices(), &wants)?;
        drop(wants);
        let mut head = None;
        let mut values: Vec<Option<V>> = vec![None; n_own];
        let mut active = vec![false; n_own];
        let mut inbox = Vec::new();
        let pieces = r.manifest.ranks;
        let read = |k: usize, emit: &mut Emit<'_>| -> Result<()> {
            let piece: Piece<V> = r.read(k).map_err(err)?;
            if piece.messages.0.len() != piece.inbox.len() * w {
                return Err(GraphError::Checkpoint(format!("piece {k}: message bytes do not match the inbox")));
            }
            if k == 0 {
                head = Some((piece.step, piece.aggregated.clone()));
            }
            let mut bytes = Vec::new();
            for (gid, v, a) in &piece.vertices {
                bytes.clear();
                bytes.extend_from_slice(&[VALUE, u8::from(*a)]);
                bytes.extend(postcard::to_allocvec(v).map_err(|e| GraphError::Checkpoint(e.to_string()))?);
                emit(*gid, &bytes)?;
            }
            for (i, &(dst, src)) in piece.inbox.iter().enumerate() {
                bytes.clear();
                bytes.push(MESSAGE);
                bytes.extend_from_slice(&src.to_le_bytes());
                bytes.extend_from_slice(&piece.messages.0[i * w..(i + 1) * w]);
                emit(dst, &bytes)?;
            }
            Ok(())
        };
        let take = |got: Records| -> Result<()> {
            for (gid, b) in got.iter() {
                let l = g.local(gid).filter(|&l| l < n_own).expect("delivered to its owner");
                match b.first().copied() {
                    Some(VALUE) if b.len() >= 2 => {
                        let v = postcard::from_bytes(&b[2..]).map_err(|e| GraphError::Checkpoint(e.to_string()))?;
                        values[l] = Some(v);
                        active[l] = b[1] == 1;
                    }
                    Some(MESSAGE) if b.len() == 5 + w => {
                        let src = u32::from_le_bytes([b[1], b[2], b[3], b[4]]);
                        inbox.push((l as u32, src, bytemuck::pod_read_unaligned(&b[5..])));
                    }
                    _ => return Err(GraphError::Checkpoint(format!("a record for vertex {gid} is malformed"))),
                }
            }
            Ok(())
        };
        deliver_pieces(comm, &dir, pieces, read, take)?;
        let (step, aggregated) = comm.broadcast_value(0, &head)?.unwrap_or_default();
        // (The superstep loop sorts the inbox by destination and source.)
        let values = values
            .into_iter()
            .enumerate()
            .map(|(l, v)| v.ok_or_else(|| GraphError::Checkpoint(format!("no value for vertex {}", g.global(l)))))
            .collect::<Result<_>>()?;
        Ok(Some(Resumed { step, values, active, inbox, aggregated }))
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
