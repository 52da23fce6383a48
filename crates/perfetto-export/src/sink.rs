//! What the walk over the input hands to a writer: processes, tracks, and
//! the slices of each track in begin/end order.

use collective_check::NodeId;
use xplane_proto::PlaneIndex;

use crate::args::{Arg, ArgValue};
use crate::error::Result;

/// A process: one node of the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Process {
    /// The process id: the node id + 1 (pid 0 is the idle process in the
    /// system traces Perfetto also reads).
    pub pid: i32,
    /// The node id, which orders the processes.
    pub node: NodeId,
    /// Display name, `node 3 · host-a` (or `node 3`).
    pub name: String,
    /// The process's track uuid (Perfetto).
    pub uuid: u64,
}

/// What kind of track.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrackKind {
    /// The track of a host thread (a host line).
    Thread,
    /// Any other track (a GPU stream, another plane's line, an extra track
    /// for slices that overlap without nesting).
    Named,
    /// A counter of the process ([`NodeCounter`](crate::NodeCounter)): its
    /// values follow as [`Sink::counter`] calls.
    Counter,
}

/// A track of a process: a line of a plane, or an extra track of one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Track {
    /// Unique over the trace (Perfetto track uuid).
    pub uuid: u64,
    /// The process.
    pub pid: i32,
    /// Unique within the process (thread id; Chrome `tid`).
    pub tid: i32,
    /// The process's track uuid.
    pub parent_uuid: u64,
    /// Display name.
    pub name: String,
    /// Thread or named track.
    pub kind: TrackKind,
    /// Position among the process's tracks (0 first).
    pub sort_index: i32,
    /// Category of its slices: `host`, `gpu` or `other`.
    pub category: &'static str,
    /// The earliest time on the track, ns (its first begin).
    pub first_ns: i64,
}

/// How a slice takes part in a flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowStep {
    /// The flow starts here (a kernel launch; a collective's first participant).
    Start,
    /// The flow passes through.
    Step,
    /// The flow ends here (a kernel; a collective's last participant).
    End,
}

/// A slice's part in one flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowRef {
    /// Flow id, unique over the trace.
    pub id: u64,
    /// Its step.
    pub step: FlowStep,
}

/// A slice as handed to a writer.
#[derive(Clone, Debug)]
pub struct SliceInfo<'s, 'a> {
    /// Begin, absolute ns.
    pub begin_ns: i64,
    /// End, absolute ns.
    pub end_ns: i64,
    /// Event metadata id (plane-local; its name is the event's name).
    pub name_id: i64,
    /// The plane's names: event names, stat names, interned strings.
    pub names: &'s PlaneIndex<'a>,
    /// Its stats.
    pub args: &'s [Arg<'a>],
    /// Flows through it.
    pub flows: &'s [FlowRef],
}

impl<'a> SliceInfo<'_, 'a> {
    /// The event's name (empty when the plane has no metadata for it).
    pub fn name(&self) -> &'a str {
        self.names.event_name(self.name_id).unwrap_or("")
    }
}

/// An instant event (a happens-before violation) on the current track.
#[derive(Clone, Debug)]
pub struct InstantInfo {
    /// When, absolute ns.
    pub ns: i64,
    /// Its name.
    pub name: String,
    /// Its arguments.
    pub args: Vec<(&'static str, ArgValue<'static>)>,
}

/// A writer of one output format. The walk calls [`Sink::time_base`] first,
/// then [`Sink::process`] for every node, then per track [`Sink::track`]
/// followed by that track's
/// slices as [`Sink::begin`]/[`Sink::end`] pairs in time order, nesting
/// strictly (or, on a node's violations track, [`Sink::instant`]s; on a
/// counter track, [`Sink::counter`] values); each track is finished before
/// the next starts.
pub trait Sink {
    /// The epoch ns that the times of a relative format count from: the
    /// walk calls it once, before anything else, with a whole second at or
    /// before the start of every line and counter it will pass (formats with
    /// absolute times ignore it).
    fn time_base(&mut self, base_ns: i64) -> Result<()>;
    /// A node's process.
    fn process(&mut self, process: &Process) -> Result<()>;
    /// A new track; the slices that follow are on it.
    fn track(&mut self, track: &Track) -> Result<()>;
    /// A slice begins on the current track.
    fn begin(&mut self, slice: &SliceInfo<'_, '_>) -> Result<()>;
    /// The innermost open slice of the current track ends at `end_ns`.
    fn end(&mut self, end_ns: i64) -> Result<()>;
    /// An instant event on the current track (in time order, after the
    /// track's slices).
    fn instant(&mut self, instant: &InstantInfo) -> Result<()>;
    /// The value of the current counter track ([`TrackKind::Counter`]) from
    /// `ns` on, in time order.
    fn counter(&mut self, ns: i64, value: i64) -> Result<()>;
    /// Everything is written: flush.
    fn finish(&mut self) -> Result<()>;
}
