//! Boxes of cells in a rank's local array (half-open ranges per axis).

/// A box `[lo, hi)` on each of the three axes (axis 0 slowest, axis 2 contiguous).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    /// Inclusive lower corner.
    pub lo: [usize; 3],
    /// Exclusive upper corner.
    pub hi: [usize; 3],
}

impl Region {
    /// The box `[lo, hi)`.
    pub fn new(lo: [usize; 3], hi: [usize; 3]) -> Self {
        Region { lo, hi }
    }

    /// Whether it holds no cell.
    pub fn is_empty(&self) -> bool {
        (0..3).any(|a| self.hi[a] <= self.lo[a])
    }

    /// Number of cells.
    pub fn cells(&self) -> usize {
        if self.is_empty() {
            0
        } else {
            (0..3).map(|a| self.hi[a] - self.lo[a]).product()
        }
    }

    /// The intersection.
    pub fn intersect(&self, o: &Region) -> Region {
        let mut r = *self;
        for a in 0..3 {
            r.lo[a] = r.lo[a].max(o.lo[a]);
            r.hi[a] = r.hi[a].min(o.hi[a]).max(r.lo[a]);
        }
        r
    }

    /// `self` minus `inner` (which must lie inside `self` or be empty), as
    /// disjoint boxes: per axis, the slab below and above `inner`.
    pub fn minus(&self, inner: &Region) -> Vec<Region> {
        let inner = inner.intersect(self);
        if inner.is_empty() {
            return if self.is_empty() { Vec::new() } else { vec![*self] };
        }
        let mut out = Vec::new();
        let mut rest = *self;
        for a in 0..3 {
            if rest.lo[a] < inner.lo[a] {
                let mut below = rest;
                below.hi[a] = inner.lo[a];
                out.push(below);
            }
            if inner.hi[a] < rest.hi[a] {
                let mut above = rest;
                above.lo[a] = inner.hi[a];
                out.push(above);
            }
            rest.lo[a] = inner.lo[a];
            rest.hi[a] = inner.hi[a];
        }
        out.retain(|r| !r.is_empty());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minus_partitions_the_difference() {
        let outer = Region::new([0, 0, 0], [5, 6, 7]);
        let inner = Region::new([1, 2, 1], [4, 5, 6]);
        let parts = outer.minus(&inner);
        assert_eq!(parts.iter().map(Region::cells).sum::<usize>() + inner.cells(), outer.cells());
        for (i, p) in parts.iter().enumerate() {
            assert!(p.intersect(&inner).is_empty());
            for q in &parts[i + 1..] {
                assert!(p.intersect(q).is_empty());
            }
        }
        assert_eq!(outer.minus(&Region::new([0, 0, 0], [0, 0, 0])), vec![outer]);
        assert!(outer.minus(&outer).is_empty());
    }
}
