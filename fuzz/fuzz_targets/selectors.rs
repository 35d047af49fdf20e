//! Arbitrary bytes as a store's index of saved selectors (`SELECTORS`): errors are fine,
//! panics are not.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    spillway_fuzz::exercise_with("SELECTORS", data);
});
