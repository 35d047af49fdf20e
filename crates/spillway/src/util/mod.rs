//! Helpers under the engine that know nothing of it: Elias–Fano sequences, prefetch hints.

pub mod ef;
pub mod prefetch;
pub mod sync;
pub mod worker;
