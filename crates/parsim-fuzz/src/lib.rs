//! The contracts of parsim's readers, one function per input a user can
//! feed (a graph file in each format, coordinates, partition and pinning
//! files, a population, a scenario, a `[sweep]` table, a `tasks.jsonl`
//! log, a `--serve` request line, a checkpoint manifest and data file).
//!
//! Each target takes arbitrary bytes and panics only when the reader breaks
//! its contract: an `Ok` value must pass an independent check (written here,
//! not the reader's own), and an `Err` must name the file (and, for a
//! malformed line, a line that exists). A reader that panics, or that
//! accepts what it should refuse, fails the target.
//!
//! The targets run two ways: under `cargo fuzz` (libFuzzer, nightly; see
//! `fuzz/` at the repository root) and, on any toolchain, in this crate's
//! test, which replays the corpora of `fuzz/corpus/TARGET/` with a fixed
//! set of deterministic mutations of each file.
//!
//! ```
//! // A valid METIS triangle passes, and so does every malformed variant.
//! parsim_fuzz::run("metis", b"3 3\n2 3\n1 3\n1 2\n");
//! parsim_fuzz::run("metis", b"3 3\n2 3\n1 9\n1 2\n");
//! ```

mod check;
mod targets;

pub use targets::{Target, TARGETS};

/// Runs target `name` on `data` (panics on a contract violation, or if no
/// target has that name).
pub fn run(name: &str, data: &[u8]) {
    let (_, f) = TARGETS.iter().find(|(n, _)| *n == name).unwrap_or_else(|| panic!("no fuzz target {name}"));
    f(data)
}

/// A scratch file holding `data`, named `name` (the reader picks its format
/// by the extension), in a directory of this thread's own.
pub fn scratch_file(name: &str, data: &[u8]) -> std::path::PathBuf {
    let dir =
        std::env::temp_dir().join(format!("parsim-fuzz-{}-{:?}", std::process::id(), std::thread::current().id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let p = dir.join(name);
    std::fs::write(&p, data).expect("a scratch file");
    p
}
