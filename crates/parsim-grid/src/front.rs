//! A reaction front: Fisher–KPP reaction–diffusion, u ← u + D·∇²u + the
//! logistic reaction r·u·(1 − u) integrated over `substeps` explicit
//! sub-steps — but only where the reaction is active (ε < u < 1 − ε), the
//! way a chemistry solver runs only in a reacting region. The front
//! travels at about 2·√(D·r) cells per step and the cost goes with it:
//! the load moves across the grid.

use crate::{Reach, Stencil};

/// The reaction-front stencil (2-D, 5-point diffusion).
///
/// ```
/// use parsim_grid::{Front, Stencil};
/// let f = Front::default();
/// // A 3×3 neighbourhood around an active cell.
/// let src = [0.5; 9];
/// let mut out = [0.0];
/// f.row(&src, [1, 3, 3], 0, 1, 1, &mut out);
/// assert!(out[0] > 0.5 && out[0] < 0.7);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Front {
    /// Diffusion coefficient D (≤ 0.25 for stability).
    pub diffusion: f64,
    /// Reaction rate r per step.
    pub rate: f64,
    /// Sub-steps of the reaction where it is active (its cost).
    pub substeps: u32,
    /// ε: the reaction is active for ε < u < 1 − ε.
    pub threshold: f64,
}

impl Default for Front {
    fn default() -> Self {
        Front { diffusion: 0.2, rate: 0.5, substeps: 64, threshold: 1e-4 }
    }
}

impl Stencil<f64> for Front {
    fn radius(&self) -> usize {
        1
    }
    fn reach(&self) -> Reach {
        Reach::Star
    }
    fn row(&self, src: &[f64], ext: [usize; 3], z: usize, y: usize, x0: usize, out: &mut [f64]) {
        let w = ext[2];
        let base = (z * ext[1] + y) * w + x0;
        let h = self.rate / f64::from(self.substeps.max(1));
        for (i, o) in out.iter_mut().enumerate() {
            let c = base + i;
            let lap = src[c - 1] + src[c + 1] + src[c - w] + src[c + w] - 4.0 * src[c];
            let mut u = src[c] + self.diffusion * lap;
            if u > self.threshold && u < 1.0 - self.threshold {
                for _ in 0..self.substeps {
                    u += h * u * (1.0 - u);
                }
            }
            *o = u;
        }
    }
}
