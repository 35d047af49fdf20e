#!/bin/bash
set -e
new=$HOME/.cache/spillway/target/release/spillway
base=$HOME/.cache/spillway/target-before/release/spillway
for M in 64 160 96 40; do
  for b in new base; do
    bin=${!b}
    $bin bench --engines spillway --records 50000000 --record-size 64 --workloads load --dir /work/bench-out/upkeep/db --spillway-memory-mb $M --json /work/bench-out/upkeep/$b-$M.json > /work/bench-out/upkeep/$b-$M.txt 2>&1
  done
done
mkdir -p /work/bench-out/billion
$new bench --engines spillway --record-size 16 --records 1000000000 --ops 1000000 --workloads load,settle,reopen,read,read-missing --dir /work/bench-out/billion/db --json /work/bench-out/billion/billion16.json --svg /work/bench-out/billion/billion16.svg > /work/bench-out/billion/billion16.txt 2>&1
echo finished
