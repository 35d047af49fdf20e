//! What a command is, as Redis describes its own (`src/commands/*.json`): name, arity, flags,
//! ACL categories, tips, key specifications, subcommands and documentation — plus how the
//! pipeline runs it (its [`Kind`]) and its handler. [`table`](super::table) lists them; the
//! dispatch, the pipeline and `COMMAND` all read that one list, so adding a command is an
//! entry there and its handler.
//!
//! Entries are built with `const fn`s (`Command::new("get", 2, Kind::Read, handler).flags(..)`)
//! so that one reads as Redis's JSON does, and every field left out has Redis's empty value.

use super::context::Ctx;
use crate::resp::Reply;

/// Runs a command: its reply (or the store's error, which becomes `ERR ...`). `args` holds
/// the name (and a subcommand's name) too, and has the arity the command declares.
pub type Handler = fn(&mut Ctx, &[Vec<u8>]) -> super::CmdResult;

/// The flags of a command's keys in a request (see [`Command::key_flags`]).
pub type KeyFlags = fn(&[Vec<u8>]) -> u32;

/// How the pipeline runs a command (see `context`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Reads the store directly: the pipeline's writes so far go in first.
    Read,
    /// Writes through [`Ctx`]: blindly (`SET k v`, `MSET`) into the pipeline's batch, or, if
    /// it reads first (`INCR`, `SET k v NX`), staged under the lock that keeps other writes
    /// from coming between its read and its write. Which is decided as it runs.
    Write,
    /// Touches no key (`PING`, `CLIENT`, `COMMAND`): runs at once, the writes wait.
    Admin,
}

/// Command flags: the bits Redis shows in `COMMAND INFO`, in the order it shows them
/// ([`FLAG_NAMES`]), then the server's own.
pub mod flag {
    pub const WRITE: u32 = 1 << 0;
    pub const READONLY: u32 = 1 << 1;
    pub const DENYOOM: u32 = 1 << 2;
    pub const ADMIN: u32 = 1 << 3;
    pub const NOSCRIPT: u32 = 1 << 4;
    pub const LOADING: u32 = 1 << 5;
    pub const STALE: u32 = 1 << 6;
    pub const FAST: u32 = 1 << 7;
    /// May run before the client authenticates.
    pub const NO_AUTH: u32 = 1 << 8;
    pub const NO_MULTI: u32 = 1 << 9;
    pub const ALLOW_BUSY: u32 = 1 << 10;
    pub const SKIP_SLOWLOG: u32 = 1 << 11;
    pub const BLOCKING: u32 = 1 << 12;
    /// Shown, never declared: `Command::movable_keys` decides it.
    pub const MOVABLEKEYS: u32 = 1 << 13;
    /// Not Redis's: goes over every key (or may), or may compute for long (`LCS`), so the
    /// server runs it off its event loop.
    pub const LONG: u32 = 1 << 16;
    /// Not Redis's: runs at once between MULTI and EXEC instead of being queued (Redis picks
    /// these out by their handlers: MULTI, EXEC, DISCARD, WATCH, QUIT).
    pub const NOT_QUEUED: u32 = 1 << 17;
}

/// Redis's names of the [`flag`]s it shows.
const FLAG_NAMES: &[(u32, &str)] = &[
    (flag::WRITE, "write"),
    (flag::READONLY, "readonly"),
    (flag::DENYOOM, "denyoom"),
    (flag::ADMIN, "admin"),
    (flag::NOSCRIPT, "noscript"),
    (flag::BLOCKING, "blocking"),
    (flag::LOADING, "loading"),
    (flag::STALE, "stale"),
    (flag::SKIP_SLOWLOG, "skip_slowlog"),
    (flag::FAST, "fast"),
    (flag::NO_AUTH, "no_auth"),
    (flag::NO_MULTI, "no_multi"),
    (flag::MOVABLEKEYS, "movablekeys"),
    (flag::ALLOW_BUSY, "allow_busy"),
];

/// ACL categories, as bits in Redis's order ([`CATEGORY_NAMES`]). A command's table entry
/// names those Redis's JSON gives it; the rest follow from its flags ([`Command::categories`]).
#[allow(dead_code)] // the categories of the commands to come
pub mod acl {
    pub const KEYSPACE: u32 = 1 << 0;
    pub const READ: u32 = 1 << 1;
    pub const WRITE: u32 = 1 << 2;
    pub const STRING: u32 = 1 << 7;
    pub const BITMAP: u32 = 1 << 8;
    pub const ADMIN: u32 = 1 << 13;
    pub const SET: u32 = 1 << 3;
    pub const SORTEDSET: u32 = 1 << 4;
    pub const LIST: u32 = 1 << 5;
    pub const HASH: u32 = 1 << 6;
    pub const FAST: u32 = 1 << 14;
    pub const SLOW: u32 = 1 << 15;
    pub const BLOCKING: u32 = 1 << 16;
    pub const DANGEROUS: u32 = 1 << 17;
    pub const CONNECTION: u32 = 1 << 18;
    pub const TRANSACTION: u32 = 1 << 19;
}

/// Every ACL category Redis has, bit `i` named by entry `i`.
pub const CATEGORY_NAMES: [&str; 21] = [
    "keyspace",
    "read",
    "write",
    "set",
    "sortedset",
    "list",
    "hash",
    "string",
    "bitmap",
    "hyperloglog",
    "geo",
    "stream",
    "pubsub",
    "admin",
    "fast",
    "slow",
    "blocking",
    "dangerous",
    "connection",
    "transaction",
    "scripting",
];

/// Key specification flags, in Redis's order ([`KEY_FLAG_NAMES`]).
pub mod key {
    pub const RO: u32 = 1 << 0;
    pub const RW: u32 = 1 << 1;
    pub const OW: u32 = 1 << 2;
    pub const RM: u32 = 1 << 3;
    pub const ACCESS: u32 = 1 << 4;
    pub const UPDATE: u32 = 1 << 5;
    pub const INSERT: u32 = 1 << 6;
    pub const DELETE: u32 = 1 << 7;
    pub const VARIABLE_FLAGS: u32 = 1 << 10;
}

const KEY_FLAG_NAMES: &[(u32, &str)] = &[
    (key::RO, "RO"),
    (key::RW, "RW"),
    (key::OW, "OW"),
    (key::RM, "RM"),
    (key::ACCESS, "access"),
    (key::UPDATE, "update"),
    (key::INSERT, "insert"),
    (key::DELETE, "delete"),
    (key::VARIABLE_FLAGS, "variable_flags"),
];

/// Where a command's keys are: from argument `index` on, to `lastkey` past it (negative:
/// counted from the end, -1 the last argument), every `step`-th; or, for a spec by count
/// (`keynum`), as many as argument `index + keynumidx` says, from `index + firstkey`, every
/// `step`-th (`ZUNIONSTORE dest 2 a b`). Redis also finds keys after a keyword; that comes
/// with the commands that need it.
#[derive(Clone, Copy, Debug)]
pub struct KeySpec {
    pub index: usize,
    pub lastkey: i32,
    pub step: usize,
    pub flags: u32,
    pub notes: Option<&'static str>,
    /// `(keynumidx, firstkey)` of a spec by count.
    pub keynum: Option<(usize, usize)>,
}

impl KeySpec {
    /// The keys from `index` to `lastkey` (see [`KeySpec`]), every `step`-th.
    pub const fn range(index: usize, lastkey: i32, step: usize, flags: u32) -> KeySpec {
        KeySpec {
            index,
            lastkey,
            step,
            flags,
            notes: None,
            keynum: None,
        }
    }

    /// The keys counted by argument `index + keynumidx`, from `index + firstkey`, every
    /// `step`-th (see [`KeySpec`]).
    pub const fn keynum(
        index: usize,
        keynumidx: usize,
        firstkey: usize,
        step: usize,
        flags: u32,
    ) -> KeySpec {
        KeySpec {
            index,
            lastkey: 0,
            step,
            flags,
            notes: None,
            keynum: Some((keynumidx, firstkey)),
        }
    }

    pub const fn notes(mut self, notes: &'static str) -> KeySpec {
        self.notes = Some(notes);
        self
    }

    /// The positions of this spec's keys in `args` (a request, its name first), or `None` if
    /// they do not fit in it.
    fn positions(&self, args: &[Vec<u8>]) -> Option<impl Iterator<Item = usize>> {
        let (mut first, n) = (self.index, args.len() as i64);
        let last = match (self.keynum, self.lastkey) {
            (Some((keynumidx, firstkey)), _) => {
                let count = std::str::from_utf8(args.get(first + keynumidx)?).ok()?;
                let count: i64 = count.parse().ok().filter(|&c| c > 0)?;
                first += firstkey;
                first as i64 + (count - 1) * self.step as i64
            }
            (None, l) if l >= 0 => first as i64 + i64::from(l),
            (None, l) => n + i64::from(l),
        };
        if first as i64 >= n || last >= n || last < first as i64 {
            return None;
        }
        Some((first..=last as usize).step_by(self.step))
    }
}

/// What a documented argument holds (Redis's argument types).
#[derive(Clone, Copy, Debug)]
pub enum ArgType {
    String,
    Integer,
    Double,
    Pattern,
    /// A point in time, in seconds or milliseconds since the Unix epoch.
    UnixTime,
    /// A key, found by the command's key spec of this index.
    Key(usize),
    /// A word that stands for itself (`NX`): its token is its text.
    PureToken,
    OneOf(&'static [Arg]),
    Block(&'static [Arg]),
}

/// An argument as `COMMAND DOCS` describes it (what `redis-cli` turns into its hints).
#[derive(Clone, Copy, Debug)]
pub struct Arg {
    pub name: &'static str,
    pub kind: ArgType,
    /// The word that precedes it (`MATCH pattern`), or that it is (a pure token).
    pub token: Option<&'static str>,
    pub optional: bool,
    pub multiple: bool,
}

impl Arg {
    const fn of(name: &'static str, kind: ArgType) -> Arg {
        Arg {
            name,
            kind,
            token: None,
            optional: false,
            multiple: false,
        }
    }
    pub const fn key(name: &'static str, spec: usize) -> Arg {
        Arg::of(name, ArgType::Key(spec))
    }
    pub const fn string(name: &'static str) -> Arg {
        Arg::of(name, ArgType::String)
    }
    pub const fn integer(name: &'static str) -> Arg {
        Arg::of(name, ArgType::Integer)
    }
    pub const fn double(name: &'static str) -> Arg {
        Arg::of(name, ArgType::Double)
    }
    pub const fn pattern(name: &'static str) -> Arg {
        Arg::of(name, ArgType::Pattern)
    }
    pub const fn unix_time(name: &'static str) -> Arg {
        Arg::of(name, ArgType::UnixTime)
    }
    /// The word `token`, named as Redis names such arguments: the word in lowercase (`name`).
    pub const fn word(name: &'static str, token: &'static str) -> Arg {
        Arg::of(name, ArgType::PureToken).token(token)
    }
    pub const fn one_of(name: &'static str, choices: &'static [Arg]) -> Arg {
        Arg::of(name, ArgType::OneOf(choices))
    }
    pub const fn block(name: &'static str, parts: &'static [Arg]) -> Arg {
        Arg::of(name, ArgType::Block(parts))
    }
    pub const fn token(mut self, token: &'static str) -> Arg {
        self.token = Some(token);
        self
    }
    pub const fn optional(mut self) -> Arg {
        self.optional = true;
        self
    }
    pub const fn multiple(mut self) -> Arg {
        self.multiple = true;
        self
    }

    /// This argument as `COMMAND DOCS` gives it.
    fn docs(&self) -> Reply {
        let mut fields = vec![field("name", Reply::bulk(self.name))];
        let (kind, parts) = match self.kind {
            ArgType::String => ("string", None),
            ArgType::Integer => ("integer", None),
            ArgType::Double => ("double", None),
            ArgType::Pattern => ("pattern", None),
            ArgType::UnixTime => ("unix-time", None),
            ArgType::Key(_) => ("key", None),
            ArgType::PureToken => ("pure-token", None),
            ArgType::OneOf(parts) => ("oneof", Some(parts)),
            ArgType::Block(parts) => ("block", Some(parts)),
        };
        fields.push(field("type", Reply::bulk(kind)));
        if let ArgType::Key(spec) = self.kind {
            fields.push(field("key_spec_index", Reply::Integer(spec as i64)));
        }
        if let Some(token) = self.token {
            fields.push(field("token", Reply::bulk(token)));
        }
        let flags: Vec<Reply> = [(self.optional, "optional"), (self.multiple, "multiple")]
            .into_iter()
            .filter(|(on, _)| *on)
            .map(|(_, name)| Reply::status(name))
            .collect();
        if !flags.is_empty() {
            fields.push(field("flags", Reply::Set(flags)));
        }
        if let Some(parts) = parts {
            let parts = parts.iter().map(Arg::docs).collect();
            fields.push(field("arguments", Reply::Array(parts)));
        }
        Reply::Map(fields)
    }
}

/// A command's documentation, as `COMMAND DOCS` (and `redis-cli`'s help) gives it.
#[derive(Clone, Copy, Debug)]
pub struct Doc {
    pub summary: &'static str,
    pub since: &'static str,
    /// Redis's group: `string`, `generic` (keys), `connection`, `server`.
    pub group: &'static str,
    pub complexity: &'static str,
    pub args: &'static [Arg],
}

/// One command, or one subcommand of a container (`client|setname`).
#[derive(Clone, Copy, Debug)]
pub struct Command {
    /// Redis's full name, in lowercase: `get`, `client|setname`.
    pub name: &'static str,
    /// How many arguments it takes, its name included: exactly `arity`, or at least `-arity`
    /// when negative. A container counts its subcommand's name.
    pub arity: i32,
    pub flags: u32,
    /// The ACL categories Redis's JSON names ([`acl`]); the rest follow from the flags.
    pub acl: u32,
    /// Redis's hints to cluster clients (`request_policy:all_shards`).
    pub tips: &'static [&'static str],
    pub keys: &'static [KeySpec],
    /// The flags of its keys in a request, where its key spec says they vary
    /// (`VARIABLE_FLAGS`: `SET ... GET` reads its key, `SET` alone overwrites it).
    pub key_flags: Option<KeyFlags>,
    pub kind: Kind,
    /// `None` for a container that only its subcommands run (`CLIENT`, `CONFIG`).
    pub run: Option<Handler>,
    pub subcommands: &'static [Command],
    pub doc: Doc,
}

impl Command {
    pub const fn new(name: &'static str, arity: i32, kind: Kind, run: Handler) -> Command {
        Command::with(name, arity, kind, Some(run))
    }

    /// A command that only groups `subcommands` (`CLIENT SETNAME`): `CLIENT` alone is an
    /// error of arity.
    pub const fn container(name: &'static str, subcommands: &'static [Command]) -> Command {
        Command::with(name, -2, Kind::Admin, None).subcommands(subcommands)
    }

    const fn with(name: &'static str, arity: i32, kind: Kind, run: Option<Handler>) -> Command {
        Command {
            name,
            arity,
            flags: 0,
            acl: 0,
            tips: &[],
            keys: &[],
            key_flags: None,
            kind,
            run,
            subcommands: &[],
            doc: Doc {
                summary: "",
                since: "",
                group: "",
                complexity: "",
                args: &[],
            },
        }
    }

    pub const fn flags(mut self, flags: u32) -> Command {
        self.flags = flags;
        self
    }
    pub const fn acl(mut self, categories: u32) -> Command {
        self.acl = categories;
        self
    }
    pub const fn tips(mut self, tips: &'static [&'static str]) -> Command {
        self.tips = tips;
        self
    }
    pub const fn keys(mut self, keys: &'static [KeySpec]) -> Command {
        self.keys = keys;
        self
    }
    pub const fn key_flags(mut self, by: KeyFlags) -> Command {
        self.key_flags = Some(by);
        self
    }
    pub const fn subcommands(mut self, subcommands: &'static [Command]) -> Command {
        self.subcommands = subcommands;
        self
    }
    /// Its summary, the Redis version that added it, its group and its time complexity.
    pub const fn doc(
        mut self,
        summary: &'static str,
        since: &'static str,
        group: &'static str,
        complexity: &'static str,
    ) -> Command {
        self.doc.summary = summary;
        self.doc.since = since;
        self.doc.group = group;
        self.doc.complexity = complexity;
        self
    }
    pub const fn args(mut self, args: &'static [Arg]) -> Command {
        self.doc.args = args;
        self
    }

    pub fn has(&self, flag: u32) -> bool {
        self.flags & flag != 0
    }

    /// Whether a request of `n` arguments (the name included) has this command's arity.
    pub fn takes(&self, n: usize) -> bool {
        let n = n as i64;
        match i64::from(self.arity) {
            a if a >= 0 => n == a,
            a => n >= -a,
        }
    }

    /// Its ACL categories: those named, and those its flags imply (as Redis's
    /// `setImplicitACLCategories`): a command that is not fast is slow.
    pub fn categories(&self) -> u32 {
        let mut c = self.acl;
        for (f, implied) in [
            (flag::WRITE, acl::WRITE),
            (flag::READONLY, acl::READ),
            (flag::ADMIN, acl::ADMIN | acl::DANGEROUS),
            (flag::FAST, acl::FAST),
            (flag::BLOCKING, acl::BLOCKING),
        ] {
            if self.has(f) {
                c |= implied;
            }
        }
        if c & acl::FAST == 0 {
            c |= acl::SLOW;
        }
        c
    }

    /// The first key, the last (negative: from the end) and the step between keys, as the
    /// first three fields of `COMMAND INFO` give them: Redis's "legacy range" (see
    /// [`Command::legacy_range`]).
    pub fn key_range(&self) -> (i64, i64, i64) {
        self.legacy_range().0
    }

    /// Whether a command's keys cannot all be found from its legacy range (Redis's
    /// `movablekeys` flag): a spec by count, or one the range leaves out.
    pub fn movable_keys(&self) -> bool {
        self.legacy_range().1
    }

    /// Redis's legacy range (`populateCommandLegacyRangeSpec`): one range spec as it is; else
    /// the consecutive range specs of step 1 merged (0 0 0 if none), and whether a spec was
    /// left out of it.
    fn legacy_range(&self) -> ((i64, i64, i64), bool) {
        if let [spec @ KeySpec { keynum: None, .. }] = self.keys {
            let first = spec.index as i64;
            let last = match i64::from(spec.lastkey) {
                l if l >= 0 => first + l,
                l => l,
            };
            return ((first, last, spec.step as i64), false);
        }
        let (mut first, mut last, mut movable) = (i64::MAX, 0i64, false);
        for spec in self.keys {
            let index = spec.index as i64;
            if spec.keynum.is_some() || spec.step != 1 || last != 0 && last != index - 1 {
                movable = true;
                continue;
            }
            first = first.min(index);
            let abs = match i64::from(spec.lastkey) {
                l if l >= 0 => l + index,
                l => l,
            };
            // Redis compares as unsigned: a last key counted from the end wins.
            last = if (abs as u64) > (last as u64) {
                abs
            } else {
                last
            };
        }
        match first {
            i64::MAX => ((0, 0, 0), !self.keys.is_empty()),
            first => ((first, last, 1), movable),
        }
    }

    /// The keys of request `args` (its name first) with their key spec's flags, as `COMMAND
    /// GETKEYS` finds them; `None` if a spec's keys do not fit in it.
    pub fn keys_of<'a>(&self, args: &'a [Vec<u8>]) -> Option<Vec<(&'a [u8], u32)>> {
        let mut keys = Vec::new();
        for spec in self.keys {
            let flags = match self.key_flags {
                Some(by) if spec.flags & key::VARIABLE_FLAGS != 0 => by(args),
                _ => spec.flags,
            };
            keys.extend(spec.positions(args)?.map(|i| (&args[i][..], flags)));
        }
        Some(keys)
    }

    /// Its `COMMAND INFO` entry: name, arity, flags, first key, last key, step, ACL categories,
    /// tips, key specs and subcommands.
    pub fn info(&self) -> Reply {
        let (first, last, step) = self.key_range();
        let categories = (0..CATEGORY_NAMES.len())
            .filter(|i| self.categories() & (1 << i) != 0)
            .map(|i| Reply::status(format!("@{}", CATEGORY_NAMES[i])))
            .collect();
        Reply::Array(vec![
            Reply::bulk(self.name),
            Reply::Integer(i64::from(self.arity)),
            names(
                self.flags
                    | if self.movable_keys() {
                        flag::MOVABLEKEYS
                    } else {
                        0
                    },
                FLAG_NAMES,
            ),
            Reply::Integer(first),
            Reply::Integer(last),
            Reply::Integer(step),
            Reply::Set(categories),
            Reply::Set(self.tips.iter().map(|t| Reply::bulk(*t)).collect()),
            Reply::Set(self.keys.iter().map(key_spec).collect()),
            // As Redis: an empty set where there are none, else an array.
            match self.subcommands {
                [] => Reply::Set(vec![]),
                subs => Reply::Array(subs.iter().map(Command::info).collect()),
            },
        ])
    }

    /// Its `COMMAND DOCS` entry (a map: summary, since, group, complexity, arguments, and its
    /// subcommands' entries).
    pub fn docs(&self) -> Reply {
        let d = &self.doc;
        let mut fields = vec![
            field("summary", Reply::bulk(d.summary)),
            field("since", Reply::bulk(d.since)),
            field("group", Reply::bulk(d.group)),
            field("complexity", Reply::bulk(d.complexity)),
        ];
        if !d.args.is_empty() {
            let args = d.args.iter().map(Arg::docs).collect();
            fields.push(field("arguments", Reply::Array(args)));
        }
        if !self.subcommands.is_empty() {
            let subs = self.subcommands.iter();
            let subs = subs.map(|s| (Reply::bulk(s.name), s.docs())).collect();
            fields.push(field("subcommands", Reply::Map(subs)));
        }
        Reply::Map(fields)
    }
}

fn field(name: &'static str, value: Reply) -> (Reply, Reply) {
    (Reply::bulk(name), value)
}

/// The names of the bits of `flags`, in the table's order, as Redis's status replies.
fn names(flags: u32, table: &[(u32, &'static str)]) -> Reply {
    let set = table.iter().filter(|(bit, _)| flags & bit != 0);
    Reply::Set(set.map(|(_, name)| Reply::status(*name)).collect())
}

/// A key spec as `COMMAND INFO` gives it.
fn key_spec(spec: &KeySpec) -> Reply {
    let mut fields = Vec::new();
    if let Some(notes) = spec.notes {
        fields.push(field("notes", Reply::bulk(notes)));
    }
    let index = Reply::Map(vec![field("index", Reply::Integer(spec.index as i64))]);
    let (find, found) = match spec.keynum {
        None => (
            "range",
            Reply::Map(vec![
                field("lastkey", Reply::Integer(i64::from(spec.lastkey))),
                field("keystep", Reply::Integer(spec.step as i64)),
                field("limit", Reply::Integer(0)),
            ]),
        ),
        Some((keynumidx, firstkey)) => (
            "keynum",
            Reply::Map(vec![
                field("keynumidx", Reply::Integer(keynumidx as i64)),
                field("firstkey", Reply::Integer(firstkey as i64)),
                field("keystep", Reply::Integer(spec.step as i64)),
            ]),
        ),
    };
    fields.extend([
        field("flags", key_flags(spec.flags)),
        field(
            "begin_search",
            Reply::Map(vec![
                field("type", Reply::bulk("index")),
                field("spec", index),
            ]),
        ),
        field(
            "find_keys",
            Reply::Map(vec![field("type", Reply::bulk(find)), field("spec", found)]),
        ),
    ]);
    Reply::Map(fields)
}

/// Key spec flags as `COMMAND INFO` and `COMMAND GETKEYSANDFLAGS` give them.
pub fn key_flags(flags: u32) -> Reply {
    names(flags, KEY_FLAG_NAMES)
}
