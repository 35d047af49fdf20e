//! The list commands' entries (`lists`), as Redis 7.0 declares them
//! (`scripts/command-entry.py` prints an entry from a running redis-server).

use super::super::lists;
use super::super::spec::flag::*;
use super::super::spec::{acl, key, Arg, Command, KeySpec, Kind};

pub static COMMANDS: &[Command] = &[
    Command::new("blmove", 6, Kind::Write, lists::blmove)
        .flags(WRITE | DENYOOM | NOSCRIPT | BLOCKING)
        .acl(acl::LIST)
        .keys(&[KeySpec::range(1, 0, 1, key::RW | key::ACCESS | key::DELETE), KeySpec::range(2, 0, 1, key::RW | key::INSERT)])
        .doc("Pop an element from a list, push it to another list and return it; or block until one is available", "6.2.0", "list", "O(1)")
        .args(&[Arg::key("source", 0), Arg::key("destination", 1), Arg::one_of("wherefrom", &[Arg::word("left", "LEFT"), Arg::word("right", "RIGHT")]), Arg::one_of("whereto", &[Arg::word("left", "LEFT"), Arg::word("right", "RIGHT")]), Arg::double("timeout")]),
    Command::new("blmpop", -5, Kind::Write, lists::blmpop)
        .flags(WRITE | BLOCKING)
        .acl(acl::LIST)
        .keys(&[KeySpec::keynum(2, 0, 1, 1, key::RW | key::ACCESS | key::DELETE)])
        .doc("Pop elements from a list, or block until one is available", "7.0.0", "list", "O(N+M) where N is the number of provided keys and M is the number of elements returned.")
        .args(&[Arg::double("timeout"), Arg::integer("numkeys"), Arg::key("key", 0).multiple(), Arg::one_of("where", &[Arg::word("left", "LEFT"), Arg::word("right", "RIGHT")]), Arg::integer("count").token("COUNT").optional()]),
    Command::new("blpop", -3, Kind::Write, lists::blpop)
        .flags(WRITE | NOSCRIPT | BLOCKING)
        .acl(acl::LIST)
        .keys(&[KeySpec::range(1, -2, 1, key::RW | key::ACCESS | key::DELETE)])
        .doc("Remove and get the first element in a list, or block until one is available", "2.0.0", "list", "O(N) where N is the number of provided keys.")
        .args(&[Arg::key("key", 0).multiple(), Arg::double("timeout")]),
    Command::new("brpop", -3, Kind::Write, lists::brpop)
        .flags(WRITE | NOSCRIPT | BLOCKING)
        .acl(acl::LIST)
        .keys(&[KeySpec::range(1, -2, 1, key::RW | key::ACCESS | key::DELETE)])
        .doc("Remove and get the last element in a list, or block until one is available", "2.0.0", "list", "O(N) where N is the number of provided keys.")
        .args(&[Arg::key("key", 0).multiple(), Arg::double("timeout")]),
    Command::new("brpoplpush", 4, Kind::Write, lists::brpoplpush)
        .flags(WRITE | DENYOOM | NOSCRIPT | BLOCKING)
        .acl(acl::LIST)
        .keys(&[KeySpec::range(1, 0, 1, key::RW | key::ACCESS | key::DELETE), KeySpec::range(2, 0, 1, key::RW | key::INSERT)])
        .doc("Pop an element from a list, push it to another list and return it; or block until one is available", "2.2.0", "list", "O(1)")
        .args(&[Arg::key("source", 0), Arg::key("destination", 1), Arg::double("timeout")]),
    Command::new("lindex", 3, Kind::Read, lists::lindex)
        .flags(READONLY)
        .acl(acl::LIST)
        .keys(&[KeySpec::range(1, 0, 1, key::RO | key::ACCESS)])
        .doc("Get an element from a list by its index", "1.0.0", "list", "O(N) where N is the number of elements to traverse to get to the element at index. This makes asking for the first or the last element of the list O(1).")
        .args(&[Arg::key("key", 0), Arg::integer("index")]),
    Command::new("linsert", 5, Kind::Write, lists::linsert)
        .flags(WRITE | DENYOOM)
        .acl(acl::LIST)
        .keys(&[KeySpec::range(1, 0, 1, key::RW | key::INSERT)])
        .doc("Insert an element before or after another element in a list", "2.2.0", "list", "O(N) where N is the number of elements to traverse before seeing the value pivot. This means that inserting somewhere on the left end on the list (head) can be considered O(1) and inserting somewhere on the right end (tail) is O(N).")
        .args(&[Arg::key("key", 0), Arg::one_of("where", &[Arg::word("before", "BEFORE"), Arg::word("after", "AFTER")]), Arg::string("pivot"), Arg::string("element")]),
    Command::new("llen", 2, Kind::Read, lists::llen)
        .flags(READONLY | FAST)
        .acl(acl::LIST)
        .keys(&[KeySpec::range(1, 0, 1, key::RO)])
        .doc("Get the length of a list", "1.0.0", "list", "O(1)")
        .args(&[Arg::key("key", 0)]),
    Command::new("lmove", 5, Kind::Write, lists::lmove)
        .flags(WRITE | DENYOOM)
        .acl(acl::LIST)
        .keys(&[KeySpec::range(1, 0, 1, key::RW | key::ACCESS | key::DELETE), KeySpec::range(2, 0, 1, key::RW | key::INSERT)])
        .doc("Pop an element from a list, push it to another list and return it", "6.2.0", "list", "O(1)")
        .args(&[Arg::key("source", 0), Arg::key("destination", 1), Arg::one_of("wherefrom", &[Arg::word("left", "LEFT"), Arg::word("right", "RIGHT")]), Arg::one_of("whereto", &[Arg::word("left", "LEFT"), Arg::word("right", "RIGHT")])]),
    Command::new("lmpop", -4, Kind::Write, lists::lmpop)
        .flags(WRITE)
        .acl(acl::LIST)
        .keys(&[KeySpec::keynum(1, 0, 1, 1, key::RW | key::ACCESS | key::DELETE)])
        .doc("Pop elements from a list", "7.0.0", "list", "O(N+M) where N is the number of provided keys and M is the number of elements returned.")
        .args(&[Arg::integer("numkeys"), Arg::key("key", 0).multiple(), Arg::one_of("where", &[Arg::word("left", "LEFT"), Arg::word("right", "RIGHT")]), Arg::integer("count").token("COUNT").optional()]),
    Command::new("lpop", -2, Kind::Write, lists::lpop)
        .flags(WRITE | FAST)
        .acl(acl::LIST)
        .keys(&[KeySpec::range(1, 0, 1, key::RW | key::ACCESS | key::DELETE)])
        .doc("Remove and get the first elements in a list", "1.0.0", "list", "O(N) where N is the number of elements returned")
        .args(&[Arg::key("key", 0), Arg::integer("count").optional()]),
    Command::new("lpos", -3, Kind::Read, lists::lpos)
        .flags(READONLY)
        .acl(acl::LIST)
        .keys(&[KeySpec::range(1, 0, 1, key::RO | key::ACCESS)])
        .doc("Return the index of matching elements on a list", "6.0.6", "list", "O(N) where N is the number of elements in the list, for the average case. When searching for elements near the head or the tail of the list, or when the MAXLEN option is provided, the command may run in constant time.")
        .args(&[Arg::key("key", 0), Arg::string("element"), Arg::integer("rank").token("RANK").optional(), Arg::integer("num-matches").token("COUNT").optional(), Arg::integer("len").token("MAXLEN").optional()]),
    Command::new("lpush", -3, Kind::Write, lists::lpush)
        .flags(WRITE | DENYOOM | FAST)
        .acl(acl::LIST)
        .keys(&[KeySpec::range(1, 0, 1, key::RW | key::INSERT)])
        .doc("Prepend one or multiple elements to a list", "1.0.0", "list", "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.")
        .args(&[Arg::key("key", 0), Arg::string("element").multiple()]),
    Command::new("lpushx", -3, Kind::Write, lists::lpushx)
        .flags(WRITE | DENYOOM | FAST)
        .acl(acl::LIST)
        .keys(&[KeySpec::range(1, 0, 1, key::RW | key::INSERT)])
        .doc("Prepend an element to a list, only if the list exists", "2.2.0", "list", "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.")
        .args(&[Arg::key("key", 0), Arg::string("element").multiple()]),
    Command::new("lrange", 4, Kind::Read, lists::lrange)
        .flags(READONLY)
        .acl(acl::LIST)
        .keys(&[KeySpec::range(1, 0, 1, key::RO | key::ACCESS)])
        .doc("Get a range of elements from a list", "1.0.0", "list", "O(S+N) where S is the distance of start offset from HEAD for small lists, from nearest end (HEAD or TAIL) for large lists; and N is the number of elements in the specified range.")
        .args(&[Arg::key("key", 0), Arg::integer("start"), Arg::integer("stop")]),
    Command::new("lrem", 4, Kind::Write, lists::lrem)
        .flags(WRITE)
        .acl(acl::LIST)
        .keys(&[KeySpec::range(1, 0, 1, key::RW | key::DELETE)])
        .doc("Remove elements from a list", "1.0.0", "list", "O(N+M) where N is the length of the list and M is the number of elements removed.")
        .args(&[Arg::key("key", 0), Arg::integer("count"), Arg::string("element")]),
    Command::new("lset", 4, Kind::Write, lists::lset)
        .flags(WRITE | DENYOOM)
        .acl(acl::LIST)
        .keys(&[KeySpec::range(1, 0, 1, key::RW | key::UPDATE)])
        .doc("Set the value of an element in a list by its index", "1.0.0", "list", "O(N) where N is the length of the list. Setting either the first or the last element of the list is O(1).")
        .args(&[Arg::key("key", 0), Arg::integer("index"), Arg::string("element")]),
    Command::new("ltrim", 4, Kind::Write, lists::ltrim)
        .flags(WRITE)
        .acl(acl::LIST)
        .keys(&[KeySpec::range(1, 0, 1, key::RW | key::DELETE)])
        .doc("Trim a list to the specified range", "1.0.0", "list", "O(N) where N is the number of elements to be removed by the operation.")
        .args(&[Arg::key("key", 0), Arg::integer("start"), Arg::integer("stop")]),
    Command::new("rpop", -2, Kind::Write, lists::rpop)
        .flags(WRITE | FAST)
        .acl(acl::LIST)
        .keys(&[KeySpec::range(1, 0, 1, key::RW | key::ACCESS | key::DELETE)])
        .doc("Remove and get the last elements in a list", "1.0.0", "list", "O(N) where N is the number of elements returned")
        .args(&[Arg::key("key", 0), Arg::integer("count").optional()]),
    Command::new("rpoplpush", 3, Kind::Write, lists::rpoplpush)
        .flags(WRITE | DENYOOM)
        .acl(acl::LIST)
        .keys(&[KeySpec::range(1, 0, 1, key::RW | key::ACCESS | key::DELETE), KeySpec::range(2, 0, 1, key::RW | key::INSERT)])
        .doc("Remove the last element in a list, prepend it to another list and return it", "1.2.0", "list", "O(1)")
        .args(&[Arg::key("source", 0), Arg::key("destination", 1)]),
    Command::new("rpush", -3, Kind::Write, lists::rpush)
        .flags(WRITE | DENYOOM | FAST)
        .acl(acl::LIST)
        .keys(&[KeySpec::range(1, 0, 1, key::RW | key::INSERT)])
        .doc("Append one or multiple elements to a list", "1.0.0", "list", "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.")
        .args(&[Arg::key("key", 0), Arg::string("element").multiple()]),
    Command::new("rpushx", -3, Kind::Write, lists::rpushx)
        .flags(WRITE | DENYOOM | FAST)
        .acl(acl::LIST)
        .keys(&[KeySpec::range(1, 0, 1, key::RW | key::INSERT)])
        .doc("Append an element to a list, only if the list exists", "2.2.0", "list", "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.")
        .args(&[Arg::key("key", 0), Arg::string("element").multiple()]),
];
