//! Property tests (proptest): every reader on arbitrary bytes returns a
//! valid graph or an error, never a panic; the multilevel method on random
//! graphs returns a valid, balanced, reproducible partition or says the
//! instance is infeasible.

use parsim_partition::{io, multilevel_kway, Config, Graph, PartitionError};
use proptest::collection::vec;
use proptest::prelude::*;

/// Bytes that look like the formats often enough to get past their headers.
fn text_like() -> impl Strategy<Value = Vec<u8>> {
    vec(prop_oneof![4 => proptest::sample::select(b" 0123456789\n".to_vec()), 1 => any::<u8>()], 0..300)
}

fn check_readers(bytes: &[u8], case: &str) {
    let text = String::from_utf8_lossy(bytes);
    if let Ok(g) = io::parse_metis(&text, "p.graph") {
        g.validate().expect("an accepted METIS graph is valid");
    }
    for header in
        ["%%MatrixMarket matrix coordinate pattern general\n", "%%MatrixMarket matrix coordinate real symmetric\n"]
    {
        if let Ok(g) = io::parse_mtx(&format!("{header}{text}"), "p.mtx") {
            g.validate().expect("an accepted Matrix Market graph is valid");
        }
    }
    let dir = std::env::temp_dir().join(format!("parsim-props-{}-{case}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (txt, bin) = (dir.join("e.txt"), dir.join("e.bin"));
    std::fs::write(&txt, bytes).unwrap();
    std::fs::write(&bin, bytes).unwrap();
    if let Ok(g) = io::read_edge_list(&txt) {
        g.validate().expect("an accepted edge list is valid");
    }
    if let Ok(g) = io::read_edge_list_u32(&bin) {
        g.validate().expect("an accepted u32 edge list is valid");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn readers_never_panic_on_random_bytes(bytes in vec(any::<u8>(), 0..300)) {
        check_readers(&bytes, "raw");
    }

    #[test]
    fn readers_never_panic_on_text_like_bytes(bytes in text_like()) {
        check_readers(&bytes, "text");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn multilevel_is_valid_balanced_and_reproducible(
        n in 2usize..160,
        raw in vec((0u32..160, 0u32..160, 1u32..6), 0..480),
        weights in vec(1i64..5, 160),
        k in 2usize..12,
        imbalance in 0.0f64..0.2,
        seed in 0u64..1000,
    ) {
        let edges: Vec<(u32, u32, u32)> = raw
            .into_iter()
            .map(|(u, v, w)| (u % n as u32, v % n as u32, w))
            .filter(|&(u, v, _)| u != v)
            .map(|(u, v, w)| (u.min(v), u.max(v), w))
            .collect();
        let mut g = Graph::from_edges(n, &edges).unwrap();
        g.vwgt = weights[..n].to_vec();
        let k = k.min(n);
        let cfg = Config { imbalance, seed, ..Config::new(k) };
        match multilevel_kway(&g, &cfg) {
            Ok((parts, m)) => {
                prop_assert_eq!(parts.len(), n);
                prop_assert!(parts.iter().all(|&p| (p as usize) < k));
                prop_assert!(m.balanced && m.empty_parts == 0, "{:?}", m);
                let (again, _) = multilevel_kway(&g, &cfg).unwrap();
                prop_assert_eq!(parts, again);
            }
            Err(PartitionError::Infeasible(_)) => {}
            Err(e) => prop_assert!(false, "unexpected error {e}"),
        }
    }
}
