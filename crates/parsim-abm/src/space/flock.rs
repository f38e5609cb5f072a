//! Boids (Reynolds 1987): separation, alignment and cohesion within the
//! perception radius, with a little noise and a speed kept between two
//! bounds; in 2-D or 3-D. Flocks form and travel, so the load moves.

use serde::{Deserialize, Serialize};

use super::{Agent, Ctx, Domain, Near, Rule};
use parsim_core::rng::Stream;

/// The flock's parameters (`[flock]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Flock {
    /// Slowest speed.
    pub min_speed: f64,
    /// Fastest speed.
    pub max_speed: f64,
    /// Distance below which boids push apart.
    pub separation: f64,
    /// Weights of separation, alignment and cohesion.
    pub weights: [f64; 3],
    /// Noise per axis and step (standard deviation of the acceleration).
    pub noise: f64,
    /// Time step.
    pub dt: f64,
}

impl Default for Flock {
    fn default() -> Self {
        Flock { min_speed: 0.5, max_speed: 1.5, separation: 0.5, weights: [1.5, 0.5, 0.05], noise: 0.1, dt: 0.5 }
    }
}

impl Rule for Flock {
    type State = ();

    fn init(&self, id: u64, d: &Domain, rng: &mut Stream) -> Agent<()> {
        let mut pos = [0.0; 3];
        let mut vel = [0.0; 3];
        for a in 0..d.dim {
            pos[a] = rng.uniform() * d.size[a];
            vel[a] = rng.normal(0.0, 1.0);
        }
        let s = vel.iter().map(|v| v * v).sum::<f64>().sqrt().max(1e-9);
        let v0 = 0.5 * (self.min_speed + self.max_speed);
        Agent { id, pos, vel: vel.map(|v| v * v0 / s), state: () }
    }

    fn step(&self, me: &Agent<()>, near: &[Near<'_, ()>], ctx: &mut Ctx<'_>) -> Agent<()> {
        let dim = ctx.domain.dim;
        let mut acc = [0.0; 3];
        if !near.is_empty() {
            let (mut align, mut centre, mut sep) = ([0.0; 3], [0.0; 3], [0.0; 3]);
            for n in near {
                for a in 0..dim {
                    align[a] += n.agent.vel[a];
                    centre[a] += n.d[a];
                    if n.dist < self.separation {
                        sep[a] -= n.d[a] / (n.dist * n.dist).max(1e-6);
                    }
                }
            }
            let k = near.len() as f64;
            for a in 0..dim {
                acc[a] = self.weights[0] * sep[a]
                    + self.weights[1] * (align[a] / k - me.vel[a])
                    + self.weights[2] * (centre[a] / k);
            }
        }
        let mut vel = [0.0; 3];
        for a in 0..dim {
            vel[a] = me.vel[a] + self.dt * (acc[a] + ctx.rng.normal(0.0, self.noise));
        }
        let s = vel.iter().map(|v| v * v).sum::<f64>().sqrt();
        let clamp = s.clamp(self.min_speed, self.max_speed);
        if s > 1e-12 {
            vel = vel.map(|v| v * clamp / s);
        }
        let mut pos = me.pos;
        for a in 0..dim {
            pos[a] += self.dt * vel[a];
        }
        Agent { id: me.id, pos, vel, state: () }
    }
}
