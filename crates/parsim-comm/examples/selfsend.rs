//! tmp
use parsim_comm::{launch, Comm, Source, TagMatch};
use std::time::Instant;
fn main() {
    launch(1, |c| {
        let mut buf = vec![0u8; 8];
        let n = 2_000_000;
        let t = Instant::now();
        for _ in 0..n {
            c.send(0, 1, std::mem::take(&mut buf))?;
            buf = c.recv::<u8>(Source::Rank(0), TagMatch::Tag(1))?.data;
        }
        println!("self send+recv: {:.1} ns", t.elapsed().as_nanos() as f64 / n as f64);
        let t = Instant::now();
        for _ in 0..n {
            std::hint::black_box(Instant::now());
        }
        println!("Instant::now: {:.1} ns", t.elapsed().as_nanos() as f64 / n as f64);
        Ok::<_, parsim_comm::CommError>(())
    })
    .unwrap();
}
