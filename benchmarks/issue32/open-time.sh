#!/usr/bin/env bash
# Open time against store size (issue 32): for each size, `spillway bench` loads N × 16 B
# records (synced batches of 1000), reopens the store and reads 200 K keys, once with a build that saves node
# selectors and once with one that builds them at open; the reopen phase's seconds are the
# figure. usage: open-time.sh OUT NEW_BIN BASE_BIN [SIZES...] (sizes in millions; 10 25 50 100
# by default). Needs about 25 B of disk per record of the largest size.
set -eu
out=${1:?OUT}; new=${2:?NEW_BIN}; base=${3:?BASE_BIN}; shift 3
sizes=${*:-10 25 50 100}
mkdir -p "$out"
for m in $sizes; do
  for which in new base; do
    bin=$new; [ "$which" = base ] && bin=$base
    dir="$out/store-$which-$m"
    rm -rf "$dir"
    "$bin" bench --engines spillway --records $((m * 1000000)) --record-size 16 \
      --workloads load,reopen,read --ops 200000 --dir "$dir" --json "$out/$which-$m.json" > "$out/$which-$m.txt" 2>&1
    rm -rf "$dir"
    echo "$which ${m}M: $(grep -E '^(reopen|read) +(seconds|ops/s)' "$out/$which-$m.txt" | tr -s ' ' | tr '\n' ' ')"
  done
done
