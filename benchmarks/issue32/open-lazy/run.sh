#!/usr/bin/env bash
# Open time against store size (issue 32). For each N: a synced load of N × 16 B records
# (`spillway load`, defaults), then three timed `spillway get nosuchkey` — a process that
# opens the store, looks up one absent key and closes it — with the page cache warm, and three
# with it dropped first (needs root: /proc/sys/vm/drop_caches). Appends "N warm|cold seconds"
# to OUT/opens.tsv; the loads' reports go to OUT/load-N.txt. With KEEP=1 the last store stays.
# Usage: run.sh OUT BIN N...        e.g. run.sh out target/release/spillway 10000000 100000000
set -u
out=$1; bin=$2; shift 2
mkdir -p "$out"
for n in "$@"; do
    s="$out/store"; rm -rf "$s"
    "$bin" load --records "$n" --record-size 16 --path "$s" > "$out/load-$n.txt" 2>&1
    for how in warm cold; do
        for _ in 1 2 3; do
            if [ $how = cold ]; then sync; echo 3 > /proc/sys/vm/drop_caches; fi
            start=$(date +%s.%N)
            "$bin" get --path "$s" nosuchkey > /dev/null 2>&1
            echo "$n $how $(echo "$(date +%s.%N) - $start" | bc)" >> "$out/opens.tsv"
        done
    done
    [ "${KEEP:-0}" = 1 ] || rm -rf "$s"
done
