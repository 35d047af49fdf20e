#!/usr/bin/env bash
# A/B of synced 100 M x 16 B loads: base (91c2312) and new alternated, ROUNDS rounds.
set -u
OUT=/work/runs/ab100; mkdir -p $OUT
N=${N:-100000000}
for round in $(seq 1 ${ROUNDS:-2}); do
  for b in base new; do
    bin=/work/runs/new2-spillway; [ $b = new ] && bin=/work/runs/new3-spillway
    S=/work/runs/ab-store; rm -rf $S
    $bin load --records $N --record-size 16 --path $S > $OUT/$b-$round.txt 2>&1
    rm -rf $S
  done
done
echo finished > $OUT/done
