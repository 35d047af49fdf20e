#!/usr/bin/env bash
# 1 B x 16 B synced, fan_out=1024 root_buffer_size=512M fast_split_ratio=$1: load + settle, stats, opens.
set -u
B=/work/runs/wb-spillway; O=/work/runs/fsr; R=$1
OPTS="-o fan_out=1024 -o root_buffer_size=512M -o fast_split_ratio=$R"
$B bench --dir $O/stores --engines spillway $OPTS --record-size 16 --records 1000000000 --ops 1000000 --workloads load,settle,reopen,read,read-missing --keep --json $O/r$R.json > $O/r$R.txt 2>&1
$B stats --path $O/stores/spillway $OPTS > $O/r$R-stats.txt 2>&1
for i in 1 2 3; do
  start=$(date +%s.%N); $B get --path $O/stores/spillway $OPTS nosuchkey > /dev/null 2>&1
  echo "open + one absent GET (spillway get): $(echo "$(date +%s.%N) - $start" | bc) s" >> $O/r$R-open.txt
done
echo "du: $(du -sb $O/stores/spillway | cut -f1); files: $(ls $O/stores/spillway | grep -c list)" >> $O/r$R-open.txt
echo finished >> $O/r$R-open.txt
