//! `parsim`: run scenarios on the threads or MPI backend, benchmark the
//! runtime, and describe the build.
//!
//! Exit codes: 0 success, 1 the run failed, 2 bad input or usage.

mod bench;
mod cmd;
mod models;
mod report;
mod scale;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use parsim::{parse_backend, InputError, RunArgs, SweepArgs};

use cmd::partition as partition_cmd;

#[derive(Parser, Debug)]
#[command(name = "parsim", version, about = "Turn a sequential simulation into a parallel and distributed one")]
struct Cli {
    /// More log output (-v: debug, -vv: trace).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Only errors: no progress, no result lines.
    #[arg(short, long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a scenario and write DIR/summary.json.
    #[command(after_help = RUN_EXAMPLES)]
    Run(RunArgs),
    /// Partition a graph file into K parts (gpmetis-compatible): writes GRAPH.part.K beside the graph, as gpmetis does.
    #[command(after_help = PARTITION_EXAMPLES)]
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
        /// Seed of every random choice.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// fast, default or strong (more time for a lower cut).
        #[arg(long, default_value = "default")]
        preset: String,
        /// Contiguous parts (gpmetis: -contig): every part one connected piece.
        #[arg(long)]
        contig: bool,
        /// With --method ldg|fennel: partition while reading the file, without loading the graph.
        #[arg(long)]
        stream: bool,
        /// Output file (default: the graph's path plus .part.K, where gpmetis writes it).
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
        #[command(flatten)]
        gp: partition_cmd::GpmetisOpts,
    },
    /// Run a scenario's [sweep]: replications and parameter points, with statistics per point.
    #[command(after_help = SWEEP_EXAMPLES)]
    Sweep(SweepArgs),
    /// Relaunch a job after a failure (up to N times): each relaunched `parsim run` restarts from its newest checkpoint.
    #[command(after_help = SUPERVISE_EXAMPLES)]
    Supervise {
        /// Relaunches at most.
        #[arg(long, default_value_t = 3)]
        restarts: u32,
        /// The command (after --).
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Strong or weak scaling study: runs a scenario at each rank count, says where the efficiency went, fits Amdahl/Gustafson and a T(p) model, predicts beyond, writes report.html.
    #[command(after_help = SCALE_EXAMPLES)]
    Scale {
        /// The scenario to study (not with --from).
        scenario: Option<PathBuf>,
        /// Rank counts, increasing (e.g. 1,2,4,8).
        #[arg(long, default_value = "1,2,4")]
        ranks: String,
        /// Weak scaling: the key that grows with p (abm.agents, grid.size, phold.lps …).
        #[arg(long, value_name = "KEY")]
        weak: Option<String>,
        /// threads (default) or mpi (runs `mpirun -n p` itself).
        #[arg(long, default_value = "threads")]
        backend: String,
        /// Repetitions per rank count (the median wall time is used).
        #[arg(long, default_value_t = 3)]
        reps: usize,
        /// Output directory (default out/scale).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Analyse finished runs (directories or summary.json files) instead of running.
        #[arg(long, num_args = 1.., value_name = "DIR")]
        from: Vec<PathBuf>,
        /// Set a scenario key for every run (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        /// α and β from a `parsim bench comm` report (default: measured now).
        #[arg(long, value_name = "FILE")]
        network: Option<PathBuf>,
        /// jitter:mean=DURATION: run every point again with random delays at every boundary and measure how synchronisation amplifies them.
        #[arg(long, value_name = "jitter:mean=D")]
        inject: Option<String>,
    },
    /// The seed's formulas as calculators.
    Model {
        #[command(subcommand)]
        what: ModelWhat,
    },
    /// Version, backends compiled in, cores, MPI library.
    #[command(after_help = "Example:\n  parsim info")]
    Info,
    /// Benchmarks.
    #[command(after_help = BENCH_EXAMPLES)]
    Bench {
        #[command(subcommand)]
        what: BenchWhat,
    },
}

#[derive(Subcommand, Debug)]
enum ModelWhat {
    /// The optimal checkpoint interval (Young, Daly) and its expected overhead.
    #[command(
        after_help = "Examples:\n  parsim model checkpoint --delta 5m --mtbf 6h\n  parsim model checkpoint --delta 30s --mtbf 1h --restart 2m"
    )]
    Checkpoint {
        /// The cost of one checkpoint (90, 30s, 5m, 1h).
        #[arg(long)]
        delta: String,
        /// The mean time between interrupts.
        #[arg(long)]
        mtbf: String,
        /// The cost of a restart (default: δ).
        #[arg(long)]
        restart: Option<String>,
    },
    /// Amdahl's law: the speedup a serial fraction allows.
    #[command(
        after_help = "Example:\n  parsim model amdahl --serial 0.1 --p 1024\n  parsim model amdahl --serial 0.01 --p 1,8,64,512"
    )]
    Amdahl {
        /// The serial fraction f (0..=1).
        #[arg(long)]
        serial: f64,
        /// Rank counts (comma-separated).
        #[arg(long, value_delimiter = ',', default_value = "1024")]
        p: Vec<usize>,
    },
    /// Gustafson's law: the scaled speedup when the work grows with p.
    #[command(after_help = "Example:\n  parsim model gustafson --serial 0.1 --p 1024")]
    Gustafson {
        /// The serial fraction of the scaled run (0..=1).
        #[arg(long)]
        serial: f64,
        /// Rank counts (comma-separated).
        #[arg(long, value_delimiter = ',', default_value = "1024")]
        p: Vec<usize>,
    },
    /// The Karp–Flatt metric: the serial fraction a measured speedup implies.
    #[command(name = "karp-flatt", after_help = "Example:\n  parsim model karp-flatt --speedup 6.2 --p 8")]
    KarpFlatt {
        /// The measured speedup.
        #[arg(long)]
        speedup: f64,
        /// The ranks it was measured on.
        #[arg(long)]
        p: usize,
    },
    /// Halo exchange per rank and step for slabs, pencils and blocks.
    #[command(
        after_help = "Example:\n  parsim model halo --size 4096x4096 --ranks 64\n  parsim model halo --size 512x512x512 --ranks 96 --width 2"
    )]
    Halo {
        /// The grid's extents, e.g. 4096x4096 or 512x512x512.
        #[arg(long)]
        size: String,
        /// Ranks.
        #[arg(long)]
        ranks: usize,
        /// Halo width (cells).
        #[arg(long, default_value_t = 1)]
        width: usize,
        /// Bytes per cell.
        #[arg(long, default_value_t = 8)]
        bytes: usize,
    },
}

#[derive(Subcommand, Debug)]
enum BenchWhat {
    /// Ping-pong latency and bandwidth between two ranks, and all-reduce latency.
    #[command(
        after_help = "Examples:\n  parsim bench comm --quick\n  mpirun -n 2 target/release/parsim bench comm --backend mpi"
    )]
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
        /// Print the α–β fit (latency α, seconds per byte β) of the ping-pong and its residual.
        #[arg(long)]
        fit: bool,
    },
    /// Checkpoint write speed against the disk's, background vs synchronous stall, compression, and overhead at Daly's interval.
    #[command(
        after_help = "Examples:\n  parsim bench checkpoint --quick\n  parsim bench checkpoint --reps 3 --out bench-checkpoint.json"
    )]
    Checkpoint {
        /// Where to write the JSON report.
        #[arg(long, default_value = "bench-checkpoint.json")]
        out: PathBuf,
        /// Small states and runs (a smoke test, not a measurement).
        #[arg(long)]
        quick: bool,
        /// Repetitions (the median is reported).
        #[arg(long, default_value_t = 3)]
        reps: usize,
    },
    /// Load balancing on the gathering crowd (each strategy against none, also with a slowed rank), interest management against broadcast, and the framework's overhead against a plain loop.
    #[command(
        after_help = "Examples:\n  parsim bench lb --quick\n  parsim bench lb --agents 200000 --steps 400 --reps 3 --out bench-lb.json"
    )]
    Lb {
        /// Where to write the JSON report.
        #[arg(long, default_value = "bench-lb.json")]
        out: PathBuf,
        /// Agents in the crowd (one per m²).
        #[arg(long, default_value_t = 100_000)]
        agents: u64,
        /// Steps (the attraction opens at a twentieth of them).
        #[arg(long, default_value_t = 300)]
        steps: u64,
        /// Repetitions (the median is reported).
        #[arg(long, default_value_t = 1)]
        reps: usize,
        /// A small crowd (a smoke test, not a measurement).
        #[arg(long)]
        quick: bool,
        /// Only these strategies (comma-separated: off,sfc,diffusive,graph,greedy,refine,steal).
        #[arg(long)]
        strategies: Option<String>,
        /// The reaction front's grid side (cells; 32² tiles).
        #[arg(long, default_value_t = 1024)]
        front_size: usize,
        /// The reaction front's steps.
        #[arg(long, default_value_t = 1200)]
        front_steps: u64,
    },
    /// Committed events per second of every DES engine on PHOLD's std configuration, at 1 and 2 ranks.
    #[command(
        after_help = "Examples:\n  parsim bench phold --quick\n  parsim bench phold --reps 5 --out bench-phold.json"
    )]
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
    #[command(
        after_help = "Examples:\n  parsim bench partition --quick\n  parsim bench partition --dir ../shared/data/graphs --reps 3"
    )]
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
        /// Only the distributed partitioners' table (dlp, dml), over every graph.
        #[arg(long)]
        distributed: bool,
    },
    /// The SEIR epidemic on an Erdős–Rényi network (N = 10⁶, c = 10, variant A, 180 days) at 1 and 2 ranks.
    #[command(
        after_help = "Examples:\n  parsim bench epidemic --quick\n  parsim bench epidemic --agents 1000000 --reps 3\n  mpirun -n 2 target/release/parsim bench epidemic --backend mpi"
    )]
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
        /// Internal: one measured run of `ref` (the plain program) or `parsim` (1 rank), printed as JSON.
        #[arg(long, hide = true)]
        child: Option<String>,
    },
    /// Parallel efficiency of a 200-task sweep at 1 and 2 workers, and the scheduling overhead per task.
    #[command(after_help = "Examples:\n  parsim bench sweep --quick\n  parsim bench sweep --reps 5")]
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
    #[command(
        after_help = "Examples:\n  parsim bench stencil --quick\n  parsim bench stencil --out bench-stencil.json"
    )]
    Stencil {
        /// Where to write the JSON report.
        #[arg(long, default_value = "bench-stencil.json")]
        out: PathBuf,
        /// Small grids (a smoke test, not a measurement).
        #[arg(long)]
        quick: bool,
    },
}

impl BenchWhat {
    /// The report file of the benchmark, if it writes one.
    fn out(&self) -> Option<&std::path::Path> {
        match self {
            BenchWhat::Checkpoint { out, .. }
            | BenchWhat::Stencil { out, .. }
            | BenchWhat::Lb { out, .. }
            | BenchWhat::Sweep { out, .. }
            | BenchWhat::Epidemic { out, .. }
            | BenchWhat::Phold { out, .. }
            | BenchWhat::Partition { out, .. }
            | BenchWhat::Comm { out, .. } => Some(out.as_path()),
        }
    }
}

const RUN_EXAMPLES: &str = "Examples:
  parsim run scenarios/epidemic.toml
  parsim run scenarios/heat2d.toml --ranks 4 --set grid.steps=500 --trace out/heat2d/trace.json
  parsim run scenarios/phold.toml --ranks 2 --set des.engine=optimistic
  parsim run scenarios/epidemic-er.toml --verify
  parsim run scenarios/epidemic.toml --dry-run --ranks 8
  mpirun -n 2 target/release/parsim run scenarios/epidemic.toml --backend mpi";

const SWEEP_EXAMPLES: &str = "Examples:
  parsim sweep scenarios/sweep-epidemic.toml
  parsim sweep scenarios/ring.toml --param ring.laps=10,20,40 --replications 3
  parsim sweep scenarios/sweep-epidemic.toml --resume --out out/sweep-epidemic
  mpirun -n 3 target/release/parsim sweep scenarios/sweep-epidemic.toml --backend mpi";

const PARTITION_EXAMPLES: &str = "Examples:
  parsim partition scenarios/data/grid-64x64.graph 8
  parsim partition scenarios/data/grid-64x64.graph 8 -ufactor=50 -contig --preset strong --json
  parsim partition scenarios/data/grid-64x64.graph 4 --method rcb --coords scenarios/data/grid-64x64.xyz
  parsim partition scenarios/data/small-world.txt 4 --method fennel --stream";

const SUPERVISE_EXAMPLES: &str = "Examples:
  parsim supervise --restarts 3 -- mpirun -n 2 target/release/parsim run scenarios/heat2d.toml --backend mpi --checkpoint-every 50
  parsim supervise -- target/release/parsim run scenarios/epidemic.toml --checkpoint auto --mtbf 10m

A launch that fails (a killed rank ends the whole MPI job) is relaunched with PARSIM_ATTEMPT set; the
relaunched run restarts from the newest valid checkpoint in its --checkpoint-dir (default OUT/checkpoints).
Exit code 2 (bad input) is not retried.";

const SCALE_EXAMPLES: &str = "Examples:
  parsim scale scenarios/heat2d.toml --ranks 1,2,4
  parsim scale scenarios/heat2d.toml --ranks 1,2,4 --weak grid.size
  parsim scale scenarios/epidemic.toml --ranks 1,2,4 --backend mpi --reps 3 --out out/scale-epi
  parsim scale --from runs/p1 runs/p2 runs/p4 runs/p8   # summaries of a cluster's batch jobs
  parsim scale scenarios/heat2d.toml --ranks 1,2,4 --inject jitter:mean=1ms   # how barriers amplify noise

Writes OUT/report.html (one self-contained page), scale.json, scale.csv and the charts as PNG;
prints the attribution table and names the dominant barrier at each p.";

const BENCH_EXAMPLES: &str = "Examples:
  parsim bench stencil --quick
  parsim bench phold --reps 5
  parsim bench partition --quick
  parsim bench epidemic --agents 1000000";

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
    parsim::logging::init(cli.verbose, cli.quiet);
    // A benchmark's report file is checked before the benchmark runs.
    if let Command::Bench { what } = &cli.command {
        if let Some(out) = what.out() {
            if let Err(e) = parsim::check_output_file(out, "--out") {
                eprintln!("parsim: error: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let result = match cli.command {
        Command::Run(a) => cmd::run::run(&a),
        Command::Partition {
            graph,
            k,
            method,
            imbalance,
            seed,
            preset,
            contig,
            out,
            coords,
            fixed,
            current,
            alpha,
            stream,
            json,
            gp,
        } => partition_cmd::run(partition_cmd::PartitionArgs {
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
            stream,
            gp,
        }),
        Command::Sweep(a) => cmd::sweep::run(&a),
        Command::Supervise { restarts, command } => cmd::supervise::run(restarts, &command),
        Command::Model { what: ModelWhat::Checkpoint { delta, mtbf, restart } } => {
            cmd::model::checkpoint(&delta, &mtbf, restart.as_deref())
        }
        Command::Model { what: ModelWhat::Amdahl { serial, p } } => cmd::model::amdahl(serial, &p),
        Command::Model { what: ModelWhat::Gustafson { serial, p } } => cmd::model::gustafson(serial, &p),
        Command::Model { what: ModelWhat::KarpFlatt { speedup, p } } => cmd::model::karp_flatt(speedup, p),
        Command::Model { what: ModelWhat::Halo { size, ranks, width, bytes } } => {
            cmd::model::halo(&size, ranks, width, bytes)
        }
        Command::Scale { scenario, ranks, weak, backend, reps, out, from, sets, network, inject } => (|| {
            let backend = parse_backend(&backend, "--backend")?;
            let ranks = scale::parse_ranks(&ranks)?;
            if scenario.is_none() && from.is_empty() {
                return Err(
                    InputError::flag("parsim scale", "give a scenario, or --from DIR … with finished runs").into()
                );
            }
            if reps == 0 {
                return Err(InputError::flag("--reps 0", "at least one repetition").into());
            }
            let out = out.unwrap_or_else(|| PathBuf::from("out/scale"));
            scale::run(scale::Args { scenario, ranks, weak, backend, reps, out, from, sets, network, jitter: inject })
        })(),
        Command::Info => {
            cmd::info::run();
            Ok(())
        }
        Command::Bench { what: BenchWhat::Checkpoint { out, quick, reps } } => {
            bench::checkpoint::run_bench(out, quick, reps.max(1))
        }
        Command::Bench { what: BenchWhat::Stencil { out, quick } } => bench::stencil::run(out, quick),
        Command::Bench {
            what: BenchWhat::Lb { out, agents, steps, reps, quick, strategies, front_size, front_steps },
        } => {
            if front_size < 64 {
                Err(InputError::flag(
                    &format!("--front-size {front_size}"),
                    "at least 64 cells (two 32² tiles per rank)",
                )
                .into())
            } else {
                let front = if quick { (128, 60) } else { (front_size, front_steps.max(1)) };
                bench::lb::run(out, agents, steps, reps.max(1), quick, strategies.as_deref(), front)
            }
        }
        Command::Bench { what: BenchWhat::Sweep { out, quick, reps } } => bench::sweep::run(out, quick, reps.max(1)),
        Command::Bench { what: BenchWhat::Epidemic { agents, ranks, backend, reps, out, quick, child } } => {
            parse_backend(&backend, "--backend").map_err(anyhow::Error::from).and_then(|b| {
                bench::epidemic::run(bench::epidemic::Args {
                    agents,
                    ranks,
                    backend: b,
                    reps: reps.max(1),
                    out,
                    quick,
                    child,
                })
            })
        }
        Command::Bench { what: BenchWhat::Phold { out, quick, reps } } => bench::phold::run(out, quick, reps.max(1)),
        Command::Bench { what: BenchWhat::Partition { dir, out, quick, reps, distributed } } => {
            bench::partition::run(dir, out, quick, reps.max(1), distributed)
        }
        Command::Bench { what: BenchWhat::Comm { ranks, backend, out, quick, fit } } => {
            parse_backend(&backend, "--backend").map_err(anyhow::Error::from).and_then(|b| {
                if ranks == 0 {
                    return Err(InputError::flag("--ranks 0", "the number of ranks must be at least 1").into());
                }
                bench::comm::run(b, ranks, out, quick, fit)
            })
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("parsim: error: {e:#}");
            let input = e.downcast_ref::<InputError>().is_some()
                || matches!(e.downcast_ref::<parsim::Error>(), Some(parsim::Error::Input(_)));
            if input {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}
