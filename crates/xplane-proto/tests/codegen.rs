//! The generated prost code is checked in; this test regenerates it from
//! `proto/xplane.proto` with protox + prost-build (no `protoc`) and fails on
//! any drift. Run with `XPLANE_PROTO_BLESS=1` to rewrite the checked-in file.

use std::path::Path;

const GENERATED: &str = "src/generated/tensorflow.profiler.rs";

fn regenerate(out_dir: &Path) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let fds = protox::compile([root.join("proto/xplane.proto")], [root.join("proto")])
        .expect("proto/xplane.proto compiles");
    let mut config = prost_build::Config::new();
    config.btree_map(["."]);
    config.out_dir(out_dir);
    config.compile_fds(fds).expect("prost-build generates code");
    std::fs::read_to_string(out_dir.join("tensorflow.profiler.rs")).expect("generated file")
}

#[test]
fn generated_code_matches_the_proto() {
    let dir = tempfile::tempdir().unwrap();
    let fresh = regenerate(dir.path());
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(GENERATED);
    if std::env::var_os("XPLANE_PROTO_BLESS").is_some() {
        std::fs::write(&path, &fresh).unwrap();
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == fresh,
        "{GENERATED} is out of date with proto/xplane.proto; \
         regenerate with `XPLANE_PROTO_BLESS=1 cargo test -p xplane-proto --test tests codegen`"
    );
}
