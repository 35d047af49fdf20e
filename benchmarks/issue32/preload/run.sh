#!/usr/bin/env bash
# Cold GETs at 200 M × 16 B with selectors read at their first GET (BEFORE, a build from before
# 6e82713) and with them read in before the phase (AFTER, 6e82713 or later: the bench calls
# Db::load_selectors after the cold reopen, "warm-up s"). One store, loaded unsynced by AFTER
# and kept; the two builds alternate, two rounds. Usage: run.sh OUT BEFORE AFTER
set -euo pipefail
out=$1 before=$2 after=$3
mkdir -p "$out"
"$after" bench --engines spillway --dir "$out/stores" --record-size 16 --records 200000000 \
    --sync none --ops 100000 --workloads load,settle --keep > "$out/load.txt"
for round in 1 2; do
    for b in before after; do
        bin=$before; [ $b = after ] && bin=$after
        "$bin" bench --engines spillway --dir "$out/stores" --record-size 16 --records 200000000 \
            --use-existing --ops 100000 --workloads reopen,read,read-missing --cold --keep \
            > "$out/cold-$b-$round.txt"
    done
done
rm -rf "$out/stores"
