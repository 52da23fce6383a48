//! Where an aligned plane goes: the same place as in the input, or where a
//! merge puts it (another id and name, plane stats added, viewer rows
//! renumbered).

use std::collections::HashMap;

use xplane_proto::{LineView, x_stat};

/// How one aligned plane is written. [`PlaneOutput::same`] keeps the
/// input's id and name and adds nothing.
#[derive(Debug, Clone, Default)]
pub struct PlaneOutput {
    /// The plane id in the output.
    pub id: i64,
    /// The plane name in the output.
    pub name: String,
    /// Plane stats to set, by stat name (replacing a stat of the same name).
    pub set_stats: Vec<(&'static str, x_stat::Value)>,
    /// A new `display_id` for the line at this index of the plane.
    pub display_ids: HashMap<usize, i64>,
}

impl PlaneOutput {
    /// The input's id and name, nothing added.
    pub fn same(id: i64, name: &str) -> Self {
        PlaneOutput {
            id,
            name: name.to_owned(),
            ..Default::default()
        }
    }
}

/// The plane being written, as the caller that places it sees it.
pub struct PlaneSource<'p, 'a> {
    /// The input plane's id.
    pub id: i64,
    /// The input plane's name.
    pub name: &'p str,
    /// The input plane's lines (empty for a plane the aligner adds: a
    /// `Task Environment` for a trace that had none).
    pub lines: &'p [LineView<'a>],
}

/// What writing one plane did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PlaneWritten {
    /// Lines written.
    pub lines: u64,
    /// Events written (mapped or copied).
    pub events: u64,
}

/// Set the stats of `output` on an owned plane, interning their names.
pub(crate) fn apply_stats(plane: &mut xplane_proto::XPlane, output: &PlaneOutput) {
    use xplane_proto::XPlaneExt as _;
    for (name, value) in &output.set_stats {
        plane.set_stat(name, value.clone());
    }
}
