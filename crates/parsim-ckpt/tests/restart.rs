//! Checkpoint, fail, restart: on the same and other rank counts, after
//! corrupted and missing files, after a kill in the middle of a write.

use std::path::{Path, PathBuf};

use parsim_ckpt::{Checkpointer, CkptError, Identity, Injection, Interval, Options};
use parsim_comm::Comm;
use serde_json::{json, Value};

const N: u64 = 40;
const STEPS: u64 = 30;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("parsim-ckpt-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn id() -> Identity {
    Identity::new("toy", "step", "abc123", 9)
}

/// The items of rank `r` of `p`: a block of global ids.
fn block(r: usize, p: usize) -> std::ops::Range<u64> {
    (r as u64 * N / p as u64)..((r as u64 + 1) * N / p as u64)
}

/// A toy model: N values keyed by global id, each updated every step, and
/// a digest over all of them. Checkpointed in canonical form (id, value).
fn run(p: usize, opts: &Options) -> Result<u64, parsim_comm::CommError> {
    let out = parsim_comm::launch(p, |c| {
        let mut ck = Checkpointer::new(&c, opts.clone(), id())?;
        let mine = block(c.rank(), c.size());
        let mut step = 0;
        let mut vals: Vec<(u64, u64)> = mine.clone().map(|g| (g, g)).collect();
        if let Some(mut r) = ck.take_restart() {
            step = r.manifest.boundary;
            vals.clear();
            for old in 0..r.manifest.ranks {
                let (lo, hi) = (
                    r.manifest.pieces[old].meta["lo"].as_u64().unwrap(),
                    r.manifest.pieces[old].meta["hi"].as_u64().unwrap(),
                );
                if hi <= mine.start || lo >= mine.end {
                    continue; // the meta says what a piece holds: read only what overlaps
                }
                let (_s, piece): (u64, Vec<(u64, u64)>) = r.read(old)?;
                vals.extend(piece.into_iter().filter(|(g, _)| mine.contains(g)));
            }
            vals.sort_unstable();
            assert_eq!(vals.len() as u64, mine.end - mine.start);
        }
        while step < STEPS {
            step += 1;
            for (g, v) in &mut vals {
                *v = v.wrapping_mul(6364136223846793005).wrapping_add(*g + step);
            }
            let act = ck.boundary(step)?;
            if act.checkpoint {
                let meta = json!({"lo": mine.start, "hi": mine.end});
                ck.save(step, json!(step), meta, Value::Null, &(step, vals.clone()))?;
            }
        }
        ck.finish();
        let local: u64 = vals.iter().fold(0u64, |a, (g, v)| a.wrapping_add(v.rotate_left(*g as u32 % 64)));
        Ok::<_, CkptError>(c.all_reduce(&[local], parsim_comm::ReduceOp::Sum)?[0])
    })?;
    Ok(out[0])
}

fn opts(dir: &Path, every: u64) -> Options {
    let mut o = Options::new(dir, Some(Interval::Every(every)));
    // Steps take microseconds: written in the background, a checkpoint could
    // still be pending when the rank dies (and die with it), which makes the
    // restart point a matter of timing. `background_writes_are_flushed` and
    // scripts/kill-loop.sh test the background writer.
    o.asynchronous = false;
    o
}

fn restart_from(dir: &Path) -> Options {
    let mut o = opts(dir, 7);
    o.restart = Some(dir.to_path_buf());
    o
}

fn killed(dir: &Path, p: usize, spec: &str) -> String {
    let mut o = opts(dir, 7);
    o.inject = vec![Injection::parse(spec).unwrap()];
    run(p, &o).expect_err("the injected kill ends the run").to_string()
}

fn expected() -> u64 {
    run(1, &Options::new(tmp("none"), None)).unwrap()
}

#[test]
fn restarts_on_the_same_and_other_rank_counts() {
    let want = expected();
    for (before, after) in [(4, 2), (2, 3), (1, 4), (3, 3)] {
        let dir = tmp(&format!("p{before}{after}"));
        let msg = killed(&dir, before, "kill:rank=0,step=23");
        assert!(msg.contains("injected kill at step 23"), "{msg}");
        let mut o = restart_from(&dir);
        o.attempt = 1;
        assert_eq!(run(after, &o).unwrap(), want, "{before} → {after} ranks");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn partner_copy_then_older_checkpoint_then_nothing() {
    let want = expected();
    let dir = tmp("fallback");
    assert_eq!(run(3, &opts(&dir, 7)).unwrap(), want);
    // Checkpoints at 7, 14, 21, 28: corrupt rank 1's newest own file and
    // delete rank 2's: the partner copies serve.
    let own = |r: usize, s: u64| dir.join(format!("rank-{r:04}")).join(format!("c{s:06}.ckpt"));
    let mut bytes = std::fs::read(own(1, 4)).unwrap();
    let n = bytes.len();
    bytes[n - 2] ^= 1;
    std::fs::write(own(1, 4), bytes).unwrap();
    std::fs::remove_file(own(2, 4)).unwrap();
    parsim_comm::launch(3, |c| {
        let r = parsim_ckpt::find(&c, &dir, &id())?.unwrap();
        assert_eq!(r.manifest.boundary, 28);
        assert_eq!(r.sources[1], parsim_ckpt::Level::Partner);
        assert_eq!(r.sources[2], parsim_ckpt::Level::Partner);
        let notes = r.notes.join("\n");
        assert!(notes.contains("checksum mismatch") && notes.contains("not found"), "{notes}");
        Ok::<_, CkptError>(())
    })
    .unwrap();
    assert_eq!(run(2, &restart_from(&dir)).unwrap(), want);

    // Every copy of the newest (4) broken: checkpoint 3 (step 21) is used.
    let dir = tmp("older");
    assert_eq!(run(2, &opts(&dir, 7)).unwrap(), want);
    std::fs::remove_file(dir.join("rank-0000/c000004.ckpt")).unwrap();
    std::fs::remove_file(dir.join("rank-0001/c000004.partner-0000.ckpt")).unwrap();
    let shared = dir.join("shared/c000004/rank-0000.ckpt");
    assert!(!shared.exists(), "only every 4th checkpoint is shared");
    parsim_comm::launch(2, |c| {
        let r = parsim_ckpt::find(&c, &dir, &id())?.unwrap();
        assert_eq!(r.manifest.boundary, 21);
        assert!(r.notes.iter().any(|n| n.contains("skipped checkpoint 4")), "{:?}", r.notes);
        Ok::<_, CkptError>(())
    })
    .unwrap();
    assert_eq!(run(2, &restart_from(&dir)).unwrap(), want);

    // Another scenario's checkpoints: refused, with the reason.
    let other =
        parsim_comm::launch(1, |c| parsim_ckpt::find(&c, &dir, &Identity::new("toy", "step", "ffff", 9)).map(|_| ()));
    let msg = other.unwrap_err().to_string();
    assert!(msg.contains("no usable checkpoint") && msg.contains("another scenario"), "{msg}");
    let empty = tmp("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let msg = run(1, &restart_from(&empty)).unwrap_err().to_string();
    assert!(msg.contains("holds no checkpoint manifest"), "{msg}");
    for d in [dir, empty, tmp("fallback")] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn a_kill_during_a_write_leaves_the_previous_checkpoint() {
    let want = expected();
    let dir = tmp("midwrite");
    // Killed while writing the checkpoint of step 14: half a temporary file.
    // Without partner copies, rank 1 has no whole copy of 14 (or of 21,
    // taken before the rank noticed): the restart goes back to 7.
    let mut o = opts(&dir, 7);
    o.partner = false;
    o.inject = vec![Injection::parse("kill:rank=1,step=10,when=write").unwrap()];
    let msg = run(2, &o).unwrap_err().to_string();
    assert!(msg.contains("during a checkpoint write"), "{msg}");
    let tmps: Vec<_> = std::fs::read_dir(dir.join("rank-0001"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
        .collect();
    assert_eq!(tmps.len(), 1, "half a file was left behind");
    parsim_comm::launch(2, |c| {
        let r = parsim_ckpt::find(&c, &dir, &id())?.unwrap();
        assert_eq!(r.manifest.boundary, 7, "{:?}", r.notes);
        Ok::<_, CkptError>(())
    })
    .unwrap();
    assert_eq!(run(2, &restart_from(&dir)).unwrap(), want);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn injected_corruption_is_survived_and_retention_keeps_the_newest() {
    let want = expected();
    let dir = tmp("corrupt");
    let mut o = opts(&dir, 3);
    o.inject = vec![Injection::parse("corrupt:level=1,rank=1").unwrap()];
    assert_eq!(run(2, &o).unwrap(), want);
    // 10 checkpoints (3, 6, … 30): two of each level remain.
    let own: Vec<_> = std::fs::read_dir(dir.join("rank-0001")).unwrap().filter_map(|e| e.ok()).collect();
    assert_eq!(own.len(), 4, "2 own + 2 partner copies: {own:?}");
    assert_eq!(std::fs::read_dir(dir.join("manifests")).unwrap().count(), 8);
    parsim_comm::launch(2, |c| {
        let r = parsim_ckpt::find(&c, &dir, &id())?.unwrap();
        assert_eq!((r.manifest.seq, r.manifest.boundary), (10, 30));
        assert_eq!(r.sources[1], parsim_ckpt::Level::Partner, "{:?}", r.notes);
        Ok::<_, CkptError>(())
    })
    .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn time_based_intervals_agree_on_every_rank() {
    let want = expected();
    for interval in [Interval::Seconds(1e-9), Interval::Auto { mtbf: 1e-6 }] {
        let dir = tmp("auto");
        let o = Options::new(&dir, Some(interval));
        assert_eq!(run(3, &o).unwrap(), want);
        let n = std::fs::read_dir(dir.join("manifests")).unwrap().count();
        assert!(n >= 1, "{interval:?}: no checkpoint taken");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn background_writes_are_flushed() {
    let want = expected();
    let dir = tmp("background");
    let o = Options::new(&dir, Some(Interval::Every(7)));
    assert!(o.asynchronous);
    assert_eq!(run(3, &o).unwrap(), want);
    parsim_comm::launch(2, |c| {
        let r = parsim_ckpt::find(&c, &dir, &id())?.unwrap();
        assert_eq!(r.manifest.boundary, 28, "every checkpoint is on disk once the run ends");
        assert!(r.sources.iter().all(|l| *l == parsim_ckpt::Level::Own));
        Ok::<_, CkptError>(())
    })
    .unwrap();
    assert_eq!(run(2, &restart_from(&dir)).unwrap(), want);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_injections_are_refused() {
    for (s, want) in [
        ("kill:rank=1", "boundary"),
        ("kill:step=3", "rank= is missing"),
        ("explode:rank=1,step=2", "unknown kind"),
        ("corrupt:level=4,rank=0", "levels are 1, 2 and 3"),
        ("kill:rank=0,step=x", "not a non-negative integer"),
    ] {
        let e = Injection::parse(s).unwrap_err().to_string();
        assert!(e.contains(want), "{s}: {e}");
    }
    let i = Injection::parse("kill:rank=0,day=3").unwrap();
    assert!(i.check("step", 2).unwrap_err().to_string().contains("counts steps, not days"));
    let i = Injection::parse("bitflip:rank=0,gvt=3").unwrap();
    assert!(i.check("gvt", 2).unwrap_err().to_string().contains("no silent-error check"));
    assert!(Injection::parse("bitflip:rank=0,window=3").unwrap().check("window", 2).is_ok());
    let i = Injection::parse("kill:rank=5,step=3").unwrap();
    assert!(i.check("step", 2).unwrap_err().to_string().contains("does not exist"));
}
