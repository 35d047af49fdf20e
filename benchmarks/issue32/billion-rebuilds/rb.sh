#!/usr/bin/env bash
set -u
B=/work/runs/rb-spillway; O=/work/runs/rb
OPTS="-o fan_out=1024 -o root_buffer_size=512M -o fast_split_ratio=16"
$B bench --dir $O/stores --engines spillway $OPTS --record-size 16 --records 1000000000 --ops 1000000 --workloads load,settle,reopen,read-missing --keep > $O/warm.txt 2>&1
$B bench --dir $O/stores --engines spillway $OPTS --record-size 16 --records 1000000000 --use-existing --ops 100000 --workloads read,read-missing --cold > $O/cold.txt 2>&1
echo finished >> $O/cold.txt
