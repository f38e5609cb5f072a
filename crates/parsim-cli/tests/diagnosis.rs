//! `parsim scale` diagnoses an injected imbalance from finished runs.
//! Timing decides the diagnosis, so this is a test binary of its own: in
//! the `it` binary, tests running beside it on a 2-core machine would add
//! waiting of their own to the runs.

#[path = "it/support.rs"]
#[allow(dead_code)]
mod support;

use support::{parsim, run_summary, tmp};

#[test]
fn an_injected_imbalance_is_diagnosed_as_imbalance() {
    // The reaction front without balancing and without spreading (rate 0):
    // the costly reaction stays in the ignited strip on rank 0's side, so
    // rank 0 does nearly all the work at p = 2.
    let dir = tmp("diagnosis");
    let front = [
        "scenarios/front.toml",
        "--set",
        "front.size=[128,128]",
        "--set",
        "front.steps=100",
        "--set",
        "front.substeps=256",
        "--set",
        "front.rate=0.0",
        "--set",
        "front.png=false",
        "--set",
        "lb.strategy=\"off\"",
    ];
    for p in ["1", "2"] {
        let mut a: Vec<&str> = front.to_vec();
        a.extend_from_slice(&["--ranks", p]);
        run_summary(&a, &dir.join(format!("p{p}")));
    }
    let (p1, p2, out) = (dir.join("p1"), dir.join("p2"), dir.join("report"));
    let o = parsim(&["scale", "--from", p1.to_str().unwrap(), p2.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(text.contains("of the loss is load imbalance"), "{text}");
}
