//! Happens-before validation of collectives across the nodes of a profiled
//! training run: did the timeline put every participant's start before any
//! participant's end?
//!
//! - [`extract_file`] / [`extract_bytes`] read collective events (XLA ops by
//!   `hlo_op` or name, NCCL/RCCL kernels; see [`classify_name`]) from one
//!   merged file ([`NodeSource::PlaneStat`]) or from per-node files
//!   ([`NodeSource::Given`]) into an [`Extraction`] of [`Occurrence`]s.
//! - [`check`] matches them into instances ([`group`] gives those
//!   [`Group`]s on their own) by `(hlo_module, op, run_id)` and the
//!   participant's [`ReplicaGroup`] (read from the HLO protos of the
//!   `/host:metadata` plane, [`HloModules`]), or by occurrence order, and
//!   applies the rules, giving a [`Report`]:
//!   [`Instance`]s with start/end spread, [`Violation`]s with their size,
//!   [`Warning`]s for anything unmatched, and a [`Straggler`] table. A
//!   collective-permute instance's group carries its [`Transfers`] (who
//!   sends to whom, from the HLO's `source_target_pairs`).
//! - [`extract_kineto`] / [`extract_kineto_file`] read PyTorch profiler
//!   (Kineto) traces into the same model, one node per rank (NCCL/RCCL by
//!   `Comms Id` or `Seq`, gloo by order within the process group of its
//!   worker thread); [`verify_kineto_groups`] checks the NCCL/RCCL instances
//!   against their process groups ([`KinetoRecords`]) and fails on ranks that
//!   disagree ([`InstanceDisagreement`], [`RankOutsideGroup`],
//!   [`GroupRanksConflict`]); [`check_kineto_files`] does both for a run.
//! - [`check_files`] and [`check_merged`] do both for files;
//!   [`Report::write_json`], [`Report::write_csv`] and
//!   [`Report::summary_text`] write it out.
//!
//! Times are absolute epoch picoseconds ([`TimePs`], `i128`); participants
//! are `(node, device)` ([`Participant`]).
//!
//! ```
//! use collective_check::*;
//!
//! // Two nodes run one all-reduce; node 1's clock is 5 µs ahead, so it seems
//! // to start after node 0 has already finished.
//! let mut ex = Extraction::new();
//! let op = ex.intern("all-reduce.1");
//! for (node, begin, end) in [(0, 1_000_000, 4_000_000), (1, 6_000_000, 9_000_000)] {
//!     ex.push(Occurrence {
//!         participant: Participant { node: NodeId(node), device: None },
//!         kind: CollectiveKind::AllReduce,
//!         op,
//!         module: None,
//!         run_id: Some(7),
//!         group: ReplicaGroup::All,
//!         peers: PermutePeers::NotLookedUp,
//!         correlation: None,
//!         begin: TimePs(begin),
//!         end: TimePs(end),
//!         on_device: false,
//!     });
//! }
//! let report = check(&ex, &Options::default());
//! assert_eq!(report.summary.counts.matched, 1);
//! assert_eq!(report.violations[0].size_ns, 2_000.0);
//! assert!(!report.passes(0));
//! ```
#![deny(missing_docs)]

mod check;
mod classify;
mod comms;
mod counts;
mod error;
mod extract;
mod gloo_counts;
mod gloo_groups;
mod group_error;
mod groups;
mod hlo_groups;
mod input;
mod kineto;
mod matching;
mod occurrence;
mod output;
mod permute;
mod report;
mod scan;
mod sequence;
mod stored;
mod units;

pub use check::check;
pub use classify::{
    CollectiveKind, END_MARKER_PREFIX, EventClass, classify_event, classify_name,
    is_collective_candidate,
};
pub use comms::{
    CommsKey, CommsRecord, GroupRanks, KinetoRecords, RanksOrigin, RootRecord, int_list,
};
pub use counts::Counts;
pub use error::{
    CommsField, Error, GroupRanksConflict, InstanceDisagreement, RankOutsideGroup, RankValue,
    Result,
};
pub use extract::{
    NodeSource, Options, PlaneChoice, Retime, append_retimed, extract_bytes, extract_bytes_retimed,
    extract_file,
};
pub use gloo_counts::GlooCounts;
pub use gloo_groups::GlooUnresolved;
pub use groups::verify_kineto_groups;
pub use hlo_groups::{HLO_PROTO_STAT, HloModules, ReplicaGroup};
pub use input::{check_files, check_merged, node_id_from_path, unreadable_node_id_in_path};
pub use kineto::{
    GLOO_PREFIX, RECORD_PARAM_COMMS, check_kineto_files, extract_kineto, extract_kineto_file,
    kineto_collective_kind,
};
pub use matching::{Group, MatchKey, group};
pub use occurrence::{ExtractStats, Extraction, NodeInfo, Occurrence, Sym};
pub use output::CSV_COLUMNS;
pub use permute::{PeerLink, PermuteLinks, PermutePeers, Transfer, Transfers};
pub use report::{
    Instance, Report, Slot, Spread, Straggler, Summary, Violation, Warning, WarningKind,
};
pub use scan::{Capture, LineScan, PlaneScan, Seen};
pub use units::{DurationPs, NodeId, Participant, TimePs};
