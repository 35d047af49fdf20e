#!/usr/bin/env bash
# The side-by-side runs behind BENCHMARKS.md. Usage: scripts/bench-suite.sh OUT_DIR [SCALE]
# SCALE divides every record count (default 1: the full sizes; 10 for a quick look).
# ONLY=name,name runs just those runs (e.g. ONLY=ycsb64,big64). BEFORE_BIN=path adds runs of an
# older build (the thread runs), for before/after comparisons.
# Needs the peers build: cargo build --release -p spillway-cli --features peers
set -euo pipefail
out=${1:?usage: scripts/bench-suite.sh OUT_DIR [SCALE]}
scale=${2:-1}
bin=${SPILLWAY_BIN:-${CARGO_TARGET_DIR:-target}/release/spillway}
mkdir -p "$out"
selected() { [ -z "${ONLY:-}" ] || [[ ",$ONLY," == *",$1,"* ]]; }
run() { # name, args...
    local name=$1; shift
    selected "$name" || return 0
    echo "== $name: spillway bench $*"
    ${limit:+scripts/with-memory-limit.sh "$limit"} "$bin" bench --dir "$out/stores" --json "$out/$name.json" --svg "$out/$name.svg" "$@" | tee "$out/$name.txt"
}
# Load, then wait for the engine's background work, then point reads; fsync per 1000-record
# batch (the papers' setting).
run load16  --record-size 16  --records $((20000000 / scale)) --ops 1000000 --workloads load,settle,read,read-missing
# Reads on a reopened store, as db_bench --use_existing_db measures them.
run reopen16 --record-size 16 --records $((20000000 / scale)) --ops 1000000 --workloads load,settle,reopen,read,read-missing
# What the data structures themselves cost: the log is written, never waited for.
run nosync16 --record-size 16 --records $((20000000 / scale)) --ops 1000000 --workloads load,settle,read --sync none
run load64  --record-size 64  --records $((10000000 / scale)) --ops 1000000 --workloads load,settle,read,read-missing
run load256 --record-size 256 --records $((4000000 / scale))  --ops 1000000 --workloads load,settle,read,read-missing
# YCSB mixes, unsynced updates (synced ones measure only the fsync), uniform then zipfian.
run ycsb16  --record-size 16  --records $((20000000 / scale)) --ops 500000 --sync none --workloads load,settle,ycsb-a,ycsb-b,ycsb-c,ycsb-f
# Reads from the device: every store evicted from the page cache before each read phase.
run cold16  --record-size 16  --records $((20000000 / scale)) --ops 100000  --workloads load,settle,read,read-missing --cold
run ycsb16z --record-size 16  --records $((20000000 / scale)) --ops 500000 --sync none --workloads load,settle,ycsb-a,ycsb-b,ycsb-c,ycsb-f --distribution zipfian
run ycsb64  --record-size 64  --records $((10000000 / scale)) --ops 500000 --sync none --workloads load,settle,ycsb-a,ycsb-b,ycsb-c,ycsb-f
run ycsb256 --record-size 256 --records $((4000000 / scale))  --ops 500000 --sync none --workloads load,settle,ycsb-a,ycsb-b,ycsb-c,ycsb-f
# Size matters: LSM write amplification grows with the data.
run big64   --record-size 64  --records $((50000000 / scale)) --ops 1000000 --workloads load,settle,reopen,read,read-missing
# A store two to three times larger than the memory it may use (page cache included), so cold
# reads really go to the device; mmap readahead cannot pull the whole store back in.
limit=$((768 * 1024 * 1024)) run small-memory64 --record-size 64 --records $((20000000 / scale)) --ops 100000 --workloads load,settle,read,read-missing --cold
# Writer threads sharing group commits, each syncing its own batches; Spillway with background
# spills and with each spill on the writer's thread (spillway-inline), beside the peers.
both="--engines spillway,spillway-inline,rocksdb,leveldb"
for t in 1 2 4 8; do
    run threads$t $both --record-size 16 --records $((20000000 / scale)) --threads $t --workloads load,settle
done
# GETs from a second thread while one writer loads: what readers see while the engine is busiest.
run readers16 $both --record-size 16 --records $((20000000 / scale)) --readers 1 --workloads load,settle
# The same thread runs with a build from before background spills, if given (BEFORE_BIN).
if [ -n "${BEFORE_BIN:-}" ]; then
    for t in 1 2 4 8; do
        bin=$BEFORE_BIN run before-threads$t --engines spillway --record-size 16 --records $((20000000 / scale)) --threads $t --workloads load,settle
    done
fi
