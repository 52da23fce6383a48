//! Segment search over sorted anchor x values, shared by every map.
//!
//! Region `j` of a map with anchors `xs` serves the queries with exactly
//! `j` anchors `≤ x`: region 0 lies before the first anchor, region `n`
//! from the last anchor on.

use crate::mapped::Side;

/// Where a region lies relative to the anchors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// Region 0.
    Before,
    /// Between two anchors.
    Inside,
    /// From the last anchor on; a query equal to it is inside.
    After,
}

impl Place {
    /// The extrapolation flag for query `x` in a region starting at `lo`.
    #[inline(always)]
    pub(crate) fn outside(self, x: i128, lo: i128) -> Option<Side> {
        match self {
            Place::Inside => None,
            Place::Before => Some(Side::Before),
            Place::After => (x > lo).then_some(Side::After),
        }
    }
}

/// The region serving `x`, by binary search.
#[inline]
pub(crate) fn locate(xs: &[i128], x: i128) -> usize {
    xs.partition_point(|&a| a <= x)
}

/// The region serving `x`, given that the caller was last in region `j`:
/// forward by a few linear steps and then by binary search over the rest
/// when `x` is ahead of region `j`, else by binary search over all. Returns
/// exactly what [`locate`] returns.
#[inline]
pub(crate) fn seek(xs: &[i128], j: usize, x: i128) -> usize {
    let n = xs.len();
    if j >= n || x < xs[j] {
        return locate(xs, x);
    }
    let mut k = j + 1;
    for _ in 0..4 {
        if k == n || x < xs[k] {
            return k;
        }
        k += 1;
    }
    k + locate(&xs[k..], x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seek_equals_locate_from_every_start() {
        let xs: Vec<i128> = (0..40).map(|i| i * 10).collect();
        for j in 0..=xs.len() {
            for x in -5..420 {
                assert_eq!(seek(&xs, j, x), locate(&xs, x), "j={j} x={x}");
            }
        }
    }
}
