//! The built-in models give, through the front door (`parsim::Experiment`),
//! exactly the digests they gave before it existed: recorded with the
//! binary of commit d7c1597 (the last before the front door) on small
//! versions of every shipped scenario.

use crate::support::{run_summary, tmp};

#[test]
fn builtin_digests_are_those_recorded_before_the_front_door() {
    let cases: &[(&str, &[&str], &str)] = &[
        ("ring", &["scenarios/ring.toml"], "a013c6873e6adbe509c45da6f9c9000c"),
        (
            "phold",
            &["scenarios/phold.toml", "--set", "phold.lps=128", "--set", "phold.end=20"],
            "b2a2c2948a3d72a3c59f91619f2f869d",
        ),
        (
            "phold-tw",
            &[
                "scenarios/phold.toml",
                "--set",
                "phold.lps=128",
                "--set",
                "phold.end=20",
                "--set",
                "des.engine=optimistic",
                "--ranks",
                "2",
            ],
            "b2a2c2948a3d72a3c59f91619f2f869d",
        ),
        (
            "queues",
            &[
                "scenarios/queues.toml",
                "--set",
                "queues.width=6",
                "--set",
                "queues.height=6",
                "--set",
                "queues.end=300",
            ],
            // Re-recorded on 2026-12-05: a departure now carries its job's
            // arrival time (for reverse computation), and the digest covers
            // event payloads; times and destinations are drawn as before.
            "6c9695ab077ea709dd9d80ce097179ca",
        ),
        (
            "heat2d",
            &[
                "scenarios/heat2d.toml",
                "--set",
                "grid.size=[96,80]",
                "--set",
                "grid.steps=40",
                "--set",
                "grid.png=false",
                "--set",
                "grid.output_every=0",
            ],
            "dcc83f46dabb2711247b9432a947b83e",
        ),
        (
            "life",
            &[
                "scenarios/life.toml",
                "--set",
                "grid.size=[128,128]",
                "--set",
                "grid.steps=60",
                "--set",
                "grid.png=false",
            ],
            "8252c3d4d2b2f06a8d5899f63df0b1b5",
        ),
        (
            "heat3d",
            &[
                "scenarios/heat3d.toml",
                "--set",
                "grid.size=[24,20,16]",
                "--set",
                "grid.steps=10",
                "--set",
                "grid.png=false",
            ],
            "334e7a0f98d027b080502f4e126665c6",
        ),
        (
            "epidemic",
            &["scenarios/epidemic.toml", "--set", "abm.agents=20000", "--set", "abm.days=100"],
            "a817b11757920a1310cc385c8e0df729",
        ),
        (
            "epidemic-er",
            &["scenarios/epidemic-er.toml", "--set", "abm.agents=5000", "--set", "abm.days=60"],
            "e8f1437fee7bb36396f103a10d774961",
        ),
    ];
    for (name, args, want) in cases {
        let s = run_summary(args, &tmp(&format!("pinned-{name}")));
        assert_eq!(s["digest"], *want, "{name}: {args:?}");
    }
}
