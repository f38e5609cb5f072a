//! Coarsening one level of the distributed hierarchy: the sequential
//! coarsening step on each rank's own vertices, then a matching across
//! ranks for the vertices it left alone (in the style of ParMETIS's
//! request/grant rounds), then the contraction: coarse vertices numbered
//! per rank, the rows of vertices adopted by another rank sent there, and
//! the ghosts and exchange lists of the coarse level rebuilt from its rows.

use parsim_comm::{Comm, Tag};
use parsim_core::rng::Stream;
use parsim_partition::coarsen_map;

use super::level::{prefix, Level};
use crate::error::{GraphError, Result};

const TAG_FREE: Tag = 0x6e4;
const TAG_VW: Tag = 0x6e5;
const TAG_COARSE: Tag = 0x6e2;

/// Where a vertex of the finer level went.
pub(super) struct Contraction {
    /// Coarse local id of every owned vertex, or [`GONE`] where another
    /// rank's coarse vertex adopted it.
    pub cmap: Vec<u32>,
    /// Vertices of other ranks adopted here: (their rank, their local id
    /// there, the coarse local id here).
    pub adopted: Vec<(u32, u32, u32)>,
}

/// A vertex whose coarse vertex lives on another rank.
const GONE: u32 = u32::MAX;

impl Contraction {
    /// The parts of the finer level's owned vertices, from the parts of the
    /// coarse level's. Collective.
    pub fn project<C: Comm>(&self, comm: &C, coarse: &[u32]) -> Result<Vec<u32>> {
        let mut part: Vec<u32> =
            self.cmap.iter().map(|&c| if c == GONE { u32::MAX } else { coarse[c as usize] }).collect();
        let mut out: Vec<Vec<u32>> = vec![Vec::new(); comm.size()];
        for &(q, there, c) in &self.adopted {
            out[q as usize].extend([there, coarse[c as usize]]);
        }
        for pairs in comm.all_to_all_v(out)? {
            for x in pairs.chunks_exact(2) {
                part[x[0] as usize] = x[1];
            }
        }
        Ok(part)
    }

    /// Memory held, in bytes.
    pub fn bytes(&self) -> usize {
        self.cmap.len() * 4 + self.adopted.len() * 12
    }
}

impl Level {
    /// One coarsening step. First the sequential code's step
    /// ([`parsim_partition::coarsen_map`]: heavy-edge matching, or
    /// clustering on skewed degrees) on this rank's own vertices and the
    /// edges between them. Then two request rounds match the vertices it
    /// left single across ranks: each asks for its heaviest single ghost
    /// neighbour of a higher (first round) or lower (second) global id; an
    /// asked vertex that asked nobody grants its heaviest request (ties:
    /// the lowest id) and adopts the asker. Collective.
    pub fn coarsen<C: Comm>(
        &self,
        comm: &C,
        rng: &mut Stream,
        maxw: i64,
        first: bool,
        clustering: &mut bool,
    ) -> Result<(Level, Contraction)> {
        let (n, p, base) = (self.n(), comm.size(), self.firsts[self.rank]);
        let own = self.owned_graph();
        let (local, nl) =
            coarsen_map(&own, rng, maxw, first, clustering).unwrap_or_else(|| ((0..n as u32).collect(), n));
        drop(own);
        let mut members = vec![0u32; nl];
        for &c in &local {
            members[c as usize] += 1;
        }
        let mut free: Vec<u8> = local.iter().map(|&c| u8::from(members[c as usize] == 1)).collect();
        let ghost_vw = self.halo(comm, TAG_VW, &self.vw)?;
        let mut gone = vec![false; n];
        // (asker's rank, asker's local id there, adopting vertex here)
        let mut adopt: Vec<(u32, u32, u32)> = Vec::new();
        for up in [true, false] {
            let ghost_free = self.halo(comm, TAG_FREE, &free)?;
            let mut asks: Vec<Vec<u64>> = vec![Vec::new(); p];
            let mut asked = vec![false; n];
            for u in 0..n {
                if free[u] == 0 {
                    continue;
                }
                let me = base + u as u64;
                let mut best: Option<(i64, u64)> = None;
                for e in self.row(u) {
                    let Some(g) = (self.adj[e] as usize).checked_sub(n) else { continue };
                    let gid = self.ghosts[g];
                    if ghost_free[g] == 0 || up != (gid > me) || self.vw[u] + ghost_vw[g] > maxw {
                        continue;
                    }
                    if best.is_none_or(|(w, b)| self.ew[e] > w || (self.ew[e] == w && gid < b)) {
                        best = Some((self.ew[e], gid));
                    }
                }
                if let Some((w, gid)) = best {
                    asks[owner(&self.firsts, gid)].extend([gid, me, w as u64]);
                    asked[u] = true;
                }
            }
            let mut offer: Vec<Option<(i64, u64, u32)>> = vec![None; n];
            for (q, list) in comm.all_to_all_v(asks)?.into_iter().enumerate() {
                for a in list.chunks_exact(3) {
                    let v = (a[0] - base) as usize;
                    let (w, from) = (a[2] as i64, a[1]);
                    if free[v] == 1 && !asked[v] && offer[v].is_none_or(|(bw, bf, _)| w > bw || (w == bw && from < bf))
                    {
                        offer[v] = Some((w, from, q as u32));
                    }
                }
            }
            let mut grants: Vec<Vec<u64>> = vec![Vec::new(); p];
            for (v, o) in offer.iter().enumerate() {
                if let Some((_, from, q)) = *o {
                    free[v] = 0;
                    grants[q as usize].push(from);
                    adopt.push((q, (from - self.firsts[q as usize]) as u32, v as u32));
                }
            }
            for list in comm.all_to_all_v(grants)? {
                for from in list {
                    let u = (from - base) as usize;
                    gone[u] = true;
                    free[u] = 0;
                }
            }
        }
        // Coarse local ids: this rank's clusters in order, less the single
        // vertices adopted elsewhere.
        let mut keep = vec![true; nl];
        for u in 0..n {
            if gone[u] {
                keep[local[u] as usize] = false;
            }
        }
        let mut renum = vec![GONE; nl];
        let mut nc = 0u32;
        for c in 0..nl {
            if keep[c] {
                renum[c] = nc;
                nc += 1;
            }
        }
        let nc = nc as usize;
        let cmap: Vec<u32> = (0..n).map(|u| if gone[u] { GONE } else { renum[local[u] as usize] }).collect();
        let adopted: Vec<(u32, u32, u32)> = adopt.iter().map(|&(q, there, v)| (q, there, cmap[v as usize])).collect();
        let firsts = prefix(&comm.all_gather(vec![nc as u64])?);
        let cbase = firsts[self.rank];
        // Every owned vertex's coarse global id; the adopted learn theirs from their adopters.
        let mut cgid: Vec<u64> = cmap.iter().map(|&c| cbase + u64::from(c)).collect();
        let mut out: Vec<Vec<u64>> = vec![Vec::new(); p];
        for &(q, there, c) in &adopted {
            out[q as usize].extend([u64::from(there), cbase + u64::from(c)]);
        }
        for pairs in comm.all_to_all_v(out)? {
            for x in pairs.chunks_exact(2) {
                cgid[x[0] as usize] = x[1];
            }
        }
        let ghost_cgid = self.halo(comm, TAG_COARSE, &cgid)?;
        let target = |v: usize| if v < n { cgid[v] } else { ghost_cgid[v - n] };
        // The rows of adopted vertices travel to their adopters:
        // [coarse id, weight, degree, (neighbour's coarse id, edge weight) …].
        let mut out: Vec<Vec<u64>> = vec![Vec::new(); p];
        for u in (0..n).filter(|&u| gone[u]) {
            let o = &mut out[owner(&firsts, cgid[u])];
            o.extend([cgid[u], self.vw[u] as u64, self.row(u).len() as u64]);
            for e in self.row(u) {
                o.extend([target(self.adj[e] as usize), self.ew[e] as u64]);
            }
        }
        let got = comm.all_to_all_v(out)?;
        // Coarse rows as (coarse local, neighbour's coarse id, weight), then merged.
        let mut vw = vec![0i64; nc];
        let mut entries: Vec<(u32, u64, i64)> = Vec::with_capacity(self.adj.len());
        for u in (0..n).filter(|&u| !gone[u]) {
            let c = cmap[u];
            vw[c as usize] += self.vw[u];
            for e in self.row(u) {
                entries.push((c, target(self.adj[e] as usize), self.ew[e]));
            }
        }
        for list in &got {
            let mut at = 0;
            while at + 3 <= list.len() {
                let (c, w, d) = ((list[at] - cbase) as u32, list[at + 1] as i64, list[at + 2] as usize);
                if at + 3 + 2 * d > list.len() || c as usize >= nc {
                    return Err(GraphError::BadArgument("multilevel: a malformed adopted row".into()));
                }
                vw[c as usize] += w;
                for x in list[at + 3..at + 3 + 2 * d].chunks_exact(2) {
                    entries.push((c, x[0], x[1] as i64));
                }
                at += 3 + 2 * d;
            }
        }
        entries.retain(|&(c, t, _)| t != cbase + u64::from(c));
        entries.sort_unstable_by_key(|&(c, t, _)| (c, t));
        let mut xadj = vec![0usize; nc + 1];
        let (mut gadj, mut ew): (Vec<u64>, Vec<i64>) = (Vec::new(), Vec::new());
        let mut last: Option<(u32, u64)> = None;
        for (c, t, w) in entries {
            if last == Some((c, t)) {
                *ew.last_mut().expect("an entry") += w;
            } else {
                gadj.push(t);
                ew.push(w);
                xadj[c as usize + 1] += 1;
                last = Some((c, t));
            }
        }
        for c in 0..nc {
            xadj[c + 1] += xadj[c];
        }
        let level = Level::from_gid_rows(comm, firsts, vw, xadj, &gadj, ew)?;
        Ok((level, Contraction { cmap, adopted }))
    }

    /// A level from this rank's rows with neighbours as global ids: ghosts
    /// are the neighbours owned elsewhere, and each rank tells every owner
    /// which of its vertices it ghosts. Collective.
    fn from_gid_rows<C: Comm>(
        comm: &C,
        firsts: Vec<u64>,
        vw: Vec<i64>,
        xadj: Vec<usize>,
        gadj: &[u64],
        ew: Vec<i64>,
    ) -> Result<Level> {
        let (rank, p, n) = (comm.rank(), comm.size(), vw.len());
        let (base, end) = (firsts[rank], firsts[rank + 1]);
        let mut ghosts: Vec<u64> = gadj.iter().copied().filter(|&g| g < base || g >= end).collect();
        ghosts.sort_unstable();
        ghosts.dedup();
        let adj: Vec<u32> = gadj
            .iter()
            .map(|&g| {
                if (base..end).contains(&g) {
                    (g - base) as u32
                } else {
                    (n + ghosts.binary_search(&g).expect("a ghost")) as u32
                }
            })
            .collect();
        let mut ask: Vec<Vec<u64>> = vec![Vec::new(); p];
        let mut recv_of: Vec<Vec<u32>> = vec![Vec::new(); p];
        for (g, &gid) in ghosts.iter().enumerate() {
            let q = owner(&firsts, gid);
            ask[q].push(gid);
            recv_of[q].push(g as u32);
        }
        let asked = comm.all_to_all_v(ask)?;
        let (mut peers, mut send, mut recv) = (Vec::new(), Vec::new(), Vec::new());
        for (q, (list, r)) in asked.into_iter().zip(recv_of).enumerate() {
            if q == rank || (list.is_empty() && r.is_empty()) {
                continue;
            }
            if list.iter().any(|&g| g < base || g >= end) {
                return Err(GraphError::BadArgument(format!(
                    "multilevel: rank {q} ghosts a vertex rank {rank} does not own"
                )));
            }
            peers.push(q);
            send.push(list.iter().map(|&g| (g - base) as u32).collect());
            recv.push(r);
        }
        Ok(Level { rank, firsts, vw, xadj, adj, ew, ghosts, peers, send, recv })
    }
}

/// The rank owning `gid` under `firsts`.
fn owner(firsts: &[u64], gid: u64) -> usize {
    firsts.partition_point(|&f| f <= gid) - 1
}
