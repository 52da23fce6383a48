//! Slices of one line onto tracks that nest strictly.
//!
//! Perfetto (and the Chrome trace viewers) draw the slices of one track as a
//! stack: a slice that begins inside another must end inside it too. XSpace
//! lines can hold events that overlap without nesting (a kernel that starts
//! before the previous one on its stream ends). [`assign_tracks`] puts every
//! slice on the first track of the line where it nests, opening extra tracks
//! for the rest: nothing is dropped or clipped.
//!
//! Rule (the same one the writers' begin/end order follows): slices are taken
//! in order of begin, longer first on equal begins; on a track, every open
//! slice that ends at or before the new slice's begin is closed first; the
//! new slice nests when the innermost slice still open ends at or after its
//! end.

/// A slice of a line: absolute times in ns, and which of the line's events
/// it is.
///
/// Invariant: `begin_ns <= end_ns` (checked where slices are made).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slice {
    /// Absolute begin, ns.
    pub begin_ns: i64,
    /// Absolute end, ns.
    pub end_ns: i64,
    /// The event's position among the line's timed events, in input order.
    pub event: u32,
}

/// Sort slices into the order the tracks are built and written in: by begin,
/// then longer first, then input order. Already-sorted lines (the usual case)
/// cost one pass.
pub fn sort_slices(slices: &mut [Slice]) {
    let sorted = slices.windows(2).all(|w| {
        (w[0].begin_ns, std::cmp::Reverse(w[0].end_ns))
            <= (w[1].begin_ns, std::cmp::Reverse(w[1].end_ns))
    });
    if !sorted {
        slices.sort_by_key(|s| (s.begin_ns, std::cmp::Reverse(s.end_ns), s.event));
    }
}

/// The track (0 = the line's own, 1.. = extra) of each slice of `slices`
/// (sorted by [`sort_slices`]), and the number of tracks.
pub fn assign_tracks(slices: &[Slice]) -> (Vec<u32>, u32) {
    // Per track, the ends of the slices still open, innermost last.
    let mut open: Vec<Vec<i64>> = Vec::new();
    let mut out = Vec::with_capacity(slices.len());
    for s in slices {
        let mut chosen = None;
        for (k, stack) in open.iter_mut().enumerate() {
            while stack.last().is_some_and(|&end| end <= s.begin_ns) {
                stack.pop();
            }
            if stack.last().is_none_or(|&end| end >= s.end_ns) {
                stack.push(s.end_ns);
                chosen = Some(k);
                break;
            }
        }
        let k = chosen.unwrap_or_else(|| {
            open.push(vec![s.end_ns]);
            open.len() - 1
        });
        out.push(k as u32);
    }
    (out, open.len() as u32)
}

/// One step of a track's begin/end stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Slice `i` (an index into the slices) begins.
    Begin(usize),
    /// Slice `i` ends.
    End(usize),
}

/// The begin/end steps of the slices `members` (indices into `slices`, in
/// sorted order, all nesting strictly: one track of [`assign_tracks`]), in
/// time order: `f` is called once per step.
pub fn for_each_step<E>(
    slices: &[Slice],
    members: impl IntoIterator<Item = usize>,
    mut f: impl FnMut(Step) -> Result<(), E>,
) -> Result<(), E> {
    let mut stack: Vec<usize> = Vec::new();
    for i in members {
        while let Some(&top) = stack.last() {
            if slices[top].end_ns > slices[i].begin_ns {
                break;
            }
            f(Step::End(top))?;
            stack.pop();
        }
        debug_assert!(
            stack
                .last()
                .is_none_or(|&t| slices[t].end_ns >= slices[i].end_ns)
        );
        f(Step::Begin(i))?;
        stack.push(i);
    }
    while let Some(top) = stack.pop() {
        f(Step::End(top))?;
    }
    Ok(())
}

/// Indices of `slices` grouped by track: `groups[k]` lists track `k`'s
/// slices in sorted order.
pub fn group_by_track(tracks: &[u32], count: u32) -> Vec<Vec<usize>> {
    let mut groups = vec![Vec::new(); count as usize];
    for (i, &k) in tracks.iter().enumerate() {
        groups[k as usize].push(i);
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slices(spans: &[(i64, i64)]) -> Vec<Slice> {
        spans
            .iter()
            .enumerate()
            .map(|(i, &(b, e))| Slice {
                begin_ns: b,
                end_ns: e,
                event: i as u32,
            })
            .collect()
    }

    #[test]
    fn nested_slices_share_a_track() {
        let s = slices(&[(0, 10), (1, 5), (5, 10), (10, 10), (12, 20)]);
        assert_eq!(assign_tracks(&s), (vec![0, 0, 0, 0, 0], 1));
    }

    #[test]
    fn overlapping_slices_get_extra_tracks() {
        let s = slices(&[(0, 10), (5, 15), (6, 20), (16, 18)]);
        // (5,15) overlaps (0,10); (6,20) overlaps both; (16,18) nests in (6,20)
        // on track 2 but fits track 0 first (everything there has ended).
        assert_eq!(assign_tracks(&s), (vec![0, 1, 2, 0], 3));
    }

    #[test]
    fn steps_are_in_time_order_and_balanced() {
        let s = slices(&[(0, 10), (0, 0), (2, 4), (4, 10), (10, 12)]);
        let mut steps = Vec::new();
        for_each_step::<()>(&s, 0..s.len(), |st| {
            steps.push(st);
            Ok(())
        })
        .unwrap();
        use Step::*;
        assert_eq!(
            steps,
            vec![
                Begin(0),
                Begin(1),
                End(1),
                Begin(2),
                End(2),
                Begin(3),
                End(3),
                End(0),
                Begin(4),
                End(4)
            ]
        );
    }

    #[test]
    fn unsorted_lines_are_sorted_longest_first() {
        let mut s = slices(&[(5, 6), (0, 1), (0, 9)]);
        sort_slices(&mut s);
        let spans: Vec<_> = s.iter().map(|s| (s.begin_ns, s.end_ns)).collect();
        assert_eq!(spans, vec![(0, 9), (0, 1), (5, 6)]);
    }
}
