//! Offset anchors `(x_k, y_k)` from parsed `round_offsets.jsonl` rows.

use crate::node::NodeId;
use std::collections::HashMap;

use crate::anchors::{self, Issue};
use crate::error::ClockError;
use crate::time::{DurationPs, GlobalTime, HostTime};

/// Where an offsets row places its probe window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RowWindow {
    /// `window_start_ns` / `window_end_ns`: the node's own window when it
    /// probed that round, else the reference node's; both 0 when the
    /// reference missed the round.
    Window {
        /// `window_start_ns`.
        start_ns: u64,
        /// `window_end_ns`.
        end_ns: u64,
    },
    /// Legacy rows: `midpoint_sys_ns`, a reference-clock value.
    LegacyMidpoint {
        /// `midpoint_sys_ns`.
        midpoint_sys_ns: u64,
    },
}

/// One parsed offsets row (formats.md §3). Filled by the JSONL parser.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OffsetRow {
    /// `round_id`.
    pub round_id: u64,
    /// `node_id`.
    pub node_id: NodeId,
    /// The window or legacy midpoint.
    pub window: RowWindow,
    /// `offset_ns`: clock(node) − clock(reference), positive = node ahead.
    pub offset_ns: f64,
    /// `drift_ppm`: the node's rate relative to its probe-tree parent.
    pub drift_ppm: f64,
    /// `reachable`: false means the row's offset is not a measurement.
    pub reachable: bool,
    /// `converged`: the round's solve succeeded.
    pub converged: bool,
}

/// Which rule placed an anchor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize),
    serde(rename_all = "snake_case")
)]
pub enum AnchorSource {
    /// The node's own window: `x = (ws+we)/2`, `y = x − offset`.
    OwnWindow,
    /// The reference node's window: `y = (ws+we)/2`, `x = y + offset`.
    ReferenceWindow,
    /// A legacy `midpoint_sys_ns` (reference clock): `y = m`, `x = m + offset`.
    LegacyMidpoint,
}

/// One anchor of an offset map.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OffsetAnchor {
    /// The round it comes from.
    pub round_id: u64,
    /// `x_k`: the window midpoint on the node's host clock.
    pub host: HostTime,
    /// `y_k = x_k − offset_k`: the same instant on the global clock.
    pub global: GlobalTime,
    /// `offset_k = round(offset_ns × 1000)` ps.
    pub offset: DurationPs,
    /// The row's `drift_ppm`.
    pub drift_ppm: f64,
    /// Which rule placed it.
    pub source: AnchorSource,
    /// The row's `converged`.
    pub converged: bool,
}

/// Why a row gave no anchor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize),
    serde(rename_all = "snake_case")
)]
pub enum SkipReason {
    /// `reachable:false`: its offset is not a measurement.
    Unreachable,
    /// Both window ends (or the legacy midpoint) are 0.
    ZeroWindow,
    /// The reference node has no row for this round, so the window cannot
    /// be told apart.
    NoReferenceRow,
    /// The same anchor as an earlier round (dropped as a repeat).
    RepeatOf {
        /// The earlier round.
        round_id: u64,
    },
}

/// A row that gave no anchor, for the diagnostics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SkippedRow {
    /// The row's round.
    pub round_id: u64,
    /// Why.
    pub reason: SkipReason,
}

/// Something suspicious but not fatal, for the caller to report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize),
    serde(rename_all = "snake_case")
)]
pub enum OffsetWarning {
    /// The round's solve did not converge (its anchor is still used).
    NotConverged {
        /// The round.
        round_id: u64,
    },
    /// The offset changed between consecutive anchors by more than the
    /// later row's window length.
    OffsetJump {
        /// The earlier anchor's round.
        from_round: u64,
        /// The later anchor's round.
        to_round: u64,
        /// `offset_to − offset_from`.
        jump: DurationPs,
        /// The later window's length.
        window: DurationPs,
    },
}

/// The anchors of one node's offset map `O_i : Host → Global`, with the rows
/// skipped and the warnings raised on the way.
///
/// Invariant (checked by [`OffsetAnchors::from_rows`]): anchors are sorted
/// by strictly increasing host time with non-decreasing global time. For the
/// reference node the list is empty and `is_reference` is set: its map is
/// the identity.
#[derive(Debug, Clone, PartialEq)]
pub struct OffsetAnchors {
    /// The node.
    pub node_id: NodeId,
    /// True for the reference node (identity map).
    pub is_reference: bool,
    /// The anchors, one per usable row, in row order.
    pub anchors: Vec<OffsetAnchor>,
    /// Rows that gave no anchor.
    pub skipped: Vec<SkippedRow>,
    /// Warnings.
    pub warnings: Vec<OffsetWarning>,
}

impl OffsetAnchors {
    /// Builds node `node_id`'s anchors from all rows of an offsets file
    /// (every node, ascending `round_id`). `reference` is the node the
    /// offsets are measured against (node 0 in the files).
    ///
    /// Errors: a usable row with a non-finite or absurd offset, a window
    /// with one end 0 or its end before its start, anchors that conflict
    /// (same host time with another global time, or either going
    /// backwards), and no usable row at all for a non-reference node.
    pub fn from_rows(
        rows: &[OffsetRow],
        node_id: NodeId,
        reference: NodeId,
    ) -> Result<Self, ClockError> {
        let mut out = OffsetAnchors {
            node_id,
            is_reference: node_id == reference,
            anchors: Vec::new(),
            skipped: Vec::new(),
            warnings: Vec::new(),
        };
        if out.is_reference {
            return Ok(out);
        }
        let ref_windows: HashMap<u64, RowWindow> = rows
            .iter()
            .filter(|r| r.node_id == reference)
            .map(|r| (r.round_id, r.window))
            .collect();
        for row in rows.iter().filter(|r| r.node_id == node_id) {
            match anchor_of(row, ref_windows.get(&row.round_id))? {
                Ok(anchor) => out.anchors.push(anchor),
                Err(reason) => out.skipped.push(SkippedRow {
                    round_id: row.round_id,
                    reason,
                }),
            }
        }
        out.drop_repeats_and_check()?;
        if out.anchors.is_empty() {
            return Err(ClockError::NoOffsetAnchors { node: node_id });
        }
        out.collect_warnings(rows);
        Ok(out)
    }

    /// The anchors as `(x_ps, y_ps)` points.
    pub(crate) fn points(&self) -> Vec<(i128, i128)> {
        self.anchors
            .iter()
            .map(|a| (a.host.as_ps(), a.global.as_ps()))
            .collect()
    }

    /// Checks the anchor invariants (the fields are public, so maps check
    /// again) and returns the indices of the anchors kept after exact
    /// repeats are dropped.
    pub(crate) fn checked(&self) -> Result<Vec<usize>, ClockError> {
        anchors::check(&self.points()).map_err(|b| {
            let (prev, cur) = (&self.anchors[b.prev_index], &self.anchors[b.index]);
            let problem = match b.issue {
                Issue::DuplicateX => "duplicate host time",
                Issue::XDecreasing => "host time goes backwards",
                Issue::YDecreasing => "global time goes backwards",
                Issue::OutOfRange => "anchor beyond ±2^100 ps",
            };
            ClockError::ConflictingOffsetAnchors {
                node: self.node_id,
                prev_round: prev.round_id,
                round: cur.round_id,
                prev_x: prev.host.as_ps(),
                prev_y: prev.global.as_ps(),
                x: cur.host.as_ps(),
                y: cur.global.as_ps(),
                problem,
            }
        })
    }

    fn drop_repeats_and_check(&mut self) -> Result<(), ClockError> {
        let kept = self.checked()?;
        if kept.len() < self.anchors.len() {
            let mut next = kept.iter().peekable();
            let mut last_kept = 0;
            let mut anchors = Vec::with_capacity(kept.len());
            for (i, a) in self.anchors.iter().enumerate() {
                if next.peek() == Some(&&i) {
                    next.next();
                    last_kept = anchors.len();
                    anchors.push(*a);
                } else {
                    self.skipped.push(SkippedRow {
                        round_id: a.round_id,
                        reason: SkipReason::RepeatOf {
                            round_id: anchors[last_kept].round_id,
                        },
                    });
                }
            }
            self.anchors = anchors;
        }
        Ok(())
    }

    fn collect_warnings(&mut self, rows: &[OffsetRow]) {
        let windows: HashMap<u64, RowWindow> = rows
            .iter()
            .filter(|r| r.node_id == self.node_id)
            .map(|r| (r.round_id, r.window))
            .collect();
        for a in &self.anchors {
            if !a.converged {
                self.warnings.push(OffsetWarning::NotConverged {
                    round_id: a.round_id,
                });
            }
        }
        for w in self.anchors.windows(2) {
            let Some(RowWindow::Window { start_ns, end_ns }) = windows.get(&w[1].round_id) else {
                continue;
            };
            let window = DurationPs::from_ps((*end_ns as i128 - *start_ns as i128) * 1000);
            let jump = w[1].offset - w[0].offset;
            if jump.abs() > window {
                self.warnings.push(OffsetWarning::OffsetJump {
                    from_round: w[0].round_id,
                    to_round: w[1].round_id,
                    jump,
                    window,
                });
            }
        }
    }
}

/// The anchor of one row, the reason it has none, or a hard error.
fn anchor_of(
    row: &OffsetRow,
    reference_window: Option<&RowWindow>,
) -> Result<Result<OffsetAnchor, SkipReason>, ClockError> {
    if !row.reachable {
        return Ok(Err(SkipReason::Unreachable));
    }
    // Midpoint in ps (keeps the .5 ns), and which clock it is on.
    let (mid_ps, source) = match row.window {
        RowWindow::Window {
            start_ns: 0,
            end_ns: 0,
        }
        | RowWindow::LegacyMidpoint { midpoint_sys_ns: 0 } => {
            return Ok(Err(SkipReason::ZeroWindow));
        }
        RowWindow::Window { start_ns, end_ns } => {
            if start_ns == 0 || end_ns == 0 || end_ns < start_ns {
                return Err(ClockError::BadWindow {
                    node: row.node_id,
                    round_id: row.round_id,
                    start_ns,
                    end_ns,
                });
            }
            let Some(reference) = reference_window else {
                return Ok(Err(SkipReason::NoReferenceRow));
            };
            let mid = (start_ns as i128 + end_ns as i128) * 500;
            if *reference == row.window {
                (mid, AnchorSource::ReferenceWindow)
            } else {
                (mid, AnchorSource::OwnWindow)
            }
        }
        RowWindow::LegacyMidpoint { midpoint_sys_ns } => {
            (midpoint_sys_ns as i128 * 1000, AnchorSource::LegacyMidpoint)
        }
    };
    let offset = offset_ps(row)?;
    let (x, y) = match source {
        AnchorSource::OwnWindow => (mid_ps, mid_ps - offset),
        AnchorSource::ReferenceWindow | AnchorSource::LegacyMidpoint => (mid_ps + offset, mid_ps),
    };
    Ok(Ok(OffsetAnchor {
        round_id: row.round_id,
        host: HostTime::from_ps(x),
        global: GlobalTime::from_ps(y),
        offset: DurationPs::from_ps(offset),
        drift_ppm: row.drift_ppm,
        source,
        converged: row.converged,
    }))
}

/// `round(offset_ns × 1000)` ps, checked finite and within ±1e18 ns.
fn offset_ps(row: &OffsetRow) -> Result<i128, ClockError> {
    let v = row.offset_ns;
    if !v.is_finite() {
        return Err(ClockError::NonFiniteOffset {
            node: row.node_id,
            round_id: row.round_id,
            offset_ns: v,
        });
    }
    if v.abs() > 1e18 {
        return Err(ClockError::OffsetOutOfRange {
            node: row.node_id,
            round_id: row.round_id,
            offset_ns: v,
        });
    }
    Ok((v * 1000.0).round() as i128)
}
