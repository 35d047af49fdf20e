//! `spillway serve`: a Spillway store behind the Redis protocol (RESP), so that Redis's
//! clients and tools use it unchanged.
//!
//! A request's way through: `server` reads a connection's bytes, `resp` parses the whole
//! requests in them, `command` looks each up in its table (`command/table.rs`: one entry per
//! command, as Redis keeps its own) and runs them as one pipeline — blind writes batched, runs
//! of read-modify-write commands staged (`command/context.rs`) — and `sync` holds the replies
//! of writes until an fsync covers them; then `server` sends the replies.

mod clients;
pub mod command;
mod float;
mod locks;
mod pattern;
pub mod resp;
pub mod server;
mod sync;

pub use server::{run, Config, Fsync};
