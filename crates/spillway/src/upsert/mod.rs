//! Upserts (B^ε-trees' messages, RocksDB's merge operator): the operators that fold merge
//! operands into values, and `fold`, the one place operands meet an operator.

pub mod fold;
pub mod operator;
