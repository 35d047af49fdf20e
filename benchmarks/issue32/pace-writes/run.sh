#!/bin/bash
# Unsynced 200 M x 16 B loads, pace_writes on and off alternated.
BIN=${BIN:?the release build of spillway-cli at 894b674 or later}
for round in 1 2; do
  for pace in true false; do
    rm -rf store
    echo "== round $round pace_writes=$pace"
    /usr/bin/time -f "wall %e s" $BIN load --records 200000000 --record-size 16 --sync none -o pace_writes=$pace --path store 2>&1 \
      | grep -E "inserts/s|stalls|paced|write amp|batch|wall|time in"
  done
done
rm -rf store
