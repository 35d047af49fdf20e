//! Arbitrary bytes as a file of saved selector tiers (`NNNNNNNNNN.sel`): errors are fine,
//! panics are not.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    spillway_fuzz::exercise_with(".sel", data);
});
