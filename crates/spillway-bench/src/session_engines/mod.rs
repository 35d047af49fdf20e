//! Adapters from each store's own API to [`SessionEngine`](crate::session_engine::SessionEngine).

#[cfg(feature = "peers")]
pub mod fjall;
pub mod redis;
#[cfg(feature = "peers")]
pub mod rocksdb;
pub mod spillway;
