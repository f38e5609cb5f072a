//! Agent positions as VTK XML point sets for ParaView: one `.vtp` piece
//! per rank and one `.pvtp` naming them, written without gathering the
//! agents anywhere.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::Agent;

fn piece_name(stem: &str, step: u64, rank: usize) -> String {
    format!("{stem}_{step:06}_{rank:04}.vtp")
}

/// Writes this rank's agents at `step` as `DIR/STEM_STEP_RANK.vtp` (points
/// with id, velocity and owning rank); returns the path.
pub fn write_piece<S>(dir: &Path, stem: &str, step: u64, rank: usize, agents: &[Agent<S>]) -> std::io::Result<PathBuf> {
    let n = agents.len();
    let mut s = String::with_capacity(64 * n + 1024);
    s.push_str("<?xml version=\"1.0\"?>\n<VTKFile type=\"PolyData\" version=\"0.1\" byte_order=\"LittleEndian\">\n<PolyData>\n");
    let _ = writeln!(s, "<Piece NumberOfPoints=\"{n}\" NumberOfVerts=\"{n}\" NumberOfLines=\"0\" NumberOfStrips=\"0\" NumberOfPolys=\"0\">");
    s.push_str(
        "<PointData Scalars=\"id\" Vectors=\"velocity\">\n<DataArray type=\"UInt64\" Name=\"id\" format=\"ascii\">\n",
    );
    for a in agents {
        let _ = write!(s, "{} ", a.id);
    }
    s.push_str(
        "\n</DataArray>\n<DataArray type=\"Float64\" Name=\"velocity\" NumberOfComponents=\"3\" format=\"ascii\">\n",
    );
    for a in agents {
        let _ = write!(s, "{} {} {} ", a.vel[0], a.vel[1], a.vel[2]);
    }
    s.push_str("\n</DataArray>\n<DataArray type=\"Int32\" Name=\"rank\" format=\"ascii\">\n");
    for _ in agents {
        let _ = write!(s, "{rank} ");
    }
    s.push_str("\n</DataArray>\n</PointData>\n<Points>\n<DataArray type=\"Float64\" NumberOfComponents=\"3\" format=\"ascii\">\n");
    for a in agents {
        let _ = write!(s, "{} {} {} ", a.pos[0], a.pos[1], a.pos[2]);
    }
    s.push_str(
        "\n</DataArray>\n</Points>\n<Verts>\n<DataArray type=\"Int64\" Name=\"connectivity\" format=\"ascii\">\n",
    );
    for i in 0..n {
        let _ = write!(s, "{i} ");
    }
    s.push_str("\n</DataArray>\n<DataArray type=\"Int64\" Name=\"offsets\" format=\"ascii\">\n");
    for i in 1..=n {
        let _ = write!(s, "{i} ");
    }
    s.push_str("\n</DataArray>\n</Verts>\n</Piece>\n</PolyData>\n</VTKFile>\n");
    let path = dir.join(piece_name(stem, step, rank));
    parsim_core::io::write_atomic(&path, s.as_bytes())?;
    Ok(path)
}

/// Writes `DIR/STEM_STEP.pvtp`, the collection of the `ranks` pieces of
/// `step` (rank 0 calls it); returns the path.
pub fn write_collection(dir: &Path, stem: &str, step: u64, ranks: usize) -> std::io::Result<PathBuf> {
    let mut s = String::from(
        "<?xml version=\"1.0\"?>\n<VTKFile type=\"PPolyData\" version=\"0.1\" byte_order=\"LittleEndian\">\n\
         <PPolyData GhostLevel=\"0\">\n<PPointData Scalars=\"id\" Vectors=\"velocity\">\n\
         <PDataArray type=\"UInt64\" Name=\"id\"/>\n\
         <PDataArray type=\"Float64\" Name=\"velocity\" NumberOfComponents=\"3\"/>\n\
         <PDataArray type=\"Int32\" Name=\"rank\"/>\n</PPointData>\n\
         <PPoints>\n<PDataArray type=\"Float64\" NumberOfComponents=\"3\"/>\n</PPoints>\n",
    );
    for r in 0..ranks {
        let _ = writeln!(s, "<Piece Source=\"{}\"/>", piece_name(stem, step, r));
    }
    s.push_str("</PPolyData>\n</VTKFile>\n");
    let path = dir.join(format!("{stem}_{step:06}.pvtp"));
    parsim_core::io::write_atomic(&path, s.as_bytes())?;
    Ok(path)
}
