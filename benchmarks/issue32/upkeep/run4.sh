#!/bin/bash
set -e
new=$HOME/.cache/spillway/target/release/spillway
base=$HOME/.cache/spillway/target-before/release/spillway
$new bench --engines spillway --records 50000000 --record-size 64 --workloads load --dir /work/bench-out/upkeep/db --json /work/bench-out/upkeep/new2-none.json > /work/bench-out/upkeep/new2-none.txt 2>&1
$new bench --engines spillway --records 50000000 --record-size 64 --workloads load --dir /work/bench-out/upkeep/db --spillway-memory-mb 160 --json /work/bench-out/upkeep/new2-160.json > /work/bench-out/upkeep/new2-160.txt 2>&1
$base bench --engines spillway --record-size 16 --records 200000000 --ops 1000000 --workloads load,settle,reopen,read,read-missing --dir /work/bench-out/upkeep/db --json /work/bench-out/upkeep/base-200m.json > /work/bench-out/upkeep/base-200m.txt 2>&1
echo finished
