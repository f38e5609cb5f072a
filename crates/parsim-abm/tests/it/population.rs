//! Reading and generating populations, and the errors bad input gets.

use std::io::Write;

use parsim_abm::{AbmError, Closure, Population, SeirConfig, Vaccination, Variant};

use crate::support::contact;

fn temp(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("parsim-abm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::File::create(&p).unwrap().write_all(text.as_bytes()).unwrap();
    p
}

#[test]
fn the_reference_contact_network() {
    let p = Population::read(&contact("er_N100k_c10_s42.u32"), None, false).unwrap();
    assert_eq!(p.agents(), 100_000);
    assert_eq!(p.graph.edges(), 499_967);
    assert_eq!((p.dropped.self_loops, p.dropped.duplicates), (0, 0));
}

#[test]
fn text_and_binary_edge_lists_agree() {
    let text = "# a comment\n0 1\n1 2\n\n% another\n2 0\n3 3\n1 0\n";
    let t = Population::read(&temp("g.txt", text), Some(5), false).unwrap();
    let mut bin = Vec::new();
    for (u, v) in [(0u32, 1u32), (1, 2), (2, 0), (3, 3), (1, 0)] {
        bin.extend_from_slice(&u.to_le_bytes());
        bin.extend_from_slice(&v.to_le_bytes());
    }
    let dir = temp("x", "");
    let bp = dir.with_file_name("g.u32");
    std::fs::write(&bp, &bin).unwrap();
    let b = Population::read(&bp, Some(5), false).unwrap();
    assert_eq!(t.graph, b.graph);
    assert_eq!(t.agents(), 5);
    assert_eq!(t.graph.edges(), 3);
    assert_eq!((t.dropped.self_loops, t.dropped.duplicates), (1, 1));
}

#[test]
fn malformed_files_name_the_file_and_line() {
    let err = |text: &str, n: Option<usize>, strict: bool| {
        let p = temp("bad.txt", text);
        match Population::read(&p, n, strict) {
            Err(e @ AbmError::Parse { .. }) => e.to_string(),
            other => panic!("expected a parse error, got {other:?}"),
        }
    };
    let e = err("0 1\n1 x\n", None, false);
    assert!(e.contains("bad.txt:2") && e.contains("a non-numeric token of 1 characters"), "{e}");
    let e = err("0 1\n1 2 3\n", None, false);
    assert!(e.contains("bad.txt:2") && e.contains("two vertex ids"), "{e}");
    let e = err("0 1\n# c\n1 7\n", Some(5), false);
    assert!(e.contains("bad.txt:3") && e.contains("beyond the population"), "{e}");
    let e = err("0 1\n2 2\n", None, true);
    assert!(e.contains("bad.txt:2") && e.contains("self-loop"), "{e}");
    let odd = temp("odd.u32", "1234567");
    assert!(matches!(Population::read(&odd, None, false), Err(AbmError::Parse { .. })));
    let missing = std::path::Path::new("/nonexistent/contacts.txt");
    assert!(matches!(Population::read(missing, None, false), Err(AbmError::Io { .. })));
}

#[test]
fn bad_parameters_name_the_parameter() {
    let key = |cfg: SeirConfig| match cfg.check(1) {
        Err(AbmError::Config { key, .. }) => key,
        other => panic!("expected a config error, got {other:?}"),
    };
    assert_eq!(key(SeirConfig { beta: 1.5, ..SeirConfig::default() }), "beta");
    assert_eq!(key(SeirConfig { beta: -0.1, ..SeirConfig::default() }), "beta");
    assert_eq!(
        key(SeirConfig { variant: Variant::Fixed { latent: 0, infectious: 5 }, ..SeirConfig::default() }),
        "latent_days"
    );
    let late = Closure { layer: 0, from: 170, to: 200 };
    assert_eq!(key(SeirConfig { closures: vec![late], ..SeirConfig::default() }), "close");
    let v = Vaccination { from: 10, to: 181, rate: 0.1 };
    assert_eq!(key(SeirConfig { vaccination: Some(v), ..SeirConfig::default() }), "vaccinate");
}

#[test]
fn erdos_renyi_has_poisson_degrees() {
    let p = Population::erdos_renyi(200_000, 10.0, 5);
    let c = p.graph_degree_counts();
    let n = p.agents() as f64;
    // P(k = 10) for Poisson(10) is 0.12511.
    assert!((c[10] as f64 / n - 0.12511).abs() < 0.003, "{}", c[10] as f64 / n);
    assert!(p.dropped.self_loops > 0 && p.dropped.duplicates > 0);
}
