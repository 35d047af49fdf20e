#!/usr/bin/env bash
# Warm GETs right after an open (preload beside), old (merges at a GET) vs new, 100 M x 16 B.
set -u
OUT=${OUT:-.}
S=${S:?a scratch store folder}
OLD=${OLD:?a build before}; NEW=${NEW:-target/release/spillway}
rm -rf $S
$NEW load --records 100000000 --record-size 16 --path $S > $OUT/warm-100m-load.txt 2>&1
$NEW read --ops 1000000 --path $S > /dev/null 2>&1   # page cache warm
for round in 1 2 3; do
  for b in old new; do
    bin=$OLD; [ $b = new ] && bin=$NEW
    echo "== round $round $b" >> $OUT/warm-100m-reads.txt
    $bin read --ops 3000000 --path $S >> $OUT/warm-100m-reads.txt 2>&1
  done
done
rm -rf $S
echo finished >> $OUT/warm-100m-reads.txt
