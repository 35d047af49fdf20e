#!/usr/bin/env bash
# Issue 31: is redis-benchmark (one thread) the bottleneck? See results.txt. Run from an empty
# scratch folder (DIR, /tmp/cl by default, holds the servers' data); SPILLWAY may be unset.
mkdir -p "${DIR:-/tmp/cl}" && cd "${DIR:-/tmp/cl}"
port=7490
rm -rf d; mkdir d
redis-server --port $port --dir ${DIR:-/tmp/cl}/d --appendonly yes --appendfsync always --save "" >/dev/null 2>&1 & spid=$!
sleep 1
for t in get lrange_100 lrange_600 mset; do
 redis-benchmark -p $port -t $t -P 16 -c 50 -n 1000000 -r 1000000 -q > out.$t 2>&1 & cpid=$!
 prev_c=0; prev_s=$(awk '{print $14+$15}' /proc/$spid/stat)
 while kill -0 $cpid 2>/dev/null; do
   sleep 0.5
   c=$(awk '{print $14+$15}' /proc/$cpid/stat 2>/dev/null) || break
   s=$(awk '{print $14+$15}' /proc/$spid/stat)
   echo "$t client=$(( (c-prev_c)*2 ))% server=$(( (s-prev_s)*2 ))%"
   prev_c=$c; prev_s=$s
 done | sort | uniq -c | sort -rn | head -4
 wait $cpid; tr '\r' '\n' < out.$t | grep -v '^$' | grep 'requests per second' 
done
redis-cli -p $port shutdown nosave >/dev/null; wait $spid
