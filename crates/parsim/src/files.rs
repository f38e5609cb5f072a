//! Files given on the command line: inputs that cannot be read are bad
//! input with one clean message, and output destinations are checked before
//! any work starts (a run must not compute for an hour and then find that it
//! cannot write its result).

use std::path::Path;

use crate::InputError;

/// The one-line reason `e` gives for not reading `path` (no OS message
/// repeated, no file content quoted).
pub fn unreadable(path: &Path, e: &std::io::Error) -> String {
    let why = if path.is_dir() { "is a directory, not a file".to_string() } else { parsim_core::io::brief(e) };
    format!("{}: {why}", path.display())
}

/// [`unreadable`] as bad input (exit 2), for the file given by `flag`.
pub fn input_file_error(flag: &str, path: &Path, e: &std::io::Error) -> InputError {
    InputError::flag(flag, unreadable(path, e))
}

/// Checks that a file can be written at `path` (given by `flag`): its
/// directory exists or can be created and takes a new file, and `path`
/// itself is not a directory. Nothing is left behind but the directory.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("parsim-out-doc-{}", std::process::id()));
/// assert!(parsim::check_output_file(&dir.join("a/b.json"), "--out").is_ok());
/// assert!(parsim::check_output_file(&dir, "--out").is_err()); // a directory
/// assert!(parsim::check_output_file(std::path::Path::new("/proc/version/x"), "--out").is_err());
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn check_output_file(path: &Path, flag: &str) -> Result<(), InputError> {
    if path.is_dir() {
        return Err(InputError::flag(flag, format!("{}: is a directory; give a file name", path.display())));
    }
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    check_output_dir(dir, flag)
}

/// Checks that `dir` (given by `flag`) is a directory, or can be created as
/// one, and that a file can be created in it (a probe file, removed at once).
pub fn check_output_dir(dir: &Path, flag: &str) -> Result<(), InputError> {
    let bad = |why: String| InputError::flag(flag, format!("{}: {why}", dir.display()));
    if dir.exists() && !dir.is_dir() {
        return Err(bad("not a directory".into()));
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| bad(format!("cannot create the directory: {}", parsim_core::io::brief(&e).to_lowercase())))?;
    let probe = dir.join(format!(".parsim-probe-{}", std::process::id()));
    match std::fs::OpenOptions::new().write(true).create_new(true).open(&probe) {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(bad(format!("cannot write here: {}", parsim_core::io::brief(&e).to_lowercase()))),
    }
}

/// How long a dead process's temporary file must have been untouched
/// before a start-up sweep removes it.
pub const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(120);

/// Removes the temporary files that killed runs left in `dir` (see
/// [`parsim_core::io::sweep_stale_temps`], untouched for [`STALE_AFTER`])
/// and says so on stderr.
pub fn sweep_stale_temps(dir: &Path) {
    let gone = parsim_core::io::sweep_stale_temps(dir, STALE_AFTER);
    if !gone.is_empty() {
        let names: Vec<String> =
            gone.iter().filter_map(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned()).collect();
        tracing::warn!(
            "removed {} temporary file(s) left by processes no longer running in {}: {}",
            gone.len(),
            dir.display(),
            names.join(", ")
        );
    }
}
