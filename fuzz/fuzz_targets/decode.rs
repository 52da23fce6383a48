//! The full prost decode on arbitrary bytes: an error, or a message that
//! encodes and decodes back to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use prost::Message as _;
use xplane_proto::XSpace;

fuzz_target!(|data: &[u8]| {
    if let Ok(space) = XSpace::decode(data) {
        let again = XSpace::decode(space.encode_to_vec().as_slice()).expect("round trip");
        assert_eq!(again.encode_to_vec(), space.encode_to_vec());
    }
});
