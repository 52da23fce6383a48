//! Which planes of the inputs are exported, to which node each belongs, and
//! in which order the tracks appear.

use std::collections::BTreeMap;
use std::path::Path;

use collective_check::{NodeId, NodeSource};
use xplane_proto::{
    GPU_PLANE_PREFIX, HOST_PLANE, HOSTNAME_STAT, NODE_ID_STAT, ORIGINAL_PLANE_STAT, PlaneIndex,
    PlaneView, SpaceView, StatValue, WireError, session_start_ns_view,
};

use crate::error::{Error, Result};
use crate::walk::Input;

/// What a plane is, by its name in its node's own file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Role {
    /// `/host:CPU`: one thread track per line.
    Host,
    /// `/device:GPU:<k>`: one track per stream.
    Gpu(u32),
    /// Any other plane with events.
    Other,
}

impl Role {
    fn of(name: &str) -> Role {
        if name == HOST_PLANE {
            return Role::Host;
        }
        match name.strip_prefix(GPU_PLANE_PREFIX).map(str::parse) {
            Some(Ok(k)) => Role::Gpu(k),
            _ => Role::Other,
        }
    }

    /// The category of the plane's slices.
    pub fn category(self) -> &'static str {
        match self {
            Role::Host => "host",
            Role::Gpu(_) => "gpu",
            Role::Other => "other",
        }
    }
}

/// One exported plane.
pub(crate) struct PlaneEntry<'a> {
    pub input: usize,
    pub plane: PlaneView<'a>,
    pub index: PlaneIndex<'a>,
    pub node: NodeId,
    pub role: Role,
    /// The plane's name in its node's own file.
    pub original: &'a str,
    /// Session start of its input, epoch ns.
    pub t_sess: i128,
}

/// One node.
pub(crate) struct NodeEntry {
    /// Its process id: the node id + 1, a positive `i32`.
    pub pid: i32,
    pub hostname: Option<String>,
}

/// The planes to export, in track order, and the nodes.
pub(crate) struct Survey<'a> {
    pub planes: Vec<PlaneEntry<'a>>,
    pub nodes: BTreeMap<NodeId, NodeEntry>,
    /// The earliest line start of `planes`, epoch ns (`None` without lines).
    pub earliest_line_ns: Option<i128>,
}

/// Malformed bytes of `input`, reported as the shared checker reports them
/// (file, plane/line/event, byte offset).
pub(crate) fn wire<'i>(input: &'i Input<'_>) -> impl Fn(WireError) -> Error + Copy + 'i {
    move |source| {
        Error::Read(xplane_proto::malformed_error(
            input.path,
            &xplane_proto::SpaceView::new(input.bytes),
            source,
        ))
    }
}

/// Read every input's plane headers and plane stats.
pub(crate) fn survey<'a>(inputs: &[Input<'a>]) -> Result<Survey<'a>> {
    let mut planes = Vec::new();
    let mut nodes: BTreeMap<NodeId, NodeEntry> = BTreeMap::new();
    let mut given: BTreeMap<NodeId, &Path> = BTreeMap::new();
    for (i, input) in inputs.iter().enumerate() {
        let space = SpaceView::new(input.bytes);
        let t_sess = session_start_ns_view(&space).map_err(wire(input))?;
        if let NodeSource::Given(node) = input.node {
            let entry = node_entry(&mut nodes, input, i128::from(node.get()))?.1;
            let host = space.hostnames().next().transpose();
            let host = host.map_err(wire(input))?;
            entry.hostname = entry.hostname.take().or(host.map(str::to_owned));
            if let Some(first) = given.insert(node, input.path) {
                return Err(Error::DuplicateNode {
                    node,
                    first: first.to_path_buf(),
                    second: input.path.to_path_buf(),
                });
            }
        }
        for plane in space.planes() {
            let plane = plane.map_err(wire(input))?;
            if let Some(entry) = plane_entry(input, i, plane, t_sess, &mut nodes)? {
                planes.push(entry);
            }
        }
    }
    planes.sort_by_key(|p| (p.node, p.role, p.input));
    let earliest_line_ns = earliest_line(inputs, &planes)?;
    Ok(Survey {
        planes,
        nodes,
        earliest_line_ns,
    })
}

/// The earliest line start of `planes`, epoch ns.
fn earliest_line(inputs: &[Input<'_>], planes: &[PlaneEntry<'_>]) -> Result<Option<i128>> {
    let mut earliest: Option<i128> = None;
    for entry in planes {
        for line in entry.plane.lines() {
            let line = line.map_err(wire(&inputs[entry.input]))?;
            let start = entry.t_sess + i128::from(line.timestamp_ns);
            earliest = Some(earliest.map_or(start, |e| e.min(start)));
        }
    }
    Ok(earliest)
}

fn plane_entry<'a>(
    input: &Input<'a>,
    i: usize,
    plane: PlaneView<'a>,
    t_sess: i128,
    nodes: &mut BTreeMap<NodeId, NodeEntry>,
) -> Result<Option<PlaneEntry<'a>>> {
    let wired = wire(input);
    let mut has_events = false;
    for line in plane.lines() {
        if line.map_err(wired)?.events().next().is_some() {
            has_events = true;
            break;
        }
    }
    if !has_events {
        return Ok(None);
    }
    let index = PlaneIndex::new(&plane).map_err(wired)?;
    let (node_stat, host_stat, original_stat) = (
        index.stat_id(NODE_ID_STAT),
        index.stat_id(HOSTNAME_STAT),
        index.stat_id(ORIGINAL_PLANE_STAT),
    );
    let (mut node_id, mut hostname, mut original) = (None, None, None);
    for stat in plane.stats() {
        let stat = stat.map_err(wired)?;
        let id = Some(stat.metadata_id);
        let text = stat.value.as_ref().and_then(|v| index.resolve_str(v));
        if id == node_stat {
            node_id = stat.value.as_ref().and_then(StatValue::as_integer);
        } else if id == host_stat {
            hostname = text;
        } else if id == original_stat {
            original = text;
        }
    }
    let value = match input.node {
        NodeSource::Given(n) => i128::from(n.get()),
        NodeSource::PlaneStat => node_id.ok_or_else(|| Error::MissingNodeId {
            path: input.path.to_path_buf(),
            plane: plane.name.to_owned(),
        })?,
    };
    let (node, entry) = node_entry(nodes, input, value)?;
    if entry.hostname.is_none() {
        entry.hostname = hostname.map(str::to_owned);
    }
    let original = original.unwrap_or(plane.name);
    Ok(Some(PlaneEntry {
        input: i,
        plane,
        index,
        node,
        role: Role::of(original),
        original,
        t_sess,
    }))
}

/// The display name of a node's process.
/// The entry of the node `value` of `input` names, made when new; an error
/// when its process id (`node + 1`) is not a positive `i32`.
fn node_entry<'n>(
    nodes: &'n mut BTreeMap<NodeId, NodeEntry>,
    input: &Input<'_>,
    value: i128,
) -> Result<(NodeId, &'n mut NodeEntry)> {
    let pid = i32::try_from(value + 1).ok().filter(|&pid| pid > 0);
    let (Some(pid), Ok(node)) = (pid, u32::try_from(value)) else {
        return Err(Error::NodeIdRange {
            path: input.path.to_path_buf(),
            value,
        });
    };
    let node = NodeId(node);
    let entry = nodes.entry(node).or_insert(NodeEntry {
        pid,
        hostname: None,
    });
    Ok((node, entry))
}

pub(crate) fn process_name(node: NodeId, entry: &NodeEntry) -> String {
    match &entry.hostname {
        Some(h) if !h.is_empty() => format!("node {node} · {h}"),
        _ => format!("node {node}"),
    }
}
