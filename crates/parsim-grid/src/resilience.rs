//! Checkpoints of a grid run: each rank's owned block in global
//! coordinates, so a restart on any process grid reads the pieces that
//! overlap its new block; and the conservation check that keeps a silently
//! corrupted field out of every checkpoint.

use parsim_ckpt::{Checkpointer, Restart};
use parsim_comm::Comm;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::engine::Reduction;
use crate::field::{Cell, Field};
use crate::GridError;

/// One rank's piece: its block (global start and length per internal
/// axis), the cells row by row (axis 2 fastest) as raw bytes, and the
/// reductions so far (every rank holds the same list).
#[derive(Serialize, Deserialize)]
struct Piece {
    step: u64,
    start: [usize; 3],
    len: [usize; 3],
    cells: parsim_ckpt::Bytes,
    reductions: Vec<(u64, f64, f64)>,
    /// The conserved total at step 0 (for the invariant), if checked.
    total0: Option<f64>,
}

fn ckpt_err(e: parsim_ckpt::CkptError) -> GridError {
    match e {
        parsim_ckpt::CkptError::Comm(c) => GridError::Comm(c),
        other => GridError::Checkpoint(other.to_string()),
    }
}

/// Saves this rank's owned cells at `step` (collective).
pub(crate) fn save<C: Comm, T: Cell>(
    ck: &mut Checkpointer<'_, C>,
    f: &Field<T>,
    step: u64,
    reductions: &[Reduction],
    total0: Option<f64>,
    process_grid: Vec<usize>,
) -> Result<(), GridError> {
    let o = f.owned();
    let n = o.hi[2] - o.lo[2];
    let mut cells = Vec::with_capacity(f.block.len.iter().product::<usize>() * std::mem::size_of::<T>());
    for z in o.lo[0]..o.hi[0] {
        for y in o.lo[1]..o.hi[1] {
            let i = f.index([z, y, o.lo[2]]);
            cells.extend_from_slice(bytemuck::cast_slice(&f.data[i..i + n]));
        }
    }
    let piece = Piece {
        step,
        start: f.block.start,
        len: f.block.len,
        cells: parsim_ckpt::Bytes(cells),
        reductions: reductions.iter().map(|r| (r.step, r.total, r.residual)).collect(),
        total0,
    };
    let meta = json!({"start": f.block.start, "len": f.block.len});
    ck.save(step, json!(step), meta, json!({"process_grid": process_grid}), &piece).map_err(ckpt_err)
}

/// What a restart restores besides the field.
pub(crate) struct Restored {
    pub step: u64,
    pub reductions: Vec<Reduction>,
    pub total0: Option<f64>,
}

/// Fills this rank's owned cells from the pieces that overlap its block.
pub(crate) fn load<T: Cell>(r: &mut Restart, f: &mut Field<T>) -> Result<Restored, GridError> {
    let size = std::mem::size_of::<T>();
    let (lo, hi) = (f.block.start, std::array::from_fn::<usize, 3, _>(|a| f.block.start[a] + f.block.len[a]));
    let mut filled = 0usize;
    let mut restored = None;
    let old = r.manifest.pieces.clone();
    for (k, p) in old.iter().enumerate() {
        let get = |key: &str| -> Option<[usize; 3]> {
            let v = p.meta.get(key)?.as_array()?;
            let v: Vec<usize> = v.iter().map(|x| x.as_u64().map(|x| x as usize)).collect::<Option<_>>()?;
            v.try_into().ok()
        };
        let (Some(ps), Some(pl)) = (get("start"), get("len")) else {
            return Err(GridError::Checkpoint(format!(
                "piece {k} of the checkpoint does not say which block it holds"
            )));
        };
        let (a, b): ([usize; 3], [usize; 3]) =
            (std::array::from_fn(|i| lo[i].max(ps[i])), std::array::from_fn(|i| hi[i].min(ps[i] + pl[i])));
        // Only the pieces that overlap this block are read (every block
        // overlaps at least one; they all carry the same step and reductions).
        if (0..3).any(|i| a[i] >= b[i]) {
            continue;
        }
        let piece: Piece = r.read(k).map_err(ckpt_err)?;
        if piece.start != ps || piece.len != pl || piece.cells.0.len() != pl.iter().product::<usize>() * size {
            return Err(GridError::Checkpoint(format!("piece {k} does not hold the block its manifest names")));
        }
        if restored.is_none() {
            restored = Some(Restored {
                step: piece.step,
                reductions: piece
                    .reductions
                    .iter()
                    .map(|&(step, total, residual)| Reduction { step, total, residual })
                    .collect(),
                total0: piece.total0,
            });
        }
        let n = b[2] - a[2];
        for z in a[0]..b[0] {
            for y in a[1]..b[1] {
                let src = (((z - ps[0]) * pl[1] + (y - ps[1])) * pl[2] + (a[2] - ps[2])) * size;
                let dst = f.index([z - lo[0] + f.halo[0], y - lo[1] + f.halo[1], a[2] - lo[2] + f.halo[2]]);
                // Byte to byte: the piece's buffer need not be aligned for T.
                let row: &mut [u8] = bytemuck::cast_slice_mut(&mut f.data[dst..dst + n]);
                row.copy_from_slice(&piece.cells.0[src..src + n * size]);
                filled += n;
            }
        }
    }
    if filled != f.block.len.iter().product::<usize>() {
        return Err(GridError::Checkpoint(format!(
            "the checkpoint's pieces cover {filled} of this rank's {} cells",
            f.block.len.iter().product::<usize>()
        )));
    }
    restored.ok_or_else(|| GridError::Checkpoint("the checkpoint has no pieces".into()))
}

/// Flips one bit of the largest-magnitude owned cell (an injected silent
/// error: the exponent's lowest bit, which halves or doubles it).
pub(crate) fn bitflip<T: Cell>(f: &mut Field<T>) {
    let o = f.owned();
    let mut best = (f.index([o.lo[0], o.lo[1], o.lo[2]]), f64::MIN);
    for z in o.lo[0]..o.hi[0] {
        for y in o.lo[1]..o.hi[1] {
            for x in o.lo[2]..o.hi[2] {
                let i = f.index([z, y, x]);
                let v = f.data[i].to_f64().abs();
                if v > best.1 {
                    best = (i, v);
                }
            }
        }
    }
    let bytes = bytemuck::bytes_of_mut(&mut f.data[best.0]);
    let k = bytes.len();
    // f64: bit 52 (exponent LSB) is in byte 6; f32: bit 23 in byte 2; u8: bit 0.
    match k {
        8 => bytes[6] ^= 0x10,
        4 => bytes[2] ^= 0x80,
        _ => bytes[0] ^= 1,
    }
}
