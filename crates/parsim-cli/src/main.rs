//! `parsim`: run scenarios on the threads or MPI backend, benchmark the
//! runtime, and describe the build.
//!
//! Exit codes: 0 success, 1 the run failed, 2 bad input or usage.

mod abm;
mod bench;
mod bench_epidemic;
mod bench_partition;
mod bench_phold;
mod bench_stencil;
mod bench_sweep;
mod des;
mod grid;
mod partition_cmd;
mod plot;
mod progress;
mod ring;
mod runner;
mod scenario;
mod sweep_cmd;
mod sweep_process;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

use runner::Backend;
use scenario::{InputError, Scenario};

#[derive(Parser, Debug)]
#[command(name = "parsim", version, about = "Turn a sequential simulation into a parallel and distributed one")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a scenario and write DIR/summary.json.
    Run {
        /// The scenario file (TOML).
        scenario: PathBuf,
        /// Number of ranks (threads backend; under MPI, mpirun decides).
        #[arg(long)]
        ranks: Option<u64>,
        /// threads (default) or mpi (run under mpirun).
        #[arg(long)]
        backend: Option<String>,
        /// Output directory (default: out/NAME, NAME being the scenario file name without .toml).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Write a Chrome/Perfetto trace of every rank's phases to FILE.
        #[arg(long, value_name = "FILE")]
        trace: Option<PathBuf>,
        /// Override the scenario's seed.
        #[arg(long)]
        seed: Option<u64>,
        /// Override a scenario key: --set table.key=value (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// Validate the scenario and print how the work would be spread over the ranks, without running.
        #[arg(long)]
        dry_run: bool,
        /// Print the model's analytic predictions beside the simulated values (epidemic).
        #[arg(long)]
        verify: bool,
    },
    /// Partition a graph file into K parts (gpmetis-compatible): writes NAME.part.K.
    Partition {
        /// The graph: METIS format, or .mtx (Matrix Market), .txt/.el (SNAP edge list), .bin/.u32 (u32 pairs).
        graph: PathBuf,
        /// Number of parts.
        k: usize,
        /// multilevel (default), spectral, rcb, sfc (need --coords), ldg, fennel, lp; vertex cuts: hash, greedy, hdrf.
        #[arg(long, default_value = "multilevel")]
        method: String,
        /// Largest part weight over the target, e.g. 1.03 (gpmetis: -ufactor=30).
        #[arg(long, default_value_t = 1.03)]
        imbalance: f64,
        /// gpmetis's -ufactor=U: imbalance 1 + U/1000.
        #[arg(long, hide = true)]
        ufactor: Option<u32>,
        /// Seed of every random choice.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// fast, default or strong (more time for a lower cut).
        #[arg(long, default_value = "default")]
        preset: String,
        /// gpmetis's -ptype=rb|kway (both run the multilevel method).
        #[arg(long, hide = true)]
        ptype: Option<String>,
        /// gpmetis's -objtype=cut|vol: minimise the edge cut (default) or the total communication volume.
        #[arg(long, hide = true)]
        objtype: Option<String>,
        /// Contiguous parts (gpmetis: -contig): every part one connected piece.
        #[arg(long)]
        contig: bool,
        /// With --method ldg|fennel: partition while reading the file, without loading the graph.
        #[arg(long)]
        stream: bool,
        /// Output file (default: NAME.part.K in the current directory).
        #[arg(long)]
        out: Option<PathBuf>,
        /// A coordinates file (one vertex per line) for geometric methods.
        #[arg(long)]
        coords: Option<PathBuf>,
        /// Pin vertices: a file with one part id per line, -1 for a free vertex.
        #[arg(long, value_name = "FILE")]
        fixed: Option<PathBuf>,
        /// Repartition: start from this partition file and trade cut against migration.
        #[arg(long, value_name = "FILE")]
        current: Option<PathBuf>,
        /// With --current: the cost of moving one unit of vertex weight, in edge-weight units.
        #[arg(long, default_value_t = 1)]
        alpha: i64,
        /// Print a JSON report.
        #[arg(long)]
        json: bool,
    },
    /// Run a scenario's [sweep]: replications and parameter points, with statistics per point.
    Sweep {
        /// The scenario file (TOML) with a [sweep] table.
        scenario: PathBuf,
        /// Worker threads (default: [sweep] workers, or the number of cores).
        #[arg(long)]
        workers: Option<usize>,
        /// threads (default) or mpi (master-worker under mpirun).
        #[arg(long, default_value = "threads")]
        backend: String,
        /// Output directory (default: out/NAME).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Continue an interrupted sweep from DIR/tasks.jsonl.
        #[arg(long)]
        resume: bool,
        /// Override a scenario key: --set table.key=value (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// Where tasks run: thread (default) or process (a supervised child per worker; a task whose
        /// process dies or overruns [sweep] task_timeout_s is retried).
        #[arg(long)]
        isolate: Option<String>,
        /// Internal: serve tasks on stdin/stdout for a process-isolated worker.
        #[arg(long, hide = true)]
        serve: bool,
    },
    /// Version, backends compiled in, cores, MPI library.
    Info,
    /// Benchmarks.
    Bench {
        #[command(subcommand)]
        what: BenchWhat,
    },
}

#[derive(Subcommand, Debug)]
enum BenchWhat {
    /// Ping-pong latency and bandwidth between two ranks, and all-reduce latency.
    Comm {
        /// Ranks (threads backend; under MPI, mpirun decides).
        #[arg(long, default_value_t = 2)]
        ranks: usize,
        /// threads (default) or mpi.
        #[arg(long, default_value = "threads")]
        backend: String,
        /// Where to write the JSON report.
        #[arg(long, default_value = "bench-comm.json")]
        out: PathBuf,
        /// Fewer iterations (a smoke test, not a measurement).
        #[arg(long)]
        quick: bool,
    },
    /// Committed events per second of every DES engine on PHOLD's std configuration, at 1 and 2 ranks.
    Phold {
        /// Where to write the JSON report.
        #[arg(long, default_value = "bench-phold.json")]
        out: PathBuf,
        /// A small PHOLD (a smoke test, not a measurement).
        #[arg(long)]
        quick: bool,
        /// Repetitions of each configuration (the median is reported).
        #[arg(long, default_value_t = 3)]
        reps: usize,
    },
    /// Edge cut and time of the multilevel partitioner against gpmetis (when installed), every graph × K = 2..64.
    Partition {
        /// The directory of METIS graphs.
        #[arg(long, default_value = "../shared/data/graphs")]
        dir: PathBuf,
        /// Where to write the JSON report.
        #[arg(long, default_value = "bench-partition.json")]
        out: PathBuf,
        /// Three graphs, K = 2 and 8 (a smoke test, not a measurement).
        #[arg(long)]
        quick: bool,
        /// Repetitions of the default preset and of gpmetis (the median time is reported).
        #[arg(long, default_value_t = 3)]
        reps: usize,
    },
    /// The SEIR epidemic on an Erdős–Rényi network (N = 10⁶, c = 10, variant A, 180 days) at 1 and 2 ranks.
    Epidemic {
        /// Agents.
        #[arg(long, default_value_t = 1_000_000)]
        agents: usize,
        /// Only this many ranks (default: 1 and 2; under MPI the world size).
        #[arg(long)]
        ranks: Option<usize>,
        /// threads (default) or mpi (under mpirun).
        #[arg(long, default_value = "threads")]
        backend: String,
        /// Repetitions of each configuration (the median is reported).
        #[arg(long, default_value_t = 3)]
        reps: usize,
        /// Where to write the JSON report.
        #[arg(long, default_value = "bench-epidemic.json")]
        out: PathBuf,
        /// A small population (a smoke test, not a measurement).
        #[arg(long)]
        quick: bool,
    },
    /// Parallel efficiency of a 200-task sweep at 1 and 2 workers, and the scheduling overhead per task.
    Sweep {
        /// Where to write the JSON report.
        #[arg(long, default_value = "bench-sweep.json")]
        out: PathBuf,
        /// Fewer tasks (a smoke test, not a measurement).
        #[arg(long)]
        quick: bool,
        /// Repetitions (the median is reported).
        #[arg(long, default_value_t = 5)]
        reps: usize,
    },
    /// Cell updates per second of the heat stencils next to STREAM bandwidth (threads backend).
    Stencil {
        /// Where to write the JSON report.
        #[arg(long, default_value = "bench-stencil.json")]
        out: PathBuf,
        /// Small grids (a smoke test, not a measurement).
        #[arg(long)]
        quick: bool,
    },
}

fn parse_backend(s: &str, flag: &str) -> Result<Backend, InputError> {
    Backend::parse(s).ok_or_else(|| InputError::flag(flag, format!("expected threads or mpi, found \"{s}\"")))
}

/// The flags of `parsim run`.
struct RunArgs {
    scenario: PathBuf,
    ranks: Option<u64>,
    backend: Option<String>,
    out: Option<PathBuf>,
    trace: Option<PathBuf>,
    seed: Option<u64>,
    set: Vec<String>,
    dry_run: bool,
    verify: bool,
}

fn cmd_run(a: RunArgs) -> Result<()> {
    let RunArgs { scenario: path, ranks, backend, out, trace, seed, set, dry_run, verify } = a;
    let mut sc = Scenario::load(&path)?;
    for s in &set {
        sc.set(s)?;
    }
    if let Some(s) = seed {
        sc.set_value("run", "seed", toml::Value::Integer(s as i64));
    }
    if let Some(r) = ranks {
        if r == 0 {
            return Err(InputError::flag("--ranks 0", "the number of ranks must be at least 1").into());
        }
        sc.set_value("run", "ranks", toml::Value::Integer(r as i64));
    }
    if let Some(b) = &backend {
        parse_backend(b, "--backend")?;
        sc.set_value("run", "backend", toml::Value::String(b.clone()));
    }
    let mut plan = runner::plan(&mut sc, out, trace, ranks.is_some())?;
    plan.verify = verify;
    if dry_run {
        print!("{}", plan.model.describe(plan.ranks)?);
        return Ok(());
    }
    if let Some(done) = runner::execute(&plan)? {
        print_phases(&done.summary);
        let s = &done.summary;
        println!(
            "{} on {} {} rank(s): digest {}  wall {:.3} s  → {}",
            s["model"].as_str().unwrap_or("?"),
            s["ranks"],
            runner::backend_name(plan.backend),
            s["digest"].as_str().unwrap_or("?"),
            s["wall_s"].as_f64().unwrap_or(0.0),
            done.summary_path.display()
        );
        if let Some(t) = &plan.trace {
            println!("trace → {}", t.display());
        }
    }
    Ok(())
}

/// The per-phase breakdown: mean and max over ranks, and the share of wall time.
fn print_phases(s: &serde_json::Value) {
    let wall = s["wall_s"].as_f64().unwrap_or(0.0).max(1e-12);
    println!("{:>8} {:>10} {:>10} {:>7}", "phase", "mean s", "max s", "% wall");
    for p in ["compute", "comm", "wait", "io", "serial"] {
        let v: Vec<f64> =
            s["phases_s"][p].as_array().map(|a| a.iter().filter_map(|x| x.as_f64()).collect()).unwrap_or_default();
        let mean = v.iter().sum::<f64>() / v.len().max(1) as f64;
        let max = v.iter().cloned().fold(0.0, f64::max);
        println!("{p:>8} {mean:>10.4} {max:>10.4} {:>6.1}%", 100.0 * mean / wall);
    }
}

fn cmd_info() {
    println!("parsim {}", env!("CARGO_PKG_VERSION"));
    let mut backends = vec!["threads"];
    if cfg!(feature = "mpi") {
        backends.push("mpi");
    }
    println!("backends: {}", backends.join(", "));
    println!("cores: {}", std::thread::available_parallelism().map_or(1, |n| n.get()));
    #[cfg(feature = "mpi")]
    println!("mpi library: {}", parsim_comm::mpi::library_version());
    #[cfg(not(feature = "mpi"))]
    println!("mpi library: (not compiled in; build with --features mpi)");
}

/// A closed stdout (`parsim … | head -1`) ends the program quietly, as a
/// SIGPIPE would, instead of a "failed printing to stdout" panic.
fn quiet_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info);
    }));
}

fn main() -> ExitCode {
    quiet_broken_pipe();
    let cli = Cli::parse_from(partition_cmd::gpmetis_spellings(std::env::args().collect()));
    let result = match cli.command {
        Command::Run { scenario, ranks, backend, out, trace, seed, set, dry_run, verify } => {
            cmd_run(RunArgs { scenario, ranks, backend, out, trace, seed, set, dry_run, verify })
        }
        Command::Partition {
            graph,
            k,
            method,
            imbalance,
            ufactor,
            seed,
            preset,
            ptype,
            objtype,
            contig,
            out,
            coords,
            fixed,
            current,
            alpha,
            stream,
            json,
        } => {
            if ptype.as_deref().is_some_and(|p| p != "rb" && p != "kway") {
                Err(InputError::flag("-ptype", "expected rb or kway").into())
            } else if objtype.as_deref().is_some_and(|o| o != "cut" && o != "vol") {
                Err(InputError::flag("-objtype", "expected cut or vol").into())
            } else {
                let imbalance = ufactor.map_or(imbalance, |u| 1.0 + f64::from(u) / 1000.0);
                partition_cmd::run(partition_cmd::PartitionArgs {
                    graph,
                    k,
                    method,
                    imbalance,
                    seed,
                    preset,
                    out,
                    json,
                    coords,
                    fixed,
                    current,
                    alpha,
                    contig,
                    volume: objtype.as_deref() == Some("vol"),
                    stream,
                })
            }
        }
        Command::Sweep { scenario, workers, backend, out, resume, set, isolate, serve } => {
            parse_backend(&backend, "--backend").map_err(anyhow::Error::from).and_then(|backend| {
                if workers == Some(0) {
                    return Err(InputError::flag("--workers 0", "at least one worker").into());
                }
                sweep_cmd::run(sweep_cmd::SweepArgs { scenario, workers, backend, out, resume, set, isolate, serve })
            })
        }
        Command::Info => {
            cmd_info();
            Ok(())
        }
        Command::Bench { what: BenchWhat::Stencil { out, quick } } => bench_stencil::run(out, quick),
        Command::Bench { what: BenchWhat::Sweep { out, quick, reps } } => bench_sweep::run(out, quick, reps.max(1)),
        Command::Bench { what: BenchWhat::Epidemic { agents, ranks, backend, reps, out, quick } } => {
            parse_backend(&backend, "--backend").map_err(anyhow::Error::from).and_then(|b| {
                bench_epidemic::run(bench_epidemic::Args { agents, ranks, backend: b, reps: reps.max(1), out, quick })
            })
        }
        Command::Bench { what: BenchWhat::Phold { out, quick, reps } } => bench_phold::run(out, quick, reps.max(1)),
        Command::Bench { what: BenchWhat::Partition { dir, out, quick, reps } } => {
            bench_partition::run(dir, out, quick, reps.max(1))
        }
        Command::Bench { what: BenchWhat::Comm { ranks, backend, out, quick } } => {
            parse_backend(&backend, "--backend").map_err(anyhow::Error::from).and_then(|b| {
                if ranks == 0 {
                    return Err(InputError::flag("--ranks 0", "the number of ranks must be at least 1").into());
                }
                bench::run(b, ranks, out, quick)
            })
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("parsim: error: {e:#}");
            if e.downcast_ref::<InputError>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}
