//! Validation of anchor lists shared by every map constructor.

/// Anchors must stay within ±2^100 ps so that every intermediate of the
/// exact evaluation fits in 256 bits.
pub(crate) const MAX_ABS_PS: i128 = 1 << 100;

/// What is wrong with an anchor relative to the previous kept one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Issue {
    XDecreasing,
    DuplicateX,
    YDecreasing,
    OutOfRange,
}

/// An anchor that breaks the rules: `index` against `prev_index`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BadAnchor {
    pub(crate) issue: Issue,
    pub(crate) index: usize,
    pub(crate) prev_index: usize,
}

/// Checks that `points` are sorted by strictly increasing x (an exact
/// repeat of the previous point is allowed and dropped), that y never
/// decreases, and that all values lie within ±[`MAX_ABS_PS`]. Returns the
/// indices of the points kept.
pub(crate) fn check(points: &[(i128, i128)]) -> Result<Vec<usize>, BadAnchor> {
    let mut kept: Vec<usize> = Vec::with_capacity(points.len());
    for (index, &(x, y)) in points.iter().enumerate() {
        let bad = |issue, prev_index| BadAnchor {
            issue,
            index,
            prev_index,
        };
        if x.abs() > MAX_ABS_PS || y.abs() > MAX_ABS_PS {
            return Err(bad(Issue::OutOfRange, index));
        }
        let Some(&prev) = kept.last() else {
            kept.push(index);
            continue;
        };
        let (px, py) = points[prev];
        if x < px {
            return Err(bad(Issue::XDecreasing, prev));
        }
        if x == px {
            if y == py {
                continue;
            }
            return Err(bad(Issue::DuplicateX, prev));
        }
        if y < py {
            return Err(bad(Issue::YDecreasing, prev));
        }
        kept.push(index);
    }
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collapses_exact_repeats_and_names_offenders() {
        assert_eq!(check(&[(0, 0), (0, 0), (5, 5)]), Ok(vec![0, 2]));
        let e = check(&[(0, 0), (5, 5), (5, 6)]).unwrap_err();
        assert_eq!((e.issue, e.index, e.prev_index), (Issue::DuplicateX, 2, 1));
        let e = check(&[(0, 0), (5, 5), (4, 6)]).unwrap_err();
        assert_eq!(e.issue, Issue::XDecreasing);
        let e = check(&[(0, 9), (5, 5)]).unwrap_err();
        assert_eq!(e.issue, Issue::YDecreasing);
        let e = check(&[(0, 0), (MAX_ABS_PS + 1, 0)]).unwrap_err();
        assert_eq!((e.issue, e.index), (Issue::OutOfRange, 1));
    }
}
