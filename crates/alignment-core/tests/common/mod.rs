//! Helpers shared by the integration tests.

use xplane_proto::{XSpace, absolute_ps, session_start_ns, x_event};

/// Absolute `(start, end)` ps of every event of the first plane named
/// `plane`, line by line (with the line's name), in file order.
pub fn times(space: &XSpace, plane: &str) -> Vec<(String, Vec<(i128, i128)>)> {
    let base = session_start_ns(space);
    let plane = space.planes.iter().find(|p| p.name == plane).unwrap();
    plane
        .lines
        .iter()
        .map(|l| {
            let v = l
                .events
                .iter()
                .map(|e| {
                    let off = match e.data {
                        Some(x_event::Data::OffsetPs(o)) => o,
                        _ => 0,
                    };
                    let s = absolute_ps(base, l.timestamp_ns, off);
                    (s, s + e.duration_ps as i128)
                })
                .collect();
            (l.name.clone(), v)
        })
        .collect()
}
