//! The scripts compared with Redis beside the main one: one module per group of commands.
//! Each module's `SCRIPT` ends with QUIT, and its tests are written with [`script_tests!`].

/// The two tests of a script: one command at a time, and pipelined. A script module calls it as
/// `super::script_tests!(SCRIPT);` (the `use` below puts it in this module by path; a module
/// loaded by `#[path]` from here finds its file beside this one).
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
// So that a script's module names it by path, `super::script_tests!(SCRIPT)`, where it is
// declared (a `macro_rules!` is otherwise reached only by text order).
pub(crate) use script_tests;

// One line per script module: `#[path = "<name>.rs"] mod <name>;` (files beside this one).
#[path = "hashes.rs"]
mod hashes;
#[path = "keys.rs"]
mod keys;
#[path = "lists.rs"]
mod lists;
#[path = "ops.rs"]
mod ops;
#[path = "sets.rs"]
mod sets;
#[path = "strings.rs"]
mod strings;
#[path = "zsets.rs"]
mod zsets;
