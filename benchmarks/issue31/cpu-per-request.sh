#!/usr/bin/env bash
# Server CPU per request: each of the issue's tests alone against a fresh server (Spillway,
# then redis-server), its CPU time (utime + stime of the process, /proc/PID/stat) over the
# requests it served. On a 2-core machine with redis-benchmark on it too, throughput is what
# the server's CPU per request allows: this is the figure to compare, less noisy than rates.
# usage: cpu-per-request.sh OUT [FSYNC]; SPILLWAY=path/to/spillway (a release build);
# N (requests a test, 300000).
set -u
out=${1:?OUT}; fsync=${2:-everysec}; mkdir -p "$out"
bin=${SPILLWAY:-$HOME/.cache/spillway/target/release/spillway}
port=7489; n=${N:-300000}
tests="set get incr lpush rpush lpop rpop sadd hset spop zadd zpopmin lrange_100 lrange_600 mset"
tick=$(getconf CLK_TCK)
ping() { for _ in $(seq 300); do redis-cli -p $port PING >/dev/null 2>&1 && return 0; sleep 0.1; done; return 1; }
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
echo "server,test,requests_per_s,cpu_us_per_request" > "$out/cpu-$fsync.csv"
for server in spillway redis; do
  for t in $tests; do
    rm -rf "$out/data"; mkdir -p "$out/data"
    case $server in
      spillway) "$bin" serve --path "$out/data/s" --bind 127.0.0.1:$port --fsync "$fsync" 2>>"$out/$server.log" & pid=$! ;;
      redis) redis-server --port $port --dir "$out/data" --appendonly yes --appendfsync "$fsync" --save "" >>"$out/$server.log" 2>&1 & pid=$! ;;
    esac
    ping || { echo "$server: no server"; exit 1; }
    # What the test needs first, as redis-benchmark's own runs have it: a set, a sorted set,
    # a list (LPUSH for LRANGE).
    case $t in
      spop) redis-benchmark -p $port -t sadd -P 16 -c 50 -n 100000 -r 1000000 -q >/dev/null ;;
      zpopmin) redis-benchmark -p $port -t zadd -P 16 -c 50 -n 100000 -r 1000000 -q >/dev/null ;;
      lpop|rpop|lrange_*) redis-benchmark -p $port -t lpush -P 16 -c 50 -n 100000 -r 1000000 -q >/dev/null ;;
    esac
    before=$(cpu $pid)
    rps=$(redis-benchmark -p $port -t $t -P 16 -c 50 -n $n -r 1000000 --csv | tail -1 | cut -d, -f2 | tr -d '"')
    after=$(cpu $pid)
    # LRANGE's own run starts with its LPUSHes: count those requests too.
    served=$n; case $t in lrange_*) served=$((2 * n)) ;; esac
    echo "$server,$t,$rps,$(echo "($after - $before) * 1000000 / $tick / $served" | bc -l | cut -c1-5)" >> "$out/cpu-$fsync.csv"
    redis-cli -p $port SHUTDOWN NOSAVE >/dev/null 2>&1; wait $pid
  done
done
cat "$out/cpu-$fsync.csv"
