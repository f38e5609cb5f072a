//! Game of Life against known patterns: a glider's position after 4n steps,
//! a blinker's period — on several rank counts.

use parsim_comm::{launch, Comm};
use parsim_grid::{run_with_field, Boundary, GridSpec, Life};

/// The live cells `(row, col)` after `steps` on a periodic `n × n` grid.
fn evolve(n: usize, alive: &[(usize, usize)], steps: u64, ranks: usize) -> Vec<(usize, usize)> {
    let mut spec = GridSpec::new(vec![n, n], steps);
    spec.boundary = vec![Boundary::Periodic];
    let init = |g: [usize; 3]| u8::from(alive.contains(&(g[1], g[2])));
    let out = launch(ranks, |comm| {
        let (_, field) = run_with_field(&comm, &spec, &Life, &init, &mut |_| {})?;
        let mut live = Vec::new();
        field.for_owned(|g, v| {
            if v == 1 {
                live.push([g[1] as u64, g[2] as u64]);
            }
        });
        Ok::<_, parsim_grid::GridError>(comm.gather(0, live)?)
    })
    .expect("run");
    let mut cells: Vec<(usize, usize)> = out
        .into_iter()
        .next()
        .flatten()
        .expect("root")
        .into_iter()
        .flatten()
        .map(|[y, x]| (y as usize, x as usize))
        .collect();
    cells.sort_unstable();
    cells
}

fn shifted(cells: &[(usize, usize)], dy: usize, dx: usize, n: usize) -> Vec<(usize, usize)> {
    let mut v: Vec<_> = cells.iter().map(|&(y, x)| ((y + dy) % n, (x + dx) % n)).collect();
    v.sort_unstable();
    v
}

#[test]
fn a_glider_moves_one_cell_diagonally_every_four_steps() {
    let glider = [(0, 1), (1, 2), (2, 0), (2, 1), (2, 2)];
    let n = 24;
    for ranks in [1, 2, 4, 6] {
        for k in [1u64, 3, 7] {
            let got = evolve(n, &glider, 4 * k, ranks);
            assert_eq!(got, shifted(&glider, k as usize, k as usize, n), "{ranks} ranks after {} steps", 4 * k);
        }
    }
    // Across the periodic edge: 30 periods on a 24-grid wraps around.
    assert_eq!(evolve(n, &glider, 120, 4), shifted(&glider, 30 % n, 30 % n, n));
}

#[test]
fn a_blinker_has_period_two() {
    let n = 16;
    let horizontal = [(5, 4), (5, 5), (5, 6)];
    let vertical = [(4, 5), (5, 5), (6, 5)];
    for ranks in [1, 3, 4] {
        assert_eq!(evolve(n, &horizontal, 1, ranks), vertical.to_vec());
        assert_eq!(evolve(n, &horizontal, 2, ranks), horizontal.to_vec());
        assert_eq!(evolve(n, &horizontal, 11, ranks), vertical.to_vec());
    }
}

#[test]
fn gospers_gun_emits_one_glider_every_thirty_steps() {
    use parsim_grid::patterns::{cells, GOSPER_GUN};
    let gun: Vec<(usize, usize)> = cells(&GOSPER_GUN).into_iter().map(|(r, c)| (r + 4, c + 4)).collect();
    assert_eq!(gun.len(), 36);
    for ranks in [1, 4] {
        // At multiples of the period the gun is back to its 36 cells, plus 5 per glider.
        assert_eq!(evolve(160, &gun, 300, ranks).len(), 36 + 5 * 10, "{ranks} ranks");
    }
}
