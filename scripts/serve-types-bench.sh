#!/usr/bin/env bash
# scripts/serve-types-bench.sh OUT [N]: Redis's data types in `spillway serve` against Debian's
# redis-server (issue 31's measurement), as scripts/serve-bench.sh does for strings.
#
# Throughput, each server on an empty store, in this order: spillway --fsync always, redis
# appendfsync always, spillway everysec, redis everysec (appendonly yes, save ""):
#   redis-benchmark -t set,get,incr,lpush,rpush,lpop,rpop,sadd,hset,zadd,lrange_100,lrange_600,mset \
#       -P 16 -c 50 -n N -r 1000000 --csv                                            (N: 4,000,000)
# and, on another empty store, the pops, which are run apart at a smaller count (POPS) because
# Spillway's SPOP and ZPOPMIN cost more with each pop (see BENCHMARKS.md):
#   redis-benchmark -t sadd,spop,zadd,zpopmin -P 16 -c 50 -n POPS -r 1000000 --csv     (POPS: 20,000)
# and for Redis the same at N too, for reference. ROUNDS rounds of all of it (2).
#
# Memory, at everysec for both: the resident memory (VmRSS, and the peak VmHWM) of each server,
# on an empty store, holding 10 M hash fields as 1,000 hashes of 10,000 and as one hash of
# 10 M, 10 M set members (1,000 sets of 10,000) and 10 M sorted-set members (1,000 of 10,000,
# random integer scores below 10^9): 16-byte fields and members (`field:0000000000`,
# `member:000000000`), 3-byte values ("xxx"), 100 per HSET / SADD / ZADD, generated as RESP
# by awk into a file first and loaded from it with `redis-cli --pipe` (so the load time is the
# server's, not awk's). Then the size of the store's folder (du), and HLEN / SCARD / ZCARD of
# the first and last keys, DBSIZE and INFO keyspace, as checks.
#
# Raw outputs in OUT: roundR/<server>-<fsync>[-pops].csv (and .err), roundR/memory.txt,
# roundR/<run>.log (each server's log), load.txt (uptime and the busiest processes before and
# after each run), summary.txt (the
# ratios). Stores live in OUT/data, removed after each run; the generated RESP in OUT/resp,
# removed at the end.
#
# Environment: SPILLWAY (binary), SERVE_TYPES_PORT (7379), SERVE_TYPES_POPS (20000),
# SERVE_TYPES_ROUNDS (2), SERVE_TYPES_KEYS (1000) x SERVE_TYPES_PER_KEY (10000) elements,
# SERVE_TYPES_BIG_HASH (1: also one hash of KEYS x PER_KEY fields; 0: not),
# SERVE_TYPES_SKIP (throughput or memory: leave that part out), SERVE_TYPES_SETTLE (3: seconds
# after a load before its memory is read).
#
# Needs redis-server and redis-tools (Debian packages) and a release build:
# `cargo build --release -p spillway-cli` (or SPILLWAY=path/to/spillway).
set -euo pipefail

[[ $# -ge 1 && $# -le 2 ]] || { echo "usage: $0 OUT [N]" >&2; exit 2; }
out=$(mkdir -p "$1" && cd "$1" && pwd)
n=${2:-4000000}
repo=$(cd "$(dirname "$0")/.." && pwd)
spillway=${SPILLWAY:-${CARGO_TARGET_DIR:-$repo/target}/release/spillway}
[[ -x $spillway ]] || { echo "no binary at $spillway: cargo build --release -p spillway-cli" >&2; exit 1; }
port=${SERVE_TYPES_PORT:-7379}
pops=${SERVE_TYPES_POPS:-20000}
rounds=${SERVE_TYPES_ROUNDS:-2}
keys=${SERVE_TYPES_KEYS:-1000}
per_key=${SERVE_TYPES_PER_KEY:-10000}
big_hash=${SERVE_TYPES_BIG_HASH:-1}
skip=${SERVE_TYPES_SKIP:-}
settle=${SERVE_TYPES_SETTLE:-3}
tests=set,get,incr,lpush,rpush,lpop,rpop,sadd,hset,zadd,lrange_100,lrange_600,mset
pop_tests=sadd,spop,zadd,zpopmin

wait_ping() { # port
    for _ in $(seq 300); do
        redis-cli -p "$1" PING >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "nothing answers on port $1" >&2
    exit 1
}

# What else runs: the load average and the busiest processes.
load_note() { # what
    {
        echo "== $1: $(date -u +%FT%TZ) $(uptime)"
        ps -eo pcpu,pid,etime,args --sort=-pcpu | head -6 | cut -c1-160 || true
    } >>"$out/load.txt"
}

bench() { # name tests count
    echo "== $1 (-t $2 -n $3)"
    load_note "before $1"
    redis-benchmark -p "$port" -t "$2" -P 16 -c 50 -n "$3" -r 1000000 --csv \
        >"$dir/$1.csv" 2>"$dir/$1.err"
    load_note "after $1"
    cat "$dir/$1.csv"
}

rss_kib() { # pid
    awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"
}

hwm_kib() { # pid
    awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"
}

anon_kib() { # pid: resident memory of the process's own (no mapped file pages)
    awk '/^RssAnon:/ { print $2 }' "/proc/$1/status"
}

start_spillway() { # fsync folder
    "$spillway" serve --path "$2" --bind "127.0.0.1:$port" --fsync "$1" 2>"$2.log" &
    server=$!
    wait_ping "$port"
}

start_redis() { # appendfsync folder
    mkdir -p "$2"
    redis-server --port "$port" --dir "$2" --appendonly yes --appendfsync "$1" --save "" \
        --daemonize no >"$2.log" 2>&1 &
    server=$!
    wait_ping "$port"
}

start() { # server fsync folder
    case $1 in
        spillway) start_spillway "$2" "$3" ;;
        redis) start_redis "$2" "$3" ;;
        *) echo "no server $1" >&2; exit 2 ;;
    esac
}

stop() { # folder name: the server's log is kept as name.log
    redis-cli -p "$port" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
    wait "$server" || echo "$2: the server exited with status $?" >&2
    cp "$1.log" "$dir/$2.log"
    rm -rf "$1" "$1.log"
}

throughput() {
    for fsync in always everysec; do
        for name in spillway redis; do
            start "$name" "$fsync" "$out/data"
            bench "$name-$fsync" "$tests" "$n"
            stop "$out/data" "$name-$fsync"
            start "$name" "$fsync" "$out/data"
            bench "$name-$fsync-pops" "$pop_tests" "$pops"
            stop "$out/data" "$name-$fsync-pops"
        done
        start redis "$fsync" "$out/data"
        bench "redis-$fsync-pops-n" "$pop_tests" "$n"
        stop "$out/data" "redis-$fsync-pops-n"
    done
}

# RESP for `keys` keys of `per` elements each, `batch` per command: kind hash (field, "xxx"),
# set (member) or zset (random score, member). Elements are numbered across keys.
gen() { # kind keys per batch
    awk -v kind="$1" -v keys="$2" -v per="$3" -v batch="$4" 'BEGIN {
        srand(31)
        cmd = (kind == "hash") ? "HSET" : (kind == "set") ? "SADD" : "ZADD"
        width = (kind == "set") ? 1 : 2
        for (k = 0; k < keys; k++) {
            key = sprintf("%s:%06d", kind, k)
            for (j = 0; j < per; j += batch) {
                c = (per - j < batch) ? per - j : batch
                printf "*%d\r\n$4\r\n%s\r\n$%d\r\n%s\r\n", 2 + c * width, cmd, length(key), key
                for (m = 0; m < c; m++) {
                    i = k * per + j + m
                    if (kind == "hash")
                        printf "$16\r\nfield:%010d\r\n$3\r\nxxx\r\n", i
                    else if (kind == "set")
                        printf "$16\r\nmember:%09d\r\n", i
                    else {
                        s = sprintf("%d", int(rand() * 1000000000))
                        printf "$%d\r\n%s\r\n$16\r\nmember:%09d\r\n", length(s), s, i
                    }
                }
            }
        }
    }'
}

# Loads one layout into a fresh server and writes what it holds and costs.
measure() { # server layout kind keys
    local file=$out/resp/$2.resp count t0 t1 piped
    start "$1" everysec "$out/data"
    t0=$(date +%s.%N)
    piped=$(redis-cli -p "$port" --pipe <"$file" | tail -1)
    t1=$(date +%s.%N)
    case $3 in hash) count=HLEN ;; set) count=SCARD ;; zset) count=ZCARD ;; esac
    # What the server holds once the load is over: a few seconds for its background work
    # (the every-second fsync, spills under way, memory given back) to end.
    sleep "$settle"
    echo "$1 $2: load $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s" \
        "($piped); RSS $(rss_kib "$server") KiB, anonymous $(anon_kib "$server") KiB," \
        "peak $(hwm_kib "$server") KiB;" \
        "du $(du -sk "$out/data" | cut -f1) KiB;" \
        "$count $3:000000 $(redis-cli -p "$port" "$count" "$3:000000")," \
        "$count $3:$(printf %06d $(($4 - 1))) $(redis-cli -p "$port" "$count" "$3:$(printf %06d $(($4 - 1)))")," \
        "DBSIZE $(redis-cli -p "$port" DBSIZE), $(redis-cli -p "$port" INFO keyspace | grep '^db')" |
        tr -d '\r'
    stop "$out/data" "memory-$1-$2"
}

memory() {
    mkdir -p "$out/resp"
    local layouts=("hash-${keys}x$per_key hash $keys $per_key"
        "set-${keys}x$per_key set $keys $per_key"
        "zset-${keys}x$per_key zset $keys $per_key")
    [[ $big_hash == 1 ]] && layouts+=("hash-1x$((keys * per_key)) hash 1 $((keys * per_key))")
    local layout name kind k per who
    for layout in "${layouts[@]}"; do
        read -r name kind k per <<<"$layout"
        [[ -s $out/resp/$name.resp ]] || gen "$kind" "$k" "$per" 100 >"$out/resp/$name.resp"
    done
    {
        for layout in "${layouts[@]}"; do
            read -r name kind k per <<<"$layout"
            for who in spillway redis; do
                load_note "before memory $who $name"
                measure "$who" "$name" "$kind" "$k"
                load_note "after memory $who $name"
            done
        done
    } | tee "$dir/memory.txt"
}

# Requests per second of each test and Spillway's ratio to Redis, per fsync policy.
summary() {
    local r fsync suffix
    for r in $(seq "$rounds"); do
        for suffix in "" -pops; do
            for fsync in always everysec; do
                local s=$out/round$r/spillway-$fsync$suffix.csv q=$out/round$r/redis-$fsync$suffix.csv
                [[ -f $s && -f $q ]] || continue
                echo "== round $r, $fsync$suffix: test, spillway, redis, ratio"
                awk -F, 'FNR == 1 { next } { gsub(/"/, "") }
                    NR == FNR { s[$1] = $2; next }
                    $1 in s { printf "%s, %s, %s, %.2f\n", $1, s[$1], $2, s[$1] / $2 }' "$s" "$q"
            done
        done
    done
}

trap 'rm -rf "$out/resp" "$out/data" "$out/data.log"' EXIT
for r in $(seq "$rounds"); do
    dir=$out/round$r
    mkdir -p "$dir"
    [[ $skip == throughput ]] || throughput
    [[ $skip == memory ]] || memory
done
summary | tee "$out/summary.txt"
