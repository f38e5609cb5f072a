//! Pedestrians (a simplified social-force model): each walks at its
//! preferred speed in a wandering direction, keeps its distance from the
//! others (an exponential repulsion) and is reflected by the walls; at
//! step `opens` an attraction opens and everyone heads for it, so the
//! crowd — and the load — gathers in one region of the box.

use serde::{Deserialize, Serialize};

use super::{Agent, Ctx, Domain, Near, Rule};
use parsim_core::rng::Stream;

/// The crowd's parameters (`[crowd]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Crowd {
    /// Preferred walking speed (m/s).
    pub speed: f64,
    /// Relaxation time towards the preferred velocity (s).
    pub tau: f64,
    /// Time step (s).
    pub dt: f64,
    /// Repulsion strength A (m/s²).
    pub repulsion: f64,
    /// Repulsion range B (m).
    pub range: f64,
    /// Body radius (m).
    pub body: f64,
    /// The step the attraction opens.
    pub opens: u64,
    /// Where it is, as fractions of the box.
    pub attraction: [f64; 2],
    /// Wandering: the heading's standard deviation per step (rad).
    pub wander: f64,
}

impl Default for Crowd {
    fn default() -> Self {
        Crowd {
            speed: 1.3,
            tau: 0.5,
            dt: 0.1,
            repulsion: 5.0,
            range: 0.2,
            body: 0.25,
            opens: 20,
            attraction: [0.8, 0.75],
            wander: 0.3,
        }
    }
}

/// A pedestrian's own state: its wandering heading.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Walker {
    /// Heading (rad).
    pub heading: f64,
}

impl Rule for Crowd {
    type State = Walker;

    fn init(&self, id: u64, d: &Domain, rng: &mut Stream) -> Agent<Walker> {
        let pos = [rng.uniform() * d.size[0], rng.uniform() * d.size[1], 0.0];
        let heading = rng.uniform() * std::f64::consts::TAU;
        Agent { id, pos, vel: [self.speed * heading.cos(), self.speed * heading.sin(), 0.0], state: Walker { heading } }
    }

    fn step(&self, me: &Agent<Walker>, near: &[Near<'_, Walker>], ctx: &mut Ctx<'_>) -> Agent<Walker> {
        let heading = me.state.heading + ctx.rng.normal(0.0, self.wander);
        let mut desired = [self.speed * heading.cos(), self.speed * heading.sin()];
        if ctx.step >= self.opens {
            let goal = [self.attraction[0] * ctx.domain.size[0], self.attraction[1] * ctx.domain.size[1], 0.0];
            let to = ctx.domain.displacement(&me.pos, &goal);
            let dist = (to[0] * to[0] + to[1] * to[1]).sqrt();
            // Slow down on arrival: the crowd packs around the attraction.
            let v = self.speed * (dist / 2.0).min(1.0);
            if dist > 1e-9 {
                desired = [v * to[0] / dist, v * to[1] / dist];
            }
        }
        let mut f = [(desired[0] - me.vel[0]) / self.tau, (desired[1] - me.vel[1]) / self.tau];
        for n in near {
            let push = self.repulsion * ((2.0 * self.body - n.dist) / self.range).exp();
            let dist = n.dist.max(1e-6);
            f[0] -= push * n.d[0] / dist;
            f[1] -= push * n.d[1] / dist;
        }
        let mut vel = [me.vel[0] + self.dt * f[0], me.vel[1] + self.dt * f[1], 0.0];
        let s = (vel[0] * vel[0] + vel[1] * vel[1]).sqrt();
        let cap = 2.0 * self.speed;
        if s > cap {
            vel = [vel[0] * cap / s, vel[1] * cap / s, 0.0];
        }
        let pos = [me.pos[0] + self.dt * vel[0], me.pos[1] + self.dt * vel[1], 0.0];
        Agent { id: me.id, pos, vel, state: Walker { heading } }
    }
}
