//! `spillway serve`: a Spillway store behind the Redis protocol (RESP), so that Redis's
//! clients and tools use it unchanged.

pub mod command;
mod float;
mod pattern;
pub mod resp;
pub mod server;
mod sync;

pub use server::{run, Config, Fsync};
