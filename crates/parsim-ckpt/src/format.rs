//! The bytes on disk: a per-rank data file (header + LZ4 block) and the
//! checkpoint's manifest (JSON).
//!
//! A data file is `PSCKPT01`, then little-endian `u64`s — sequence number,
//! rank, raw length, xxh3 of the raw bytes, compressed length, xxh3 of the
//! compressed bytes — then the compressed bytes. The raw bytes are the
//! engine's state serialised with postcard. Every field is checked on read,
//! and the raw checksum must also equal the manifest's.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use xxhash_rust::xxh3::xxh3_64;

/// The manifest's format version; a checkpoint of another version is refused.
pub const FORMAT_VERSION: u32 = 1;
const MAGIC: &[u8; 8] = b"PSCKPT01";
/// The same header, the data stored as is (LZ4 would have made it larger).
const MAGIC_RAW: &[u8; 8] = b"PSCKPT0R";
const HEADER: usize = 8 + 6 * 8;
/// Bytes tried with LZ4 before compressing a whole piece.
const SAMPLE: usize = 256 << 10;

/// One rank's state as the manifest records it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Piece {
    /// The rank that wrote it.
    pub rank: usize,
    /// Raw (uncompressed) length.
    pub bytes: u64,
    /// xxh3-64 of the raw bytes, hex.
    pub xxh3: String,
    /// What the engine needs to know before reading it (a grid block's
    /// extent, an LP range), so that a restart reads only what it needs.
    pub meta: Value,
}

/// A checkpoint's manifest: `manifests/cNNNNNN.json`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    /// [`FORMAT_VERSION`].
    pub format: u32,
    /// The engine (`grid`, `epidemic`, `phold` …).
    pub engine: String,
    /// The name of the engine's boundary (`step`, `day`, `gvt` …).
    pub unit: String,
    /// Fingerprint of everything that determines the result.
    pub fingerprint: String,
    /// The run's seed.
    pub seed: u64,
    /// Sequence number (increasing over restarts).
    pub seq: u64,
    /// The boundary the state is at (steps done, day, GVT round …).
    pub boundary: u64,
    /// The engine's position as a number where that is not an integer
    /// (Time Warp's GVT), for messages.
    pub position: Value,
    /// Ranks that wrote it.
    pub ranks: usize,
    /// Whether each rank's partner `(r + 1) mod p` holds a copy.
    pub partner: bool,
    /// Whether the shared directory holds a copy.
    pub shared: bool,
    /// How the state was partitioned (informative; restarts repartition).
    pub partition: Value,
    /// One per rank, in rank order.
    pub pieces: Vec<Piece>,
}

/// The hex form of a checksum.
pub fn hex(h: u64) -> String {
    format!("{h:016x}")
}

/// The raw checksum of a snapshot.
pub fn checksum(raw: &[u8]) -> u64 {
    xxh3_64(raw)
}

/// Encodes one rank's data file (LZ4, or stored as is when LZ4 does not
/// make it smaller: random states do not compress).
pub fn encode(seq: u64, rank: usize, raw: &[u8]) -> Vec<u8> {
    let (mut header, comp) = encode_parts(seq, rank, raw, None);
    header.extend_from_slice(comp.as_deref().unwrap_or(raw));
    header
}

/// [`encode`] as a header and, when compressing paid, the compressed body
/// (otherwise the body is `raw` itself: nothing is copied). `sum` is the
/// raw bytes' xxh3 when already known.
pub fn encode_parts(seq: u64, rank: usize, raw: &[u8], sum: Option<u64>) -> (Vec<u8>, Option<Vec<u8>>) {
    // Compress only what compresses: a sample first (floating-point fields
    // rarely shrink by a tenth, and LZ4 over them costs more than the write).
    let sample = &raw[..raw.len().min(SAMPLE)];
    let pays = raw.len() <= SAMPLE || lz4_flex::block::compress(sample).len() * 10 < sample.len() * 9;
    let lz = if pays { Some(lz4_flex::block::compress(raw)).filter(|c| c.len() < raw.len()) } else { None };
    let raw_sum = sum.unwrap_or_else(|| xxh3_64(raw));
    let (magic, comp_len, comp_sum) = match &lz {
        Some(c) => (MAGIC, c.len(), xxh3_64(c)),
        None => (MAGIC_RAW, raw.len(), raw_sum),
    };
    let mut header = Vec::with_capacity(HEADER);
    header.extend_from_slice(magic);
    for v in [seq, rank as u64, raw.len() as u64, raw_sum, comp_len as u64, comp_sum] {
        header.extend_from_slice(&v.to_le_bytes());
    }
    (header, lz)
}

/// Parses a manifest (`manifests/cNNNNNN.json`) and checks its shape: at
/// least one rank, one piece per rank in rank order, each with a 16-digit
/// hex checksum. Whether it belongs to this run is checked by the restart.
///
/// ```
/// let e = parsim_ckpt::format::parse_manifest(b"{}").unwrap_err();
/// assert!(e.contains("unreadable manifest"), "{e}");
/// ```
pub fn parse_manifest(bytes: &[u8]) -> Result<Manifest, String> {
    let m: Manifest = serde_json::from_slice(bytes).map_err(|e| format!("unreadable manifest: {e}"))?;
    if m.ranks == 0 {
        return Err("a manifest of 0 ranks".into());
    }
    if m.pieces.len() != m.ranks || m.pieces.iter().enumerate().any(|(i, p)| p.rank != i) {
        return Err(format!("lists {} pieces for {} ranks", m.pieces.len(), m.ranks));
    }
    if let Some(p) = m.pieces.iter().find(|p| p.xxh3.len() != 16 || !p.xxh3.bytes().all(|b| b.is_ascii_hexdigit())) {
        return Err(format!("piece {}: a checksum that is not 16 hex digits", p.rank));
    }
    Ok(m)
}

/// Decodes a data file, checking it is rank `rank`'s part of checkpoint
/// `seq` with the manifest's length and checksum.
pub fn decode(file: &[u8], seq: u64, rank: usize, piece: &Piece) -> Result<Vec<u8>, String> {
    if file.len() < HEADER {
        return Err(format!("truncated ({} bytes, shorter than the {HEADER}-byte header)", file.len()));
    }
    let stored = &file[..8] == MAGIC_RAW;
    if &file[..8] != MAGIC && !stored {
        return Err("not a parsim checkpoint file (bad magic)".into());
    }
    let f = |i: usize| u64::from_le_bytes(file[8 + 8 * i..16 + 8 * i].try_into().expect("8 bytes"));
    let (s, r, raw_len, raw_sum, comp_len, comp_sum) = (f(0), f(1), f(2), f(3), f(4), f(5));
    if s != seq || r != rank as u64 {
        return Err(format!("holds checkpoint {s} of rank {r}, not checkpoint {seq} of rank {rank}"));
    }
    if raw_len != piece.bytes || hex(raw_sum) != piece.xxh3 {
        return Err("does not match the manifest's length and checksum".into());
    }
    let comp = &file[HEADER..];
    if comp.len() as u64 != comp_len {
        return Err(format!("truncated ({} of {comp_len} compressed bytes)", comp.len()));
    }
    if xxh3_64(comp) != comp_sum {
        return Err("checksum mismatch (the file was corrupted)".into());
    }
    // LZ4 expands at most 255-fold: a longer claimed length is corrupt, and
    // must not size an allocation.
    if !stored && raw_len > (comp.len() as u64).saturating_mul(255).saturating_add(16) {
        return Err(format!("claims {raw_len} bytes from {} compressed ones (corrupted)", comp.len()));
    }
    if stored && raw_len != comp.len() as u64 {
        return Err("stored length does not match the data (corrupted)".into());
    }
    let cap = usize::try_from(raw_len).map_err(|_| "raw length does not fit in memory".to_string())?;
    let raw = if stored {
        comp.to_vec()
    } else {
        lz4_flex::block::decompress(comp, cap).map_err(|e| format!("cannot decompress: {e}"))?
    };
    if raw.len() as u64 != raw_len || xxh3_64(&raw) != raw_sum {
        return Err("decompressed bytes fail their checksum".into());
    }
    Ok(raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_every_corruption_is_caught() {
        let raw: Vec<u8> = (0..10_000u32).flat_map(|i| (i / 7).to_le_bytes()).collect();
        let piece = Piece { rank: 2, bytes: raw.len() as u64, xxh3: hex(checksum(&raw)), meta: Value::Null };
        let file = encode(5, 2, &raw);
        assert!(file.len() < raw.len() / 2, "compressible data is compressed");
        // Incompressible data is stored as is, and reads back.
        let noise: Vec<u8> = (0..4096u64).map(|i| xxh3_64(&i.to_le_bytes()) as u8).collect();
        let np = Piece { rank: 0, bytes: 4096, xxh3: hex(checksum(&noise)), meta: Value::Null };
        let f = encode(1, 0, &noise);
        assert_eq!(f.len(), HEADER + noise.len());
        assert_eq!(decode(&f, 1, 0, &np).unwrap(), noise);
        assert_eq!(decode(&file, 5, 2, &piece).unwrap(), raw);
        assert!(decode(&file, 6, 2, &piece).unwrap_err().contains("not checkpoint 6"));
        assert!(decode(&file[..file.len() - 1], 5, 2, &piece).unwrap_err().contains("truncated"));
        assert!(decode(&file[..20], 5, 2, &piece).unwrap_err().contains("truncated"));
        for at in [0, 9, 30, HEADER + 3, file.len() - 1] {
            let mut bad = file.clone();
            bad[at] ^= 0x10;
            assert!(decode(&bad, 5, 2, &piece).is_err(), "a flipped byte at {at} went unnoticed");
        }
        let other = Piece { xxh3: hex(1), ..piece };
        assert!(decode(&file, 5, 2, &other).unwrap_err().contains("manifest"));
    }
}
