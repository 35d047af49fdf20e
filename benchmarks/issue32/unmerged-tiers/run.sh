#!/usr/bin/env bash
# A build before and this one, alternated on one kept store S (needs root, to drop the page
# cache): twice each, `open-lazy/opens.sh` (open + absent GET + close, warm and cold, into
# $OUT/opens.tsv); then twice each, 100 K GETs of present keys after dropping the cache
# (`spillway read`, timed); fio over the store's files (QD1, 4 KiB, direct) before and after.
# Usage: OLD=path/to/old/spillway S=store [NEW=target/release/spillway] [OUT=dir] run.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
S=${S:?the store}; OLD=${OLD:?a build before}
NEW=${NEW:-target/release/spillway}; OUT=${OUT:-$here}
fio_run() {
  sync; echo 3 > /proc/sys/vm/drop_caches
  fio --name=qd1 --opendir="$S" --rw=randread --bs=4k --direct=1 --ioengine=psync \
    --iodepth=1 --runtime=20 --time_based --group_reporting > "$OUT/fio-$1.txt" 2>&1
}
fio_run 1
for round in 1 2; do
  for b in old new; do
    bin=$OLD; [ $b = new ] && bin=$NEW
    OUT="$OUT/opens.tsv" bash "$here/../open-lazy/opens.sh" "$b-$round" "$S" "$bin"
  done
done
for round in 1 2; do
  for b in old new; do
    bin=$OLD; [ $b = new ] && bin=$NEW
    sync; echo 3 > /proc/sys/vm/drop_caches
    /usr/bin/time -v "$bin" read --ops 100000 --path "$S" > "$OUT/read-$b-$round.txt" 2>&1
  done
done
fio_run 2
