//! Property tests of the codec: the zero-copy reader against prost's full
//! decode, the streaming writer against prost's encoder, and robustness on
//! malformed bytes (random, mutated, every truncation of a real trace).

use crate::common;

use std::collections::BTreeMap;

use proptest::prelude::*;
use prost::Message;
use xplane_proto::{
    SpaceView, Totals, WireErrorKind, XEvent, XEventMetadata, XLine, XPlane, XSpace, XStat,
    XStatMetadata, x_event, x_stat,
};

fn small_id() -> impl Strategy<Value = i64> {
    prop_oneof![-3i64..8, any::<i64>()]
}

fn text() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9_/:. é]{0,10}"
}

fn stat_value() -> impl Strategy<Value = x_stat::Value> {
    use x_stat::Value as V;
    prop_oneof![
        // Any bit pattern but NaN, so values compare equal.
        any::<f64>()
            .prop_filter("not NaN", |v| !v.is_nan())
            .prop_map(V::DoubleValue),
        any::<u64>().prop_map(V::Uint64Value),
        any::<i64>().prop_map(V::Int64Value),
        text().prop_map(V::StrValue),
        prop::collection::vec(any::<u8>(), 0..6).prop_map(V::BytesValue),
        prop_oneof![0u64..8, any::<u64>()].prop_map(V::RefValue),
        prop::collection::vec(any::<u8>(), 0..6).prop_map(V::CompressedStrValue),
    ]
}

fn stat() -> impl Strategy<Value = XStat> {
    (small_id(), prop::option::of(stat_value()))
        .prop_map(|(metadata_id, value)| XStat { metadata_id, value })
}

fn stats() -> impl Strategy<Value = Vec<XStat>> {
    prop::collection::vec(stat(), 0..4)
}

fn event() -> impl Strategy<Value = XEvent> {
    let data = prop::option::of(prop_oneof![
        any::<i64>().prop_map(x_event::Data::OffsetPs),
        any::<i64>().prop_map(x_event::Data::NumOccurrences),
    ]);
    (small_id(), data, any::<i64>(), stats()).prop_map(|(metadata_id, data, duration_ps, stats)| {
        XEvent {
            metadata_id,
            data,
            duration_ps,
            stats,
        }
    })
}

fn line() -> impl Strategy<Value = XLine> {
    (
        (any::<i64>(), any::<i64>(), text(), text()),
        (any::<i64>(), any::<i64>()),
        prop::collection::vec(event(), 0..6),
    )
        .prop_map(
            |((id, display_id, name, display_name), (timestamp_ns, duration_ps), events)| XLine {
                id,
                display_id,
                name,
                display_name,
                timestamp_ns,
                duration_ps,
                events,
            },
        )
}

fn event_metadata() -> impl Strategy<Value = XEventMetadata> {
    (
        (small_id(), text(), text()),
        prop::collection::vec(any::<u8>(), 0..5),
        stats(),
        prop::collection::vec(small_id(), 0..4),
    )
        .prop_map(
            |((id, name, display_name), metadata, stats, child_id)| XEventMetadata {
                id,
                name,
                display_name,
                metadata,
                stats,
                child_id,
            },
        )
}

fn stat_metadata() -> impl Strategy<Value = XStatMetadata> {
    (small_id(), text(), text()).prop_map(|(id, name, description)| XStatMetadata {
        id,
        name,
        description,
    })
}

fn plane() -> impl Strategy<Value = XPlane> {
    (
        (small_id(), text()),
        prop::collection::vec(line(), 0..4),
        prop::collection::btree_map(small_id(), event_metadata(), 0..4),
        prop::collection::btree_map(small_id(), stat_metadata(), 0..4),
        stats(),
    )
        .prop_map(
            |((id, name), lines, event_metadata, stat_metadata, stats)| XPlane {
                id,
                name,
                lines,
                event_metadata,
                stat_metadata,
                stats,
            },
        )
}

fn space() -> impl Strategy<Value = XSpace> {
    let strings = || prop::collection::vec(text(), 0..3);
    (
        prop::collection::vec(plane(), 0..4),
        strings(),
        strings(),
        strings(),
    )
        .prop_map(|(planes, errors, warnings, hostnames)| XSpace {
            planes,
            errors,
            warnings,
            hostnames,
        })
}

/// What a full walk should count in an owned XSpace.
fn owned_totals(space: &XSpace) -> Totals {
    let mut t = Totals::default();
    for p in &space.planes {
        t.planes += 1;
        t.lines += p.lines.len() as u64;
        t.event_metadata += p.event_metadata.len() as u64;
        t.stat_metadata += p.stat_metadata.len() as u64;
        t.stats += p.stats.len() as u64;
        t.stats += p
            .event_metadata
            .values()
            .map(|m| m.stats.len() as u64)
            .sum::<u64>();
        for l in &p.lines {
            t.events += l.events.len() as u64;
            t.stats += l.events.iter().map(|e| e.stats.len() as u64).sum::<u64>();
        }
    }
    t
}

/// Run every reader over arbitrary bytes and check they agree with prost
/// wherever the zero-copy reader accepts the data.
fn check_agrees_with_prost(bytes: &[u8]) {
    let view = SpaceView::new(bytes);
    let walked = view.walk_all();
    let owned = view.to_owned();
    assert_eq!(walked.is_ok(), owned.is_ok(), "walk and to_owned disagree");
    let _ = view.check_top_level();
    if let Ok(owned) = owned {
        let decoded = XSpace::decode(bytes).expect("prost accepts what the view accepts");
        // Compare encodings: random doubles can be NaN.
        assert_eq!(owned.encode_to_vec(), decoded.encode_to_vec());
        assert_eq!(walked.unwrap(), owned_totals(&decoded));
    }
}

/// `space` as the streaming writer encodes it, with byte `at` set to
/// `byte` for each edit (none on an empty encoding).
fn edited(space: &XSpace, edits: &[(prop::sample::Index, u8)]) -> Vec<u8> {
    let mut bytes = common::stream(space);
    if !bytes.is_empty() {
        for (at, byte) in edits {
            let at = at.index(bytes.len());
            bytes[at] = *byte;
        }
    }
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn view_yields_what_prost_decodes(space in space()) {
        let bytes = space.encode_to_vec();
        let view = SpaceView::new(&bytes);
        prop_assert_eq!(&view.to_owned().unwrap(), &space);
        prop_assert_eq!(&XSpace::decode(bytes.as_slice()).unwrap(), &space);
        prop_assert_eq!(view.walk_all().unwrap(), owned_totals(&space));
        if !bytes.is_empty() {
            prop_assert!(view.check_top_level().is_ok());
        }
    }

    #[test]
    fn streaming_writer_output_decodes_to_the_message(space in space()) {
        let bytes = common::stream(&space);
        prop_assert_eq!(&XSpace::decode(bytes.as_slice()).unwrap(), &space);
        prop_assert_eq!(&SpaceView::new(&bytes).to_owned().unwrap(), &space);
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        check_agrees_with_prost(&bytes);
    }

    #[test]
    fn mutated_messages_never_panic(
        space in space(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
    ) {
        let bytes = edited(&space, &edits);
        check_agrees_with_prost(&bytes);
    }

    #[test]
    fn lines_parsed_later_are_the_lines_walked(
        space in space(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
    ) {
        let bytes = edited(&space, &edits);
        let Ok(planes) = SpaceView::new(&bytes).planes().collect::<Result<Vec<_>, _>>() else {
            return Ok(());
        };
        for plane in planes {
            let walked: Vec<_> = plane.lines().collect();
            // Up to the first error, where the walk stops.
            let mut later = Vec::new();
            for found in plane.lines().unparsed() {
                let line = found.and_then(|line| line.parse());
                let stop = line.is_err();
                later.push(line);
                if stop {
                    break;
                }
            }
            prop_assert_eq!(format!("{later:?}"), format!("{walked:?}"));
        }
    }
}

/// Every prefix of a real trace: the reader either reports a truncation at
/// or before the cut, or (when the cut falls between top-level fields, which
/// is valid protobuf) yields exactly what prost decodes.
#[test]
fn every_truncation_of_a_fixture_errors_or_matches_prost() {
    let path = common::smallest_fixture();
    let bytes = std::fs::read(&path).unwrap();
    let mut boundaries = 0;
    for len in 0..bytes.len() {
        let cut = &bytes[..len];
        let view = SpaceView::new(cut);
        let prost = XSpace::decode(cut);
        match view.walk_all() {
            Ok(totals) => {
                boundaries += 1;
                let owned = view.to_owned().unwrap();
                assert_eq!(Ok(&owned), prost.as_ref(), "cut at {len}");
                assert_eq!(totals, owned_totals(&owned));
            }
            Err(e) => {
                assert_eq!(e.kind, WireErrorKind::Truncated, "cut at {len}: {e}");
                assert!(e.offset <= len, "cut at {len}: {e}");
                assert!(prost.is_err(), "prost accepts the cut at {len}");
                let top = view.check_top_level();
                assert!(len == 0 || top.is_err(), "cut at {len}");
            }
        }
    }
    // The empty prefix, and one after each top-level field but the last.
    let full = XSpace::decode(bytes.as_slice()).unwrap();
    let top_fields = full.planes.len() + full.errors.len() + full.warnings.len();
    let top_fields = top_fields + full.hostnames.len();
    assert_eq!(boundaries, top_fields, "{}", path.display());
}

/// A plane whose event metadata map holds key 1 twice (two encodings of
/// a plane concatenated merge as one): the walk counts what a decoder
/// keeps, the last entry and its stats.
#[test]
fn a_repeated_metadata_key_counts_once_with_the_last_entry() {
    let meta = |stats: usize| XEventMetadata {
        id: 1,
        stats: (0..stats)
            .map(|k| XStat {
                metadata_id: k as i64,
                value: None,
            })
            .collect(),
        ..Default::default()
    };
    let part = |stats| XPlane {
        event_metadata: BTreeMap::from([(1, meta(stats))]),
        stat_metadata: BTreeMap::from([(2, XStatMetadata::default())]),
        ..Default::default()
    };
    let mut plane = part(2).encode_to_vec();
    plane.extend(part(1).encode_to_vec());
    let mut space = vec![0x0a];
    prost::encoding::encode_varint(plane.len() as u64, &mut space);
    space.extend(plane);
    let totals = SpaceView::new(&space).walk_all().unwrap();
    assert_eq!(
        (totals.event_metadata, totals.stat_metadata, totals.stats),
        (1, 1, 1)
    );
    check_agrees_with_prost(&space);
}

#[test]
fn map_entry_with_two_values_is_refused() {
    // XPlane { stat_metadata: { 1: value twice } }, which prost would merge.
    let value_a = XStatMetadata {
        id: 1,
        name: "a".into(),
        description: String::new(),
    }
    .encode_to_vec();
    let value_b = XStatMetadata {
        id: 0,
        name: "b".into(),
        description: String::new(),
    }
    .encode_to_vec();
    let mut entry = vec![0x08, 0x01];
    for v in [&value_a, &value_b] {
        entry.push(0x12);
        entry.push(v.len() as u8);
        entry.extend_from_slice(v);
    }
    let mut plane = vec![0x2a, entry.len() as u8];
    plane.extend_from_slice(&entry);
    let mut space = vec![0x0a, plane.len() as u8];
    space.extend_from_slice(&plane);
    let merged = XSpace::decode(space.as_slice()).unwrap();
    assert_eq!(
        merged.planes[0].stat_metadata,
        BTreeMap::from([(
            1,
            XStatMetadata {
                id: 1,
                name: "b".into(),
                description: String::new()
            }
        )])
    );
    let err = SpaceView::new(&space).walk_all().unwrap_err();
    assert_eq!(err.kind, WireErrorKind::RepeatedMapValue);
    check_agrees_with_prost(&space);
}
