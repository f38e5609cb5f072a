//! The communicator charges its own time to `comm` and `wait`, and counts traffic.

use std::time::Duration;

use parsim_comm::{launch, Comm, CommError, Source, TagMatch};

#[test]
fn blocked_receive_is_charged_to_wait_and_traffic_is_counted() {
    let reports = launch(2, |comm| {
        if comm.rank() == 0 {
            std::thread::sleep(Duration::from_millis(100)); // compute
            comm.send(1, 1, vec![0u8; 1000])?;
        } else {
            comm.recv::<u8>(Source::Rank(0), TagMatch::Tag(1))?;
        }
        Ok::<_, CommError>(comm.clock().report())
    })
    .expect("run");
    let (r0, r1) = (&reports[0], &reports[1]);
    assert!(r0.phases_s.compute >= 0.09, "{r0:?}");
    assert!(r1.phases_s.wait >= 0.09, "{r1:?}");
    assert!(r1.phases_s.compute < 0.05, "{r1:?}");
    assert_eq!(r0.peers[1].messages_sent, 1);
    assert_eq!(r0.peers[1].bytes_sent, 1000);
    assert_eq!(r1.peers[0].bytes_received, 1000);
}
