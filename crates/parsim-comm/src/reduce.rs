//! Reduction operators and the element types they apply to.

use bytemuck::Pod;

/// A reduction operator for [`Comm::reduce`](crate::Comm::reduce) and
/// [`Comm::all_reduce`](crate::Comm::all_reduce).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    /// Elementwise sum (wrapping for integers).
    Sum,
    /// Elementwise minimum.
    Min,
    /// Elementwise maximum.
    Max,
}

/// An element type that can be reduced: the integers and the floats.
///
/// Reductions combine contributions in rank order (rank 0 first) on every
/// backend, so a float reduction gives the same bits on threads and under MPI
/// for the same number of ranks. For results independent of the number of
/// ranks use [`Comm::all_reduce_exact`](crate::Comm::all_reduce_exact).
pub trait Reducible: Pod + Send + PartialOrd {
    /// `a op b`.
    fn combine(a: Self, b: Self, op: ReduceOp) -> Self;
}

macro_rules! int_reducible {
    ($($t:ty),*) => {$(
        impl Reducible for $t {
            #[inline]
            fn combine(a: Self, b: Self, op: ReduceOp) -> Self {
                match op {
                    ReduceOp::Sum => a.wrapping_add(b),
                    ReduceOp::Min => a.min(b),
                    ReduceOp::Max => a.max(b),
                }
            }
        }
    )*};
}
int_reducible!(i8, i16, i32, i64, u8, u16, u32, u64, usize, isize);

macro_rules! float_reducible {
    ($($t:ty),*) => {$(
        impl Reducible for $t {
            #[inline]
            fn combine(a: Self, b: Self, op: ReduceOp) -> Self {
                match op {
                    ReduceOp::Sum => a + b,
                    // NaN-propagating, and deterministic for equal inputs.
                    ReduceOp::Min => if a.is_nan() || b.is_nan() { <$t>::NAN } else if b < a { b } else { a },
                    ReduceOp::Max => if a.is_nan() || b.is_nan() { <$t>::NAN } else if b > a { b } else { a },
                }
            }
        }
    )*};
}
float_reducible!(f32, f64);

/// Folds per-rank contributions (in rank order) elementwise.
pub(crate) fn fold<T: Reducible>(parts: Vec<Vec<T>>, op: ReduceOp) -> Option<Vec<T>> {
    let mut it = parts.into_iter();
    let mut acc = it.next()?;
    for p in it {
        if p.len() != acc.len() {
            return None;
        }
        for (a, b) in acc.iter_mut().zip(p) {
            *a = T::combine(*a, b, op);
        }
    }
    Some(acc)
}
