#!/usr/bin/env python3
"""Print command-table entries (crates/spillway-server/src/command/table/) for Redis commands,
as a running redis-server describes them (COMMAND INFO and COMMAND DOCS): arity, flags, ACL
categories, tips, key specs, documentation and arguments. A new command's entry starts from
this output; its handler and kind are filled in by hand.

    redis-server --port 7379 --save '' --appendonly no --daemonize yes
    python3 scripts/command-entry.py --port 7379 --module hashes hset hget

Uses Debian's redis-server 7.0.15, whose table the server answers COMMAND INFO as (a test
compares the two: tests/redis_compat.rs, command_info_as_redis).
"""
import argparse
import socket

IMPLIED = {  # flag -> the ACL categories Redis adds for it (setImplicitACLCategories)
    "write": {"write"},
    "readonly": {"read"},
    "admin": {"admin", "dangerous"},
    "fast": {"fast"},
    "blocking": {"blocking"},
}
FLAGS = {"write": "WRITE", "readonly": "READONLY", "denyoom": "DENYOOM", "admin": "ADMIN",
         "noscript": "NOSCRIPT", "loading": "LOADING", "stale": "STALE", "fast": "FAST",
         "no_auth": "NO_AUTH", "no_multi": "NO_MULTI", "allow_busy": "ALLOW_BUSY",
         "skip_slowlog": "SKIP_SLOWLOG", "blocking": "BLOCKING"}
KEY_FLAGS = {"RO": "RO", "RW": "RW", "OW": "OW", "RM": "RM", "access": "ACCESS",
             "update": "UPDATE", "insert": "INSERT", "delete": "DELETE",
             "variable_flags": "VARIABLE_FLAGS"}


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.f = self.s.makefile("rb")

    def call(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a.encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.s.sendall(out)
        return self.read()

    def read(self):
        line = self.f.readline()[:-2]
        kind, rest = line[:1], line[1:]
        if kind in (b"+", b"-"):
            return rest.decode()
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.f.read(n + 2)[:-2]
            return data.decode()
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise ValueError(line)


def pairs(flat):
    return dict(zip(flat[::2], flat[1::2]))


def rust_str(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def arg(a):
    a = pairs(a)
    name, ty = a["name"], a["type"]
    if ty == "key":
        out = f"Arg::key({rust_str(name)}, {a['key_spec_index']})"
    elif ty == "pure-token":
        out = f"Arg::word({rust_str(name)}, {rust_str(a['token'])})"
    elif ty in ("oneof", "block"):
        parts = ", ".join(arg(x) for x in a["arguments"])
        f = "one_of" if ty == "oneof" else "block"
        out = f"Arg::{f}({rust_str(name)}, &[{parts}])"
    else:
        f = {"string": "string", "integer": "integer", "double": "double",
             "pattern": "pattern", "unix-time": "unix_time"}[ty]
        out = f"Arg::{f}({rust_str(name)})"
    if "token" in a and ty != "pure-token":
        out += f".token({rust_str(a['token'])})"
    flags = a.get("flags") or []
    if "optional" in flags:
        out += ".optional()"
    if "multiple" in flags:
        out += ".multiple()"
    return out


def key_spec(spec):
    spec = pairs(spec)
    flags = " | ".join("key::" + KEY_FLAGS[f] for f in spec["flags"]) or "0"
    bs, fk = pairs(spec["begin_search"]), pairs(spec["find_keys"])
    assert bs["type"] == "index", f"begin_search {bs['type']} is not supported yet"
    index = pairs(bs["spec"])["index"]
    fs = pairs(fk["spec"])
    if fk["type"] == "range":
        out = f"KeySpec::range({index}, {fs['lastkey']}, {fs['keystep']}, {flags})"
    else:
        out = f"KeySpec::keynum({index}, {fs['keynumidx']}, {fs['firstkey']}, {fs['keystep']}, {flags})"
    if "notes" in spec:
        out += f".notes({rust_str(spec['notes'])})"
    return out


def entry(conn, name, module):
    info = conn.call("COMMAND", "INFO", name)[0]
    docs = pairs(conn.call("COMMAND", "DOCS", name)[1])
    _, arity, flags, _, _, _, cats, tips, specs, _ = info
    flags = [f for f in flags if f != "movablekeys"]
    implied = set().union(*(IMPLIED.get(f, set()) for f in flags))
    if "fast" not in flags:
        implied.add("slow")
    cats = [c[1:] for c in cats if c[1:] not in implied]
    readonly = "readonly" in flags
    kind = "Kind::Read" if readonly else "Kind::Write" if "write" in flags else "Kind::Admin"
    lines = [f'Command::new("{name}", {arity}, {kind}, {module}::{name})']
    if flags:
        lines.append(".flags(" + " | ".join(FLAGS[f] for f in flags) + ")")
    if cats:
        lines.append(".acl(" + " | ".join("acl::" + c.upper() for c in cats) + ")")
    if tips:
        lines.append(".tips(&[" + ", ".join(rust_str(t) for t in tips) + "])")
    if specs:
        lines.append(".keys(&[" + ", ".join(key_spec(s) for s in specs) + "])")
    lines.append(".doc(" + ", ".join(rust_str(docs[k]) for k in
                                      ("summary", "since", "group", "complexity")) + ")")
    if docs.get("arguments"):
        lines.append(".args(&[" + ", ".join(arg(a) for a in docs["arguments"]) + "])")
    return "\n    ".join(lines) + ","


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=int, default=6379)
    p.add_argument("--module", default="TODO", help="the handlers' module")
    p.add_argument("commands", nargs="+")
    a = p.parse_args()
    conn = Conn(a.port)
    for name in a.commands:
        print(entry(conn, name.lower(), a.module))


if __name__ == "__main__":
    main()
