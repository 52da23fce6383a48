//! Reading collective occurrences out of an encoded XSpace with the
//! zero-copy reader: the public entry points over the scan of `scan.rs`.

use std::path::Path;

use xplane_proto::{FileBytes, LineView, PlaneView, SpaceView};

use crate::error::Result;
use crate::occurrence::Extraction;
use crate::scan::Capture;
use crate::units::{NodeId, TimePs};

/// Whose planes a file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeSource {
    /// A per-node file: every plane belongs to this node.
    Given(NodeId),
    /// A merged file: each plane's node is its `node_id` plane stat.
    PlaneStat,
}

/// Options of extraction and checking.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Options {
    /// Keep point-to-point send/recv (default: left out; they are not all-to-all).
    pub include_point_to_point: bool,
    /// Which planes' occurrences to use per node.
    pub planes: PlaneChoice,
    /// Violations no larger than this are not counted (default 0: any
    /// `end_i < max_j begin_j` counts; touching, `end == begin`, never does).
    pub tolerance_ns: f64,
    /// Read only what the collectives need (default: every event): a plane
    /// on which no event can be a collective (no event name that
    /// classifies, no `hlo_op` stat) is not read past its metadata, so its
    /// events are neither counted in [`ExtractStats::events_scanned`](crate::ExtractStats::events_scanned) nor
    /// checked. The occurrences, and so the report, are the same.
    pub collectives_only: bool,
}

/// Which planes' occurrences a node contributes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum PlaneChoice {
    /// Device planes for a node that has collectives on them, else its host
    /// planes (so a GPU collective is not counted twice, once as its host
    /// launch and once as its kernel).
    #[default]
    Auto,
    /// Host planes only.
    Host,
    /// Device planes only.
    Device,
}

/// Extract the collectives of an XSpace file into `out`, after checking
/// the whole file ([`xplane_proto::FileBytes::check`]), so that malformed
/// bytes anywhere are refused as `inspect` refuses them.
pub fn extract_file(
    path: impl AsRef<Path>,
    node: NodeSource,
    options: &Options,
    out: &mut Extraction,
) -> Result<()> {
    let path = path.as_ref();
    let bytes = FileBytes::open(path)?;
    // Everything the scan skips (planes without collectives, stats it does
    // not look at) is checked too: a file is read whole or refused. The
    // check and the scan run side by side; the check's error comes first,
    // and `out` is left as it was on any error.
    let mut one = Extraction::new();
    let (checked, scanned) = rayon::join(
        || bytes.check(),
        || extract_bytes(&bytes, path, node, options, &mut one),
    );
    checked?;
    scanned?;
    out.append(one);
    Ok(())
}

/// Extract the collectives of an encoded XSpace into `out`; `path` names the
/// bytes in errors and in the node table. Malformed bytes met on the way are
/// errors; parts the scan does not read are not checked (see
/// [`extract_file`]).
pub fn extract_bytes(
    bytes: &[u8],
    path: &Path,
    node: NodeSource,
    options: &Options,
    out: &mut Extraction,
) -> Result<()> {
    scan_bytes(bytes, path, node, options, out, None).map(drop)
}

/// Moves the times of a trace's events while its collectives are read, so
/// that one read gives the collectives both as recorded and as they will
/// be after alignment.
pub trait Retime {
    /// The new absolute time (ps) of the absolute time `abs_ps` of an event
    /// on `line` of `plane`. Must be non-decreasing in `abs_ps` on a line.
    fn retime(&self, plane: &PlaneView<'_>, line: &LineView<'_>, abs_ps: i128) -> i128;
}

/// Extract the collectives of an encoded XSpace in one read: as recorded
/// into `before`, and with every time moved by `retime` into `after`.
pub fn extract_bytes_retimed(
    bytes: &[u8],
    path: &Path,
    node: NodeSource,
    options: &Options,
    retime: &dyn Retime,
    before: &mut Extraction,
    after: &mut Extraction,
) -> Result<()> {
    let mut mine = Extraction::new();
    let moved = scan_bytes(bytes, path, node, options, &mut mine, Some(retime))?;
    append_retimed(mine, &moved, before, after);
    Ok(())
}

/// Append the collectives `mine` of one file as recorded to `before`, and
/// with the moved `(begin, end)` of each occurrence (in order, as
/// [`Capture::finish`] returns them) to `after`.
pub fn append_retimed(
    mine: Extraction,
    moved: &[(TimePs, TimePs)],
    before: &mut Extraction,
    after: &mut Extraction,
) {
    assert_eq!(
        mine.occurrences().len(),
        moved.len(),
        "one moved pair per occurrence"
    );
    let mut retimed = mine.clone();
    for (o, &(begin, end)) in retimed.occurrences_mut().iter_mut().zip(moved) {
        o.begin = begin;
        o.end = end;
    }
    before.append(mine);
    after.append(retimed);
}

/// Scan `bytes` into `out`; with `retime`, returns the moved `(begin,
/// end)` of every occurrence pushed, in order.
fn scan_bytes(
    bytes: &[u8],
    path: &Path,
    node: NodeSource,
    options: &Options,
    out: &mut Extraction,
    retime: Option<&dyn Retime>,
) -> Result<Vec<(TimePs, TimePs)>> {
    let space = SpaceView::new(bytes);
    let mut capture = Capture::new(bytes, path, node, options, out)?;
    for plane in space.planes() {
        let plane = plane.map_err(|e| capture.wire(e))?;
        let Some(scan) = capture.plane(&plane)? else {
            continue;
        };
        for line in plane.lines() {
            let line = line.map_err(|e| capture.wire(e))?;
            let mut scanned = scan.line(&line);
            let moved = |begin, end| match retime {
                Some(r) => (r.retime(&plane, &line, begin), r.retime(&plane, &line, end)),
                None => (begin, end),
            };
            for event in line.events() {
                let event = event.map_err(|e| capture.wire(e))?;
                scanned.event(&scan, &event, moved);
                if scanned.faulted() {
                    break;
                }
            }
            capture.line_done(&scan, scanned)?;
        }
    }
    Ok(capture.finish())
}
