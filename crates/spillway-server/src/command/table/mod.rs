//! The commands the server answers: one entry each, as Redis's own table has them (arity,
//! flags, ACL categories, tips and key specs as Redis 7.0 declares them, so that `COMMAND
//! INFO` answers as Redis does), with how the pipeline runs it and its handler. Dispatch,
//! the pipeline, `COMMAND` and `INFO commandstats` all read this table: a new command is an
//! entry here and its handler.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::OnceLock;

use super::spec::flag::*;
use super::spec::{acl, key, Arg, Command, KeySpec, Kind};
use super::{
    admin, bits, client, config, expiry, info, keys, lcs, multi, object, rename, set, strings,
};
use crate::resp::Reply;

/// One key at argument 1, read (`GET`).
const READS_ONE: &[KeySpec] = &[KeySpec::range(1, 0, 1, key::RO | key::ACCESS)];
/// One key at argument 1, read and rewritten (`INCR`).
const UPDATES_ONE: &[KeySpec] = &[KeySpec::range(1, 0, 1, key::RW | key::ACCESS | key::UPDATE)];
/// One key at argument 1 whose expiry is changed (`EXPIRE`).
const RETIMES_ONE: &[KeySpec] = &[KeySpec::range(1, 0, 1, key::RW | key::UPDATE)];
/// One key at argument 1, overwritten (`SETEX`).
const OVERWRITES_ONE: &[KeySpec] = &[KeySpec::range(1, 0, 1, key::OW | key::UPDATE)];

const KEY: Arg = Arg::key("key", 0);
const KEYS: Arg = Arg::key("key", 0).multiple();
const VALUE: Arg = Arg::string("value");
const KEY_VALUES: Arg = Arg::block("key_value", &[KEY, VALUE]).multiple();
const FLUSH_MODE: Arg = Arg::one_of(
    "async",
    &[Arg::word("async", "ASYNC"), Arg::word("sync", "SYNC")],
)
.optional();
const COMMAND_NAMES: Arg = Arg::string("command-name").optional().multiple();
/// EXPIRE's conditions (Redis 7.0).
const EXPIRE_CONDITION: Arg = Arg::one_of(
    "condition",
    &[
        Arg::word("nx", "NX"),
        Arg::word("xx", "XX"),
        Arg::word("gt", "GT"),
        Arg::word("lt", "LT"),
    ],
)
.optional();
/// The ways SET and GETEX give an expiry.
const EX: Arg = Arg::integer("seconds").token("EX");
const PX: Arg = Arg::integer("milliseconds").token("PX");
const EXAT: Arg = Arg::unix_time("unix-time-seconds").token("EXAT");
const PXAT: Arg = Arg::unix_time("unix-time-milliseconds").token("PXAT");
const HELP: &str = "Show helpful text about the different subcommands";
/// GETRANGE's and SUBSTR's arguments.
const RANGE: &[Arg] = &[KEY, Arg::integer("start"), Arg::integer("end")];
/// Whether BITCOUNT's and BITPOS's range counts bytes or bits (Redis 7.0).
const INDEX_UNIT: Arg = Arg::one_of(
    "index_unit",
    &[Arg::word("byte", "BYTE"), Arg::word("bit", "BIT")],
)
.optional();

mod hashes;
mod lists;
mod sets;
mod zsets;

/// The commands' groups, each in a file of its own past those of the first.
static GROUPS: &[&[Command]] = &[
    COMMANDS,
    hashes::COMMANDS,
    sets::COMMANDS,
    zsets::COMMANDS,
    lists::COMMANDS,
];

/// Every command (not subcommands), in the table's order.
pub fn commands() -> impl Iterator<Item = &'static Command> {
    GROUPS.iter().flat_map(|g| g.iter())
}

/// The string, key, server and connection commands, grouped as Redis's documentation groups
/// them.
static COMMANDS: &[Command] = &[
    // Strings (strings.rs).
    Command::new("get", 2, Kind::Read, strings::get)
        .flags(READONLY | FAST)
        .acl(acl::STRING)
        .keys(READS_ONE)
        .doc("Get the value of a key", "1.0.0", "string", "O(1)")
        .args(&[KEY]),
    Command::new("mget", -2, Kind::Read, strings::mget)
        .flags(READONLY | FAST)
        .acl(acl::STRING)
        .tips(&["request_policy:multi_shard"])
        .keys(&[KeySpec::range(1, -1, 1, key::RO | key::ACCESS)])
        .doc(
            "Get the values of all the given keys",
            "1.0.0",
            "string",
            "O(N) where N is the number of keys to retrieve.",
        )
        .args(&[KEYS]),
    Command::new("strlen", 2, Kind::Read, strings::strlen)
        .flags(READONLY | FAST)
        .acl(acl::STRING)
        .keys(&[KeySpec::range(1, 0, 1, key::RO)])
        .doc(
            "Get the length of the value stored in a key",
            "2.2.0",
            "string",
            "O(1)",
        )
        .args(&[KEY]),
    Command::new("set", -3, Kind::Write, set::set)
        .flags(WRITE | DENYOOM)
        .acl(acl::STRING)
        .keys(&[KeySpec::range(
            1,
            0,
            1,
            key::RW | key::ACCESS | key::UPDATE | key::VARIABLE_FLAGS,
        )
        .notes("RW and ACCESS due to the optional `GET` argument")])
        .key_flags(set::set_key_flags)
        .doc(
            "Set the string value of a key",
            "1.0.0",
            "string",
            "O(1)",
        )
        .args(&[
            KEY,
            VALUE,
            Arg::one_of("condition", &[Arg::word("nx", "NX"), Arg::word("xx", "XX")]).optional(),
            Arg::word("get", "GET").optional(),
            Arg::one_of(
                "expiration",
                &[EX, PX, EXAT, PXAT, Arg::word("keepttl", "KEEPTTL")],
            )
            .optional(),
        ]),
    Command::new("setnx", 3, Kind::Write, set::setnx)
        .flags(WRITE | DENYOOM | FAST)
        .acl(acl::STRING)
        .keys(&[KeySpec::range(1, 0, 1, key::OW | key::INSERT)])
        .doc(
            "Set the value of a key, only if the key does not exist",
            "1.0.0",
            "string",
            "O(1)",
        )
        .args(&[KEY, VALUE]),
    Command::new("setex", 4, Kind::Write, set::setex)
        .flags(WRITE | DENYOOM)
        .acl(acl::STRING)
        .keys(OVERWRITES_ONE)
        .doc(
            "Set the value and expiration of a key",
            "2.0.0",
            "string",
            "O(1)",
        )
        .args(&[KEY, Arg::integer("seconds"), VALUE]),
    Command::new("psetex", 4, Kind::Write, set::psetex)
        .flags(WRITE | DENYOOM)
        .acl(acl::STRING)
        .keys(OVERWRITES_ONE)
        .doc(
            "Set the value and expiration in milliseconds of a key",
            "2.6.0",
            "string",
            "O(1)",
        )
        .args(&[KEY, Arg::integer("milliseconds"), VALUE]),
    Command::new("getset", 3, Kind::Write, set::getset)
        .flags(WRITE | DENYOOM | FAST)
        .acl(acl::STRING)
        .keys(UPDATES_ONE)
        .doc(
            "Set the string value of a key and return its old value",
            "1.0.0",
            "string",
            "O(1)",
        )
        .args(&[KEY, VALUE]),
    Command::new("getex", -2, Kind::Write, set::getex)
        .flags(WRITE | FAST)
        .acl(acl::STRING)
        .keys(&[
            KeySpec::range(1, 0, 1, key::RW | key::ACCESS | key::UPDATE)
                .notes("RW and UPDATE because it changes the TTL"),
        ])
        .doc(
            "Get the value of a key and optionally set its expiration",
            "6.2.0",
            "string",
            "O(1)",
        )
        .args(&[
            KEY,
            Arg::one_of(
                "expiration",
                &[EX, PX, EXAT, PXAT, Arg::word("persist", "PERSIST")],
            )
            .optional(),
        ]),
    Command::new("getdel", 2, Kind::Write, strings::getdel)
        .flags(WRITE | FAST)
        .acl(acl::STRING)
        .keys(&[KeySpec::range(1, 0, 1, key::RW | key::ACCESS | key::DELETE)])
        .doc(
            "Get the value of a key and delete the key",
            "6.2.0",
            "string",
            "O(1)",
        )
        .args(&[KEY]),
    Command::new("mset", -3, Kind::Write, strings::mset)
        .flags(WRITE | DENYOOM)
        .acl(acl::STRING)
        .tips(&["request_policy:multi_shard", "response_policy:all_succeeded"])
        .keys(&[KeySpec::range(1, -1, 2, key::OW | key::UPDATE)])
        .doc(
            "Set multiple keys to multiple values",
            "1.0.1",
            "string",
            "O(N) where N is the number of keys to set.",
        )
        .args(&[KEY_VALUES]),
    Command::new("msetnx", -3, Kind::Write, strings::msetnx)
        .flags(WRITE | DENYOOM)
        .acl(acl::STRING)
        .tips(&["request_policy:multi_shard", "response_policy:agg_min"])
        .keys(&[KeySpec::range(1, -1, 2, key::OW | key::INSERT)])
        .doc(
            "Set multiple keys to multiple values, only if none of the keys exist",
            "1.0.1",
            "string",
            "O(N) where N is the number of keys to set.",
        )
        .args(&[KEY_VALUES]),
    Command::new("append", 3, Kind::Write, strings::append)
        .flags(WRITE | DENYOOM | FAST)
        .acl(acl::STRING)
        .keys(&[KeySpec::range(1, 0, 1, key::RW | key::INSERT)])
        .doc(
            "Append a value to a key",
            "2.0.0",
            "string",
            "O(N) where N is the length of the new value: it is rewritten whole",
        )
        .args(&[KEY, VALUE]),
    Command::new("incr", 2, Kind::Write, strings::incr)
        .flags(WRITE | DENYOOM | FAST)
        .acl(acl::STRING)
        .keys(UPDATES_ONE)
        .doc(
            "Increment the integer value of a key by one",
            "1.0.0",
            "string",
            "O(1)",
        )
        .args(&[KEY]),
    Command::new("decr", 2, Kind::Write, strings::decr)
        .flags(WRITE | DENYOOM | FAST)
        .acl(acl::STRING)
        .keys(UPDATES_ONE)
        .doc(
            "Decrement the integer value of a key by one",
            "1.0.0",
            "string",
            "O(1)",
        )
        .args(&[KEY]),
    Command::new("incrby", 3, Kind::Write, strings::incrby)
        .flags(WRITE | DENYOOM | FAST)
        .acl(acl::STRING)
        .keys(UPDATES_ONE)
        .doc(
            "Increment the integer value of a key by the given amount",
            "1.0.0",
            "string",
            "O(1)",
        )
        .args(&[KEY, Arg::integer("increment")]),
    Command::new("decrby", 3, Kind::Write, strings::decrby)
        .flags(WRITE | DENYOOM | FAST)
        .acl(acl::STRING)
        .keys(UPDATES_ONE)
        .doc(
            "Decrement the integer value of a key by the given number",
            "1.0.0",
            "string",
            "O(1)",
        )
        .args(&[KEY, Arg::integer("decrement")]),
    Command::new("incrbyfloat", 3, Kind::Write, strings::incrbyfloat)
        .flags(WRITE | DENYOOM | FAST)
        .acl(acl::STRING)
        .keys(UPDATES_ONE)
        .doc(
            "Increment the float value of a key by the given amount",
            "2.6.0",
            "string",
            "O(1)",
        )
        .args(&[KEY, Arg::double("increment")]),
    // Ranges of a string (strings.rs).
    Command::new("setrange", 4, Kind::Write, strings::setrange)
        .flags(WRITE | DENYOOM)
        .acl(acl::STRING)
        .keys(&[KeySpec::range(1, 0, 1, key::RW | key::UPDATE)])
        .doc(
            "Overwrite part of a string at key starting at the specified offset",
            "2.2.0",
            "string",
            "O(N) where N is the new length: the value is rewritten whole",
        )
        .args(&[KEY, Arg::integer("offset"), VALUE]),
    Command::new("getrange", 4, Kind::Read, strings::getrange)
        .flags(READONLY)
        .acl(acl::STRING)
        .keys(READS_ONE)
        .doc(
            "Get a substring of the string stored at a key",
            "2.4.0",
            "string",
            "O(N) where N is the length of the returned string",
        )
        .args(RANGE),
    Command::new("substr", 4, Kind::Read, strings::getrange)
        .flags(READONLY)
        .acl(acl::STRING)
        .keys(READS_ONE)
        .doc(
            "Get a substring of the string stored at a key (deprecated: GETRANGE)",
            "1.0.0",
            "string",
            "O(N) where N is the length of the returned string",
        )
        .args(RANGE),
    // LCS (lcs.rs): O(N*M), so off the event loop.
    Command::new("lcs", -3, Kind::Read, lcs::lcs_command)
        .flags(READONLY | LONG)
        .acl(acl::STRING)
        .keys(&[KeySpec::range(1, 1, 1, key::RO | key::ACCESS)])
        .doc(
            "Find longest common substring",
            "7.0.0",
            "string",
            "O(N*M) where N and M are the lengths of s1 and s2, respectively",
        )
        .args(&[
            Arg::key("key1", 0),
            Arg::key("key2", 0),
            Arg::word("len", "LEN").optional(),
            Arg::word("idx", "IDX").optional(),
            Arg::integer("len").token("MINMATCHLEN").optional(),
            Arg::word("withmatchlen", "WITHMATCHLEN").optional(),
        ]),
    // Bits of a string (bits.rs).
    Command::new("setbit", 4, Kind::Write, bits::setbit)
        .flags(WRITE | DENYOOM)
        .acl(acl::BITMAP)
        .keys(UPDATES_ONE)
        .doc(
            "Sets or clears the bit at offset in the string value stored at key",
            "2.2.0",
            "bitmap",
            "O(N) where N is the new length: the value is rewritten whole",
        )
        .args(&[KEY, Arg::integer("offset"), Arg::integer("value")]),
    Command::new("getbit", 3, Kind::Read, bits::getbit)
        .flags(READONLY | FAST)
        .acl(acl::BITMAP)
        .keys(READS_ONE)
        .doc(
            "Returns the bit value at offset in the string value stored at key",
            "2.2.0",
            "bitmap",
            "O(1)",
        )
        .args(&[KEY, Arg::integer("offset")]),
    Command::new("bitcount", -2, Kind::Read, bits::bitcount)
        .flags(READONLY)
        .acl(acl::BITMAP)
        .keys(READS_ONE)
        .doc("Count set bits in a string", "2.6.0", "bitmap", "O(N)")
        .args(&[
            KEY,
            Arg::block(
                "index",
                &[Arg::integer("start"), Arg::integer("end"), INDEX_UNIT],
            )
            .optional(),
        ]),
    Command::new("bitpos", -3, Kind::Read, bits::bitpos)
        .flags(READONLY)
        .acl(acl::BITMAP)
        .keys(READS_ONE)
        .doc("Find first bit set or clear in a string", "2.8.7", "bitmap", "O(N)")
        .args(&[
            KEY,
            Arg::integer("bit"),
            Arg::block(
                "index",
                &[
                    Arg::integer("start"),
                    Arg::block("end_index", &[Arg::integer("end"), INDEX_UNIT]).optional(),
                ],
            )
            .optional(),
        ]),
    // Keys (keys.rs).
    Command::new("del", -2, Kind::Write, keys::del)
        .flags(WRITE)
        .acl(acl::KEYSPACE)
        .tips(&["request_policy:multi_shard", "response_policy:agg_sum"])
        .keys(&[KeySpec::range(1, -1, 1, key::RM | key::DELETE)])
        .doc(
            "Delete keys: how many of them existed",
            "1.0.0",
            "generic",
            "O(N) where N is the number of keys given",
        )
        .args(&[KEYS]),
    Command::new("unlink", -2, Kind::Write, keys::del)
        .flags(WRITE | FAST)
        .acl(acl::KEYSPACE)
        .tips(&["request_policy:multi_shard", "response_policy:agg_sum"])
        .keys(&[KeySpec::range(1, -1, 1, key::RM | key::DELETE)])
        .doc(
            "Delete keys, as DEL (a deletion never waits here)",
            "4.0.0",
            "generic",
            "O(N) where N is the number of keys given",
        )
        .args(&[KEYS]),
    Command::new("exists", -2, Kind::Read, keys::exists)
        .flags(READONLY | FAST)
        .acl(acl::KEYSPACE)
        .tips(&["request_policy:multi_shard", "response_policy:agg_sum"])
        .keys(&[KeySpec::range(1, -1, 1, key::RO)])
        .doc(
            "Determine how many of the keys exist",
            "1.0.0",
            "generic",
            "O(N) where N is the number of keys to check.",
        )
        .args(&[KEYS]),
    // Expiry (expiry.rs).
    Command::new("type", 2, Kind::Read, keys::type_of)
        .flags(READONLY | FAST)
        .acl(acl::KEYSPACE)
        .keys(&[KeySpec::range(1, 0, 1, key::RO)])
        .doc("Determine the type stored at key", "1.0.0", "generic", "O(1)")
        .args(&[Arg::key("key", 0)]),

    Command::new("rename", 3, Kind::Write, rename::rename)
        .flags(WRITE)
        .acl(acl::KEYSPACE)
        .keys(&[KeySpec::range(1, 0, 1, key::RW | key::ACCESS | key::DELETE), KeySpec::range(2, 0, 1, key::OW | key::UPDATE)])
        .doc("Rename a key", "1.0.0", "generic", "O(1)")
        .args(&[Arg::key("key", 0), Arg::key("newkey", 1)]),
    Command::new("renamenx", 3, Kind::Write, rename::renamenx)
        .flags(WRITE | FAST)
        .acl(acl::KEYSPACE)
        .keys(&[KeySpec::range(1, 0, 1, key::RW | key::ACCESS | key::DELETE), KeySpec::range(2, 0, 1, key::OW | key::INSERT)])
        .doc("Rename a key, only if the new key does not exist", "1.0.0", "generic", "O(1)")
        .args(&[Arg::key("key", 0), Arg::key("newkey", 1)]),
    Command::new("copy", -3, Kind::Write, rename::copy)
        .flags(WRITE | DENYOOM)
        .acl(acl::KEYSPACE)
        .keys(&[KeySpec::range(1, 0, 1, key::RO | key::ACCESS), KeySpec::range(2, 0, 1, key::OW | key::UPDATE)])
        .doc("Copy a key", "6.2.0", "generic", "O(N) worst case for collections, where N is the number of nested items. O(1) for string values.")
        .args(&[Arg::key("source", 0), Arg::key("destination", 1), Arg::integer("destination-db").token("DB").optional(), Arg::word("replace", "REPLACE").optional()]),
    Command::new("randomkey", 1, Kind::Read, keys::randomkey)
        .flags(READONLY)
        .acl(acl::KEYSPACE)
        .tips(&["request_policy:all_shards", "nondeterministic_output"])
        .doc("Return a random key from the keyspace", "1.0.0", "generic", "O(1)"),
    Command::new("touch", -2, Kind::Read, keys::touch)
        .flags(READONLY | FAST)
        .acl(acl::KEYSPACE)
        .tips(&["request_policy:multi_shard", "response_policy:agg_sum"])
        .keys(&[KeySpec::range(1, -1, 1, key::RO)])
        .doc("Alters the last access time of a key(s). Returns the number of existing keys specified.", "3.2.1", "generic", "O(N) where N is the number of keys that will be touched.")
        .args(&[Arg::key("key", 0).multiple()]),
    Command::container("memory", MEMORY).doc(
        "A container for memory diagnostics commands",
        "4.0.0",
        "server",
        "Depends on subcommand.",
    ),
    Command::container("object", OBJECT).doc(
        "A container for object introspection commands",
        "2.2.3",
        "generic",
        "Depends on subcommand.",
    ),
    Command::new("expire", -3, Kind::Write, expiry::expire)
        .flags(WRITE | FAST)
        .acl(acl::KEYSPACE)
        .keys(RETIMES_ONE)
        .doc(
            "Set a key's time to live in seconds",
            "1.0.0",
            "generic",
            "O(1)",
        )
        .args(&[KEY, Arg::integer("seconds"), EXPIRE_CONDITION]),
    Command::new("pexpire", -3, Kind::Write, expiry::pexpire)
        .flags(WRITE | FAST)
        .acl(acl::KEYSPACE)
        .keys(RETIMES_ONE)
        .doc(
            "Set a key's time to live in milliseconds",
            "2.6.0",
            "generic",
            "O(1)",
        )
        .args(&[KEY, Arg::integer("milliseconds"), EXPIRE_CONDITION]),
    Command::new("expireat", -3, Kind::Write, expiry::expireat)
        .flags(WRITE | FAST)
        .acl(acl::KEYSPACE)
        .keys(RETIMES_ONE)
        .doc(
            "Set the expiration for a key as a UNIX timestamp",
            "1.2.0",
            "generic",
            "O(1)",
        )
        .args(&[KEY, Arg::unix_time("unix-time-seconds"), EXPIRE_CONDITION]),
    Command::new("pexpireat", -3, Kind::Write, expiry::pexpireat)
        .flags(WRITE | FAST)
        .acl(acl::KEYSPACE)
        .keys(RETIMES_ONE)
        .doc(
            "Set the expiration for a key as a UNIX timestamp specified in milliseconds",
            "2.6.0",
            "generic",
            "O(1)",
        )
        .args(&[
            KEY,
            Arg::unix_time("unix-time-milliseconds"),
            EXPIRE_CONDITION,
        ]),
    Command::new("ttl", 2, Kind::Read, expiry::ttl)
        .flags(READONLY | FAST)
        .acl(acl::KEYSPACE)
        .tips(&["nondeterministic_output"])
        .keys(READS_ONE)
        .doc(
            "Get the time to live for a key in seconds",
            "1.0.0",
            "generic",
            "O(1)",
        )
        .args(&[KEY]),
    Command::new("pttl", 2, Kind::Read, expiry::pttl)
        .flags(READONLY | FAST)
        .acl(acl::KEYSPACE)
        .tips(&["nondeterministic_output"])
        .keys(READS_ONE)
        .doc(
            "Get the time to live for a key in milliseconds",
            "2.6.0",
            "generic",
            "O(1)",
        )
        .args(&[KEY]),
    Command::new("expiretime", 2, Kind::Read, expiry::expiretime)
        .flags(READONLY | FAST)
        .acl(acl::KEYSPACE)
        .keys(READS_ONE)
        .doc(
            "Get the expiration Unix timestamp for a key",
            "7.0.0",
            "generic",
            "O(1)",
        )
        .args(&[KEY]),
    Command::new("pexpiretime", 2, Kind::Read, expiry::pexpiretime)
        .flags(READONLY | FAST)
        .acl(acl::KEYSPACE)
        .keys(READS_ONE)
        .doc(
            "Get the expiration Unix timestamp for a key in milliseconds",
            "7.0.0",
            "generic",
            "O(1)",
        )
        .args(&[KEY]),
    Command::new("persist", 2, Kind::Write, expiry::persist)
        .flags(WRITE | FAST)
        .acl(acl::KEYSPACE)
        .keys(RETIMES_ONE)
        .doc("Remove the expiration from a key", "2.2.0", "generic", "O(1)")
        .args(&[KEY]),
    Command::new("scan", -2, Kind::Read, keys::scan)
        .flags(READONLY | LONG)
        .acl(acl::KEYSPACE)
        .tips(&["nondeterministic_output", "request_policy:special"])
        .doc(
            "Incrementally iterate the keys space",
            "2.8.0",
            "generic",
            "O(1) for every call. O(N) for a complete iteration.",
        )
        .args(&[
            Arg::integer("cursor"),
            Arg::pattern("pattern").token("MATCH").optional(),
            Arg::integer("count").token("COUNT").optional(),
            Arg::string("type").token("TYPE").optional(),
        ]),
    Command::new("keys", 2, Kind::Read, keys::keys)
        .flags(READONLY | LONG)
        .acl(acl::KEYSPACE | acl::DANGEROUS)
        .tips(&["request_policy:all_shards", "nondeterministic_output_order"])
        .doc(
            "Find all keys matching the given pattern",
            "1.0.0",
            "generic",
            "O(N) with N the number of keys in the database (of those under the pattern's literal prefix, in an ordered store)",
        )
        .args(&[Arg::pattern("pattern")]),
    Command::new("dbsize", 1, Kind::Read, keys::dbsize)
        .flags(READONLY | FAST | LONG)
        .acl(acl::KEYSPACE)
        .tips(&["request_policy:all_shards", "response_policy:agg_sum"])
        .doc(
            "Return the number of keys: counted up to 100,000, estimated past that",
            "1.0.0",
            "server",
            "O(N) up to 100,000 keys, O(1) past that",
        ),
    // A flush clears the databases' keyspaces: one record per database, O(1) whatever they
    // hold, so it runs on the event loop. A swap spills what is in memory first, which may
    // take a while (LONG: off the event loop).
    Command::new("flushdb", -1, Kind::Write, keys::flushdb)
        .flags(WRITE)
        .acl(acl::KEYSPACE | acl::DANGEROUS)
        .tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
        .doc(
            "Remove all keys from the current database (one clear of its keyspace)",
            "1.0.0",
            "server",
            "O(1): one record, whatever the database holds",
        )
        .args(&[FLUSH_MODE]),
    Command::new("flushall", -1, Kind::Write, keys::flushall)
        .flags(WRITE)
        .acl(acl::KEYSPACE | acl::DANGEROUS)
        .tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
        .doc(
            "Remove all keys from all databases",
            "1.0.0",
            "server",
            "O(D) with D the databases written since their last flush: one record each, in one batch",
        )
        .args(&[FLUSH_MODE]),
    Command::new("swapdb", 3, Kind::Write, keys::swapdb)
        .flags(WRITE | FAST | LONG)
        .acl(acl::KEYSPACE | acl::DANGEROUS)
        .doc(
            "Swaps two Redis databases",
            "4.0.0",
            "server",
            "O(1) once what is in memory is spilled",
        )
        .args(&[Arg::integer("index1"), Arg::integer("index2")]),
    // Transactions (multi.rs).
    Command::new("multi", 1, Kind::Admin, multi::multi)
        .flags(NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY | NOT_QUEUED)
        .acl(acl::TRANSACTION)
        .doc(
            "Mark the start of a transaction block",
            "1.2.0",
            "transactions",
            "O(1)",
        ),
    // Off the event loop: its queue may hold commands over every key, and it waits for the
    // lock that orders writes.
    Command::new("exec", 1, Kind::Admin, multi::exec)
        .flags(NOSCRIPT | LOADING | STALE | SKIP_SLOWLOG | LONG | NOT_QUEUED)
        .acl(acl::TRANSACTION)
        .doc(
            "Execute all commands issued after MULTI (their writes are one atomic append)",
            "1.2.0",
            "transactions",
            "Depends on commands in the transaction",
        ),
    Command::new("discard", 1, Kind::Admin, multi::discard)
        .flags(NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY | NOT_QUEUED)
        .acl(acl::TRANSACTION)
        .doc(
            "Discard all commands issued after MULTI",
            "2.0.0",
            "transactions",
            "O(N), when N is the number of queued commands",
        ),
    Command::new("watch", -2, Kind::Admin, multi::watch)
        .flags(NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY | NOT_QUEUED)
        .acl(acl::TRANSACTION)
        .keys(&[KeySpec::range(1, -1, 1, key::RO)])
        .doc(
            "Watch the given keys to determine execution of the MULTI/EXEC block",
            "2.2.0",
            "transactions",
            "O(1) for every key.",
        )
        .args(&[KEYS]),
    Command::new("unwatch", 1, Kind::Admin, multi::unwatch)
        .flags(NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY)
        .acl(acl::TRANSACTION)
        .doc(
            "Forget about all watched keys",
            "2.2.0",
            "transactions",
            "O(1)",
        ),
    // The connection (admin.rs).
    Command::new("ping", -1, Kind::Admin, admin::ping)
        .flags(FAST)
        .acl(acl::CONNECTION)
        .tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
        .doc("Ping the server", "1.0.0", "connection", "O(1)")
        .args(&[Arg::string("message").optional()]),
    Command::new("echo", 2, Kind::Admin, admin::echo)
        .flags(LOADING | STALE | FAST)
        .acl(acl::CONNECTION)
        .doc("Echo the given string", "1.0.0", "connection", "O(1)")
        .args(&[Arg::string("message")]),
    Command::new("quit", -1, Kind::Admin, admin::quit)
        .flags(NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY | NOT_QUEUED)
        .acl(acl::CONNECTION)
        .doc("Close the connection", "1.0.0", "connection", "O(1)"),
    Command::new("select", 2, Kind::Admin, admin::select)
        .flags(LOADING | STALE | FAST)
        .acl(acl::CONNECTION)
        .doc(
            "Change the selected database for the current connection",
            "1.0.0",
            "connection",
            "O(1)",
        )
        .args(&[Arg::integer("index")]),
    Command::new("hello", -1, Kind::Admin, admin::hello)
        .flags(NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY)
        .acl(acl::CONNECTION)
        .doc("Handshake with Redis", "6.0.0", "connection", "O(1)")
        .args(&[Arg::block(
            "arguments",
            &[
                Arg::integer("protover"),
                Arg::block(
                    "username_password",
                    &[Arg::string("username"), Arg::string("password")],
                )
                .token("AUTH")
                .optional(),
                Arg::string("clientname").token("SETNAME").optional(),
            ],
        )
        .optional()]),
    Command::new("auth", -2, Kind::Admin, admin::auth)
        .flags(NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY)
        .acl(acl::CONNECTION)
        .doc("Authenticate to the server", "1.0.0", "connection", "O(1)")
        .args(&[
            Arg::string("username").optional(),
            Arg::string("password"),
        ]),
    Command::container("client", CLIENT)
        .doc(
            "A container for client connection commands",
            "2.4.0",
            "connection",
            "Depends on subcommand.",
        ),
    // The server (admin.rs, info.rs).
    Command::new("info", -1, Kind::Read, info::info)
        .flags(LOADING | STALE | LONG)
        .acl(acl::DANGEROUS)
        .tips(&[
            "nondeterministic_output",
            "request_policy:all_shards",
            "response_policy:special",
        ])
        .doc(
            "Get information and statistics about the server",
            "1.0.0",
            "server",
            "O(1) (the keyspace section counts up to 100,000 keys)",
        )
        .args(&[Arg::string("section").optional().multiple()]),
    Command::new("command", -1, Kind::Admin, admin::command)
        .flags(LOADING | STALE)
        .acl(acl::CONNECTION)
        .tips(&["nondeterministic_output_order"])
        .subcommands(COMMAND)
        .doc(
            "Get array of command details",
            "2.8.13",
            "server",
            "O(N) where N is the total number of commands",
        ),
    Command::container("config", CONFIG).doc(
        "A container for server configuration commands",
        "2.0.0",
        "server",
        "Depends on subcommand.",
    ),
    Command::new("shutdown", -1, Kind::Admin, admin::shutdown)
        .flags(ADMIN | NOSCRIPT | LOADING | STALE | NO_MULTI | ALLOW_BUSY)
        .doc(
            "Close the store cleanly and stop the server (every write is in the log already: SAVE and NOSAVE do the same)",
            "1.0.0",
            "server",
            "O(1)",
        )
        .args(&[
            Arg::one_of(
                "nosave_save",
                &[Arg::word("nosave", "NOSAVE"), Arg::word("save", "SAVE")],
            )
            .optional(),
            Arg::word("now", "NOW").optional(),
            Arg::word("force", "FORCE").optional(),
            Arg::word("abort", "ABORT").optional(),
        ]),
];

static CLIENT: &[Command] = &[
    Command::new("client|setname", 3, Kind::Admin, admin::client_setname)
        .flags(NOSCRIPT | LOADING | STALE)
        .acl(acl::CONNECTION)
        .doc(
            "Set the current connection name",
            "2.6.9",
            "connection",
            "O(1)",
        )
        .args(&[Arg::string("connection-name")]),
    Command::new("client|getname", 2, Kind::Admin, admin::client_getname)
        .flags(NOSCRIPT | LOADING | STALE)
        .acl(acl::CONNECTION)
        .doc(
            "Get the current connection name",
            "2.6.9",
            "connection",
            "O(1)",
        ),
    Command::new("client|id", 2, Kind::Admin, admin::client_id)
        .flags(NOSCRIPT | LOADING | STALE)
        .acl(acl::CONNECTION)
        .doc(
            "Returns the client ID for the current connection",
            "5.0.0",
            "connection",
            "O(1)",
        ),
    Command::new("client|list", -2, Kind::Admin, client::client_list)
        .flags(ADMIN | NOSCRIPT | LOADING | STALE)
        .acl(acl::CONNECTION)
        .tips(&["nondeterministic_output"])
        .doc(
            "Get the list of client connections",
            "2.4.0",
            "connection",
            "O(N) where N is the number of client connections",
        )
        .args(&[
            Arg::one_of(
                "normal_master_replica_pubsub",
                &[
                    Arg::word("normal", "NORMAL"),
                    Arg::word("master", "MASTER"),
                    Arg::word("replica", "REPLICA"),
                    Arg::word("pubsub", "PUBSUB"),
                ],
            )
            .token("TYPE")
            .optional(),
            Arg::block("id", &[Arg::integer("client-id").multiple()])
                .token("ID")
                .optional(),
        ]),
    Command::new("client|info", 2, Kind::Admin, client::client_info)
        .flags(NOSCRIPT | LOADING | STALE)
        .acl(acl::CONNECTION)
        .tips(&["nondeterministic_output"])
        .doc(
            "Returns information about the current client connection.",
            "6.2.0",
            "connection",
            "O(1)",
        ),
    Command::new("client|kill", -3, Kind::Admin, client::client_kill)
        .flags(ADMIN | NOSCRIPT | LOADING | STALE)
        .acl(acl::CONNECTION)
        .doc(
            "Kill the connection of a client",
            "2.4.0",
            "connection",
            "O(N) where N is the number of client connections",
        )
        .args(&[Arg::one_of(
            "filter",
            &[
                Arg::string("ip:port"),
                Arg::one_of(
                    "new-format",
                    &[
                        Arg::integer("client-id").token("ID").optional(),
                        Arg::one_of(
                            "normal_master_slave_pubsub",
                            &[
                                Arg::word("normal", "NORMAL"),
                                Arg::word("master", "MASTER"),
                                Arg::word("slave", "SLAVE"),
                                Arg::word("replica", "REPLICA"),
                                Arg::word("pubsub", "PUBSUB"),
                            ],
                        )
                        .token("TYPE")
                        .optional(),
                        Arg::string("username").token("USER").optional(),
                        Arg::string("ip:port").token("ADDR").optional(),
                        Arg::string("ip:port").token("LADDR").optional(),
                        Arg::string("yes/no").token("SKIPME").optional(),
                    ],
                )
                .multiple(),
            ],
        )]),
    Command::new("client|help", 2, Kind::Admin, admin::help)
        .flags(LOADING | STALE)
        .acl(acl::CONNECTION)
        .doc(HELP, "5.0.0", "connection", "O(1)"),
];

static COMMAND: &[Command] = &[
    Command::new("command|count", 2, Kind::Admin, admin::command_count)
        .flags(LOADING | STALE)
        .acl(acl::CONNECTION)
        .doc("Get total number of commands", "2.8.13", "server", "O(1)"),
    Command::new("command|list", -2, Kind::Admin, admin::command_list)
        .flags(LOADING | STALE)
        .acl(acl::CONNECTION)
        .tips(&["nondeterministic_output_order"])
        .doc(
            "Get an array of command names",
            "7.0.0",
            "server",
            "O(N) where N is the total number of commands",
        )
        .args(&[Arg::one_of(
            "filterby",
            &[
                Arg::string("module-name").token("MODULE"),
                Arg::string("category").token("ACLCAT"),
                Arg::pattern("pattern").token("PATTERN"),
            ],
        )
        .token("FILTERBY")
        .optional()]),
    Command::new("command|info", -2, Kind::Admin, admin::command_info)
        .flags(LOADING | STALE)
        .acl(acl::CONNECTION)
        .tips(&["nondeterministic_output_order"])
        .doc(
            "Get array of specific command details, or all when no argument is given.",
            "2.8.13",
            "server",
            "O(N) where N is the number of commands to look up",
        )
        .args(&[COMMAND_NAMES]),
    Command::new("command|docs", -2, Kind::Admin, admin::command_docs)
        .flags(LOADING | STALE)
        .acl(acl::CONNECTION)
        .tips(&["nondeterministic_output_order"])
        .doc(
            "Get array of specific command documentation",
            "7.0.0",
            "server",
            "O(N) where N is the number of commands to look up",
        )
        .args(&[COMMAND_NAMES]),
    Command::new("command|getkeys", -4, Kind::Admin, admin::command_getkeys)
        .flags(LOADING | STALE)
        .acl(acl::CONNECTION)
        .doc(
            "Extract keys given a full command",
            "2.8.13",
            "server",
            "O(N) where N is the number of arguments to the command",
        ),
    Command::new(
        "command|getkeysandflags",
        -4,
        Kind::Admin,
        admin::command_getkeysandflags,
    )
    .flags(LOADING | STALE)
    .acl(acl::CONNECTION)
    .doc(
        "Extract keys and access flags given a full command",
        "7.0.0",
        "server",
        "O(N) where N is the number of arguments to the command",
    ),
    Command::new("command|help", 2, Kind::Admin, admin::help)
        .flags(LOADING | STALE)
        .acl(acl::CONNECTION)
        .doc(HELP, "5.0.0", "server", "O(1)"),
];

static OBJECT: &[Command] = &[
    Command::new("object|encoding", 3, Kind::Read, object::encoding)
        .flags(READONLY)
        .acl(acl::KEYSPACE)
        .tips(&["nondeterministic_output"])
        .keys(&[KeySpec::range(2, 0, 1, key::RO)])
        .doc(
            "Inspect the internal encoding of a Redis object",
            "2.2.3",
            "generic",
            "O(1)",
        )
        .args(&[Arg::key("key", 0)]),
    Command::new("object|help", 2, Kind::Admin, admin::help)
        .flags(LOADING | STALE)
        .acl(acl::KEYSPACE)
        .doc(
            "Show helpful text about the different subcommands",
            "6.2.0",
            "generic",
            "O(1)",
        ),
];

static MEMORY: &[Command] = &[
    Command::new("memory|usage", -3, Kind::Read, object::usage)
        .flags(READONLY)
        .keys(&[KeySpec::range(2, 0, 1, key::RO)])
        .doc(
            "Estimate the memory usage of a key",
            "4.0.0",
            "server",
            "O(N) where N is the number of samples.",
        )
        .args(&[
            Arg::key("key", 0),
            Arg::integer("count").token("SAMPLES").optional(),
        ]),
    Command::new("memory|help", 2, Kind::Admin, admin::help)
        .flags(LOADING | STALE)
        .doc(
            "Show helpful text about the different subcommands",
            "4.0.0",
            "server",
            "O(1)",
        ),
];

static CONFIG: &[Command] = &[
    Command::new("config|get", -3, Kind::Admin, config::config_get)
        .flags(ADMIN | NOSCRIPT | LOADING | STALE)
        .doc(
            "Get the values of configuration parameters (the store's options among them)",
            "2.0.0",
            "server",
            "O(N) when N is the number of configuration parameters provided",
        )
        .args(&[Arg::block("parameter", &[Arg::string("parameter")]).multiple()]),
    Command::new("config|set", -4, Kind::Admin, config::config_set)
        .flags(ADMIN | NOSCRIPT | LOADING | STALE)
        .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
        .doc(
            "Set configuration parameters to the given values (those this server can change: see CONFIG GET)",
            "2.0.0",
            "server",
            "O(N) when N is the number of configuration parameters provided",
        )
        .args(&[Arg::block(
            "parameter_value",
            &[Arg::string("parameter"), Arg::string("value")],
        )
        .multiple()]),
    Command::new("config|resetstat", 2, Kind::Admin, config::config_resetstat)
        .flags(ADMIN | NOSCRIPT | LOADING | STALE)
        .doc(
            "Reset the statistics INFO gives",
            "2.0.0",
            "server",
            "O(1)",
        ),
    Command::new("config|help", 2, Kind::Admin, admin::help)
        .flags(LOADING | STALE)
        .doc(HELP, "5.0.0", "server", "O(1)"),
];

/// Every command and subcommand, numbered (for per-command statistics), and by full name.
struct Index {
    all: Vec<&'static Command>,
    by_name: HashMap<&'static str, usize, BuildHasherDefault<Fnv>>,
}

/// FNV-1a, for the lookup every request makes (twice: the server asks whether it takes long):
/// names are a few bytes, and a lookup took 47 ns with SipHash, 23 ns with this.
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

fn index() -> &'static Index {
    static INDEX: OnceLock<Index> = OnceLock::new();
    INDEX.get_or_init(|| {
        let all: Vec<&'static Command> = commands()
            .flat_map(|c| std::iter::once(c).chain(c.subcommands))
            .collect();
        let by_name = all.iter().enumerate().map(|(i, c)| (c.name, i)).collect();
        Index { all, by_name }
    })
}

/// How many commands and subcommands there are: numbers below it are [`find`]'s.
pub fn count() -> usize {
    index().all.len()
}

/// Command number `id` (see [`find`]).
pub fn nth(id: usize) -> &'static Command {
    index().all[id]
}

/// The command (or subcommand) named `name` in any case (`get`, `client|setname`), and its
/// number.
pub fn by_name(name: &[u8]) -> Option<(usize, &'static Command)> {
    // Names are short: lowercase on the stack, not in a new string per request.
    let mut lower = [0u8; 32];
    let lower = lower.get_mut(..name.len())?;
    lower.copy_from_slice(name);
    lower.make_ascii_lowercase();
    let id = *index().by_name.get(std::str::from_utf8(lower).ok()?)?;
    Some((id, nth(id)))
}

/// The command request `args` runs (a subcommand, if its first argument names a container
/// with subcommands and it has a second), and its number; or Redis's error for an unknown
/// command or subcommand.
pub fn find(args: &[Vec<u8>]) -> Result<(usize, &'static Command), Reply> {
    // A subcommand's full name (`config|get`) names no command in a request, as in Redis.
    let found = by_name(&args[0]).filter(|_| !args[0].contains(&b'|'));
    match (found, args.get(1)) {
        (Some((_, c)), Some(sub)) if !c.subcommands.is_empty() => {
            let mut name = c.name.as_bytes().to_vec();
            name.push(b'|');
            name.extend_from_slice(sub);
            by_name(&name).ok_or_else(|| unknown_subcommand(&args[0], sub))
        }
        (Some(found), _) => Ok(found),
        (None, _) => Err(super::unknown(args)),
    }
}

/// Redis's error for a container's unknown subcommand: the subcommand cut at 128 bytes.
fn unknown_subcommand(container: &[u8], sub: &[u8]) -> Reply {
    Reply::Error(format!(
        "ERR unknown subcommand '{}'. Try {} HELP.",
        String::from_utf8_lossy(&sub[..sub.len().min(128)]),
        String::from_utf8_lossy(container).to_ascii_uppercase()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_lowercase_and_subcommands_are_their_containers() {
        let mut seen = std::collections::HashSet::new();
        for c in &index().all {
            assert!(seen.insert(c.name), "{} twice", c.name);
            assert_eq!(c.name, c.name.to_ascii_lowercase());
            assert!(
                c.name.len() <= 32,
                "{} is longer than by_name takes",
                c.name
            );
            assert!(
                !c.doc.summary.is_empty() && !c.doc.group.is_empty(),
                "{}",
                c.name
            );
        }
        for c in commands() {
            assert!(!c.name.contains('|'));
            assert_eq!(c.run.is_none(), c.arity == -2 && !c.subcommands.is_empty());
            for sub in c.subcommands {
                assert!(
                    sub.name.starts_with(&format!("{}|", c.name)),
                    "{}",
                    sub.name
                );
                assert!(sub.arity.abs() >= 2 && sub.subcommands.is_empty());
            }
        }
    }

    #[test]
    fn requests_find_their_command_in_any_case() {
        let req = |args: &[&str]| -> Vec<Vec<u8>> {
            args.iter().map(|a| a.as_bytes().to_vec()).collect()
        };
        let name = |args: &[&str]| find(&req(args)).map(|(_, c)| c.name);
        assert_eq!(name(&["GeT", "k"]), Ok("get"));
        assert_eq!(name(&["client", "SETNAME", "x"]), Ok("client|setname"));
        assert_eq!(name(&["CLIENT"]), Ok("client"));
        assert_eq!(name(&["command"]), Ok("command"));
        assert_eq!(
            name(&["client", "nosuch"]),
            Err(Reply::error(
                "ERR unknown subcommand 'nosuch'. Try CLIENT HELP."
            ))
        );
        assert!(name(&["nosuch"]).is_err());
        assert!(
            name(&["config|get", "x"]).is_err(),
            "a subcommand's name is no command"
        );
        assert!(name(&[&"x".repeat(40)]).is_err());
        let (id, c) = by_name(b"CONFIG|GET").unwrap();
        assert_eq!((nth(id).name, c.name), ("config|get", "config|get"));
    }
}
