#!/usr/bin/env bash
# Open + absent GET + close (`spillway get`) of store S with binary BIN, three times with the
# page cache warm, then three with it dropped first (needs root); appends "LABEL warm|cold
# seconds" to ./same-store-1B.tsv (or $OUT). Usage: opens.sh LABEL S BIN [options...]
set -u
label=$1; S=$2; BIN=$3; shift 3
OUT=${OUT:-same-store-1B.tsv}
"$BIN" get --path "$S" "$@" nosuchkey > /dev/null 2>&1   # warm the cache
for how in warm cold; do
  for _ in 1 2 3; do
    if [ $how = cold ]; then sync; echo 3 > /proc/sys/vm/drop_caches; fi
    start=$(date +%s.%N); "$BIN" get --path "$S" "$@" nosuchkey > /dev/null 2>&1
    echo "$label $how $(echo "$(date +%s.%N) - $start" | bc)" >> "$OUT"
  done
done
