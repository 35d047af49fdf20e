//! `spillway serve`: a Spillway store behind the Redis protocol (RESP), so that Redis's
//! clients and tools use it unchanged. Work in progress (issue 14): the protocol codec.

pub mod command;
pub mod resp;
pub mod server;

pub use server::{run, Config, Fsync};
