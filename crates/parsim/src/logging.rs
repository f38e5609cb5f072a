//! Log output through `tracing`: warnings and notes by default, `-v` for
//! debug, `-vv` for trace, `-q` for errors only (and no progress).

use std::sync::atomic::{AtomicBool, Ordering};

static QUIET: AtomicBool = AtomicBool::new(false);

/// Installs the stderr logger at the level `-v`/`-q` ask for (once; later
/// calls only change the quiet flag).
pub fn init(verbose: u8, quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
    let level = match (quiet, verbose) {
        (true, _) => tracing::Level::ERROR,
        (false, 0) => tracing::Level::INFO,
        (false, 1) => tracing::Level::DEBUG,
        _ => tracing::Level::TRACE,
    };
    let _ = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .with_target(false)
        .without_time()
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

/// Whether `-q` was given: no progress, no result lines.
pub fn is_quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}
