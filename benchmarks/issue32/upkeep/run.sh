#!/bin/bash
# 50 M x 64 B synced batches of 1000, load only, under budgets; base (240698f) vs upkeep build.
set -e
new=$HOME/.cache/spillway/target/release/spillway
base=$HOME/.cache/spillway/target-before/release/spillway
for M in 64 none; do
  for b in base new; do
    bin=${!b}
    extra=$([ $M = none ] || echo --spillway-memory-mb $M)
    $bin bench --engines spillway --records 50000000 --record-size 64 --workloads load --dir /work/bench-out/upkeep/db $extra --json /work/bench-out/upkeep/$b-$M.json > /work/bench-out/upkeep/$b-$M.txt 2>&1
  done
done
echo finished
