//! Arbitrary bytes as a store's list file: errors are fine, panics are not.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = spillway_fuzz::store_with(".list", data);
    spillway_fuzz::exercise(&dir);
});
