//! Who sends to whom in a collective-permute, from the HLO protos of the
//! trace.
//!
//! A collective-permute's HLO instruction lists its `(source, target)`
//! pairs: partition ids with a `channel_id`, else replica ids
//! ([`crate::HloModules`]). Read with the module's device assignment and an
//! occurrence's `device_ordinal` (its global device id), they say which
//! device the occurrence's device sends to and receives from
//! ([`PermutePeers`], set while the trace is read). Once the occurrences
//! are matched into an instance, their peers give the instance's transfers
//! between its members ([`Transfers`]): the receiver of a transfer cannot
//! end before its sender began.

use std::collections::{BTreeSet, HashMap};

use crate::occurrence::Occurrence;

/// One side of a collective-permute device's transfers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum PeerLink {
    /// No pair names the device on this side (it sends, or receives,
    /// nothing).
    None,
    /// The peer's global device id (a `device_ordinal`).
    Device(i64),
    /// The pair's peer id has no device in the module's device assignment.
    Unplaced,
}

/// Whom one device of a collective-permute sends to and receives from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct PermuteLinks {
    /// The device's global id (the occurrence's `device_ordinal`).
    pub device: i64,
    /// The device it sends to.
    pub target: PeerLink,
    /// The device it receives from.
    pub source: PeerLink,
}

/// What the trace's HLO says about a collective-permute occurrence's
/// transfers.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum PermutePeers {
    /// Not looked up: not a collective-permute, or one without a `run_id`
    /// (read from a trace without XLA's stats).
    #[default]
    NotLookedUp,
    /// No HLO proto of the op's module with the op in the trace.
    Unknown,
    /// The op's HLO is known, but the occurrence's device is not: no
    /// `device_ordinal` stat, or a device not in the module's device
    /// assignment.
    Unplaced,
    /// The device and its peers.
    Known(PermuteLinks),
}

/// One transfer of a collective-permute instance, as indices into the
/// instance's members: `from` sends to `to` (equal for a device that sends
/// to itself).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Transfer {
    /// The sender.
    pub from: usize,
    /// The receiver.
    pub to: usize,
}

/// The transfers between the members of one collective-permute instance,
/// and what kept other pairs out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Transfers {
    /// Every transfer whose both members are in the instance, as either
    /// member's HLO names it, sorted, each once.
    pub pairs: Vec<Transfer>,
    /// Members whose peers are known ([`PermutePeers::Known`]).
    pub known: usize,
    /// Members whose peers are not known ([`PermutePeers::Unknown`] or
    /// [`PermutePeers::NotLookedUp`]).
    pub unknown: usize,
    /// Members that cannot be placed ([`PermutePeers::Unplaced`]), and
    /// peers of known members that cannot be ([`PeerLink::Unplaced`]).
    pub unplaced: usize,
    /// Peers of known members that are no known member of the instance:
    /// the peer's occurrence is missing, or its own peers are not known.
    pub unmatched: usize,
}

impl Transfers {
    /// The transfers between `members` (the occurrences of one instance).
    pub fn of(members: &[Occurrence]) -> Self {
        let mut t = Transfers::default();
        let at: HashMap<i64, usize> = members
            .iter()
            .enumerate()
            .filter_map(|(i, o)| match o.peers {
                PermutePeers::Known(l) => Some((l.device, i)),
                _ => None,
            })
            .collect();
        let mut pairs = BTreeSet::new();
        for (i, o) in members.iter().enumerate() {
            let links = match o.peers {
                PermutePeers::Known(l) => l,
                PermutePeers::Unplaced => {
                    t.unplaced += 1;
                    continue;
                }
                PermutePeers::Unknown | PermutePeers::NotLookedUp => {
                    t.unknown += 1;
                    continue;
                }
            };
            t.known += 1;
            for (link, sends) in [(links.target, true), (links.source, false)] {
                match link {
                    PeerLink::None => {}
                    PeerLink::Unplaced => t.unplaced += 1,
                    PeerLink::Device(d) => match at.get(&d) {
                        Some(&j) if sends => drop(pairs.insert(Transfer { from: i, to: j })),
                        Some(&j) => drop(pairs.insert(Transfer { from: j, to: i })),
                        None => t.unmatched += 1,
                    },
                }
            }
        }
        t.pairs = pairs.into_iter().collect();
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::CollectiveKind;
    use crate::hlo_groups::ReplicaGroup;
    use crate::occurrence::Extraction;
    use crate::units::{NodeId, Participant, TimePs};

    fn member(ex: &mut Extraction, node: u32, peers: PermutePeers) -> Occurrence {
        Occurrence {
            participant: Participant {
                node: NodeId(node),
                device: None,
            },
            kind: CollectiveKind::CollectivePermute,
            op: ex.intern("ppermute.1"),
            module: None,
            run_id: Some(1),
            group: ReplicaGroup::All,
            peers,
            correlation: None,
            begin: TimePs(0),
            end: TimePs(1),
            on_device: false,
        }
    }

    fn known(device: i64, target: PeerLink, source: PeerLink) -> PermutePeers {
        PermutePeers::Known(PermuteLinks {
            device,
            target,
            source,
        })
    }

    #[test]
    fn a_ring_gives_one_transfer_per_pair() {
        let mut ex = Extraction::new();
        let d = PeerLink::Device;
        let members: Vec<Occurrence> = (0..3u32)
            .map(|n| {
                let i = i64::from(n);
                member(&mut ex, n, known(i, d((i + 1) % 3), d((i + 2) % 3)))
            })
            .collect();
        let t = Transfers::of(&members);
        let pairs: Vec<(usize, usize)> = t.pairs.iter().map(|p| (p.from, p.to)).collect();
        assert_eq!(pairs, [(0, 1), (1, 2), (2, 0)]);
        assert_eq!((t.known, t.unknown, t.unplaced, t.unmatched), (3, 0, 0, 0));
    }

    #[test]
    fn peers_that_are_not_known_members_are_counted() {
        let mut ex = Extraction::new();
        let d = PeerLink::Device;
        let members = [
            // Sends to itself; receives from device 5, which is not here.
            member(&mut ex, 0, known(0, d(0), d(5))),
            // Sends to the member whose peers are not known.
            member(&mut ex, 1, known(1, d(2), PeerLink::Unplaced)),
            member(&mut ex, 2, PermutePeers::Unknown),
            member(&mut ex, 3, PermutePeers::Unplaced),
        ];
        let t = Transfers::of(&members);
        assert_eq!(t.pairs, [Transfer { from: 0, to: 0 }]);
        assert_eq!((t.known, t.unknown, t.unplaced, t.unmatched), (2, 1, 2, 2));
    }
}
