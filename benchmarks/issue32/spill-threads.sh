#!/usr/bin/env bash
# Spills on one thread against spills on two (issue 32, `Options::spill_threads`): the same
# load into a fresh store, alternating the thread counts, ROUNDS times each.
#  - inline: each spill on the writer's thread (`background_spills=false`), log unsynced, so
#    "time in root spills" is the spills' own time, nothing else running beside them;
#  - background: the default write path, unsynced and synced batches of 1000: what a load
#    gains.
# usage: spill-threads.sh OUT BIN [RECORDS [RECORD_SIZE [ROUNDS]]] (20 M × 16 B, 2 rounds by default)
set -eu
out=${1:?OUT}; bin=${2:?BIN}; records=${3:-20000000}; size=${4:-16}; rounds=${5:-2}
mkdir -p "$out"
store=$out/store
for round in $(seq "$rounds"); do
  for mode in inline background background-synced; do
    for threads in 1 2; do
      case $mode in
        inline) flags="--sync none -o background_spills=false" ;;
        background) flags="--sync none" ;;
        background-synced) flags="--sync batch" ;;
      esac
      rm -rf "$store"
      name=$mode-$threads-$round
      # shellcheck disable=SC2086
      "$bin" load --path "$store" --records "$records" --record-size "$size" $flags \
        -o spill_threads="$threads" > "$out/$name.txt" 2>&1
      echo "$name: $(grep -E 'inserts/s|records/s|time in root spills|^ *root spills|writer stalls' "$out/$name.txt" | tr -s ' ' | tr '\n' ';')"
    done
  done
done
rm -rf "$store"
