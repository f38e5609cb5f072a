//! The shortest way to a grid model: say the grid, the initial value of a
//! cell and the update of a cell; [`Stencil`] turns that into a [`Model`]
//! with progress, the digest, the total and residual, and (on request) a
//! picture of the final field with a numbered colour bar.

use parsim_comm::Comm;
use parsim_grid::{CellFn, GridSpec, Neighbourhood, Reach};

use crate::model::{BoxError, Model, Outcome, ParamError, Rank};

/// A stencil model, in three functions. Wrap it in [`Stencil`] to run it.
///
/// ```
/// use parsim::{Experiment, Stencil, StencilModel};
/// use parsim::grid::{Boundary, GridSpec, Neighbourhood};
/// use serde::{Deserialize, Serialize};
///
/// /// Diffusion from a hot left edge.
/// struct Plate;
/// #[derive(Clone, Serialize, Deserialize)]
/// #[serde(default)]
/// struct P { n: usize, steps: u64 }
/// impl Default for P { fn default() -> Self { P { n: 48, steps: 30 } } }
///
/// impl StencilModel for Plate {
///     type Params = P;
///     type Cell = f64;
///     fn name(&self) -> &str { "plate" }
///     fn grid(&self, p: &P) -> GridSpec {
///         let mut g = GridSpec::new(vec![p.n, p.n], p.steps);
///         g.boundary = vec![Boundary::Dirichlet(0.0)];
///         g
///     }
///     fn init(&self, _p: &P, [_, _, x]: [usize; 3]) -> f64 { if x == 0 { 1.0 } else { 0.0 } }
///     fn update(&self, _p: &P, n: &Neighbourhood<'_, f64>) -> f64 {
///         n.centre() + 0.2 * (n.get2(-1, 0) + n.get2(1, 0) + n.get2(0, -1) + n.get2(0, 1) - 4.0 * n.centre())
///     }
/// }
///
/// let out = std::env::temp_dir().join("parsim-doc-plate");
/// let out = out.to_str().unwrap();
/// let one = Experiment::new(Stencil(Plate)).quiet().run_with(&["run", "--out", out])?;
/// let three = Experiment::new(Stencil(Plate)).quiet().run_with(&["run", "--ranks", "3", "--out", out])?;
/// assert_eq!(one.summary["digest"], three.summary["digest"]);
/// assert!(three.summary["metrics"]["total"].as_f64().unwrap() > 0.0);
/// # Ok::<(), parsim::Error>(())
/// ```
pub trait StencilModel: Sync {
    /// The parameters (the scenario's `[name]` table).
    type Params: Clone + Send + Sync + 'static;
    /// What a cell holds: `f64`, `f32`, `u8`, or several fields as `[f64; N]`.
    type Cell: parsim_grid::Cell;

    /// The model's name.
    fn name(&self) -> &str;

    /// Checks the parameters (see [`Model::check`]).
    fn check(&self, _params: &Self::Params) -> Result<(), ParamError> {
        Ok(())
    }

    /// The grid: its size (slowest axis first), steps, boundaries, and so on.
    fn grid(&self, params: &Self::Params) -> GridSpec;

    /// How far [`update`](Self::update) reads (default 1).
    fn radius(&self) -> usize {
        1
    }

    /// Whether it reads diagonal neighbours (default: along the axes only).
    fn reach(&self) -> Reach {
        Reach::Star
    }

    /// The value of the cell at global index `[z, y, x]` (0 on missing axes) before step 0.
    fn init(&self, params: &Self::Params, index: [usize; 3]) -> Self::Cell;

    /// The cell's next value from its neighbourhood, which also tells its
    /// global index ([`Neighbourhood::index2`]) and the step.
    fn update(&self, params: &Self::Params, n: &Neighbourhood<'_, Self::Cell>) -> Self::Cell;

    /// Draw the final field as `field.png` (default: yes).
    fn picture(&self) -> bool {
        true
    }

    /// What a cell's value is, with its unit, for the picture's colour bar.
    fn value_label(&self) -> &str {
        "value"
    }
}

/// A [`StencilModel`] as a [`Model`]: `Experiment::new(Stencil(my_model))`.
pub struct Stencil<S>(pub S);

impl<S: StencilModel> Model for Stencil<S> {
    type Params = S::Params;

    fn name(&self) -> &str {
        self.0.name()
    }

    fn check(&self, p: &S::Params) -> Result<(), ParamError> {
        self.0.check(p)
    }

    fn describe(&self, p: &S::Params, ranks: usize) -> String {
        match self.0.grid(p).decompose(ranks, self.0.radius()) {
            Ok(d) => format!("{}: {d}\n", self.0.name()),
            Err(e) => format!("{}: {e}\n", self.0.name()),
        }
    }

    fn run<C: Comm>(&self, p: &S::Params, rank: &mut Rank<'_, C>) -> Result<Outcome, BoxError> {
        let m = &self.0;
        let spec = m.grid(p);
        let stencil = CellFn::new(m.radius(), m.reach(), |n: &Neighbourhood<'_, S::Cell>| m.update(p, n));
        let init = |g: [usize; 3]| m.init(p, g);
        let mut bar = rank.progress("steps", spec.steps);
        // Checkpoints, restart and injected faults come with it (`--checkpoint-every` …).
        let mut ck = rank.checkpointer(m.name(), "step")?;
        let guard = parsim_grid::Guard::default();
        let (report, field) =
            parsim_grid::run_resilient(rank.comm(), &spec, &stencil, &init, &mut |s| bar.set(s), ck.as_mut(), guard)?;
        rank.checkpoints_done(ck);
        bar.finish();
        let last = report.reductions.last().copied();
        let mut out = Outcome::new()
            .digest(report.digest)
            .metric("total", last.map_or(0.0, |r| r.total))
            .metric("residual", last.map_or(0.0, |r| r.residual))
            .value("process_grid", serde_json::json!(report.decomposition.process_grid()));
        if m.picture() && rank.writes_outputs() {
            let _io = rank.comm().clock().enter(parsim_core::Phase::Io);
            if let Some(slice) = parsim_grid::gather_slice(rank.comm(), &report.decomposition, &field, 1024)? {
                std::fs::create_dir_all(rank.out_dir())?;
                let path = rank.out_dir().join("field.png");
                let dims = spec.size.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(" × ");
                let title = format!("{} on a {dims} grid after {} steps", m.name(), spec.steps);
                crate::plot::Heatmap::new(&title, slice, m.value_label()).save(&path)?;
                out = out.line(format!("field → {}", path.display()));
            }
        }
        Ok(out)
    }
}
