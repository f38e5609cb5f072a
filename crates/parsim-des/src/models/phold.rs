//! PHOLD exactly as `shared/specs/phold.md` defines it (ROSS's models/phold).

use crate::model::{Ctx, Event, LpId, Model};

/// PHOLD: a constant population of events hopping between LPs.
///
/// Each event at LP i draws u; with probability `remote` its successor goes
/// to an LP drawn uniformly from all N (i included), else to i; the delay is
/// `lookahead + Exp(mean - lookahead)`, so `mean == lookahead` makes every
/// delay exactly `lookahead` (massive timestamp ties).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Phold {
    /// Number of LPs N.
    pub lps: u32,
    /// Initial events per LP.
    pub start_events: u32,
    /// Mean total delay.
    pub mean: f64,
    /// Minimum delay (0 < lookahead <= mean).
    pub lookahead: f64,
    /// Probability that the destination is uniform over all LPs.
    pub remote: f64,
    /// End time.
    pub end: f64,
}

impl Phold {
    /// The spec's "std" configuration with `remote` as given (0.25 or 0.10).
    pub fn std(remote: f64) -> Self {
        Phold { lps: 1024, start_events: 16, mean: 1.0, lookahead: 0.1, remote, end: 200.0 }
    }

    /// Checks the parameters; the message names the offending one.
    pub fn validate(&self) -> Result<(), String> {
        if self.lps == 0 {
            return Err("lps must be at least 1".into());
        }
        if !(self.lookahead > 0.0 && self.lookahead <= self.mean && self.mean.is_finite()) {
            return Err(format!("need 0 < lookahead <= mean < inf (lookahead {}, mean {})", self.lookahead, self.mean));
        }
        if !(0.0..=1.0).contains(&self.remote) {
            return Err(format!("remote must be in [0, 1] (got {})", self.remote));
        }
        if self.end.is_nan() || self.end < 0.0 {
            return Err(format!("end must be >= 0 (got {})", self.end));
        }
        Ok(())
    }

    /// The expected number of committed events: each of the N · start_events
    /// chains is a renewal process whose gaps are lookahead + Exp(mean −
    /// lookahead) (mean μ, variance σ² = (μ − lookahead)²), so it has
    /// T/μ + (σ² − μ²)/(2μ²) events in (0, T] up to terms that vanish as T
    /// grows (the renewal function's expansion). For the spec's std
    /// configuration this is 3,275,244 (N · pop · T/μ = 3,276,800 overstates
    /// it by about one standard deviation).
    ///
    /// ```
    /// let std = parsim_des::models::Phold::std(0.25);
    /// assert_eq!(std.expected_events().round(), 3_275_244.0);
    /// ```
    pub fn expected_events(&self) -> f64 {
        let chains = f64::from(self.lps) * f64::from(self.start_events);
        let (mu, var) = (self.mean, (self.mean - self.lookahead).powi(2));
        if mu <= 0.0 {
            return 0.0;
        }
        chains * (self.end / mu + (var - mu * mu) / (2.0 * mu * mu)).max(0.0)
    }

    #[inline]
    fn delay(&self, ctx: &mut Ctx<'_, ()>) -> f64 {
        let m = self.mean - self.lookahead;
        if m == 0.0 {
            return self.lookahead;
        }
        // Exp(m) = -m ln U with U in (0, 1].
        self.lookahead - m * (1.0 - ctx.rng().uniform()).ln()
    }
}

impl Model for Phold {
    type State = ();
    type Payload = ();

    fn lps(&self) -> u32 {
        self.lps
    }
    fn lookahead(&self) -> f64 {
        self.lookahead
    }
    fn end_time(&self) -> f64 {
        self.end
    }

    fn init(&self, lp: LpId, ctx: &mut Ctx<'_, ()>) {
        for _ in 0..self.start_events {
            let d = self.delay(ctx);
            ctx.send(lp, d, ());
        }
    }

    #[inline]
    fn on_event(&self, _: &mut (), ev: &Event<()>, ctx: &mut Ctx<'_, ()>) {
        let rng = ctx.rng();
        let dest = if rng.uniform() <= self.remote {
            ((rng.uniform() * f64::from(self.lps)) as u32).min(self.lps - 1)
        } else {
            ev.dest
        };
        let d = self.delay(ctx);
        ctx.send(dest, d, ());
    }

    /// PHOLD's LPs have no state, and its random draws are keyed by the
    /// event count: there is nothing to undo, so reverse computation saves
    /// nothing and costs nothing.
    fn reversible(&self) -> bool {
        true
    }

    fn reverse(&self, _: &mut (), _: &Event<()>) {}
}
