#!/usr/bin/env bash
# Issue 31: is redis-benchmark (one thread) the bottleneck? See results.txt. Run from an empty
# scratch folder (DIR, /tmp/cl by default, holds the servers' data); SPILLWAY may be unset.
mkdir -p "${DIR:-/tmp/cl}" && cd "${DIR:-/tmp/cl}"
port=7490
bin=${SPILLWAY:-$HOME/.cache/spillway/target/release/spillway}
run() { # name pid
 for t in ping_mbulk get set lpush; do
 b=$(awk '{print $14+$15}' /proc/$2/stat)
 /usr/bin/time -f "%U %S %e" -o tm redis-benchmark -p $port -t $t -P 16 -c 50 -n 1000000 -r 1000000 --csv | tail -1 > r
 a=$(awk '{print $14+$15}' /proc/$2/stat)
 read u s w < tm
 echo "$1 $t rps=$(cut -d, -f2 r) client_us/req=$(echo "($u+$s)" | bc -l) wall=$w server_us/req=$(echo "($a-$b)/100" | bc -l | cut -c1-5)"
 done
}
for fs in always everysec; do
rm -rf d; mkdir d
redis-server --port $port --dir ${DIR:-/tmp/cl}/d --appendonly yes --appendfsync $fs --save "" >/dev/null 2>&1 & pid=$!
sleep 1; run redis-$fs $pid
redis-cli -p $port shutdown nosave >/dev/null; wait $pid
rm -rf d; mkdir d
$bin serve --path d/s --bind 127.0.0.1:$port --fsync $fs 2>/dev/null & pid=$!
sleep 1; run spillway-$fs $pid
kill $pid; wait $pid
done
