//! Adapters from each engine's own transactions to [`TxEngine`](crate::tx_engine::TxEngine).

#[cfg(feature = "peers")]
pub mod fjall;
#[cfg(feature = "peers")]
pub mod lmdb;
#[cfg(feature = "peers")]
pub mod redb;
#[cfg(feature = "peers")]
pub mod rocksdb;
pub mod spillway;
