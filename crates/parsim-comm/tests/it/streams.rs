//! The numbers drawn for an entity do not depend on which rank owns it, or
//! in which order a rank visits its entities.

use parsim_comm::{launch, Comm};
use parsim_core::rng::StreamKey;
use rand_core::RngCore;

const ENTITIES: u64 = 257;
const STEPS: u64 = 3;

/// What entity `e` draws at `step`: four numbers from its own stream.
fn draws(seed: u64, e: u64, step: u64) -> [u64; 4] {
    let mut s = StreamKey::new(seed).purpose("test.entity").with(e).with(step).stream();
    [s.next_u64(), s.next_u64(), s.next_u64(), s.below(1000)]
}

/// Every rank draws for the entities it owns (under `owner`), visiting them
/// in reverse; rank 0 gathers (entity, step, draws) and sorts by entity.
fn distributed(ranks: usize, owner: fn(u64, usize) -> usize) -> Vec<(u64, u64, [u64; 4])> {
    let all = launch(ranks, |comm| {
        let mut mine = Vec::new();
        for step in 0..STEPS {
            for e in (0..ENTITIES).rev().filter(|&e| owner(e, comm.size()) == comm.rank()) {
                mine.push((e, step, draws(9, e, step)));
            }
        }
        comm.gather_value(0, &mine)
    })
    .expect("run");
    let mut flat: Vec<_> = all.into_iter().next().flatten().expect("root gathers").into_iter().flatten().collect();
    flat.sort_by_key(|&(e, step, _)| (e, step));
    flat
}

#[test]
fn an_entitys_draws_are_the_same_whichever_rank_owns_it() {
    let sequential: Vec<_> =
        (0..ENTITIES).flat_map(|e| (0..STEPS).map(move |step| (e, step, draws(9, e, step)))).collect();
    let block = |e: u64, p: usize| (e * p as u64 / ENTITIES) as usize;
    let cyclic = |e: u64, p: usize| (e % p as u64) as usize;
    let scrambled = |e: u64, p: usize| ((e.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 7) % p as u64) as usize;
    for ranks in [1, 2, 3, 4, 7] {
        for (name, owner) in [("block", block as fn(u64, usize) -> usize), ("cyclic", cyclic), ("scrambled", scrambled)]
        {
            assert_eq!(distributed(ranks, owner), sequential, "{ranks} ranks, {name} ownership");
        }
    }
    // And the draws are not trivially equal across entities or steps.
    assert_ne!(draws(9, 0, 0), draws(9, 1, 0));
    assert_ne!(draws(9, 0, 0), draws(9, 0, 1));
    assert_ne!(draws(9, 0, 0), draws(10, 0, 0));
}
