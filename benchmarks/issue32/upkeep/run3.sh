#!/bin/bash
set -e
new=$HOME/.cache/spillway/target/release/spillway
for M in 96 64 40; do
    $new bench --engines spillway --records 50000000 --record-size 64 --workloads load --dir /work/bench-out/upkeep/db --spillway-memory-mb $M --json /work/bench-out/upkeep/new2-$M.json > /work/bench-out/upkeep/new2-$M.txt 2>&1
done
$new bench --engines spillway --record-size 16 --records 200000000 --ops 1000000 --workloads load,settle,reopen,read,read-missing --dir /work/bench-out/upkeep/db --json /work/bench-out/upkeep/new2-200m.json > /work/bench-out/upkeep/new2-200m.txt 2>&1
echo finished
