//! `encode_event_retimed` keeps every non-timing field, whatever the field
//! order of the input event.

use proptest::strategy::Strategy as _;
use prost::Message;
use xplane_proto::{EventView, View, XEvent, XStat, encode_event_retimed, x_event, x_stat};

fn stat(id: i64, v: u64) -> XStat {
    XStat {
        metadata_id: id,
        value: Some(x_stat::Value::Uint64Value(v)),
    }
}

fn retimed(bytes: &[u8]) -> XEvent {
    let view = EventView::parse(bytes, 0).unwrap();
    let mut out = Vec::new();
    encode_event_retimed(&view, 777, 55, &[stat(9, 1)], &mut out);
    XEvent::decode(out.as_slice()).unwrap()
}

#[test]
fn usual_layout_copies_the_stats_tail() {
    let event = XEvent {
        metadata_id: 3,
        data: Some(x_event::Data::OffsetPs(10)),
        duration_ps: 20,
        stats: vec![stat(1, 5), stat(2, 6)],
    };
    let got = retimed(&event.encode_to_vec());
    assert_eq!(got.metadata_id, 3);
    assert_eq!(got.data, Some(x_event::Data::OffsetPs(777)));
    assert_eq!(got.duration_ps, 55);
    assert_eq!(got.stats, vec![stat(1, 5), stat(2, 6), stat(9, 1)]);
}

#[test]
fn interleaved_layout_drops_every_old_timing_field() {
    // Stats first, then the timing fields: a legal but unusual order.
    let stats_only = XEvent {
        stats: vec![stat(1, 5)],
        ..Default::default()
    }
    .encode_to_vec();
    let timing = XEvent {
        metadata_id: 3,
        data: Some(x_event::Data::OffsetPs(10)),
        duration_ps: 20,
        stats: vec![],
    }
    .encode_to_vec();
    let more = XEvent {
        stats: vec![stat(2, 6)],
        ..Default::default()
    }
    .encode_to_vec();
    let bytes = [stats_only, timing, more].concat();
    let got = retimed(&bytes);
    assert_eq!(got.metadata_id, 3);
    assert_eq!(got.data, Some(x_event::Data::OffsetPs(777)));
    assert_eq!(got.duration_ps, 55);
    assert_eq!(got.stats, vec![stat(1, 5), stat(2, 6), stat(9, 1)]);
}

#[test]
fn field_form_equals_body_form_in_both_layouts() {
    let usual = XEvent {
        metadata_id: 3,
        data: Some(x_event::Data::OffsetPs(10)),
        duration_ps: 20,
        stats: vec![stat(1, 5), stat(2, 6)],
    }
    .encode_to_vec();
    let stats_first = [
        XEvent {
            stats: vec![stat(1, 5)],
            ..Default::default()
        }
        .encode_to_vec(),
        XEvent {
            metadata_id: 3,
            duration_ps: 20,
            ..Default::default()
        }
        .encode_to_vec(),
    ]
    .concat();
    for bytes in [usual, stats_first] {
        let view = EventView::parse(&bytes, 0).unwrap();
        let mut body = Vec::new();
        encode_event_retimed(&view, 777, 55, &[stat(9, 1)], &mut body);
        let mut want = Vec::new();
        xplane_proto::encode_field(4, &body, &mut want);
        let mut got = Vec::new();
        xplane_proto::encode_event_retimed_field(4, &view, 777, 55, &[stat(9, 1)], &mut got);
        assert_eq!(got, want);
    }
}

/// Values of every varint length: small ones, ones below 2^56 (one
/// word), and any (negative ones take ten bytes).
fn value() -> impl proptest::strategy::Strategy<Value = i64> {
    proptest::prop_oneof![
        0i64..300,
        0i64..(1 << 56),
        (0u32..64).prop_map(|bits| (1i64 << bits.min(62)) - 1 + i64::from(bits == 63)),
        proptest::prelude::any::<i64>(),
    ]
}

proptest::proptest! {
    /// The field form of any retimed event (any id, times and count, with
    /// or without stats, any tag) is prost's encoding of the retimed event
    /// as that field; an aggregated event's count comes after its duration
    /// (prost puts it before), which decodes the same.
    #[test]
    fn field_form_is_prosts_encoding(
        (metadata_id, offset, duration, aggregated) in
            (value(), value(), value(), proptest::prelude::any::<bool>()),
        (new_offset, new_duration) in (value(), value()),
        stats in proptest::collection::vec(
            (proptest::prelude::any::<i64>(), proptest::prelude::any::<u64>()), 0..4),
        extra in proptest::option::of(proptest::prelude::any::<u64>()),
        tag in proptest::prop_oneof![proptest::strategy::Just(4u32), 1u32..(1 << 29)],
    ) {
        let data = if aggregated {
            x_event::Data::NumOccurrences(offset)
        } else {
            x_event::Data::OffsetPs(offset)
        };
        let stats: Vec<XStat> = stats.iter().map(|&(id, v)| stat(id, v)).collect();
        let bytes = XEvent {
            metadata_id,
            data: Some(data),
            duration_ps: duration,
            stats: stats.clone(),
        }
        .encode_to_vec();
        let view = EventView::parse(&bytes, 0).unwrap();
        let extra: Vec<XStat> = extra.map(|v| stat(9, v)).into_iter().collect();
        let data = if aggregated { data } else { x_event::Data::OffsetPs(new_offset) };
        let retimed = XEvent {
            metadata_id,
            data: Some(data),
            duration_ps: new_duration,
            stats: stats.into_iter().chain(extra.iter().cloned()).collect(),
        };
        let mut want = Vec::new();
        prost::encoding::message::encode(tag, &retimed, &mut want);
        let mut got = vec![0xaa];
        xplane_proto::encode_event_retimed_field(tag, &view, new_offset, new_duration, &extra, &mut got);
        if aggregated {
            let field = |bytes: &[u8]| {
                let mut bytes = bytes;
                let key = prost::encoding::decode_varint(&mut bytes).unwrap();
                let len = prost::encoding::decode_varint(&mut bytes).unwrap();
                proptest::prop_assert_eq!(len as usize, bytes.len());
                Ok((key, XEvent::decode(bytes).unwrap()))
            };
            proptest::prop_assert_eq!(field(&got[1..])?, field(&want)?);
        } else {
            proptest::prop_assert_eq!(&got[1..], &want[..]);
        }
    }
}
