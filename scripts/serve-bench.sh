#!/usr/bin/env bash
# scripts/serve-bench.sh OUT [N]: `spillway serve` against Debian's redis-server, with the same
# redis-benchmark run (issue 14's measurement) for each:
#   redis-benchmark -t set,get,incr,mset -n N -r 10000000 -P 16 -c 50   (N: 2,000,000)
# against spillway serve --fsync always / everysec / no, redis-server with appendonly yes and
# appendfsync always / everysec, and through twemproxy (scripts/cluster.sh) in front of 1, 2
# and 3 spillway servers (--fsync always). Then the resident memory of each server holding the
# same 10 M keys (16-byte keys, 3-byte values, as redis-benchmark's), loaded with
# `redis-cli --pipe`. Each run starts on an empty store in a folder under OUT, removed after;
# redis-benchmark's CSV and a summary go to OUT.
#
# Needs redis-server, redis-tools and nutcracker (Debian packages) and a release build:
# `cargo build --release -p spillway-cli` (or SPILLWAY=path/to/spillway).
set -euo pipefail

[[ $# -ge 1 && $# -le 2 ]] || { echo "usage: $0 OUT [N]" >&2; exit 2; }
out=$(mkdir -p "$1" && cd "$1" && pwd)
n=${2:-2000000}
repo=$(cd "$(dirname "$0")/.." && pwd)
spillway=${SPILLWAY:-${CARGO_TARGET_DIR:-$repo/target}/release/spillway}
[[ -x $spillway ]] || { echo "no binary at $spillway: cargo build --release -p spillway-cli" >&2; exit 1; }
port=7379
keys=${SERVE_BENCH_KEYS:-10000000}

wait_ping() { # port
    for _ in $(seq 300); do
        redis-cli -p "$1" PING >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "nothing answers on port $1" >&2
    exit 1
}

bench() { # name port
    echo "== $1"
    redis-benchmark -p "$2" -t set,get,incr,mset -n "$n" -r 10000000 -P 16 -c 50 --csv \
        >"$out/$1.csv" 2>"$out/$1.err"
    cat "$out/$1.csv"
}

rss_kib() { # pid
    awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"
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

stop() { # folder
    redis-cli -p "$port" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
    wait "$server" || true
    rm -rf "$1"
}

for fsync in always everysec no; do
    start_spillway "$fsync" "$out/data"
    bench "spillway-$fsync" "$port"
    stop "$out/data"
done
for fsync in always everysec; do
    start_redis "$fsync" "$out/data"
    bench "redis-$fsync" "$port"
    stop "$out/data"
done

for servers in 1 2 3; do
    SPILLWAY=$spillway SPILLWAY_BASE_PORT=7400 SPILLWAY_PROXY_PORT=7390 SPILLWAY_STATS_PORT=7391 \
        "$repo/scripts/cluster.sh" "$servers" "$out/cluster" >"$out/cluster.log" 2>&1 &
    cluster=$!
    wait_ping 7390
    bench "nutcracker-$servers" 7390
    kill -TERM "$cluster"
    wait "$cluster" || true
    rm -rf "$out/cluster"
done

# The same 10 M keys in each: key:000000000000 .. key:000009999999, value "xxx".
load() {
    awk -v keys="$keys" 'BEGIN { for (i = 0; i < keys; i++)
        printf "*3\r\n$3\r\nSET\r\n$16\r\nkey:%012d\r\n$3\r\nxxx\r\n", i }' |
        redis-cli -p "$port" --pipe | tail -1
}
{
    start_spillway everysec "$out/data"
    load
    echo "spillway everysec: $(redis-cli -p "$port" DBSIZE) keys, RSS $(rss_kib "$server") KiB"
    stop "$out/data"
    start_redis everysec "$out/data"
    load
    echo "redis everysec: $(redis-cli -p "$port" DBSIZE) keys, RSS $(rss_kib "$server") KiB"
    stop "$out/data"
} | tee "$out/memory.txt"
