//! Replays `fuzz/corpus/TARGET/*` through every target, each file as it is
//! and with 96 deterministic mutations (byte flips, cuts, duplicated lines,
//! hostile numbers and tokens spliced in), so that the contracts are
//! checked on every toolchain; `cargo fuzz` (nightly) explores further.

use std::path::PathBuf;

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus").join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no corpus for {target} in {}", dir.display());
    files.into_iter().map(|p| (p.clone(), std::fs::read(&p).unwrap())).collect()
}

/// A deterministic generator: one of parsim's own keyed streams.
struct Rng(parsim_core::Stream);
impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(parsim_core::StreamKey::new(seed).purpose("parsim.hardening").stream())
    }
    fn next(&mut self) -> u64 {
        self.0.below(u64::MAX)
    }
    fn below(&mut self, n: usize) -> usize {
        self.0.below(n.max(1) as u64) as usize
    }
}

const TOKENS: &[&[u8]] = &[
    b"0",
    b"-1",
    b"1",
    b"2",
    b"3",
    b"4294967295",
    b"4294967294",
    b"18446744073709551615",
    b"9223372036854775807",
    b"9007199254740993",
    b"1e308",
    b"-0",
    b"nan",
    b"inf",
    b"1.5",
    b" ",
    b"\n",
    b"\r\n",
    b"\t",
    b"%",
    b"#",
    b"\0",
    b"\xff\xfe",
    b"=",
    b"\"",
    b"[",
    b"]",
    b"{",
    b"}",
    b",",
    b"true",
    b"\"yes\"",
    b"[sweep]",
    b"[run]",
    b"abm.beta",
    b"{\"Ok\":{}}",
    b"\"point\":",
    b"1e12",
    b"00000000",
];

fn mutate(data: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut d = data.to_vec();
    for _ in 0..1 + rng.below(3) {
        let at = rng.below(d.len() + 1);
        match rng.below(7) {
            0 if !d.is_empty() => {
                let i = rng.below(d.len());
                d[i] ^= 1 << rng.below(8);
            }
            1 => d.truncate(at),
            2 if !d.is_empty() => {
                let end = (at + 1 + rng.below(16)).min(d.len());
                d.drain(at.min(end)..end);
            }
            3 => {
                let t = TOKENS[rng.below(TOKENS.len())];
                d.splice(at..at, t.iter().copied());
            }
            4 => {
                // Duplicate a line.
                let lines: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
                let l = lines[rng.below(lines.len())].to_vec();
                d.splice(at..at, l.into_iter().chain(std::iter::once(b'\n')));
            }
            5 => {
                // Replace a run of digits with a hostile number.
                if let Some(s) = (at..d.len()).find(|&i| d[i].is_ascii_digit()) {
                    let e = (s..d.len()).find(|&i| !d[i].is_ascii_digit()).unwrap_or(d.len());
                    let t = TOKENS[rng.below(14)];
                    d.splice(s..e, t.iter().copied());
                }
            }
            _ => {
                let b = rng.next() as u8;
                d.insert(at, b);
            }
        }
    }
    d
}

fn replay(target: &str) {
    for (path, data) in corpus(target) {
        let run = |d: &[u8], what: &str| {
            let r = std::panic::catch_unwind(|| parsim_fuzz::run(target, d));
            if let Err(p) = r {
                let msg = p.downcast_ref::<String>().cloned().or(p.downcast_ref::<&str>().map(|s| s.to_string()));
                panic!(
                    "{target}: {what} of {} broke the contract: {}\ninput: {:?}",
                    path.display(),
                    msg.unwrap_or_default(),
                    String::from_utf8_lossy(d)
                );
            }
        };
        run(&data, "the file");
        let mut rng = Rng::new(data.iter().fold(0xC0FFEE, |h, &b| h.wrapping_mul(31).wrapping_add(u64::from(b))));
        for i in 0..96 {
            let m = mutate(&data, &mut rng);
            run(&m, &format!("mutation {i}"));
        }
    }
}

macro_rules! targets {
    ($($name:ident),*) => {
        $(#[test] fn $name() { replay(stringify!($name)); })*
        #[test]
        fn every_target_has_a_test_and_a_fuzz_binary() {
            let tested = [$(stringify!($name)),*];
            let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/fuzz_targets");
            for (name, _) in parsim_fuzz::TARGETS {
                assert!(tested.contains(name), "{name} has no replay test");
                assert!(root.join(format!("{name}.rs")).exists(), "{name} has no fuzz_targets/{name}.rs");
            }
        }
    };
}

targets!(
    metis,
    metis_stream,
    snap,
    u32_pairs,
    mtx,
    coords,
    partition_file,
    fixed_file,
    population,
    scenario,
    sweep,
    tasks_log,
    serve_request,
    manifest,
    checkpoint_data
);

/// Writes the corpus files that need parsim itself to produce (a checksummed
/// task log, a manifest, a checkpoint piece). Run once by hand:
/// `cargo test -p parsim-fuzz --test replay -- --ignored write_generated_corpora`.
#[test]
#[ignore]
fn write_generated_corpora() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
    // A task log of the sweep whose fingerprint the target uses.
    let log = root.join("tasks_log/log.jsonl");
    let (mut store, _) = parsim_sweep::Store::open(&log, "fuzz-sweep", false, false).unwrap();
    for (point, replication, ok) in [(0, 0, true), (0, 1, true), (1, 0, false)] {
        let result = if ok {
            Ok(parsim_sweep::Metrics::from([
                ("attack_rate".to_string(), 0.25 + point as f64),
                ("peak".to_string(), 3.0),
            ]))
        } else {
            Err("injected fault".to_string())
        };
        store.append(&parsim_sweep::Record { point, replication, attempts: 1 + point as u32, result }).unwrap();
    }
    // A checkpoint piece of checkpoint 7, rank 1, and its manifest.
    let raw: Vec<u8> = b"parsim checkpoint piece".repeat(40);
    let file = parsim_ckpt::format::encode(7, 1, &raw);
    std::fs::write(root.join("checkpoint_data/c7-r1.bin"), file).unwrap();
    let piece = |rank: usize| serde_json::json!({"rank": rank, "bytes": raw.len(), "xxh3": parsim_ckpt::format::hex(parsim_ckpt::format::checksum(&raw)), "meta": {"lo": 0}});
    let m = serde_json::json!({
        "format": parsim_ckpt::format::FORMAT_VERSION, "engine": "grid", "unit": "step", "fingerprint": "abc",
        "seed": 1, "seq": 7, "boundary": 50, "position": 50, "ranks": 2, "partner": true, "shared": false,
        "partition": null, "pieces": [piece(0), piece(1)],
    });
    std::fs::write(root.join("manifest/c000007.json"), serde_json::to_string_pretty(&m).unwrap()).unwrap();
}
