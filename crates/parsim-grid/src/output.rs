//! Field output: VTK image data (a `.vti` per rank, a `.pvti` index by rank
//! 0, readable by ParaView) and a PNG picture of a 2-D field (or of the
//! middle slice of a 3-D one) with a colour scale.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use parsim_comm::{Comm, ReduceOp};
use parsim_core::io::write_atomic;

use crate::decomp::Decomposition;
use crate::field::{Cell, Field};
use crate::GridError;

fn io_err(path: &Path, e: std::io::Error) -> GridError {
    GridError::Io { path: path.to_path_buf(), msg: e.to_string() }
}

/// VTK point extent `x0 x1 y0 y1 z0 z1` of cells `[start, start + len)`
/// (VTK's x is our fastest axis).
fn extent(start: [usize; 3], len: [usize; 3]) -> String {
    format!("{} {} {} {} {} {}", start[2], start[2] + len[2], start[1], start[1] + len[1], start[0], start[0] + len[0])
}

/// Writes step `step` of the field: `DIR/field_STEP_rRANK.vti` on every rank
/// and `DIR/field_STEP.pvti` on rank 0. Returns the files this rank wrote.
pub fn write_vtk<C: Comm, T: Cell>(
    comm: &C,
    d: &Decomposition,
    f: &Field<T>,
    dir: &Path,
    step: u64,
) -> Result<Vec<PathBuf>, GridError> {
    let rank = comm.rank();
    let piece = format!("field_{step:06}_r{rank}.vti");
    let ext = extent(f.block.start, f.block.len);
    // Every piece states the whole grid's extent, and its own as the piece's.
    let whole = extent([0; 3], d.shape());
    let mut head = String::new();
    let _ = write!(
        head,
        "<?xml version=\"1.0\"?>\n<VTKFile type=\"ImageData\" version=\"1.0\" byte_order=\"LittleEndian\" header_type=\"UInt64\">\n  <ImageData WholeExtent=\"{whole}\" Origin=\"0 0 0\" Spacing=\"1 1 1\">\n    <Piece Extent=\"{ext}\">\n      <CellData Scalars=\"u\">\n        <DataArray type=\"{}\" Name=\"u\" format=\"appended\" offset=\"0\"/>\n      </CellData>\n    </Piece>\n  </ImageData>\n  <AppendedData encoding=\"raw\">\n   _",
        T::VTK
    );
    // Written from the field row by row (no copy of it), through the writer's buffer.
    let o = f.owned();
    let len = (o.cells() * std::mem::size_of::<T>()) as u64;
    let len = len.to_le_bytes();
    let mut parts: Vec<&[u8]> = vec![head.as_bytes(), &len];
    for z in o.lo[0]..o.hi[0] {
        for y in o.lo[1]..o.hi[1] {
            let i = f.index([z, y, o.lo[2]]);
            parts.push(bytemuck::cast_slice(&f.data[i..i + (o.hi[2] - o.lo[2])]));
        }
    }
    parts.push(b"\n  </AppendedData>\n</VTKFile>\n");
    let path = dir.join(&piece);
    parsim_core::io::write_atomic_parts(&path, &parts).map_err(|e| io_err(&path, e))?;
    let mut files = vec![path];
    // Rank 0 indexes every piece; the barrier-free gather also tells it when all are written.
    let written = comm.gather(0, vec![u8::from(true)])?;
    if written.is_some() {
        let whole = extent([0; 3], d.shape());
        let mut x = String::new();
        let _ = writeln!(x, "<?xml version=\"1.0\"?>");
        let _ = writeln!(
            x,
            "<VTKFile type=\"PImageData\" version=\"1.0\" byte_order=\"LittleEndian\" header_type=\"UInt64\">"
        );
        let _ =
            writeln!(x, "  <PImageData WholeExtent=\"{whole}\" GhostLevel=\"0\" Origin=\"0 0 0\" Spacing=\"1 1 1\">");
        let _ = writeln!(
            x,
            "    <PCellData Scalars=\"u\">\n      <PDataArray type=\"{}\" Name=\"u\"/>\n    </PCellData>",
            T::VTK
        );
        for q in 0..d.ranks() {
            let b = d.block(q);
            let _ =
                writeln!(x, "    <Piece Extent=\"{}\" Source=\"field_{step:06}_r{q}.vti\"/>", extent(b.start, b.len));
        }
        let _ = writeln!(x, "  </PImageData>\n</VTKFile>");
        let index = dir.join(format!("field_{step:06}.pvti"));
        write_atomic(&index, x.as_bytes()).map_err(|e| io_err(&index, e))?;
        files.push(index);
    }
    Ok(files)
}

/// Largest picture side, in pixels; larger fields are sampled every `f` cells.
const MAX_SIDE: usize = 1024;
const BAR: usize = 24;

/// A perceptually ordered colour map (viridis, by linear interpolation of 5
/// stops): `t` in [0, 1] to RGB.
pub fn viridis(t: f64) -> [u8; 3] {
    const STOPS: [[f64; 3]; 5] =
        [[68.0, 1.0, 84.0], [59.0, 82.0, 139.0], [33.0, 145.0, 140.0], [94.0, 201.0, 98.0], [253.0, 231.0, 37.0]];
    let t = if t.is_finite() { t.clamp(0.0, 1.0) } else { 0.0 } * 4.0;
    let i = (t.floor() as usize).min(3);
    let u = t - i as f64;
    let mut c = [0u8; 3];
    for k in 0..3 {
        c[k] = (STOPS[i][k] + (STOPS[i + 1][k] - STOPS[i][k]) * u).round() as u8;
    }
    c
}

/// A picture's worth of a field, gathered on rank 0: a 2-D field (for 3-D,
/// the middle slice along axis 0) sampled every `stride` cells so that no
/// side exceeds `max_side` values.
#[derive(Clone, Debug, PartialEq)]
pub struct Slice {
    /// Sampled columns.
    pub width: usize,
    /// Sampled rows (row 0 is global y = 0).
    pub height: usize,
    /// Row-major values (`NaN` where a cell was not sampled).
    pub values: Vec<f64>,
    /// Cells between samples along each axis.
    pub stride: usize,
    /// The smallest and largest value.
    pub range: (f64, f64),
}

/// Gathers a [`Slice`] of the field on rank 0 (`None` on the other ranks);
/// call it on every rank.
pub fn gather_slice<C: Comm, T: Cell>(
    comm: &C,
    d: &Decomposition,
    f: &Field<T>,
    max_side: usize,
) -> Result<Option<Slice>, GridError> {
    let shape = d.shape();
    let zmid = shape[0] / 2;
    let step = shape[1].max(shape[2]).div_ceil(max_side.max(1)).max(1);
    let (h, w) = (shape[1].div_ceil(step), shape[2].div_ceil(step));
    // Each rank sends (pixel index, value) for the sampled cells it owns.
    let mut mine: Vec<[f64; 2]> = Vec::new();
    f.for_owned(|g, v| {
        if g[0] == zmid && g[1] % step == 0 && g[2] % step == 0 {
            mine.push([((g[1] / step) * w + g[2] / step) as f64, v.to_f64()]);
        }
    });
    let lo = comm.all_reduce(&[mine.iter().map(|p| p[1]).fold(f64::INFINITY, f64::min)], ReduceOp::Min)?[0];
    let hi = comm.all_reduce(&[mine.iter().map(|p| p[1]).fold(f64::NEG_INFINITY, f64::max)], ReduceOp::Max)?[0];
    let Some(parts) = comm.gather(0, mine)? else { return Ok(None) };
    let mut values = vec![f64::NAN; w * h];
    for [i, v] in parts.into_iter().flatten() {
        values[i as usize] = v;
    }
    Ok(Some(Slice { width: w, height: h, values, stride: step, range: (lo, hi) }))
}

/// Writes a PNG of the field (2-D; for 3-D the middle slice along axis 0),
/// sampled to at most 1024 pixels a side, with a colour bar on the right
/// (minimum at the bottom; its range is in the PNG's Description). Rank 0
/// writes it; returns the file on rank 0. (`parsim run` draws its `field.png`
/// from a [`Slice`] with a labelled colour bar instead.)
pub fn write_png<C: Comm, T: Cell>(
    comm: &C,
    d: &Decomposition,
    f: &Field<T>,
    path: &Path,
) -> Result<Vec<PathBuf>, GridError> {
    let Some(slice) = gather_slice(comm, d, f, MAX_SIDE)? else { return Ok(Vec::new()) };
    let (w, h) = (slice.width, slice.height);
    let (lo, hi) = slice.range;
    let span = if hi > lo { hi - lo } else { 1.0 };
    let (iw, ih) = (w + BAR, h.max(2));
    let mut img = vec![255u8; iw * ih * 3];
    for (i, &v) in slice.values.iter().enumerate().filter(|(_, v)| !v.is_nan()) {
        let (y, x) = (i / w, i % w);
        img[(y * iw + x) * 3..(y * iw + x) * 3 + 3].copy_from_slice(&viridis((v - lo) / span));
    }
    for y in 0..ih {
        let c = viridis(1.0 - y as f64 / (ih - 1) as f64);
        for x in w + BAR / 3..iw {
            img[(y * iw + x) * 3..(y * iw + x) * 3 + 3].copy_from_slice(&c);
        }
    }
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, iw as u32, ih as u32);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let note = format!("parsim field; colour bar from {lo} (bottom) to {hi} (top)");
        enc.add_text_chunk("Description".into(), note).map_err(|e| GridError::Config(format!("png: {e}")))?;
        let mut wr = enc.write_header().map_err(|e| GridError::Config(format!("png: {e}")))?;
        wr.write_image_data(&img).map_err(|e| GridError::Config(format!("png: {e}")))?;
    }
    write_atomic(path, &out).map_err(|e| io_err(path, e))?;
    Ok(vec![path.to_path_buf()])
}
