//! `spillway serve`: a Spillway store behind the Redis protocol (RESP), so that Redis's
//! clients and tools use it unchanged.
//!
//! A request's way through: `server` reads a connection's bytes, `resp` parses the whole
//! requests in them, `command` runs them as one pipeline — blind writes batched, runs of
//! read-modify-write commands staged (`command/staged.rs`), the rest one by one (`admin`,
//! `keyspace`) — and `sync` holds the replies of writes until an fsync covers them; then
//! `server` sends the replies.

pub mod command;
mod float;
mod pattern;
pub mod resp;
pub mod server;
mod sync;

pub use server::{run, Config, Fsync};
