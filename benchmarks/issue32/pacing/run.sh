#!/bin/bash
# Writes paced through spills (db/pacing.rs): 50 M x 64 B synced batches of 1000 under memory
# budgets (MiB; "none": the defaults), the build before and after alternated, two rounds.
# Usage: run.sh OUT BEFORE_BIN AFTER_BIN [BUDGETS...]
set -e
out=${1:?usage: run.sh OUT BEFORE_BIN AFTER_BIN [BUDGETS...]}; before=${2:?}; after=${3:?}
shift 3
budgets=${*:-24 40 64 none}
mkdir -p "$out"
run() { # name, bin, budget MiB or none
    local budget=()
    [ "$3" != none ] && budget=(--spillway-memory-mb "$3")
    "$2" bench --engines spillway --records 50000000 --record-size 64 --workloads load \
        --dir "$out/db" "${budget[@]}" --json "$out/$1.json" > "$out/$1.txt" 2>&1
    rm -rf "$out/db"
    echo "$1: $(grep -E 'load +ops/s' "$out/$1.txt" | awk '{print $3}') ops/s," \
        "batch p99.9 $(grep -E 'load +p99.9' "$out/$1.txt" | awk '{print $3}') µs," \
        "max $(grep -E 'load +max' "$out/$1.txt" | awk '{print $4}') µs," \
        "$(grep -E 'spill stalls' "$out/$1.txt" | awk '{print $4}') stalls," \
        "longest $(grep -E 'longest stall ms' "$out/$1.txt" | awk '{print $5}') ms," \
        "behind upkeep $(grep -E 'stalls behind upkeep' "$out/$1.txt" | awk '{print $5}')"
}
for round in 1 2; do
    for budget in $budgets; do
        run "before-$budget-r$round" "$before" "$budget"
        run "after-$budget-r$round" "$after" "$budget"
    done
done | tee "$out/summary.txt"
