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
    selected "$1" || return 0
    bench "$@"
}
bench() { # name, args... (whether or not selected: the steps of a named run)
    local name=$1; shift
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
# A billion records on one machine (issue 32; not in a run of everything: ONLY=billion16 for
# the defaults; ONLY=billion16-wide for one level of leaves under a bigger root buffer —
# `fan_out=1024, root_buffer_size=512M`, TurtleKV's memory-for-writes knob — with leaves that
# fast-split to a billion (`fast_split_ratio=16`: at 8 the leaves' slow-splits come due near a
# billion, and their rewrites, left to upkeep, take the settle five minutes and the write
# amplification from 2.9 to 4.2); ONLY=peers200 for the peers beside Spillway at 200 M). Spillway loads 1 B × 16 B records in synced batches
# of 1000 and keeps the store, which is then reopened (timed) and read warm; read cold (evicted
# from the page cache); killed (kill -9) in the middle of a further load, and opened with the
# log to replay (timed); read cold under a memory cgroup of a quarter of its size (256 MiB at
# least, for small SCALEs); removed. Then the same load unsynced, on a fresh store. Disk: about
# 30 GB at once (the store is about 26 GB at the end of the load, and more while slow-splits
# have old and new lists on disk together). Time: about an hour and a half on two cores (each
# load 12-14 minutes; the reads, the kill and the cgroup the rest).
billion() { # name, spillway options (-o name=value ...)
    local name=$1; shift
    local n=$((1000000000 / scale)) store=$out/stores/spillway
    bench "$name" --engines spillway "$@" --record-size 16 --records $n --ops 1000000 --workloads load,settle,reopen,read,read-missing --keep
    local same="--engines spillway $* --record-size 16 --records $n --use-existing"
    bench "$name-cold" $same --ops 100000 --workloads reopen,read,read-missing --cold --keep
    # The cold GETs' yardstick: the device's random 4 KiB reads at queue depth 1 over the store's
    # own list files (thousands of files: slower than over one big file), in the same run.
    local files
    files=$(find "$store" -name '*.list' | wc -l)
    if [ "$files" -eq 0 ]; then
        echo "no list files yet (all records in the root buffer): no fio" | tee "$out/$name-fio.txt"
    elif command -v fio > /dev/null; then
        fio --name=qd1 --opendir="$store" --readonly --rw=randread --bs=4k --iodepth=1 --direct=1 \
            --ioengine=psync --runtime=20 --time_based --nrfiles="$files" \
            --file_service_type=random | tee "$out/$name-fio.txt"
    else
        echo "fio is not installed: no yardstick for the cold GETs (apt-get install fio)" | tee "$out/$name-fio.txt"
    fi
    {
        # Records of a seed whose keys no read asks for (indices from 0xC000…, far past the
        # load's and the missing keys'), written until the kill.
        echo "du of the store: $(du -sb "$store" | cut -f1) bytes"
        "$bin" load --path "$store" "$@" --records $((n / 10)) --record-size 16 --seed $((0xC000000000000000)) > /dev/null 2>&1 &
        sleep 30
        kill -9 $! 2>/dev/null || true
        wait $! 2>/dev/null || true
        echo "logs to replay: $(cat "$store"/*.log | wc -c) bytes"
        local start
        start=$(date +%s.%N)
        "$bin" get --path "$store" "$@" nosuchkey 2>/dev/null || true
        echo "open after kill -9 (spillway get, one absent key): $(echo "$(date +%s.%N) - $start" | bc) s"
        start=$(date +%s.%N)
        "$bin" get --path "$store" "$@" nosuchkey 2>/dev/null || true
        echo "open after a clean close (spillway get): $(echo "$(date +%s.%N) - $start" | bc) s"
    } | tee "$out/$name-kill.txt"
    local quarter=$(($(du -sb "$store" | cut -f1) / 4))
    limit=$((quarter > 256 << 20 ? quarter : 256 << 20)) bench "$name-quarter" $same --ops 100000 --workloads reopen,read,read-missing --cold
    bench "$name-nosync" --engines spillway "$@" --record-size 16 --records $n --ops 1000000 --workloads load,settle,reopen,read --sync none
}
if [ -n "${ONLY:-}" ] && selected billion16; then
    billion billion16
fi
if [ -n "${ONLY:-}" ] && selected billion16-wide; then
    billion billion16-wide -o fan_out=1024 -o root_buffer_size=512M -o fast_split_ratio=16
fi
if [ -n "${ONLY:-}" ] && selected peers200; then
    bench peers200 --record-size 16 --records $((200000000 / scale)) --ops 1000000 --workloads load,settle,reopen,read,read-missing
fi
