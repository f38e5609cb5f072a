//! The semantics suite on the threads backend at 1, 2, 3 and 4 ranks.

use parsim_comm::{conformance, launch, ThreadComm};

fn run_case(name: &str, case: conformance::Case<ThreadComm>) {
    for ranks in [1, 2, 3, 4] {
        let r = launch(ranks, |comm| case(&comm).map_err(|e| format!("rank {}: {e}", comm.rank_str())));
        if let Err(e) = r {
            panic!("case {name} at {ranks} ranks: {e}");
        }
    }
}

trait RankStr {
    fn rank_str(&self) -> String;
}

impl RankStr for ThreadComm {
    fn rank_str(&self) -> String {
        use parsim_comm::Comm;
        format!("{}/{}", self.rank(), self.size())
    }
}

macro_rules! suite {
    ($($name:ident),* $(,)?) => {$(
        #[test]
        fn $name() {
            let cases = conformance::cases::<ThreadComm>();
            let (_, case) = cases.iter().find(|(n, _)| *n == stringify!($name)).expect("case exists");
            run_case(stringify!($name), *case);
        }
    )*};
}

suite!(
    rank_and_size,
    ordering_per_source_and_tag,
    wildcards,
    zero_length_messages,
    probe_unknown_size,
    nonblocking_requests,
    large_message_100mb,
    element_types,
    serde_values,
    broadcast_gather,
    reductions,
    exact_reduction,
    all_to_all_v_with_empty_parts,
    sub_communicators,
    aggregation,
    bad_arguments,
);

#[test]
fn every_case_is_listed_above() {
    // Guards against a case added to the suite but not to this file.
    assert_eq!(conformance::cases::<ThreadComm>().len(), 16);
}

#[test]
fn whole_suite_at_eight_ranks() {
    launch(8, |comm| {
        for (name, case) in conformance::cases::<ThreadComm>() {
            if name == "large_message_100mb" {
                continue; // covered at 1-4 ranks; 8 copies would only cost memory
            }
            case(&comm).map_err(|e| format!("{name}: {e}"))?;
        }
        Ok::<_, String>(())
    })
    .expect("suite at 8 ranks");
}
