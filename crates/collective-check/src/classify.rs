//! Which events are collectives, by event name or `hlo_op`.
//!
//! Rules (pitfall 15: "reduce" in a name does not make a collective):
//! - XLA op names: the part before the first `.`, in either spelling
//!   (`all-gather` or JAX's `all_gather`), must be one of the known
//!   collective opcodes (`all-reduce`, `all-gather`, `reduce-scatter`,
//!   `all-to-all`, `collective-permute`, `collective-broadcast`, `send`,
//!   `recv`) or a JAX primitive name (`psum`, `pmax`, `pmin`, `psum_scatter`,
//!   `ppermute`), with an optional `-start` and `_invariant` suffix
//!   (`psum_invariant.7`, `all-reduce-start.2`). `reduce.3`, `reduce-window`,
//!   `multiply_reduce_fusion` and every `-done` op are not collectives.
//! - NCCL/RCCL names: any name containing `nccl` or `rccl`
//!   (`ncclDevKernel_AllReduce_Sum_f32_RING_LL`, `void ncclKernel_...`),
//!   classified by the operation word after it.
//! - `end: <op>`: the completion marker XLA's thunk executor writes inside an
//!   op's event; it is never an instance of its own ([`EventClass::EndMarker`]).
//!
//! Matching is ASCII case-insensitive.

use serde::{Deserialize, Serialize};

/// The kind of a collective operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum CollectiveKind {
    /// All-reduce (XLA `all-reduce`, JAX `psum`, NCCL `AllReduce`).
    AllReduce,
    /// All-gather.
    AllGather,
    /// Reduce-scatter.
    ReduceScatter,
    /// All-to-all.
    AllToAll,
    /// Collective permute (each participant sends to one and receives from one).
    CollectivePermute,
    /// Rooted broadcast.
    Broadcast,
    /// Rooted reduce (NCCL `Reduce`).
    Reduce,
    /// Point-to-point send (also NCCL `SendRecv`).
    Send,
    /// Point-to-point receive.
    Recv,
    /// An NCCL/RCCL kernel whose operation is not named (`ncclDevKernel_Generic`).
    OtherNccl,
}

impl CollectiveKind {
    /// True for collectives where no participant can finish before every
    /// participant has started; only these are checked for happens-before.
    pub fn is_all_to_all_style(self) -> bool {
        matches!(
            self,
            Self::AllReduce | Self::AllGather | Self::ReduceScatter | Self::AllToAll
        )
    }

    /// True for point-to-point operations (left out unless asked for).
    pub fn is_point_to_point(self) -> bool {
        matches!(self, Self::Send | Self::Recv)
    }

    /// True for the rooted kinds (broadcast, reduce): one member, the
    /// root, sends to or receives from every other.
    pub fn is_rooted(self) -> bool {
        matches!(self, Self::Broadcast | Self::Reduce)
    }

    /// The kebab-case name used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::AllReduce => "all-reduce",
            Self::AllGather => "all-gather",
            Self::ReduceScatter => "reduce-scatter",
            Self::AllToAll => "all-to-all",
            Self::CollectivePermute => "collective-permute",
            Self::Broadcast => "broadcast",
            Self::Reduce => "reduce",
            Self::Send => "send",
            Self::Recv => "recv",
            Self::OtherNccl => "other-nccl",
        }
    }
}

impl std::fmt::Display for CollectiveKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What an event (by its metadata) is to the validator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventClass {
    /// A collective operation of this kind.
    Collective(CollectiveKind),
    /// XLA's `end: <op>` completion marker of a collective op.
    EndMarker,
    /// A name that looks like a collective's but is not classified
    /// ([`is_collective_candidate`]): counted, never checked.
    Unrecognised,
}

/// The prefix of XLA's completion marker events.
pub const END_MARKER_PREFIX: &str = "end: ";

// Op kinds in their hyphen spelling (names are normalised to it first).
const XLA_OPS: &[(&str, CollectiveKind)] = &[
    ("all-reduce", CollectiveKind::AllReduce),
    ("all-gather", CollectiveKind::AllGather),
    ("reduce-scatter", CollectiveKind::ReduceScatter),
    ("all-to-all", CollectiveKind::AllToAll),
    ("collective-permute", CollectiveKind::CollectivePermute),
    ("collective-broadcast", CollectiveKind::Broadcast),
    ("psum", CollectiveKind::AllReduce),
    ("pmax", CollectiveKind::AllReduce),
    ("pmin", CollectiveKind::AllReduce),
    ("psum-scatter", CollectiveKind::ReduceScatter),
    ("ppermute", CollectiveKind::CollectivePermute),
    ("send", CollectiveKind::Send),
    ("recv", CollectiveKind::Recv),
];

// Words that make an unclassified name a collective candidate (normalised
// spelling, lower case).
const CANDIDATE_WORDS: &[&str] = &[
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "all-to-all",
    "allreduce",
    "allgather",
    "reducescatter",
    "alltoall",
    "collective",
    "permute",
    "psum",
    "pmax",
    "pmin",
];

/// The longest op-kind base [`classify_name`] normalises (longer bases are
/// never an op kind).
const MAX_BASE: usize = 48;

// Order matters: longer words that contain shorter ones come first.
const NCCL_OPS: &[(&str, CollectiveKind)] = &[
    ("allreduce", CollectiveKind::AllReduce),
    ("allgather", CollectiveKind::AllGather),
    ("reducescatter", CollectiveKind::ReduceScatter),
    ("alltoall", CollectiveKind::AllToAll),
    ("sendrecv", CollectiveKind::Send),
    ("broadcast", CollectiveKind::Broadcast),
    ("bcast", CollectiveKind::Broadcast),
    ("reduce", CollectiveKind::Reduce),
    ("send", CollectiveKind::Send),
    ("recv", CollectiveKind::Recv),
];

/// The collective kind of an op or kernel name, if it is one. Does not
/// allocate (it also runs on `hlo_op` strings given as plain `str_value`).
///
/// ```
/// use collective_check::{CollectiveKind, classify_name};
/// assert_eq!(classify_name("psum_invariant.7"), Some(CollectiveKind::AllReduce));
/// assert_eq!(classify_name("All-Reduce-Start.2"), Some(CollectiveKind::AllReduce));
/// assert_eq!(classify_name("ncclDevKernel_AllGather_RING_LL"), Some(CollectiveKind::AllGather));
/// assert_eq!(classify_name("reduce.3"), None);
/// assert_eq!(classify_name("reduce-window"), None);
/// assert_eq!(classify_name("all-reduce-done"), None);
/// assert_eq!(classify_name("end: all-reduce"), None);
/// ```
pub fn classify_name(name: &str) -> Option<CollectiveKind> {
    let name = name.trim().as_bytes();
    if starts_with_ci(name, END_MARKER_PREFIX.as_bytes()) {
        return None;
    }
    if let Some(at) = find_ci(name, b"nccl").or_else(|| find_ci(name, b"rccl")) {
        // The operation word: the next alphanumerics, lower-cased, separators dropped.
        let mut word = [0u8; 64];
        let mut len = 0;
        for &b in &name[at + 4..] {
            if len == word.len() {
                break;
            }
            if b.is_ascii_alphanumeric() {
                word[len] = b.to_ascii_lowercase();
                len += 1;
            }
        }
        let word = &word[..len];
        return Some(
            NCCL_OPS
                .iter()
                .find(|(w, _)| find_ci(word, w.as_bytes()).is_some())
                .map_or(CollectiveKind::OtherNccl, |&(_, k)| k),
        );
    }
    let base = name.split(|&b| b == b'.').next().unwrap_or(&[]);
    let mut buf = [0u8; MAX_BASE];
    let base = normalise(base, &mut buf)?;
    let base = base.strip_suffix(b"-start").unwrap_or(base);
    let base = base.strip_suffix(b"-invariant").unwrap_or(base);
    XLA_OPS
        .iter()
        .find(|(w, _)| w.as_bytes() == base)
        .map(|&(_, k)| k)
}

/// `name` lower-cased with `_` spelled `-`, in `buf`; `None` when longer.
fn normalise<'b>(name: &[u8], buf: &'b mut [u8; MAX_BASE]) -> Option<&'b [u8]> {
    let out = buf.get_mut(..name.len())?;
    for (o, &b) in out.iter_mut().zip(name) {
        *o = if b == b'_' {
            b'-'
        } else {
            b.to_ascii_lowercase()
        };
    }
    Some(out)
}

/// True when `name` is not a collective by [`classify_name`] but looks like
/// one: it names a collective word (`all_gather_fusion`,
/// `collective-permute-combiner`, `psum2`) in either spelling. The `-done`
/// halves of async collectives and `end:` markers are not candidates: they
/// are left out on purpose.
///
/// ```
/// use collective_check::is_collective_candidate;
/// assert!(is_collective_candidate("all_gather_fusion.1"));
/// assert!(!is_collective_candidate("all_gather.3")); // classified
/// assert!(!is_collective_candidate("all-gather-done.3"));
/// assert!(!is_collective_candidate("multiply_reduce_fusion"));
/// ```
pub fn is_collective_candidate(name: &str) -> bool {
    let name = name.trim();
    if classify_name(name).is_some()
        || starts_with_ci(name.as_bytes(), END_MARKER_PREFIX.as_bytes())
    {
        return false;
    }
    let lower: String = name
        .chars()
        .map(|c| {
            if c == '_' {
                '-'
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect();
    let base = lower.split('.').next().unwrap_or("");
    !base.ends_with("-done") && CANDIDATE_WORDS.iter().any(|w| base.contains(w))
}

fn starts_with_ci(hay: &[u8], prefix: &[u8]) -> bool {
    hay.len() >= prefix.len() && hay[..prefix.len()].eq_ignore_ascii_case(prefix)
}

fn find_ci(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    (0..=hay.len() - needle.len()).find(|&i| hay[i..i + needle.len()].eq_ignore_ascii_case(needle))
}

/// The class of an event metadata name: a collective, the `end:` marker of
/// one, a name that looks like a collective's but is not classified, or
/// nothing (`None`).
pub fn classify_event(name: &str) -> Option<EventClass> {
    if let Some(op) = name.strip_prefix(END_MARKER_PREFIX) {
        return classify_name(op).map(|_| EventClass::EndMarker);
    }
    match classify_name(name) {
        Some(k) => Some(EventClass::Collective(k)),
        None if is_collective_candidate(name) => Some(EventClass::Unrecognised),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reduce_in_a_name_is_not_a_collective() {
        for name in [
            "reduce.3",
            "reduce-window.1",
            "reduce",
            "multiply_reduce_fusion",
            "reduce_sum",
            "all-reduce-done.1",
            "loop_reduce_fusion.2",
            "send-done.4",
            "ThunkExecutor::Execute",
            "",
        ] {
            assert_eq!(classify_name(name), None, "{name}");
        }
    }

    #[test]
    fn collectives_by_xla_name() {
        use CollectiveKind::*;
        for (name, kind) in [
            ("all-reduce", AllReduce),
            ("all-reduce.12", AllReduce),
            ("ALL-GATHER-START.3", AllGather),
            ("reduce-scatter.1", ReduceScatter),
            ("all-to-all", AllToAll),
            ("collective-permute-start.2", CollectivePermute),
            ("psum_invariant.7", AllReduce),
            ("psum", AllReduce),
            ("send.1", Send),
            ("recv", Recv),
        ] {
            assert_eq!(classify_name(name), Some(kind), "{name}");
        }
    }

    #[test]
    fn collectives_by_jax_underscore_name() {
        use CollectiveKind::*;
        for (name, kind) in [
            ("all_gather.3", AllGather),
            ("reduce_scatter.7", ReduceScatter),
            ("ppermute.3", CollectivePermute),
            ("all_to_all.2", AllToAll),
            ("psum.1", AllReduce),
            ("psum_invariant.7", AllReduce),
            ("all_reduce.4", AllReduce),
            ("All_Reduce_Start.2", AllReduce),
            ("collective_permute.1", CollectivePermute),
            ("psum_scatter.2", ReduceScatter),
            ("pmax.5", AllReduce),
            ("all_gather_invariant.1", AllGather),
        ] {
            assert_eq!(classify_name(name), Some(kind), "{name}");
        }
        for name in [
            "all_gather_done.3",
            "all_reduce-done",
            "reduce_sum.8",
            "reduce_window.1",
            "send_done.2",
            "a_very_long_name_of_a_fusion_that_is_longer_than_any_op_kind_here.1",
        ] {
            assert_eq!(classify_name(name), None, "{name}");
        }
    }

    #[test]
    fn candidates_are_collective_looking_names_left_unclassified() {
        for name in [
            "all_gather_fusion.1",
            "collective-permute-combiner",
            "psum2.1",
            "AllReduceThunk",
        ] {
            assert!(is_collective_candidate(name), "{name}");
            assert_eq!(
                classify_event(name),
                Some(EventClass::Unrecognised),
                "{name}"
            );
        }
        for name in [
            "all_gather.3",
            "all-reduce-done.1",
            "end: all_gather_fusion",
            "multiply_reduce_fusion",
            "reduce.3",
            "ThunkExecutor::Execute",
        ] {
            assert!(!is_collective_candidate(name), "{name}");
        }
        assert_eq!(classify_event("reduce.3"), None);
    }

    #[test]
    fn collectives_by_nccl_name() {
        use CollectiveKind::*;
        for (name, kind) in [
            ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", AllReduce),
            (
                "void ncclKernel_ReduceScatter_RING_LL_Sum_float(ncclWorkElem)",
                ReduceScatter,
            ),
            ("rcclAllToAll", AllToAll),
            ("ncclDevKernel_SendRecv", Send),
            ("ncclKernel_Reduce_RING_LL_Sum_int8_t", Reduce),
            ("ncclDevKernel_Broadcast_RING_LL", Broadcast),
            ("ncclDevKernel_Generic", OtherNccl),
        ] {
            assert_eq!(classify_name(name), Some(kind), "{name}");
        }
    }

    #[test]
    fn end_markers() {
        assert_eq!(
            classify_event("end: psum_invariant.7"),
            Some(EventClass::EndMarker)
        );
        assert_eq!(classify_event("end: multiply_add_fusion"), None);
        assert_eq!(
            classify_event("all-reduce"),
            Some(EventClass::Collective(CollectiveKind::AllReduce))
        );
    }

    #[test]
    fn only_all_to_all_kinds_are_checked() {
        assert!(CollectiveKind::AllReduce.is_all_to_all_style());
        assert!(!CollectiveKind::CollectivePermute.is_all_to_all_style());
        assert!(!CollectiveKind::Broadcast.is_all_to_all_style());
        assert!(CollectiveKind::Recv.is_point_to_point());
    }
}
