#!/usr/bin/env bash
# Quick throughput: the redis-benchmark line against spillway and redis at always/everysec.
# usage: quick-throughput.sh [OUT]; SPILLWAY=path/to/spillway (a release build).
set -u
out=${1:-/tmp/mybench/quick}; rm -rf "$out"; mkdir -p "$out"
bin=${SPILLWAY:-$HOME/.cache/spillway/target/release/spillway}
port=7488
tests=set,get,incr,lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,zpopmin,lrange_100,lrange_600,mset
ping() { for _ in $(seq 300); do redis-cli -p $port PING >/dev/null 2>&1 && return 0; sleep 0.1; done; return 1; }
for run in spillway-always redis-always spillway-everysec redis-everysec; do
  rm -rf "$out/data"; mkdir -p "$out/data"
  fsync=${run#*-}
  case $run in
    spillway-*) "$bin" serve --path "$out/data/s" --bind 127.0.0.1:$port --fsync "$fsync" 2>"$out/$run.log" & pid=$! ;;
    redis-*) redis-server --port $port --dir "$out/data" --appendonly yes --appendfsync "$fsync" --save "" --daemonize no >"$out/$run.log" 2>&1 & pid=$! ;;
  esac
  ping || { echo "$run: no server"; continue; }
  echo "== $run $(uptime)"
  timeout 600 redis-benchmark -p $port -t $tests -P 16 -c 50 -n 100000 -r 1000000 --csv > "$out/$run.csv" 2>"$out/$run.err"
  redis-cli -p $port SHUTDOWN NOSAVE >/dev/null 2>&1
  wait "$pid"
  while redis-cli -p $port PING >/dev/null 2>&1; do sleep 0.2; done
done
echo "done"
