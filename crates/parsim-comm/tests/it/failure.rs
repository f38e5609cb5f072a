//! No hang: a failing rank becomes an error on every rank, promptly.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parsim_comm::{launch, Comm, CommError, Source, TagMatch};

#[test]
fn panicking_rank_mid_run_releases_every_rank_within_5s() {
    let start = Instant::now();
    let r = launch(4, |comm| {
        // Some real work first: a few rounds of all-reduce.
        for step in 0..50u64 {
            comm.all_reduce(&[step], parsim_comm::ReduceOp::Sum)?;
            if comm.rank() == 2 && step == 20 {
                panic!("model exploded at step {step}");
            }
        }
        // Ranks 0, 1, 3 are now blocked in a collective rank 2 never joins.
        Ok::<_, CommError>(())
    });
    let elapsed = start.elapsed();
    match r {
        Err(CommError::RankFailed { rank, message }) => {
            assert_eq!(rank, 2);
            assert!(message.contains("model exploded at step 20"), "{message}");
        }
        other => panic!("expected RankFailed, got {other:?}"),
    }
    assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}");
}

#[test]
fn blocked_ranks_see_peer_failed_with_rank_and_message() {
    let seen = AtomicUsize::new(0);
    let r = launch(4, |comm| {
        if comm.rank() == 1 {
            std::thread::sleep(Duration::from_millis(50));
            return Err::<(), _>(CommError::BadArgument { op: "model", msg: "bad cell 17".into() });
        }
        // Everyone else waits for a message that never comes.
        match comm.recv::<u8>(Source::Rank(1), TagMatch::Any) {
            Err(CommError::PeerFailed { rank: 1, message }) if message.contains("bad cell 17") => {
                seen.fetch_add(1, Ordering::SeqCst);
                Err(CommError::PeerFailed { rank: 1, message })
            }
            other => panic!("rank {} got {other:?}", comm.rank()),
        }
    });
    assert_eq!(seen.load(Ordering::SeqCst), 3);
    match r {
        Err(CommError::RankFailed { rank: 1, message }) => assert!(message.contains("bad cell 17")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn waiting_on_a_finished_rank_is_an_error_not_a_hang() {
    let r = launch(2, |comm| {
        if comm.rank() == 0 {
            return Ok(());
        }
        comm.recv::<u8>(Source::Rank(0), TagMatch::Tag(1)).map(|_| ())
    });
    match r {
        Err(CommError::RankFailed { rank: 1, message }) => {
            assert!(message.contains("finished"), "{message}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn messages_sent_before_finishing_are_still_received() {
    let r = launch(2, |comm| {
        if comm.rank() == 0 {
            comm.send(1, 3, vec![42u32])?;
            return Ok(0);
        }
        std::thread::sleep(Duration::from_millis(30));
        Ok::<_, CommError>(comm.recv::<u32>(Source::Any, TagMatch::Tag(3))?.data[0])
    })
    .expect("no failure");
    assert_eq!(r, vec![0, 42]);
}

#[test]
fn zero_ranks_is_a_bad_argument() {
    assert!(matches!(launch(0, |_c| Ok::<_, CommError>(())), Err(CommError::BadArgument { .. })));
}
