//! Helpers shared by the integration tests.

use std::path::PathBuf;

use xplane_proto::{XSpace, XSpaceWriter};

/// Every real JAX trace under `fixtures/jax-cpu`, sorted.
pub fn fixtures() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/jax-cpu");
    let mut files = Vec::new();
    for dir in std::fs::read_dir(&root).unwrap() {
        for file in std::fs::read_dir(dir.unwrap().path()).unwrap() {
            files.push(file.unwrap().path());
        }
    }
    files.sort();
    assert!(
        files.len() >= 9,
        "fixtures missing under {}",
        root.display()
    );
    files
}

/// The smallest fixture, for tests that are quadratic in the file size.
#[allow(dead_code)]
pub fn smallest_fixture() -> PathBuf {
    fixtures()
        .into_iter()
        .min_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap()
}

/// Write `space` with the streaming writer: odd planes whole, even planes
/// line by line and event by event.
#[allow(dead_code)]
pub fn stream(space: &XSpace) -> Vec<u8> {
    let mut w = XSpaceWriter::new(std::io::Cursor::new(Vec::new()));
    for (i, plane) in space.planes.iter().enumerate() {
        if i % 2 == 1 {
            w.plane(plane).unwrap();
            continue;
        }
        w.begin_plane(plane.id, &plane.name).unwrap();
        for line in &plane.lines {
            w.begin_line(line).unwrap();
            for event in &line.events {
                w.event(event).unwrap();
            }
            w.end_line().unwrap();
        }
        w.end_plane(&plane.event_metadata, &plane.stat_metadata, &plane.stats)
            .unwrap();
    }
    w.finish(&space.hostnames, &space.errors, &space.warnings)
        .unwrap()
        .into_inner()
}
