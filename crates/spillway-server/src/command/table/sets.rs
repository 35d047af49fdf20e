//! The set commands' entries (`sets`), as Redis 7.0 declares them
//! (`scripts/command-entry.py` prints an entry from a running redis-server).

use super::super::sets;
use super::super::spec::flag::*;
use super::super::spec::{acl, key, Arg, Command, KeySpec, Kind};

pub static COMMANDS: &[Command] = &[
    Command::new("sadd", -3, Kind::Write, sets::sadd)
        .flags(WRITE | DENYOOM | FAST)
        .acl(acl::SET)
        .keys(&[KeySpec::range(1, 0, 1, key::RW | key::INSERT)])
        .doc("Add one or more members to a set", "1.0.0", "set", "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.")
        .args(&[Arg::key("key", 0), Arg::string("member").multiple()]),
    Command::new("scard", 2, Kind::Read, sets::scard)
        .flags(READONLY | FAST)
        .acl(acl::SET)
        .keys(&[KeySpec::range(1, 0, 1, key::RO)])
        .doc("Get the number of members in a set", "1.0.0", "set", "O(1)")
        .args(&[Arg::key("key", 0)]),
    Command::new("sdiff", -2, Kind::Read, sets::sdiff)
        .flags(READONLY)
        .acl(acl::SET)
        .tips(&["nondeterministic_output_order"])
        .keys(&[KeySpec::range(1, -1, 1, key::RO | key::ACCESS)])
        .doc("Subtract multiple sets", "1.0.0", "set", "O(N) where N is the total number of elements in all given sets.")
        .args(&[Arg::key("key", 0).multiple()]),
    Command::new("sdiffstore", -3, Kind::Write, sets::sdiffstore)
        .flags(WRITE | DENYOOM)
        .acl(acl::SET)
        .keys(&[KeySpec::range(1, 0, 1, key::OW | key::UPDATE), KeySpec::range(2, -1, 1, key::RO | key::ACCESS)])
        .doc("Subtract multiple sets and store the resulting set in a key", "1.0.0", "set", "O(N) where N is the total number of elements in all given sets.")
        .args(&[Arg::key("destination", 0), Arg::key("key", 1).multiple()]),
    Command::new("sinter", -2, Kind::Read, sets::sinter)
        .flags(READONLY)
        .acl(acl::SET)
        .tips(&["nondeterministic_output_order"])
        .keys(&[KeySpec::range(1, -1, 1, key::RO | key::ACCESS)])
        .doc("Intersect multiple sets", "1.0.0", "set", "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.")
        .args(&[Arg::key("key", 0).multiple()]),
    Command::new("sintercard", -3, Kind::Read, sets::sintercard)
        .flags(READONLY)
        .acl(acl::SET)
        .keys(&[KeySpec::keynum(1, 0, 1, 1, key::RO | key::ACCESS)])
        .doc("Intersect multiple sets and return the cardinality of the result", "7.0.0", "set", "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.")
        .args(&[Arg::integer("numkeys"), Arg::key("key", 0).multiple(), Arg::integer("limit").token("LIMIT").optional()]),
    Command::new("sinterstore", -3, Kind::Write, sets::sinterstore)
        .flags(WRITE | DENYOOM)
        .acl(acl::SET)
        .keys(&[KeySpec::range(1, 0, 1, key::RW | key::UPDATE), KeySpec::range(2, -1, 1, key::RO | key::ACCESS)])
        .doc("Intersect multiple sets and store the resulting set in a key", "1.0.0", "set", "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.")
        .args(&[Arg::key("destination", 0), Arg::key("key", 1).multiple()]),
    Command::new("sismember", 3, Kind::Read, sets::sismember)
        .flags(READONLY | FAST)
        .acl(acl::SET)
        .keys(&[KeySpec::range(1, 0, 1, key::RO)])
        .doc("Determine if a given value is a member of a set", "1.0.0", "set", "O(1)")
        .args(&[Arg::key("key", 0), Arg::string("member")]),
    Command::new("smembers", 2, Kind::Read, sets::smembers)
        .flags(READONLY)
        .acl(acl::SET)
        .tips(&["nondeterministic_output_order"])
        .keys(&[KeySpec::range(1, 0, 1, key::RO | key::ACCESS)])
        .doc("Get all the members in a set", "1.0.0", "set", "O(N) where N is the set cardinality.")
        .args(&[Arg::key("key", 0)]),
    Command::new("smismember", -3, Kind::Read, sets::smismember)
        .flags(READONLY | FAST)
        .acl(acl::SET)
        .keys(&[KeySpec::range(1, 0, 1, key::RO | key::ACCESS)])
        .doc("Returns the membership associated with the given elements for a set", "6.2.0", "set", "O(N) where N is the number of elements being checked for membership")
        .args(&[Arg::key("key", 0), Arg::string("member").multiple()]),
    Command::new("smove", 4, Kind::Write, sets::smove)
        .flags(WRITE | FAST)
        .acl(acl::SET)
        .keys(&[KeySpec::range(1, 0, 1, key::RW | key::ACCESS | key::DELETE), KeySpec::range(2, 0, 1, key::RW | key::INSERT)])
        .doc("Move a member from one set to another", "1.0.0", "set", "O(1)")
        .args(&[Arg::key("source", 0), Arg::key("destination", 1), Arg::string("member")]),
    Command::new("spop", -2, Kind::Write, sets::spop)
        .flags(WRITE | FAST)
        .acl(acl::SET)
        .tips(&["nondeterministic_output"])
        .keys(&[KeySpec::range(1, 0, 1, key::RW | key::ACCESS | key::DELETE)])
        .doc("Remove and return one or multiple random members from a set", "1.0.0", "set", "Without the count argument O(1), otherwise O(N) where N is the value of the passed count.")
        .args(&[Arg::key("key", 0), Arg::integer("count").optional()]),
    Command::new("srandmember", -2, Kind::Read, sets::srandmember)
        .flags(READONLY)
        .acl(acl::SET)
        .tips(&["nondeterministic_output"])
        .keys(&[KeySpec::range(1, 0, 1, key::RO | key::ACCESS)])
        .doc("Get one or multiple random members from a set", "1.0.0", "set", "Without the count argument O(1), otherwise O(N) where N is the absolute value of the passed count.")
        .args(&[Arg::key("key", 0), Arg::integer("count").optional()]),
    Command::new("srem", -3, Kind::Write, sets::srem)
        .flags(WRITE | FAST)
        .acl(acl::SET)
        .keys(&[KeySpec::range(1, 0, 1, key::RW | key::DELETE)])
        .doc("Remove one or more members from a set", "1.0.0", "set", "O(N) where N is the number of members to be removed.")
        .args(&[Arg::key("key", 0), Arg::string("member").multiple()]),
    Command::new("sscan", -3, Kind::Read, sets::sscan)
        .flags(READONLY)
        .acl(acl::SET)
        .tips(&["nondeterministic_output"])
        .keys(&[KeySpec::range(1, 0, 1, key::RO | key::ACCESS)])
        .doc("Incrementally iterate Set elements", "2.8.0", "set", "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..")
        .args(&[Arg::key("key", 0), Arg::integer("cursor"), Arg::pattern("pattern").token("MATCH").optional(), Arg::integer("count").token("COUNT").optional()]),
    Command::new("sunion", -2, Kind::Read, sets::sunion)
        .flags(READONLY)
        .acl(acl::SET)
        .tips(&["nondeterministic_output_order"])
        .keys(&[KeySpec::range(1, -1, 1, key::RO | key::ACCESS)])
        .doc("Add multiple sets", "1.0.0", "set", "O(N) where N is the total number of elements in all given sets.")
        .args(&[Arg::key("key", 0).multiple()]),
    Command::new("sunionstore", -3, Kind::Write, sets::sunionstore)
        .flags(WRITE | DENYOOM)
        .acl(acl::SET)
        .keys(&[KeySpec::range(1, 0, 1, key::OW | key::UPDATE), KeySpec::range(2, -1, 1, key::RO | key::ACCESS)])
        .doc("Add multiple sets and store the resulting set in a key", "1.0.0", "set", "O(N) where N is the total number of elements in all given sets.")
        .args(&[Arg::key("destination", 0), Arg::key("key", 1).multiple()]),
];
