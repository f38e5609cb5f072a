//! The draws of SEIR-net-v1: an infectious period at onset and, for each
//! neighbour that may still be susceptible, the first day its Bernoulli
//! draw succeeds (Philox keyed by seed, day, kind and global ids).

use parsim_core::rng::philox4x32_10;
use parsim_graph::DistGraph;

use super::state::S;
use super::{K_DETECT, K_ONSET, K_RECOVER, K_TRANSMIT};
use crate::config::{SeirConfig, Variant};

#[inline]
pub(super) fn draw(key: [u32; 2], day: u32, kind: u32, a: u32, b: u32) -> u32 {
    philox4x32_10([day, kind, a, b], key)[0]
}

/// P(draw < threshold) = p, to 2⁻³².
pub(super) fn threshold(p: f64) -> u64 {
    (p.clamp(0.0, 1.0) * 4_294_967_296.0).round() as u64
}

/// What an agent's infectious period looks like, drawn at onset (the same
/// draws, keyed by (seed, day, kind, agent), on every rank that needs it).
pub(super) struct Rules<'a> {
    pub(super) key: [u32; 2],
    pub(super) cfg: &'a SeirConfig,
    pub(super) days: u32,
    /// Layers open on each day.
    pub(super) open: Vec<u8>,
    pub(super) all_layers: u8,
    pub(super) thr: Vec<u64>,
    pub(super) thr_gamma: u64,
    pub(super) thr_detect: u64,
}

/// An infectious period: transmits on days `onset..exit`, isolated from `iso` (`u32::MAX`: never).
#[derive(Clone, Copy)]
pub(super) struct Course {
    pub(super) onset: u32,
    pub(super) exit: u32,
    pub(super) iso: u32,
}

impl Rules<'_> {
    /// The day agent `a`, infected on day `t`, becomes infectious (variant
    /// B: the first later day whose E → I draw succeeds); `days` if never.
    pub(super) fn onset(&self, a: u32, t: u32, thr_sigma: u64) -> u32 {
        match self.cfg.variant {
            Variant::Fixed { latent, .. } => (t + latent).min(self.days),
            Variant::Markov { .. } => {
                let mut d = t + 1;
                while d < self.days && u64::from(draw(self.key, d, K_ONSET, a, 0)) >= thr_sigma {
                    d += 1;
                }
                d.min(self.days)
            }
        }
    }

    pub(super) fn course(&self, a: u32, onset: u32) -> Course {
        let exit = match self.cfg.variant {
            Variant::Fixed { infectious, .. } => onset + infectious,
            Variant::Markov { .. } => {
                let mut t = onset + 1;
                while t < self.days && u64::from(draw(self.key, t, K_RECOVER, a, 0)) >= self.thr_gamma {
                    t += 1;
                }
                t.max(onset + 1)
            }
        };
        let iso = match &self.cfg.isolation {
            Some(is) if u64::from(draw(self.key, 0, K_DETECT, a, 0)) < self.thr_detect => onset + is.delay,
            _ => u32::MAX,
        };
        Course { onset, exit, iso }
    }

    /// The layers source `c` transmits on during day `t`.
    #[inline]
    pub(super) fn mask_on(&self, c: &Course, t: u32) -> u8 {
        let m = if t >= c.iso { self.cfg.isolation.as_ref().map_or(0, |i| i.keep) } else { self.all_layers };
        m & self.open[t as usize]
    }

    /// The first day of `c` on which the draw for (day, `src`, `dst`)
    /// succeeds on a layer-`l` edge, and the draws made.
    #[inline]
    ///
    /// The draw of day t is word t mod 4 of the Philox block for
    /// (⌊t/4⌋, transmit, src, dst): a pure function of (seed, day, source,
    /// target) like every draw, at a quarter of the block computations.
    pub(super) fn first_success(&self, src: u32, dst: u32, l: u8, c: &Course, draws: &mut u64) -> Option<u32> {
        let mut block = [0u32; 4];
        let mut have = u32::MAX;
        for t in c.onset..c.exit.min(self.days) {
            if self.mask_on(c, t) >> l & 1 == 0 {
                continue;
            }
            *draws += 1;
            if t >> 2 != have {
                have = t >> 2;
                block = philox4x32_10([have, K_TRANSMIT, src, dst], self.key);
            }
            if u64::from(block[(t & 3) as usize]) < self.thr[l as usize] {
                return Some(t);
            }
        }
        None
    }

    /// For each neighbour of `src` that may be susceptible, the first day of
    /// `c` on which its draw succeeds: owned targets go to `local`, ghosts to
    /// `remote` (their owner makes the attempt); returns the draws made.
    pub(super) fn transmissions(&self, src: u32, c: &Course, row: &Row<'_>, view: &View<'_>, out: &mut Planned) -> u64 {
        let mut draws = 0u64;
        for (k, &j) in row.owned.iter().enumerate() {
            if view.st[j as usize] != S {
                continue;
            }
            let gj = match view.base {
                Some(b) => b + j,
                None => view.g.global(j as usize),
            };
            let l = row.layers.map_or(0, |ls| ls[k]);
            if let Some(t) = self.first_success(src, gj, l, c, &mut draws) {
                out.local.push((t, j));
            }
        }
        // Ghosts: "left S" from a bitset over ghost numbers.
        let off = row.owned.len();
        let n_own = view.g.owned() as u32;
        for (k, &j) in row.ghosts.iter().enumerate() {
            let x = j - n_own;
            if view.gone[(x >> 6) as usize] >> (x & 63) & 1 == 1 {
                continue;
            }
            // Read beside the row where the layout keeps them, else looked up.
            let gj = match row.ghost_gids.get(k) {
                Some(&gj) => gj,
                None => view.g.global(j as usize),
            };
            let l = row.layers.map_or(0, |ls| ls[off + k]);
            if let Some(t) = self.first_success(src, gj, l, c, &mut draws) {
                out.remote.push((t, gj, j));
            }
        }
        draws
    }
}

/// One source's neighbours, split into owned ones and ghosts.
pub(super) struct Row<'a> {
    pub(super) owned: &'a [u32],
    pub(super) ghosts: &'a [u32],
    pub(super) ghost_gids: &'a [u32],
    /// Layers of the whole row (owned part, then ghosts).
    pub(super) layers: Option<&'a [u8]>,
}

/// What the transmission step reads.
pub(super) struct View<'a> {
    pub(super) g: &'a DistGraph,
    pub(super) st: &'a [u8],
    pub(super) gone: &'a [u64],
    pub(super) base: Option<u32>,
}

/// Attempts drawn for owned targets (day, local id) and for ghosts (day, global id, local id).
#[derive(Default)]
pub(super) struct Planned {
    pub(super) local: Vec<(u32, u32)>,
    pub(super) remote: Vec<(u32, u32, u32)>,
}
