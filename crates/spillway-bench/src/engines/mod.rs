//! Adapters from each engine's own API to [`Engine`](crate::engine::Engine).

#[cfg(feature = "peers")]
pub mod fjall;
#[cfg(feature = "peers")]
pub mod leveldb;
pub mod raw_log;
#[cfg(feature = "peers")]
pub mod redb;
#[cfg(feature = "peers")]
pub mod rocksdb;
pub mod spillway;
