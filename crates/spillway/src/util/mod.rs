//! Helpers under the engine that know nothing of it: work shared among cores, Elias–Fano
//! sequences, prefetch hints.

pub mod cores;
pub mod ef;
pub mod prefetch;
pub mod sync;
pub mod worker;
