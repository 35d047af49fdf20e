//! The scripts compared with Redis beside the main one: one module per group of commands.
//! Each module's `SCRIPT` ends with QUIT, and its tests are written with [`script_tests!`].

/// The two tests of a script: one command at a time, and pipelined.
macro_rules! script_tests {
    ($script:expr) => {
        #[test]
        #[ignore = "needs redis-server (Debian package): .ci/run runs it"]
        fn one_command_at_a_time_as_redis() {
            super::super::compare_script($script, false);
        }

        #[test]
        #[ignore = "needs redis-server (Debian package): .ci/run runs it"]
        fn pipelined_as_redis() {
            super::super::compare_script($script, true);
        }
    };
}
pub(crate) use script_tests;

// One line per script module: `#[path = "<name>.rs"] mod <name>;` (files beside this one).
#[path = "hashes.rs"]
mod hashes;
#[path = "zsets.rs"]
mod zsets;
