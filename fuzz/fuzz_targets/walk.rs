//! The zero-copy reader on arbitrary bytes: the top-level check and the full
//! walk must return, never panic; whatever it accepts, prost must decode to
//! the same message.
#![no_main]

use libfuzzer_sys::fuzz_target;
use prost::Message as _;
use xplane_proto::{SpaceView, XSpace};

fuzz_target!(|data: &[u8]| {
    let view = SpaceView::new(data);
    let _ = view.check_top_level();
    let walked = view.walk_all();
    let owned = view.to_owned();
    assert_eq!(walked.is_ok(), owned.is_ok());
    if let Ok(owned) = owned {
        let decoded = XSpace::decode(data).expect("prost accepts what the view accepts");
        assert_eq!(owned.encode_to_vec(), decoded.encode_to_vec());
    }
});
