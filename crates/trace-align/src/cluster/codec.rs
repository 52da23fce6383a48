//! The summary file (version 2): a binary, columnar, exact encoding of a
//! [`NodeSummary`], a few bytes per collective occurrence.
//!
//! ```text
//! magic "TASUMMRY" (8 bytes) | version, u32 little-endian | gzip stream of:
//!   varint n, then n bytes: the head, JSON (everything but the occurrence columns)
//!   key     [count]  varint: index into the head's key table
//!   run_id  [count]  varint: 0 = none, else 1 + zigzag(Δ from the key's last run_id)
//!   corr.   [count]  varint: the same for the correlation id
//!   times            begin and length classes [2 × count] bytes, varint n,
//!                    n bytes of the bits below their leading ones (`times.rs`)
//!   with probe-start times: begin, end [count] varint zigzag, ps, their
//!                    difference from the occurrence's times
//! ```
//!
//! An occurrence's key is everything but its ids and times (participant,
//! kind, op, module, replica group, permute peers, plane); `unit` is the
//! greatest common divisor of every begin and length (1 000 ps for times
//! recorded in ns). The occurrences keep their order, so the fit reads
//! exactly what the trace gave. The gzip trailer (CRC-32 and length)
//! makes a truncated or corrupted file an error; every index, length and
//! range is checked as it is read, and bytes left over are an error.

use std::collections::HashMap;
use std::io::Write;

use collective_check::{
    CollectiveKind, ExtractStats, Extraction, KinetoRecords, NodeInfo, Occurrence, Participant,
    PermutePeers, ReplicaGroup, TimePs,
};
use serde::{Deserialize, Serialize};

use super::summary::{NodeSummary, ProbeStart, SummaryOffsets, SummarySnapshots};

/// The first bytes of every summary.
pub(crate) const MAGIC: &[u8; 8] = b"TASUMMRY";

/// Why a summary's bytes do not decode.
pub(crate) type DecodeError = Box<dyn std::error::Error + Send + Sync>;

/// What an occurrence has besides its ids and times.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct Key {
    participant: Participant,
    kind: CollectiveKind,
    op: u32,
    module: Option<u32>,
    group: ReplicaGroup,
    peers: PermutePeers,
    on_device: bool,
}

/// The summary but its occurrence columns.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Head {
    node: clock_model::NodeId,
    trace: super::TraceIdentity,
    options: alignment_core::AlignOptions,
    snapshots: Option<SummarySnapshots>,
    offsets: Option<SummaryOffsets>,
    names: Vec<String>,
    keys: Vec<Key>,
    stats: ExtractStats,
    nodes: std::collections::BTreeMap<collective_check::NodeId, NodeInfo>,
    kineto: KinetoRecords,
    count: usize,
    unit: u64,
    begin_mode: u8,
    length_mode: u8,
    probe_start: bool,
}

/// The file's bytes of `summary`.
pub(crate) fn encode(summary: &NodeSummary, version: u32) -> std::io::Result<Vec<u8>> {
    let e = &summary.collectives;
    let occ = e.occurrences();
    let index: HashMap<&str, u32> = e
        .names()
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i as u32))
        .collect();
    let mut keys: Vec<Key> = Vec::new();
    let mut key_of: HashMap<Key, usize> = HashMap::new();
    let ks: Vec<usize> = occ
        .iter()
        .map(|o| {
            let key = Key {
                participant: o.participant,
                kind: o.kind,
                op: index[e.name(o.op)],
                module: o.module.map(|m| index[e.name(m)]),
                group: o.group,
                peers: o.peers,
                on_device: o.on_device,
            };
            *key_of.entry(key.clone()).or_insert_with(|| {
                keys.push(key);
                keys.len() - 1
            })
        })
        .collect();
    let unit = occ
        .iter()
        .flat_map(|o| [o.begin.0, o.end.0 - o.begin.0])
        .fold(0u128, |g, v| gcd(g, v.unsigned_abs()))
        .max(1);
    let unit = u64::try_from(unit).unwrap_or(1);
    let begins: Vec<i128> = occ.iter().map(|o| o.begin.0 / unit as i128).collect();
    let lengths: Vec<i128> = occ
        .iter()
        .map(|o| (o.end.0 - o.begin.0) / unit as i128)
        .collect();
    let (begin_mode, length_mode, time_columns) = super::times::encode(&ks, &begins, &lengths)?;
    let head = Head {
        node: summary.node,
        trace: summary.trace.clone(),
        options: summary.options.clone(),
        snapshots: summary.snapshots.clone(),
        offsets: summary.offsets.clone(),
        names: e.names().to_vec(),
        keys,
        stats: e.stats.clone(),
        nodes: e.nodes.clone(),
        kineto: e.kineto.clone(),
        count: occ.len(),
        unit,
        begin_mode,
        length_mode,
        probe_start: summary.probe_start.is_some(),
    };
    let head = serde_json::to_vec(&head)?;
    let mut body = Vec::new();
    put(&mut body, head.len() as u128);
    body.extend_from_slice(&head);
    for &k in &ks {
        put(&mut body, k as u128);
    }
    body.extend(id_column(&ks, occ.iter().map(|o| o.run_id.map(i128::from))));
    body.extend(id_column(
        &ks,
        occ.iter().map(|o| o.correlation.map(i128::from)),
    ));
    body.extend(time_columns);
    if let Some(p) = &summary.probe_start {
        for side in 0..2 {
            for d in &p.deltas {
                put(&mut body, zigzag(d[side]));
            }
        }
    }
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&version.to_le_bytes());
    let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::best());
    gz.write_all(&body)?;
    gz.finish()
}

/// The summary of a file's bytes after its magic and version.
pub(crate) fn decode(gzipped: &[u8], path: &std::path::Path) -> Result<NodeSummary, DecodeError> {
    // Bounded: a summary that would decompress past the limit for its
    // size is refused before the memory is taken.
    let body = xplane_proto::source::inflate(gzipped, path, "summary")?;
    let mut r = Reader::new(&body);
    let head_len = r.usize("the head's length")?;
    let head: Head = serde_json::from_slice(r.take(head_len)?)?;
    let n = head.count;
    // Every occurrence takes at least five bytes (one per column).
    if n > body.len() {
        return Err(format!("{n} occurrences in a body of {} bytes", body.len()).into());
    }
    let ks = (0..n)
        .map(|i| {
            let k = r.usize("a key")?;
            match k < head.keys.len() {
                true => Ok(k),
                false => Err(format!("occurrence {i}: key {k} of {}", head.keys.len()).into()),
            }
        })
        .collect::<Result<Vec<usize>, DecodeError>>()?;
    let run_ids = ids(&mut r, &ks, "run_id")?;
    let correlations = ids(&mut r, &ks, "correlation")?;
    let modes = (head.begin_mode, head.length_mode);
    if head.unit == 0 {
        // Every time would be 0: the fit would leave every constraint out.
        return Err(
            "its time unit is 0 ps (times are whole multiples of a unit of at least 1 ps)".into(),
        );
    }
    let (begins, ends) = super::times::decode(&mut r, &ks, head.unit, modes)?;
    let probe_start = head
        .probe_start
        .then(|| probe_deltas(&mut r, &begins, &ends))
        .transpose()?;
    if r.at != body.len() {
        return Err(format!("{} bytes after the last column", body.len() - r.at).into());
    }
    let mut e = Extraction::new();
    let syms: Vec<_> = head.names.iter().map(|name| e.intern(name)).collect();
    if e.names().len() != head.names.len() {
        return Err("a name listed twice".into());
    }
    let sym = |i: u32| {
        syms.get(i as usize)
            .copied()
            .ok_or_else(|| format!("name {i} of {}", syms.len()))
    };
    for (i, &k) in ks.iter().enumerate() {
        let k = &head.keys[k];
        e.push(Occurrence {
            participant: k.participant,
            kind: k.kind,
            op: sym(k.op)?,
            module: k.module.map(sym).transpose()?,
            run_id: run_ids[i].map(i64::try_from).transpose()?,
            group: k.group,
            peers: k.peers,
            correlation: correlations[i].map(u64::try_from).transpose()?,
            begin: TimePs(begins[i]),
            end: TimePs(ends[i]),
            on_device: k.on_device,
        });
    }
    e.stats = head.stats;
    e.nodes = head.nodes;
    e.kineto = head.kineto;
    Ok(NodeSummary {
        format: super::SUMMARY_FORMAT.to_owned(),
        version: super::SUMMARY_VERSION,
        node: head.node,
        trace: head.trace,
        options: head.options,
        snapshots: head.snapshots,
        offsets: head.offsets,
        collectives: e,
        probe_start: probe_start.map(|deltas| ProbeStart { deltas }),
    })
}

/// An id column: 0 for none, else 1 + zigzag of the difference from the
/// key's previous id.
fn id_column(ks: &[usize], ids: impl Iterator<Item = Option<i128>>) -> Vec<u8> {
    let (mut out, mut last) = (Vec::new(), HashMap::new());
    for (&k, id) in ks.iter().zip(ids) {
        let v = match id {
            None => 0,
            Some(id) => 1 + zigzag(id - last.insert(k, id).unwrap_or(0)),
        };
        put(&mut out, v);
    }
    out
}

/// An id column read back.
fn ids(r: &mut Reader<'_>, ks: &[usize], what: &str) -> Result<Vec<Option<i128>>, DecodeError> {
    let mut last: HashMap<usize, i128> = HashMap::new();
    ks.iter()
        .map(|&k| {
            let v = r.get(what)?;
            if v == 0 {
                return Ok(None);
            }
            let id = unzigzag(v - 1)
                .checked_add(last.get(&k).copied().unwrap_or(0))
                .ok_or_else(|| format!("a {what} out of range"))?;
            last.insert(k, id);
            Ok(Some(id))
        })
        .collect()
}

/// The probe-start differences read back, checked against the times
/// they move (`begins`, `ends`): neither out of range nor ending before
/// it begins.
fn probe_deltas(
    r: &mut Reader<'_>,
    begins: &[i128],
    ends: &[i128],
) -> Result<Vec<[i128; 2]>, DecodeError> {
    let mut deltas = vec![[0i128; 2]; begins.len()];
    for side in 0..2 {
        for d in deltas.iter_mut() {
            d[side] = unzigzag(r.get("a probe-start time")?);
        }
    }
    for (i, d) in deltas.iter().enumerate() {
        let begin = begins[i].checked_add(d[0]);
        let end = ends[i].checked_add(d[1]);
        if !matches!((begin, end), (Some(b), Some(e)) if b <= e) {
            return Err(format!("occurrence {i}: probe-start times out of order or range").into());
        }
    }
    Ok(deltas)
}

/// Bytes being read, with the position.
pub(crate) struct Reader<'b> {
    bytes: &'b [u8],
    /// Bytes read.
    pub(crate) at: usize,
}

impl<'b> Reader<'b> {
    pub(crate) fn new(bytes: &'b [u8]) -> Self {
        Reader { bytes, at: 0 }
    }

    /// One varint (at most 19 bytes, a `u128`).
    pub(crate) fn get(&mut self, what: &str) -> Result<u128, DecodeError> {
        let mut v = 0u128;
        for shift in (0..128).step_by(7) {
            let Some(&b) = self.bytes.get(self.at) else {
                return Err(format!("the body ends inside {what} (byte {})", self.at).into());
            };
            self.at += 1;
            v |= u128::from(b & 0x7f)
                .checked_shl(shift)
                .filter(|s| s >> shift == u128::from(b & 0x7f))
                .ok_or_else(|| format!("{what} out of range (byte {})", self.at))?;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(format!("{what} longer than 128 bits (byte {})", self.at).into())
    }

    pub(crate) fn usize(&mut self, what: &str) -> Result<usize, DecodeError> {
        let v = self.get(what)?;
        usize::try_from(v).map_err(|_| format!("{what} out of range: {v}").into())
    }

    pub(crate) fn take(&mut self, n: usize) -> Result<&'b [u8], DecodeError> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or_else(|| format!("the body ends inside {n} bytes at {}", self.at))?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }
}

/// Append `v` as a varint.
pub(crate) fn put(out: &mut Vec<u8>, mut v: u128) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

fn zigzag(v: i128) -> u128 {
    ((v << 1) ^ (v >> 127)) as u128
}

fn unzigzag(v: u128) -> i128 {
    ((v >> 1) as i128) ^ -((v & 1) as i128)
}

fn gcd(a: u128, b: u128) -> u128 {
    if b == 0 { a } else { gcd(b, a % b) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::TraceFormat;
    use std::io::Read;

    fn summary(probe_start: bool) -> NodeSummary {
        let mut e = Extraction::new();
        let (ar, ag) = (e.intern("all-reduce.1"), e.intern("all-gather.2"));
        let module = Some(e.intern("jit_step"));
        let times = [
            (5_000, 9_000),
            (7_000, 7_000),
            (20_000, 31_000),
            (19_000, 40_000),
        ];
        for (i, &(begin, end)) in times.iter().enumerate() {
            e.push(Occurrence {
                participant: Participant {
                    node: clock_model::NodeId(1),
                    device: (i % 2 == 0).then_some(0),
                },
                kind: CollectiveKind::AllReduce,
                op: if i % 2 == 0 { ar } else { ag },
                module: (i != 1).then_some(module).flatten(),
                run_id: (i != 2).then_some(-3 + i as i64),
                group: ReplicaGroup::All,
                peers: PermutePeers::NotLookedUp,
                correlation: (i != 0).then_some(u64::MAX - i as u64),
                begin: TimePs(1_795_303_341_484_000_000_000 + begin),
                end: TimePs(1_795_303_341_484_000_000_000 + end),
                on_device: i % 2 == 0,
            });
        }
        e.stats.collectives = 4;
        NodeSummary {
            format: super::super::SUMMARY_FORMAT.to_owned(),
            version: super::super::SUMMARY_VERSION,
            node: clock_model::NodeId(1),
            trace: super::super::TraceIdentity {
                file: super::super::FileIdentity {
                    file_name: "node1.xplane.pb".to_owned(),
                    size: 10,
                    fnv1a64: "0123456789abcdef".to_owned(),
                },
                format: TraceFormat::XSpace,
                session_start_ns: Some(1_795_303_341_484_000_000),
            },
            options: Default::default(),
            snapshots: None,
            offsets: None,
            collectives: e,
            probe_start: probe_start.then(|| ProbeStart {
                deltas: vec![[-1000, -1000], [0, 0], [-1000, -999], [0, 0]],
            }),
        }
    }

    #[test]
    fn a_summary_reads_back_as_written() {
        for with_probe_start in [false, true] {
            let s = summary(with_probe_start);
            let bytes = encode(&s, 2).unwrap();
            assert_eq!(&bytes[..8], MAGIC);
            assert_eq!(bytes[8..12], 2u32.to_le_bytes());
            let back = decode(&bytes[12..], std::path::Path::new("s")).unwrap();
            assert_eq!(back.collectives.occurrences(), s.collectives.occurrences());
            assert_eq!(back.collectives.names(), s.collectives.names());
            assert_eq!(back.collectives.stats, s.collectives.stats);
            assert_eq!(back.probe_start, s.probe_start);
            assert_eq!(back.trace, s.trace);
            assert_eq!(encode(&back, 2).unwrap(), bytes, "the same bytes again");
        }
    }

    /// The body of `s`, decompressed.
    fn body(s: &NodeSummary) -> Vec<u8> {
        let bytes = encode(s, 2).unwrap();
        let mut body = Vec::new();
        flate2::read::GzDecoder::new(&bytes[12..])
            .read_to_end(&mut body)
            .unwrap();
        body
    }

    /// `body` gzip-compressed.
    fn gzip(body: &[u8]) -> Vec<u8> {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(body).unwrap();
        gz.finish().unwrap()
    }

    #[test]
    fn bytes_past_the_columns_or_a_column_cut_short_are_refused() {
        let mut b = body(&summary(false));
        b.push(0);
        let err = decode(&gzip(&b), std::path::Path::new("s")).unwrap_err();
        assert!(
            err.to_string().contains("1 bytes after the last column"),
            "{err}"
        );
        b.truncate(b.len() - 3);
        let err = decode(&gzip(&b), std::path::Path::new("s")).unwrap_err();
        assert!(err.to_string().contains("the body ends inside"), "{err}");
    }

    /// A summary whose time unit is 0 made `fit` leave every constraint
    /// out and exit 0, and `apply` move nothing.
    #[test]
    fn a_time_unit_of_zero_is_refused() {
        let b = body(&summary(false));
        let mut r = Reader::new(&b);
        let head_len = r.usize("").unwrap();
        let rest = &b[r.at + head_len..];
        let mut head: serde_json::Value =
            serde_json::from_slice(&b[r.at..r.at + head_len]).unwrap();
        assert!(head["unit"].as_u64().unwrap() > 0);
        head["unit"] = 0.into();
        let head = serde_json::to_vec(&head).unwrap();
        let mut bad = Vec::new();
        put(&mut bad, head.len() as u128);
        bad.extend_from_slice(&head);
        bad.extend_from_slice(rest);
        let err = decode(&gzip(&bad), std::path::Path::new("s")).unwrap_err();
        assert!(err.to_string().contains("time unit is 0"), "{err}");
    }

    #[test]
    fn a_key_out_of_the_table_is_refused() {
        let b = body(&summary(false));
        let mut r = Reader::new(&b);
        let head_len = r.usize("").unwrap();
        let first_key = r.at + head_len;
        let mut bad = b.clone();
        bad[first_key] = 9;
        let err = decode(&gzip(&bad), std::path::Path::new("s")).unwrap_err();
        assert!(
            err.to_string().contains("occurrence 0: key 9 of 3"),
            "{err}"
        );
    }

    /// Every byte of a summary's body changed, one at a time: decoded or
    /// refused, never a panic (an occurrence that ends before it begins,
    /// a symbol without its name, a time out of range).
    #[test]
    fn a_changed_byte_is_decoded_or_refused_never_a_panic() {
        let b = body(&summary(true));
        let mut refused = 0;
        for at in 0..b.len() {
            for flip in [0x01, 0x80, 0xff] {
                let mut bad = b.clone();
                bad[at] ^= flip;
                refused += usize::from(decode(&gzip(&bad), std::path::Path::new("s")).is_err());
            }
        }
        assert!(refused > b.len(), "{refused} of {} refused", 3 * b.len());
    }

    #[test]
    fn varints_and_zigzag_round_trip_at_the_ends_of_their_range() {
        for v in [0i128, 1, -1, 63, -64, i128::MAX, i128::MIN] {
            let mut out = Vec::new();
            put(&mut out, zigzag(v));
            let mut r = Reader::new(&out);
            assert_eq!(unzigzag(r.get("v").unwrap()), v);
            assert_eq!(r.at, out.len());
        }
        let mut r = Reader::new(&[0xff; 20]);
        assert!(r.get("v").is_err());
    }
}
