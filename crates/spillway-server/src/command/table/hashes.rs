//! The hash commands' entries (`hashes`), as Redis 7.0 declares them
//! (`scripts/command-entry.py` prints an entry from a running redis-server).

use super::super::hashes;
use super::super::spec::flag::*;
use super::super::spec::{acl, key, Arg, Command, KeySpec, Kind};

pub static COMMANDS: &[Command] = &[
    Command::new("hdel", -3, Kind::Write, hashes::hdel)
        .flags(WRITE | FAST)
        .acl(acl::HASH)
        .keys(&[KeySpec::range(1, 0, 1, key::RW | key::DELETE)])
        .doc("Delete one or more hash fields", "2.0.0", "hash", "O(N) where N is the number of fields to be removed.")
        .args(&[Arg::key("key", 0), Arg::string("field").multiple()]),
    Command::new("hexists", 3, Kind::Read, hashes::hexists)
        .flags(READONLY | FAST)
        .acl(acl::HASH)
        .keys(&[KeySpec::range(1, 0, 1, key::RO)])
        .doc("Determine if a hash field exists", "2.0.0", "hash", "O(1)")
        .args(&[Arg::key("key", 0), Arg::string("field")]),
    Command::new("hget", 3, Kind::Read, hashes::hget)
        .flags(READONLY | FAST)
        .acl(acl::HASH)
        .keys(&[KeySpec::range(1, 0, 1, key::RO | key::ACCESS)])
        .doc("Get the value of a hash field", "2.0.0", "hash", "O(1)")
        .args(&[Arg::key("key", 0), Arg::string("field")]),
    Command::new("hgetall", 2, Kind::Read, hashes::hgetall)
        .flags(READONLY)
        .acl(acl::HASH)
        .tips(&["nondeterministic_output_order"])
        .keys(&[KeySpec::range(1, 0, 1, key::RO | key::ACCESS)])
        .doc("Get all the fields and values in a hash", "2.0.0", "hash", "O(N) where N is the size of the hash.")
        .args(&[Arg::key("key", 0)]),
    Command::new("hincrby", 4, Kind::Write, hashes::hincrby)
        .flags(WRITE | DENYOOM | FAST)
        .acl(acl::HASH)
        .keys(&[KeySpec::range(1, 0, 1, key::RW | key::ACCESS | key::UPDATE)])
        .doc("Increment the integer value of a hash field by the given number", "2.0.0", "hash", "O(1)")
        .args(&[Arg::key("key", 0), Arg::string("field"), Arg::integer("increment")]),
    Command::new("hincrbyfloat", 4, Kind::Write, hashes::hincrbyfloat)
        .flags(WRITE | DENYOOM | FAST)
        .acl(acl::HASH)
        .keys(&[KeySpec::range(1, 0, 1, key::RW | key::ACCESS | key::UPDATE)])
        .doc("Increment the float value of a hash field by the given amount", "2.6.0", "hash", "O(1)")
        .args(&[Arg::key("key", 0), Arg::string("field"), Arg::double("increment")]),
    Command::new("hkeys", 2, Kind::Read, hashes::hkeys)
        .flags(READONLY)
        .acl(acl::HASH)
        .tips(&["nondeterministic_output_order"])
        .keys(&[KeySpec::range(1, 0, 1, key::RO | key::ACCESS)])
        .doc("Get all the fields in a hash", "2.0.0", "hash", "O(N) where N is the size of the hash.")
        .args(&[Arg::key("key", 0)]),
    Command::new("hlen", 2, Kind::Read, hashes::hlen)
        .flags(READONLY | FAST)
        .acl(acl::HASH)
        .keys(&[KeySpec::range(1, 0, 1, key::RO)])
        .doc("Get the number of fields in a hash", "2.0.0", "hash", "O(1)")
        .args(&[Arg::key("key", 0)]),
    Command::new("hmget", -3, Kind::Read, hashes::hmget)
        .flags(READONLY | FAST)
        .acl(acl::HASH)
        .keys(&[KeySpec::range(1, 0, 1, key::RO | key::ACCESS)])
        .doc("Get the values of all the given hash fields", "2.0.0", "hash", "O(N) where N is the number of fields being requested.")
        .args(&[Arg::key("key", 0), Arg::string("field").multiple()]),
    Command::new("hmset", -4, Kind::Write, hashes::hmset)
        .flags(WRITE | DENYOOM | FAST)
        .acl(acl::HASH)
        .keys(&[KeySpec::range(1, 0, 1, key::RW | key::UPDATE)])
        .doc("Set multiple hash fields to multiple values", "2.0.0", "hash", "O(N) where N is the number of fields being set.")
        .args(&[Arg::key("key", 0), Arg::block("field_value", &[Arg::string("field"), Arg::string("value")]).multiple()]),
    Command::new("hrandfield", -2, Kind::Read, hashes::hrandfield)
        .flags(READONLY)
        .acl(acl::HASH)
        .tips(&["nondeterministic_output"])
        .keys(&[KeySpec::range(1, 0, 1, key::RO | key::ACCESS)])
        .doc("Get one or multiple random fields from a hash", "6.2.0", "hash", "O(N) where N is the number of fields returned")
        .args(&[Arg::key("key", 0), Arg::block("options", &[Arg::integer("count"), Arg::word("withvalues", "WITHVALUES").optional()]).optional()]),
    Command::new("hscan", -3, Kind::Read, hashes::hscan)
        .flags(READONLY)
        .acl(acl::HASH)
        .tips(&["nondeterministic_output"])
        .keys(&[KeySpec::range(1, 0, 1, key::RO | key::ACCESS)])
        .doc("Incrementally iterate hash fields and associated values", "2.8.0", "hash", "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..")
        .args(&[Arg::key("key", 0), Arg::integer("cursor"), Arg::pattern("pattern").token("MATCH").optional(), Arg::integer("count").token("COUNT").optional()]),
    Command::new("hset", -4, Kind::Write, hashes::hset)
        .flags(WRITE | DENYOOM | FAST)
        .acl(acl::HASH)
        .keys(&[KeySpec::range(1, 0, 1, key::RW | key::UPDATE)])
        .doc("Set the string value of a hash field", "2.0.0", "hash", "O(1) for each field/value pair added, so O(N) to add N field/value pairs when the command is called with multiple field/value pairs.")
        .args(&[Arg::key("key", 0), Arg::block("field_value", &[Arg::string("field"), Arg::string("value")]).multiple()]),
    Command::new("hsetnx", 4, Kind::Write, hashes::hsetnx)
        .flags(WRITE | DENYOOM | FAST)
        .acl(acl::HASH)
        .keys(&[KeySpec::range(1, 0, 1, key::RW | key::INSERT)])
        .doc("Set the value of a hash field, only if the field does not exist", "2.0.0", "hash", "O(1)")
        .args(&[Arg::key("key", 0), Arg::string("field"), Arg::string("value")]),
    Command::new("hstrlen", 3, Kind::Read, hashes::hstrlen)
        .flags(READONLY | FAST)
        .acl(acl::HASH)
        .keys(&[KeySpec::range(1, 0, 1, key::RO)])
        .doc("Get the length of the value of a hash field", "3.2.0", "hash", "O(1)")
        .args(&[Arg::key("key", 0), Arg::string("field")]),
    Command::new("hvals", 2, Kind::Read, hashes::hvals)
        .flags(READONLY)
        .acl(acl::HASH)
        .tips(&["nondeterministic_output_order"])
        .keys(&[KeySpec::range(1, 0, 1, key::RO | key::ACCESS)])
        .doc("Get all the values in a hash", "2.0.0", "hash", "O(N) where N is the size of the hash.")
        .args(&[Arg::key("key", 0)]),
];
