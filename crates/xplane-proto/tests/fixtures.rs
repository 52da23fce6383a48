//! The real JAX traces: lossless round trips, and the zero-copy reader
//! agreeing with the full decode.

use crate::common;

use common::fixtures;
use prost::Message;
use xplane_proto::{
    FileBytes, HOST_PLANE, PlaneIndex, SpaceView, XPlaneExt, XSpace, read_xspace, session_start_ns,
    session_start_ns_view, write_xspace,
};

#[test]
fn decode_encode_decode_is_lossless() {
    for path in fixtures() {
        let space = read_xspace(&path).unwrap();
        let again = XSpace::decode(space.encode_to_vec().as_slice()).unwrap();
        assert_eq!(space, again, "{}", path.display());
    }
}

#[test]
fn view_yields_what_prost_decodes() {
    for path in fixtures() {
        let bytes = FileBytes::open(&path).unwrap();
        let owned = bytes.decode().unwrap();
        assert_eq!(
            bytes.view().to_owned().unwrap(),
            owned,
            "{}",
            path.display()
        );
        assert_eq!(
            session_start_ns_view(&bytes.view()).unwrap(),
            session_start_ns(&owned)
        );
    }
}

#[test]
fn a_prefaulted_mapping_reads_as_the_file() {
    for path in fixtures() {
        let bytes = FileBytes::open(&path).unwrap();
        bytes.prefault();
        assert_eq!(
            &*bytes,
            std::fs::read(&path).unwrap().as_slice(),
            "{}",
            path.display()
        );
    }
}

#[test]
fn visiting_the_events_gives_what_the_iterator_gives() {
    for path in fixtures() {
        let bytes = FileBytes::open(&path).unwrap();
        for plane in bytes.view().planes() {
            for line in plane.unwrap().lines() {
                let line = line.unwrap();
                let want: Vec<_> = line.events().map(|e| e.unwrap().to_owned()).collect();
                let mut got = Vec::new();
                line.try_for_each_event(
                    |e| e,
                    |e| {
                        got.push(e.to_owned());
                        Ok(())
                    },
                )
                .unwrap();
                assert_eq!(got, want, "{}", path.display());
            }
        }
    }
}

#[test]
fn session_base_and_interned_hlo_op() {
    let path = &fixtures()[0];
    let space = read_xspace(path).unwrap();
    let t_sess = session_start_ns(&space);
    assert!(t_sess > 1_600_000_000_000_000_000, "epoch ns, got {t_sess}");
    let host = space.planes.iter().find(|p| p.name == HOST_PLANE).unwrap();
    let hlo_op = host.stat_id("hlo_op").expect("hlo_op stat metadata");
    let mut resolved = 0;
    for line in &host.lines {
        for event in &line.events {
            for stat in event.stats.iter().filter(|s| s.metadata_id == hlo_op) {
                let text = host.resolve_str(stat.value.as_ref().unwrap()).unwrap();
                assert!(!text.is_empty());
                resolved += 1;
            }
        }
    }
    assert!(resolved > 0, "no hlo_op stats in {}", path.display());

    // The same through the zero-copy index.
    let bytes = FileBytes::open(path).unwrap();
    let view = SpaceView::new(&bytes);
    let plane = view
        .planes()
        .map(Result::unwrap)
        .find(|p| p.name == HOST_PLANE)
        .unwrap();
    let index = PlaneIndex::new(&plane).unwrap();
    assert_eq!(index.stat_id("hlo_op"), Some(hlo_op));
}

#[test]
fn streaming_writer_reproduces_every_fixture() {
    for path in fixtures() {
        let space = read_xspace(&path).unwrap();
        let out = common::stream(&space);
        assert_eq!(
            XSpace::decode(out.as_slice()).unwrap(),
            space,
            "{}",
            path.display()
        );
    }
}

#[test]
fn gzip_round_trip_and_atomic_write() {
    let space = read_xspace(&fixtures()[0]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let gz = dir.path().join("out.xplane.pb.gz");
    write_xspace(&gz, &space).unwrap();
    assert_eq!(&std::fs::read(&gz).unwrap()[..2], &[0x1f, 0x8b]);
    assert_eq!(read_xspace(&gz).unwrap(), space);
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(names.len(), 1, "no temporary file left behind");
}

#[test]
fn a_plane_stat_is_found_only_where_a_plane_has_it() {
    use xplane_proto::{NODE_ID_STAT, SpaceView, XPlaneExt, XStatMetadata, x_stat};
    for path in fixtures() {
        let mut space = read_xspace(&path).unwrap();
        let bytes = space.encode_to_vec();
        assert!(
            !SpaceView::new(&bytes).has_plane_stat(NODE_ID_STAT).unwrap(),
            "{}: a recorded trace names no node",
            path.display()
        );
        let Some(plane) = space.planes.last_mut() else {
            continue;
        };
        // Metadata alone is not a stat of the plane.
        let id = plane.stat_metadata.keys().max().copied().unwrap_or(0) + 1;
        plane.stat_metadata.insert(
            id,
            XStatMetadata {
                id,
                name: NODE_ID_STAT.into(),
                ..Default::default()
            },
        );
        let bytes = space.encode_to_vec();
        assert!(!SpaceView::new(&bytes).has_plane_stat(NODE_ID_STAT).unwrap());
        let plane = space.planes.last_mut().unwrap();
        plane.set_stat(NODE_ID_STAT, x_stat::Value::Int64Value(3));
        let bytes = space.encode_to_vec();
        assert!(SpaceView::new(&bytes).has_plane_stat(NODE_ID_STAT).unwrap());
    }
}
