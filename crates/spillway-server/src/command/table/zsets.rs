//! The sorted-set commands' entries (`zsets`, `zrange`, `zunion`), as Redis 7.0 declares them
//! (`scripts/command-entry.py` prints an entry from a running redis-server). The blocking ones
//! (`BZPOPMIN`, `BZPOPMAX`, `BZMPOP`) are not served.

use super::super::spec::flag::*;
use super::super::spec::{acl, key, Arg, Command, KeySpec, Kind};
use super::super::{zrange, zsets, zunion};

pub static COMMANDS: &[Command] = &[
    Command::new("zadd", -4, Kind::Write, zsets::zadd)
        .flags(WRITE | DENYOOM | FAST)
        .acl(acl::SORTEDSET)
        .keys(&[KeySpec::range(1, 0, 1, key::RW | key::UPDATE)])
        .doc("Add one or more members to a sorted set, or update its score if it already exists", "1.2.0", "sorted-set", "O(log(N)) for each item added, where N is the number of elements in the sorted set.")
        .args(&[Arg::key("key", 0), Arg::one_of("condition", &[Arg::word("nx", "NX"), Arg::word("xx", "XX")]).optional(), Arg::one_of("comparison", &[Arg::word("gt", "GT"), Arg::word("lt", "LT")]).optional(), Arg::word("change", "CH").optional(), Arg::word("increment", "INCR").optional(), Arg::block("score_member", &[Arg::double("score"), Arg::string("member")]).multiple()]),
    Command::new("zcard", 2, Kind::Read, zsets::zcard)
        .flags(READONLY | FAST)
        .acl(acl::SORTEDSET)
        .keys(&[KeySpec::range(1, 0, 1, key::RO)])
        .doc("Get the number of members in a sorted set", "1.2.0", "sorted-set", "O(1)")
        .args(&[Arg::key("key", 0)]),
    Command::new("zcount", 4, Kind::Read, zrange::zcount)
        .flags(READONLY | FAST)
        .acl(acl::SORTEDSET)
        .keys(&[KeySpec::range(1, 0, 1, key::RO | key::ACCESS)])
        .doc("Count the members in a sorted set with scores within the given values", "2.0.0", "sorted-set", "O(log(N)) with N being the number of elements in the sorted set.")
        .args(&[Arg::key("key", 0), Arg::double("min"), Arg::double("max")]),
    Command::new("zdiff", -3, Kind::Read, zunion::zdiff)
        .flags(READONLY)
        .acl(acl::SORTEDSET)
        .keys(&[KeySpec::keynum(1, 0, 1, 1, key::RO | key::ACCESS)])
        .doc("Subtract multiple sorted sets", "6.2.0", "sorted-set", "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is the size of the first set, and K is the size of the result set.")
        .args(&[Arg::integer("numkeys"), Arg::key("key", 0).multiple(), Arg::word("withscores", "WITHSCORES").optional()]),
    Command::new("zdiffstore", -4, Kind::Write, zunion::zdiffstore)
        .flags(WRITE | DENYOOM)
        .acl(acl::SORTEDSET)
        .keys(&[KeySpec::range(1, 0, 1, key::OW | key::UPDATE), KeySpec::keynum(2, 0, 1, 1, key::RO | key::ACCESS)])
        .doc("Subtract multiple sorted sets and store the resulting sorted set in a new key", "6.2.0", "sorted-set", "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is the size of the first set, and K is the size of the result set.")
        .args(&[Arg::key("destination", 0), Arg::integer("numkeys"), Arg::key("key", 1).multiple()]),
    Command::new("zincrby", 4, Kind::Write, zsets::zincrby)
        .flags(WRITE | DENYOOM | FAST)
        .acl(acl::SORTEDSET)
        .keys(&[KeySpec::range(1, 0, 1, key::RW | key::ACCESS | key::UPDATE)])
        .doc("Increment the score of a member in a sorted set", "1.2.0", "sorted-set", "O(log(N)) where N is the number of elements in the sorted set.")
        .args(&[Arg::key("key", 0), Arg::integer("increment"), Arg::string("member")]),
    Command::new("zinter", -3, Kind::Read, zunion::zinter)
        .flags(READONLY)
        .acl(acl::SORTEDSET)
        .keys(&[KeySpec::keynum(1, 0, 1, 1, key::RO | key::ACCESS)])
        .doc("Intersect multiple sorted sets", "6.2.0", "sorted-set", "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number of input sorted sets and M being the number of elements in the resulting sorted set.")
        .args(&[Arg::integer("numkeys"), Arg::key("key", 0).multiple(), Arg::integer("weight").token("WEIGHTS").optional().multiple(), Arg::one_of("aggregate", &[Arg::word("sum", "SUM"), Arg::word("min", "MIN"), Arg::word("max", "MAX")]).token("AGGREGATE").optional(), Arg::word("withscores", "WITHSCORES").optional()]),
    Command::new("zintercard", -3, Kind::Read, zunion::zintercard)
        .flags(READONLY)
        .acl(acl::SORTEDSET)
        .keys(&[KeySpec::keynum(1, 0, 1, 1, key::RO | key::ACCESS)])
        .doc("Intersect multiple sorted sets and return the cardinality of the result", "7.0.0", "sorted-set", "O(N*K) worst case with N being the smallest input sorted set, K being the number of input sorted sets.")
        .args(&[Arg::integer("numkeys"), Arg::key("key", 0).multiple(), Arg::integer("limit").token("LIMIT").optional()]),
    Command::new("zinterstore", -4, Kind::Write, zunion::zinterstore)
        .flags(WRITE | DENYOOM)
        .acl(acl::SORTEDSET)
        .keys(&[KeySpec::range(1, 0, 1, key::OW | key::UPDATE), KeySpec::keynum(2, 0, 1, 1, key::RO | key::ACCESS)])
        .doc("Intersect multiple sorted sets and store the resulting sorted set in a new key", "2.0.0", "sorted-set", "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number of input sorted sets and M being the number of elements in the resulting sorted set.")
        .args(&[Arg::key("destination", 0), Arg::integer("numkeys"), Arg::key("key", 1).multiple(), Arg::integer("weight").token("WEIGHTS").optional().multiple(), Arg::one_of("aggregate", &[Arg::word("sum", "SUM"), Arg::word("min", "MIN"), Arg::word("max", "MAX")]).token("AGGREGATE").optional()]),
    Command::new("zlexcount", 4, Kind::Read, zrange::zlexcount)
        .flags(READONLY | FAST)
        .acl(acl::SORTEDSET)
        .keys(&[KeySpec::range(1, 0, 1, key::RO | key::ACCESS)])
        .doc("Count the number of members in a sorted set between a given lexicographical range", "2.8.9", "sorted-set", "O(log(N)) with N being the number of elements in the sorted set.")
        .args(&[Arg::key("key", 0), Arg::string("min"), Arg::string("max")]),
    Command::new("zmpop", -4, Kind::Write, zsets::zmpop)
        .flags(WRITE)
        .acl(acl::SORTEDSET)
        .keys(&[KeySpec::keynum(1, 0, 1, 1, key::RW | key::ACCESS | key::DELETE)])
        .doc("Remove and return members with scores in a sorted set", "7.0.0", "sorted-set", "O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements in the sorted set, and M being the number of elements popped.")
        .args(&[Arg::integer("numkeys"), Arg::key("key", 0).multiple(), Arg::one_of("where", &[Arg::word("min", "MIN"), Arg::word("max", "MAX")]), Arg::integer("count").token("COUNT").optional()]),
    Command::new("zmscore", -3, Kind::Read, zsets::zmscore)
        .flags(READONLY | FAST)
        .acl(acl::SORTEDSET)
        .keys(&[KeySpec::range(1, 0, 1, key::RO | key::ACCESS)])
        .doc("Get the score associated with the given members in a sorted set", "6.2.0", "sorted-set", "O(N) where N is the number of members being requested.")
        .args(&[Arg::key("key", 0), Arg::string("member").multiple()]),
    Command::new("zpopmax", -2, Kind::Write, zsets::zpopmax)
        .flags(WRITE | FAST)
        .acl(acl::SORTEDSET)
        .keys(&[KeySpec::range(1, 0, 1, key::RW | key::ACCESS | key::DELETE)])
        .doc("Remove and return members with the highest scores in a sorted set", "5.0.0", "sorted-set", "O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped.")
        .args(&[Arg::key("key", 0), Arg::integer("count").optional()]),
    Command::new("zpopmin", -2, Kind::Write, zsets::zpopmin)
        .flags(WRITE | FAST)
        .acl(acl::SORTEDSET)
        .keys(&[KeySpec::range(1, 0, 1, key::RW | key::ACCESS | key::DELETE)])
        .doc("Remove and return members with the lowest scores in a sorted set", "5.0.0", "sorted-set", "O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped.")
        .args(&[Arg::key("key", 0), Arg::integer("count").optional()]),
    Command::new("zrandmember", -2, Kind::Read, zsets::zrandmember)
        .flags(READONLY)
        .acl(acl::SORTEDSET)
        .tips(&["nondeterministic_output"])
        .keys(&[KeySpec::range(1, 0, 1, key::RO | key::ACCESS)])
        .doc("Get one or multiple random elements from a sorted set", "6.2.0", "sorted-set", "O(N) where N is the number of elements returned")
        .args(&[Arg::key("key", 0), Arg::block("options", &[Arg::integer("count"), Arg::word("withscores", "WITHSCORES").optional()]).optional()]),
    Command::new("zrange", -4, Kind::Read, zrange::zrange)
        .flags(READONLY)
        .acl(acl::SORTEDSET)
        .keys(&[KeySpec::range(1, 0, 1, key::RO | key::ACCESS)])
        .doc("Return a range of members in a sorted set", "1.2.0", "sorted-set", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.")
        .args(&[Arg::key("key", 0), Arg::string("start"), Arg::string("stop"), Arg::one_of("sortby", &[Arg::word("byscore", "BYSCORE"), Arg::word("bylex", "BYLEX")]).optional(), Arg::word("rev", "REV").optional(), Arg::block("offset_count", &[Arg::integer("offset"), Arg::integer("count")]).token("LIMIT").optional(), Arg::word("withscores", "WITHSCORES").optional()]),
    Command::new("zrangebylex", -4, Kind::Read, zrange::zrangebylex)
        .flags(READONLY)
        .acl(acl::SORTEDSET)
        .keys(&[KeySpec::range(1, 0, 1, key::RO | key::ACCESS)])
        .doc("Return a range of members in a sorted set, by lexicographical range", "2.8.9", "sorted-set", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).")
        .args(&[Arg::key("key", 0), Arg::string("min"), Arg::string("max"), Arg::block("offset_count", &[Arg::integer("offset"), Arg::integer("count")]).token("LIMIT").optional()]),
    Command::new("zrangebyscore", -4, Kind::Read, zrange::zrangebyscore)
        .flags(READONLY)
        .acl(acl::SORTEDSET)
        .keys(&[KeySpec::range(1, 0, 1, key::RO | key::ACCESS)])
        .doc("Return a range of members in a sorted set, by score", "1.0.5", "sorted-set", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).")
        .args(&[Arg::key("key", 0), Arg::double("min"), Arg::double("max"), Arg::word("withscores", "WITHSCORES").optional(), Arg::block("offset_count", &[Arg::integer("offset"), Arg::integer("count")]).token("LIMIT").optional()]),
    Command::new("zrangestore", -5, Kind::Write, zrange::zrangestore)
        .flags(WRITE | DENYOOM)
        .acl(acl::SORTEDSET)
        .keys(&[KeySpec::range(1, 0, 1, key::OW | key::UPDATE), KeySpec::range(2, 0, 1, key::RO | key::ACCESS)])
        .doc("Store a range of members from sorted set into another key", "6.2.0", "sorted-set", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements stored into the destination key.")
        .args(&[Arg::key("dst", 0), Arg::key("src", 1), Arg::string("min"), Arg::string("max"), Arg::one_of("sortby", &[Arg::word("byscore", "BYSCORE"), Arg::word("bylex", "BYLEX")]).optional(), Arg::word("rev", "REV").optional(), Arg::block("offset_count", &[Arg::integer("offset"), Arg::integer("count")]).token("LIMIT").optional()]),
    Command::new("zrank", 3, Kind::Read, zsets::zrank)
        .flags(READONLY | FAST)
        .acl(acl::SORTEDSET)
        .keys(&[KeySpec::range(1, 0, 1, key::RO | key::ACCESS)])
        .doc("Determine the index of a member in a sorted set", "2.0.0", "sorted-set", "O(log(N))")
        .args(&[Arg::key("key", 0), Arg::string("member")]),
    Command::new("zrem", -3, Kind::Write, zsets::zrem)
        .flags(WRITE | FAST)
        .acl(acl::SORTEDSET)
        .keys(&[KeySpec::range(1, 0, 1, key::RW | key::DELETE)])
        .doc("Remove one or more members from a sorted set", "1.2.0", "sorted-set", "O(M*log(N)) with N being the number of elements in the sorted set and M the number of elements to be removed.")
        .args(&[Arg::key("key", 0), Arg::string("member").multiple()]),
    Command::new("zremrangebylex", 4, Kind::Write, zrange::zremrangebylex)
        .flags(WRITE)
        .acl(acl::SORTEDSET)
        .keys(&[KeySpec::range(1, 0, 1, key::RW | key::DELETE)])
        .doc("Remove all members in a sorted set between the given lexicographical range", "2.8.9", "sorted-set", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.")
        .args(&[Arg::key("key", 0), Arg::string("min"), Arg::string("max")]),
    Command::new("zremrangebyrank", 4, Kind::Write, zrange::zremrangebyrank)
        .flags(WRITE)
        .acl(acl::SORTEDSET)
        .keys(&[KeySpec::range(1, 0, 1, key::RW | key::DELETE)])
        .doc("Remove all members in a sorted set within the given indexes", "2.0.0", "sorted-set", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.")
        .args(&[Arg::key("key", 0), Arg::integer("start"), Arg::integer("stop")]),
    Command::new("zremrangebyscore", 4, Kind::Write, zrange::zremrangebyscore)
        .flags(WRITE)
        .acl(acl::SORTEDSET)
        .keys(&[KeySpec::range(1, 0, 1, key::RW | key::DELETE)])
        .doc("Remove all members in a sorted set within the given scores", "1.2.0", "sorted-set", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.")
        .args(&[Arg::key("key", 0), Arg::double("min"), Arg::double("max")]),
    Command::new("zrevrange", -4, Kind::Read, zrange::zrevrange)
        .flags(READONLY)
        .acl(acl::SORTEDSET)
        .keys(&[KeySpec::range(1, 0, 1, key::RO | key::ACCESS)])
        .doc("Return a range of members in a sorted set, by index, with scores ordered from high to low", "1.2.0", "sorted-set", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.")
        .args(&[Arg::key("key", 0), Arg::integer("start"), Arg::integer("stop"), Arg::word("withscores", "WITHSCORES").optional()]),
    Command::new("zrevrangebylex", -4, Kind::Read, zrange::zrevrangebylex)
        .flags(READONLY)
        .acl(acl::SORTEDSET)
        .keys(&[KeySpec::range(1, 0, 1, key::RO | key::ACCESS)])
        .doc("Return a range of members in a sorted set, by lexicographical range, ordered from higher to lower strings.", "2.8.9", "sorted-set", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).")
        .args(&[Arg::key("key", 0), Arg::string("max"), Arg::string("min"), Arg::block("offset_count", &[Arg::integer("offset"), Arg::integer("count")]).token("LIMIT").optional()]),
    Command::new("zrevrangebyscore", -4, Kind::Read, zrange::zrevrangebyscore)
        .flags(READONLY)
        .acl(acl::SORTEDSET)
        .keys(&[KeySpec::range(1, 0, 1, key::RO | key::ACCESS)])
        .doc("Return a range of members in a sorted set, by score, with scores ordered from high to low", "2.2.0", "sorted-set", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).")
        .args(&[Arg::key("key", 0), Arg::double("max"), Arg::double("min"), Arg::word("withscores", "WITHSCORES").optional(), Arg::block("offset_count", &[Arg::integer("offset"), Arg::integer("count")]).token("LIMIT").optional()]),
    Command::new("zrevrank", 3, Kind::Read, zsets::zrevrank)
        .flags(READONLY | FAST)
        .acl(acl::SORTEDSET)
        .keys(&[KeySpec::range(1, 0, 1, key::RO | key::ACCESS)])
        .doc("Determine the index of a member in a sorted set, with scores ordered from high to low", "2.0.0", "sorted-set", "O(log(N))")
        .args(&[Arg::key("key", 0), Arg::string("member")]),
    Command::new("zscan", -3, Kind::Read, zsets::zscan)
        .flags(READONLY)
        .acl(acl::SORTEDSET)
        .tips(&["nondeterministic_output"])
        .keys(&[KeySpec::range(1, 0, 1, key::RO | key::ACCESS)])
        .doc("Incrementally iterate sorted sets elements and associated scores", "2.8.0", "sorted-set", "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..")
        .args(&[Arg::key("key", 0), Arg::integer("cursor"), Arg::pattern("pattern").token("MATCH").optional(), Arg::integer("count").token("COUNT").optional()]),
    Command::new("zscore", 3, Kind::Read, zsets::zscore)
        .flags(READONLY | FAST)
        .acl(acl::SORTEDSET)
        .keys(&[KeySpec::range(1, 0, 1, key::RO | key::ACCESS)])
        .doc("Get the score associated with the given member in a sorted set", "1.2.0", "sorted-set", "O(1)")
        .args(&[Arg::key("key", 0), Arg::string("member")]),
    Command::new("zunion", -3, Kind::Read, zunion::zunion)
        .flags(READONLY)
        .acl(acl::SORTEDSET)
        .keys(&[KeySpec::keynum(1, 0, 1, 1, key::RO | key::ACCESS)])
        .doc("Add multiple sorted sets", "6.2.0", "sorted-set", "O(N)+O(M*log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set.")
        .args(&[Arg::integer("numkeys"), Arg::key("key", 0).multiple(), Arg::integer("weight").token("WEIGHTS").optional().multiple(), Arg::one_of("aggregate", &[Arg::word("sum", "SUM"), Arg::word("min", "MIN"), Arg::word("max", "MAX")]).token("AGGREGATE").optional(), Arg::word("withscores", "WITHSCORES").optional()]),
    Command::new("zunionstore", -4, Kind::Write, zunion::zunionstore)
        .flags(WRITE | DENYOOM)
        .acl(acl::SORTEDSET)
        .keys(&[KeySpec::range(1, 0, 1, key::OW | key::UPDATE), KeySpec::keynum(2, 0, 1, 1, key::RO | key::ACCESS)])
        .doc("Add multiple sorted sets and store the resulting sorted set in a new key", "2.0.0", "sorted-set", "O(N)+O(M log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set.")
        .args(&[Arg::key("destination", 0), Arg::integer("numkeys"), Arg::key("key", 1).multiple(), Arg::integer("weight").token("WEIGHTS").optional().multiple(), Arg::one_of("aggregate", &[Arg::word("sum", "SUM"), Arg::word("min", "MIN"), Arg::word("max", "MAX")]).token("AGGREGATE").optional()]),
    Command::new("bzpopmin", -3, Kind::Write, zsets::bzpopmin)
        .flags(WRITE | NOSCRIPT | BLOCKING | FAST)
        .acl(acl::SORTEDSET)
        .keys(&[KeySpec::range(1, -2, 1, key::RW | key::ACCESS | key::DELETE)])
        .doc("Remove and return the member with the lowest score from one or more sorted sets, or block until one is available", "5.0.0", "sorted-set", "O(log(N)) with N being the number of elements in the sorted set.")
        .args(&[Arg::key("key", 0).multiple(), Arg::double("timeout")]),
    Command::new("bzpopmax", -3, Kind::Write, zsets::bzpopmax)
        .flags(WRITE | NOSCRIPT | BLOCKING | FAST)
        .acl(acl::SORTEDSET)
        .keys(&[KeySpec::range(1, -2, 1, key::RW | key::ACCESS | key::DELETE)])
        .doc("Remove and return the member with the highest score from one or more sorted sets, or block until one is available", "5.0.0", "sorted-set", "O(log(N)) with N being the number of elements in the sorted set.")
        .args(&[Arg::key("key", 0).multiple(), Arg::double("timeout")]),
    Command::new("bzmpop", -5, Kind::Write, zsets::bzmpop)
        .flags(WRITE | BLOCKING)
        .acl(acl::SORTEDSET)
        .keys(&[KeySpec::keynum(2, 0, 1, 1, key::RW | key::ACCESS | key::DELETE)])
        .doc("Remove and return members with scores in a sorted set or block until one is available", "7.0.0", "sorted-set", "O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements in the sorted set, and M being the number of elements popped.")
        .args(&[Arg::double("timeout"), Arg::integer("numkeys"), Arg::key("key", 0).multiple(), Arg::one_of("where", &[Arg::word("min", "MIN"), Arg::word("max", "MAX")]), Arg::integer("count").token("COUNT").optional()]),
];
