#!/usr/bin/env bash
# Issue 29's transfer runs: 100 K and 1 M accounts, uniform and zipfian, 1, 4 and 8 threads,
# synced commits, 10 s per engine. Usage: run.sh SPILLWAY_BINARY OUT_DIR [ENGINES]
# (ENGINES defaults to every engine with transactions in the build).
set -euo pipefail
bin=$1
out=$2
engines=${3:-spillway,rocksdb,fjall,redb,lmdb}
mkdir -p "$out"
for accounts in 100000 1000000; do
    for dist in uniform zipfian; do
        for threads in 1 4 8; do
            name="transfer-${accounts}-${dist}-t${threads}"
            "$bin" bench --workloads transfer --accounts "$accounts" --distribution "$dist" \
                --threads "$threads" --seconds 10 --engines "$engines" \
                --dir "${BENCH_DIR:-./spillway-bench-data}" --json "$out/$name.json" \
                | tee "$out/$name.txt"
        done
    done
done
