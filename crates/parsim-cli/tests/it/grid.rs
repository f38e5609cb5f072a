//! The grid scenarios through the binary: decomposition, files, bad input,
//! and equal digests on threads and under MPI.

use crate::support::{parsim, run_summary, scenario, tmp};

const SMALL: [&str; 6] = ["--set", "grid.size=[96, 80]", "--set", "grid.steps=12", "--set", "grid.output_every=6"];

#[test]
fn heat2d_writes_summary_vtk_and_png_and_prints_the_decomposition() {
    let dir = tmp("grid-heat2d");
    let mut a = vec!["scenarios/heat2d.toml", "--ranks", "3"];
    a.extend_from_slice(&SMALL);
    let s = run_summary(&a, &dir);
    assert_eq!(s["model"], "grid");
    assert_eq!(s["metrics"]["process_grid"], serde_json::json!([3, 1]));
    for f in ["field_000006.pvti", "field_000012.pvti", "field_000012_r0.vti", "field_000012_r2.vti", "field.png"] {
        assert!(dir.join(f).exists(), "{f} missing");
    }
    let pvti = std::fs::read_to_string(dir.join("field_000012.pvti")).expect("pvti");
    assert_eq!(pvti.matches("<Piece ").count(), 3);
    // Each piece: the whole grid's extent, its own piece extent, and its
    // cells written straight from the field (8 bytes each after the header).
    let whole = "WholeExtent=\"0 80 0 96 0 1\"";
    assert!(pvti.contains(whole), "{pvti}");
    let mut cells = 0u64;
    for r in 0..3 {
        let vti = std::fs::read(dir.join(format!("field_000012_r{r}.vti"))).expect("vti");
        let text = String::from_utf8_lossy(&vti);
        assert!(text.contains(whole), "piece {r}: {}", &text[..400.min(text.len())]);
        assert!(!text.contains("Piece Extent=\"0 80 0 96 0 1\""), "piece {r} is not the whole grid");
        let at = vti.windows(2).position(|w| w == b" _").expect("appended data") + 2;
        let len = u64::from_le_bytes(vti[at..at + 8].try_into().unwrap());
        assert_eq!(vti.len() as u64, at as u64 + 8 + len + b"\n  </AppendedData>\n</VTKFile>\n".len() as u64);
        cells += len / 8;
    }
    assert_eq!(cells, 96 * 80);
    // The step rate counts the steps only; the setup is reported beside it.
    let m = &s["metrics"];
    let (steps_s, setup_s) = (m["steps_s"].as_f64().unwrap(), m["setup_s"].as_f64().unwrap());
    // (Each is the largest over the ranks, so they are not summed.)
    let run_s = m["run_s"].as_f64().unwrap() + 0.05;
    let reduce_s = m["reduce_s"].as_f64().unwrap();
    assert!(steps_s > 0.0 && setup_s > 0.0 && steps_s < run_s && setup_s < run_s && reduce_s < run_s, "{m}");
    let rate = m["cell_updates_per_s"].as_f64().unwrap();
    assert!((rate * steps_s / (96.0 * 80.0 * 12.0) - 1.0).abs() < 1e-9, "{rate} {steps_s}");
    let png = std::fs::read(dir.join("field.png")).expect("png");
    assert_eq!(&png[1..4], b"PNG");
    assert!(s["phases_s"]["io"][0].as_f64().unwrap_or(0.0) > 0.0, "output time is charged to io");
    // Memory as a measured quantity: two f64 arrays of owned cells plus a
    // one-cell halo: a little over 16 bytes per cell, a third per rank.
    let per_cell = s["metrics"]["bytes_per_cell"].as_f64().unwrap();
    assert!((16.0..18.0).contains(&per_cell), "{per_cell} bytes per cell");
    let max = s["metrics"]["max_rank_state_bytes"].as_u64().unwrap() as f64;
    assert!(max < 0.4 * 16.0 * 96.0 * 80.0 * 1.1, "{max} bytes on the largest of 3 ranks");
    let o = parsim(&["run", "scenarios/heat2d.toml", "--ranks", "4", "--dry-run"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success() && text.contains("process grid [2, 2]") && text.contains("surf/vol"), "{text}");
}

#[test]
fn grid_digests_agree_across_rank_counts_and_settings() {
    let dir = tmp("grid-digests");
    for (file, extra) in [
        (
            "scenarios/heat2d.toml",
            vec![
                "--set",
                "grid.size=[70, 90]",
                "--set",
                "grid.stencil=\"heat9\"",
                "--set",
                "grid.boundary=\"neumann\"",
            ],
        ),
        (
            "scenarios/heat3d.toml",
            vec![
                "--set",
                "grid.size=[20, 16, 18]",
                "--set",
                "grid.stencil=\"heat27\"",
                "--set",
                "grid.precision=\"f32\"",
            ],
        ),
        (
            "scenarios/life.toml",
            vec!["--set", "grid.size=[64, 64]", "--set", "grid.steps=40", "--set", "grid.init=\"random\""],
        ),
    ] {
        let mut digests = Vec::new();
        for (i, ranks) in ["1", "2", "4"].iter().enumerate() {
            let mut a = vec![file, "--ranks", ranks, "--set", "grid.steps=10", "--set", "grid.png=false"];
            a.extend_from_slice(&extra);
            if i == 2 {
                a.extend_from_slice(&[
                    "--set",
                    "grid.deep_halo=2",
                    "--set",
                    "grid.threads_per_rank=2",
                    "--set",
                    "grid.overlap=false",
                ]);
            }
            let s = run_summary(&a, &dir.join(format!("{i}")));
            digests.push(s["digest"].as_str().expect("digest").to_string());
        }
        assert!(digests.iter().all(|d| *d == digests[0]), "{file}: {digests:?}");
    }
}

#[test]
fn bad_grids_exit_2_naming_the_key() {
    let d = tmp("grid-bad");
    let base = "[run]\nmodel = \"grid\"\nranks = 4\n\n[grid]\nsize = [64, 64]\nsteps = 2\n";
    let cases = [
        (base.replace("[64, 64]", "[64, 0]"), "size"),
        (base.replace("[64, 64]", "[3, 3]"), "cannot cut"),
        (format!("{base}stencil = \"heat7\"\n"), "3-D stencil"),
        (format!("{base}boundary = \"sticky\"\n"), "boundary"),
        (format!("{base}deep_halo = 0\n"), "deep_halo"),
        (format!("{base}alpha = 0.9\n"), "alpha"),
        (format!("{base}decomposition = [3, 3]\n"), "9 ranks"),
        (format!("{base}colour = \"red\"\n"), "unknown key"),
    ];
    for (i, (text, want)) in cases.iter().enumerate() {
        let p = scenario(&d, "g.toml", text);
        let o = parsim(&["run", p.to_str().expect("path")]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "case {i}: {err}");
        assert!(err.contains(want) && err.contains("g.toml"), "case {i}: expected {want:?} in {err}");
    }
}

/// Under MPI: the same digests as one thread rank, at 1, 2 and 4 processes.
#[cfg(feature = "mpi")]
#[test]
fn grid_digests_under_mpirun_equal_threads() {
    let dir = tmp("grid-mpi");
    let common = ["--set", "grid.steps=10", "--set", "grid.png=false", "--set", "grid.output_every=0"];
    for (file, extra) in [
        ("scenarios/heat2d.toml", vec!["--set", "grid.size=[90, 70]", "--set", "grid.deep_halo=2"]),
        ("scenarios/heat3d.toml", vec!["--set", "grid.size=[20, 16, 18]", "--set", "grid.boundary=\"dirichlet\""]),
        ("scenarios/life.toml", vec!["--set", "grid.size=[64, 64]", "--set", "grid.init=\"random\""]),
    ] {
        let mut a = vec![file, "--ranks", "1"];
        a.extend_from_slice(&common);
        a.extend_from_slice(&extra);
        let want = run_summary(&a, &dir.join("t"))["digest"].as_str().expect("digest").to_string();
        for n in ["1", "2", "4"] {
            let mut args = vec!["run", file];
            args.extend_from_slice(&common);
            args.extend_from_slice(&extra);
            let s = crate::support::mpirun_summary(n, &args, &dir.join(format!("m{n}")));
            assert_eq!(s["digest"].as_str(), Some(want.as_str()), "{file} under mpirun -n {n}");
        }
    }
}

/// The Dirichlet eigenmode decays by one factor per step: with zero
/// boundaries, heat5 multiplies sin(π(i+1)/(n+1))·sin(π(j+1)/(m+1)) by
/// 1 − 4α[sin²(π/2(n+1)) + sin²(π/2(m+1))] every step, at any rank count.
#[test]
fn the_dirichlet_eigenmode_decays_at_the_discrete_rate() {
    let dir = tmp("grid-eigen");
    let (n, m, alpha, steps) = (48.0f64, 40.0f64, 0.2f64, 60u32);
    let rate = 1.0
        - 4.0
            * alpha
            * ((std::f64::consts::PI / (2.0 * (n + 1.0))).sin().powi(2)
                + (std::f64::consts::PI / (2.0 * (m + 1.0))).sin().powi(2));
    for ranks in ["1", "3"] {
        let s = run_summary(
            &[
                "scenarios/heat2d.toml",
                "--ranks",
                ranks,
                "--set",
                "grid.size=[40, 48]",
                "--set",
                &format!("grid.steps={steps}"),
                "--set",
                &format!("grid.alpha={alpha}"),
                "--set",
                "grid.boundary=\"dirichlet\"",
                "--set",
                "grid.init=\"eigenmode\"",
                "--set",
                "grid.reduce_every=20",
                "--set",
                "grid.output_every=0",
            ],
            &dir.join(format!("o{ranks}")),
        );
        let r = s["metrics"]["reductions"].as_array().unwrap();
        let (t20, t60) = (r[0]["total_heat"].as_f64().unwrap(), r[2]["total_heat"].as_f64().unwrap());
        let got = (t60 / t20).powf(1.0 / 40.0);
        assert!((got - rate).abs() < 1e-12, "ranks {ranks}: {got} per step, want {rate}");
    }
    // Life has no alpha: a value the heat limit would refuse is accepted and said to be ignored.
    let o = parsim(&[
        "run",
        "scenarios/life.toml",
        "--set",
        "grid.size=[32, 32]",
        "--set",
        "grid.steps=2",
        "--set",
        "grid.alpha=0.2",
        "--out",
        dir.join("life").to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && err.contains("alpha is ignored"), "{err}");
}
