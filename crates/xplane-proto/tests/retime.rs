//! `encode_event_retimed` keeps every non-timing field, whatever the field
//! order of the input event.

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
