//! Output files that are never half-written, and the temporary files a
//! killed run leaves behind.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Writes `bytes` to `path` atomically: a temporary file beside it, flushed
/// to disk, renamed over the target, and the directory flushed so that the
/// rename itself survives a power cut. A crash leaves the old file or the
/// new one, never a part of one. Creates the parent directory if needed.
///
/// The temporary is created with `O_EXCL` (`create_new`) under a name no
/// other writer uses (`.NAME.tmp-PID-N`), so a file or a symbolic link
/// planted at that name is never followed or overwritten; it is removed on
/// every error path.
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
    let (tmp, f) = create_temp(dir, path)?;
    let written = (|| {
        // Many small parts (the rows of a field) go out in 1 MiB writes.
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        for p in parts {
            w.write_all(p)?;
        }
        let f = w.into_inner().map_err(|e| e.into_error())?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    sync_dir(dir)
}

/// Creates a fresh temporary file for `target` in `dir` with `create_new`,
/// trying further sequence numbers while a name is taken.
fn create_temp(dir: &Path, target: &Path) -> std::io::Result<(PathBuf, std::fs::File)> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let name = target.file_name().map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    let pid = std::process::id();
    let mut last = None;
    for _ in 0..1024 {
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(".{name}.tmp-{pid}-{n}"));
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free temporary name")))
}

/// The process id in a temporary file name written by [`write_atomic`]
/// (`.NAME.tmp-PID-N`) or by older versions (`.NAME.tmp-PID`).
fn temp_owner(file_name: &str) -> Option<u32> {
    if !file_name.starts_with('.') {
        return None;
    }
    let (_, tail) = file_name.rsplit_once(".tmp-")?;
    let pid = tail.split('-').next()?;
    if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if tail.len() > pid.len() && !tail[pid.len() + 1..].bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    pid.parse().ok()
}

/// Whether process `pid` is alive on this machine (Linux: `/proc/PID`
/// exists). Elsewhere every process is assumed alive, so nothing is swept.
fn alive(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    let proc = Path::new("/proc");
    if !proc.join("self").exists() {
        return true;
    }
    proc.join(pid.to_string()).exists()
}

/// Removes the temporary files (`.NAME.tmp-PID[-N]`) that processes which
/// are no longer running left in `dir` (a run killed while writing, or a
/// full disk) and returns their paths. Only files untouched for `min_age`
/// go (a process id is only known dead on this machine: on a shared file
/// system a writer elsewhere keeps its file fresh). Files of live
/// processes, and every other file, are left alone; a missing directory
/// sweeps nothing.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("parsim-sweep-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// std::fs::write(dir.join(".summary.json.tmp-4294967295"), b"half")?; // no such process
/// std::fs::write(dir.join("summary.json"), b"{}")?;
/// let gone = parsim_core::io::sweep_stale_temps(&dir, std::time::Duration::ZERO);
/// assert_eq!(gone.len(), 1);
/// assert!(dir.join("summary.json").exists());
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn sweep_stale_temps(dir: &Path, min_age: std::time::Duration) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut gone = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(temp_owner) else { continue };
        let is_file_or_link = e.file_type().is_ok_and(|t| t.is_file() || t.is_symlink());
        let old = std::fs::symlink_metadata(e.path())
            .and_then(|m| m.modified())
            .is_ok_and(|t| t.elapsed().is_ok_and(|a| a >= min_age));
        if is_file_or_link && old && !alive(pid) && std::fs::remove_file(e.path()).is_ok() {
            gone.push(e.path());
        }
    }
    gone.sort();
    gone
}

/// An I/O error in a few words, for one-line messages: "no such file",
/// "permission denied", "is a directory, not a file", "not a text file (not
/// UTF-8)", else the system's words without "(os error N)".
///
/// ```
/// let e = std::fs::read("/nonexistent/parsim").unwrap_err();
/// assert_eq!(parsim_core::io::brief(&e), "no such file");
/// ```
pub fn brief(e: &std::io::Error) -> String {
    use std::io::ErrorKind::*;
    match e.kind() {
        NotFound => "no such file".into(),
        PermissionDenied => "permission denied".into(),
        IsADirectory => "is a directory, not a file".into(),
        InvalidData => "not a text file (not UTF-8)".into(),
        _ => {
            let s = e.to_string();
            s.split(" (os error").next().unwrap_or(&s).to_string()
        }
    }
}

/// A token of an input file as an error message shows it: a number as it
/// is (quoted), anything else only by its length, so that a file given by
/// mistake (a key file, say) never leaks into logs.
///
/// ```
/// assert_eq!(parsim_core::io::shown_token("1.5"), "\"1.5\"");
/// assert_eq!(parsim_core::io::shown_token("hunter2"), "a non-numeric token of 7 characters");
/// ```
pub fn shown_token(t: &str) -> String {
    if !t.is_empty() && t.len() <= 40 && t.parse::<f64>().is_ok() {
        format!("\"{t}\"")
    } else {
        format!("a non-numeric token of {} characters", t.chars().count())
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_names_are_recognised() {
        assert_eq!(temp_owner(".summary.json.tmp-123"), Some(123));
        assert_eq!(temp_owner(".field_0.vti.tmp-77-3"), Some(77));
        assert_eq!(temp_owner("summary.json.tmp-123"), None);
        assert_eq!(temp_owner(".a.tmp-12x"), None);
        assert_eq!(temp_owner(".a.tmp-12-x"), None);
        assert_eq!(temp_owner(".a.tmp-"), None);
    }

    #[test]
    fn a_planted_link_at_the_temporary_name_is_not_followed() {
        let dir = std::env::temp_dir().join(format!("parsim-io-link-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let victim = dir.join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        // Plant links at the names the next writes would use.
        let pid = std::process::id();
        for n in 0..16 {
            #[cfg(unix)]
            let _ = std::os::unix::fs::symlink(&victim, dir.join(format!(".out.tmp-{pid}-{n}")));
        }
        write_atomic(&dir.join("out"), b"new").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert_eq!(std::fs::read(dir.join("out")).unwrap(), b"new");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failed_write_leaves_no_temporary() {
        let dir = std::env::temp_dir().join(format!("parsim-io-fail-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("target_is_a_dir/inner")).unwrap();
        // Renaming a file over a non-empty directory fails.
        assert!(write_atomic(&dir.join("target_is_a_dir"), b"x").is_err());
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(left.len(), 1, "{left:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
