//! Output files that are never half-written.

use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` atomically: a temporary file beside it, flushed
/// to disk, renamed over the target, and the directory flushed so that the
/// rename itself survives a power cut. A crash leaves the old file or the
/// new one, never a part of one. Creates the parent directory if needed.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("parsim-doc-{}", std::process::id()));
/// let p = dir.join("out.txt");
/// parsim_core::io::write_atomic(&p, b"hello")?;
/// assert_eq!(std::fs::read(&p)?, b"hello");
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomic_parts(path, &[bytes])
}

/// [`write_atomic`] of the concatenation of `parts`, without joining them
/// into one buffer first (a header and a large body, say).
pub fn write_atomic_parts(path: &Path, parts: &[&[u8]]) -> std::io::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path.file_name().map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let mut f = std::fs::File::create(&tmp)?;
    for p in parts {
        f.write_all(p)?;
    }
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, path)?;
    sync_dir(dir)
}

/// Flushes a directory's entries (creations, renames, removals) to disk.
/// A no-op where directories cannot be opened as files (not Unix).
pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    std::fs::File::open(dir)?.sync_all()?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}
