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
        prost::encoding::bytes::encode(4, &body, &mut want);
        let mut got = Vec::new();
        xplane_proto::encode_event_retimed_field(4, &view, 777, 55, &[stat(9, 1)], &mut got);
        assert_eq!(got, want);
    }
}

/// Values of every varint length: small ones, ones below 2^56 (one
/// word), any (negative ones take ten bytes), and the edges.
fn value() -> impl proptest::strategy::Strategy<Value = i64> {
    proptest::prop_oneof![
        0i64..300,
        0i64..(1 << 56),
        (0u32..64).prop_map(|bits| (1i64 << bits.min(62)) - 1 + i64::from(bits == 63)),
        proptest::prelude::any::<i64>(),
        proptest::sample::select(vec![
            0,
            -1,
            i64::MIN,
            i64::MAX,
            (1 << 56) - 1,
            1 << 56,
            (1 << 49) - 1,
            1 << 49,
        ]),
    ]
}

/// A varint field (`key`, `value`) as bytes.
fn varint_field(field: u32, value: i64) -> Vec<u8> {
    let mut out = Vec::new();
    prost::encoding::encode_key(field, prost::encoding::WireType::Varint, &mut out);
    prost::encoding::encode_varint(value as u64, &mut out);
    out
}

/// An event's encoding in a layout prost would not write: its timing
/// fields in the order `order` (zero ones written when `explicit_zeros`),
/// after the first `stats_before` stats (the rest follow them), then an
/// unknown field when `unknown` is set.
#[derive(Debug, Clone)]
struct Layout {
    order: Vec<usize>,
    explicit_zeros: bool,
    stats_before: usize,
    unknown: Option<u64>,
}

impl Layout {
    fn encode(&self, event: &XEvent) -> Vec<u8> {
        let data = match event.data {
            Some(x_event::Data::OffsetPs(v)) => (2, v),
            Some(x_event::Data::NumOccurrences(n)) => (5, n),
            None => unreachable!("the test's events have data"),
        };
        let timing = [(1, event.metadata_id), data, (3, event.duration_ps)];
        let before = self.stats_before.min(event.stats.len());
        let mut out = stats_bytes(&event.stats[..before]);
        for &i in &self.order {
            let (field, v) = timing[i];
            if v != 0 || field == data.0 || self.explicit_zeros {
                out.extend(varint_field(field, v));
            }
        }
        out.extend(self.rest(event));
        out
    }

    /// The non-timing fields that follow the timing ones.
    fn rest(&self, event: &XEvent) -> Vec<u8> {
        let before = self.stats_before.min(event.stats.len());
        let mut out = stats_bytes(&event.stats[before..]);
        if let Some(v) = self.unknown {
            out.extend(varint_field(9, v as i64));
        }
        out
    }

    /// Every non-timing field, in the order of the event's bytes.
    fn non_timing(&self, event: &XEvent) -> Vec<u8> {
        let before = self.stats_before.min(event.stats.len());
        [stats_bytes(&event.stats[..before]), self.rest(event)].concat()
    }

    /// Whether the view reads this layout as the usual one (timing fields,
    /// in any order, before every other field).
    fn usual(&self, event: &XEvent) -> bool {
        self.stats_before.min(event.stats.len()) == 0
    }
}

fn stats_bytes(stats: &[XStat]) -> Vec<u8> {
    XEvent {
        stats: stats.to_vec(),
        ..Default::default()
    }
    .encode_to_vec()
}

fn layout() -> impl proptest::strategy::Strategy<Value = Layout> {
    use proptest::prelude::*;
    (
        Just(vec![0usize, 1, 2]).prop_shuffle(),
        any::<bool>(),
        prop_oneof![Just(0usize), 0usize..4],
        proptest::option::of(any::<u64>()),
    )
        .prop_map(|(order, explicit_zeros, stats_before, unknown)| Layout {
            order,
            explicit_zeros,
            stats_before,
            unknown,
        })
}

proptest::proptest! {
    /// The field form of any retimed event (any id, times and count, with
    /// or without stats, any tag, any field layout) is prost's encoding of
    /// the retimed event's timing fields, followed by the event's other
    /// fields byte for byte and the extra stats. In the usual layout an
    /// aggregated event's count comes after its duration (prost puts it
    /// before), which decodes the same; without an unknown field the
    /// usual layout of an event with `offset_ps` is exactly prost's
    /// encoding of the retimed event.
    #[test]
    fn field_form_is_prosts_encoding(
        (metadata_id, offset, duration, aggregated) in
            (value(), value(), value(), proptest::prelude::any::<bool>()),
        (new_offset, new_duration) in (value(), value()),
        stats in proptest::collection::vec(
            (proptest::prelude::any::<i64>(), proptest::prelude::any::<u64>()), 0..4),
        extra in proptest::option::of(proptest::prelude::any::<u64>()),
        tag in proptest::prop_oneof![proptest::strategy::Just(4u32), 1u32..(1 << 29)],
        layout in proptest::prop_oneof![
            proptest::strategy::Just(Layout {
                order: vec![0, 1, 2],
                explicit_zeros: false,
                stats_before: 0,
                unknown: None,
            }),
            layout(),
        ],
    ) {
        let data = if aggregated {
            x_event::Data::NumOccurrences(offset)
        } else {
            x_event::Data::OffsetPs(offset)
        };
        let stats: Vec<XStat> = stats.iter().map(|&(id, v)| stat(id, v)).collect();
        let event = XEvent {
            metadata_id,
            data: Some(data),
            duration_ps: duration,
            stats: stats.clone(),
        };
        let bytes = layout.encode(&event);
        let view = EventView::parse(&bytes, 0).unwrap();
        proptest::prop_assert_eq!(view.non_timing_fields().is_some(), layout.usual(&event));
        let extra: Vec<XStat> = extra.map(|v| stat(9, v)).into_iter().collect();
        let data = if aggregated { data } else { x_event::Data::OffsetPs(new_offset) };
        let retimed = XEvent {
            metadata_id,
            data: Some(data),
            duration_ps: new_duration,
            stats: stats.into_iter().chain(extra.iter().cloned()).collect(),
        };
        let timing = XEvent {
            stats: Vec::new(),
            ..retimed.clone()
        };
        let head = if aggregated && layout.usual(&event) {
            let count = XEvent {
                data: Some(data),
                ..Default::default()
            };
            [XEvent { data: None, ..timing }.encode_to_vec(), count.encode_to_vec()].concat()
        } else {
            timing.encode_to_vec()
        };
        let body = [head, layout.non_timing(&event), stats_bytes(&extra)].concat();
        let mut want = Vec::new();
        prost::encoding::bytes::encode(tag, &body, &mut want);
        let mut got = vec![0xaa];
        xplane_proto::encode_event_retimed_field(tag, &view, new_offset, new_duration, &extra, &mut got);
        proptest::prop_assert_eq!(&got[1..], &want[..]);
        proptest::prop_assert_eq!(XEvent::decode(body.as_slice()).unwrap(), retimed.clone());
        if !aggregated && layout.unknown.is_none() && layout.usual(&event) {
            let mut prost_field = Vec::new();
            prost::encoding::message::encode(tag, &retimed, &mut prost_field);
            proptest::prop_assert_eq!(&got[1..], &prost_field[..]);
        }
        // The body form is the same event.
        let mut body_form = Vec::new();
        encode_event_retimed(&view, new_offset, new_duration, &extra, &mut body_form);
        proptest::prop_assert_eq!(XEvent::decode(body_form.as_slice()).unwrap(), retimed);
    }
}
