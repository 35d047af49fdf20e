#!/bin/bash
# Finer upkeep steps (internal nodes spilled a group of children at a time, leaves rewritten a
# piece at a time): 50 M x 64 B synced batches under memory budgets, the build before and
# after alternated. Usage: run.sh OUT BEFORE_BIN AFTER_BIN
set -e
out=${1:?usage: run.sh OUT BEFORE_BIN AFTER_BIN}; before=${2:?}; after=${3:?}
mkdir -p "$out"
run() { # name, bin, budget MiB
    "$2" bench --engines spillway --records 50000000 --record-size 64 --workloads load \
        --dir "$out/db" --spillway-memory-mb "$3" --json "$out/$1.json" > "$out/$1.txt" 2>&1
    rm -rf "$out/db"
    echo "$1: $(grep -E 'load +ops/s' "$out/$1.txt" | awk '{print $3}') ops/s," \
        "$(grep -E 'spill stalls' "$out/$1.txt" | awk '{print $4}') stalls," \
        "longest $(grep -E 'longest stall ms' "$out/$1.txt" | awk '{print $5}') ms," \
        "behind upkeep $(grep -E 'stalls behind upkeep' "$out/$1.txt" | awk '{print $5}')," \
        "longest of those $(grep -E 'longest upkeep stall ms' "$out/$1.txt" | awk '{print $6}') ms"
}
for round in 1 2; do
    for budget in 40 64; do
        run "before-$budget-r$round" "$before" "$budget"
        run "after-$budget-r$round" "$after" "$budget"
    done
done
