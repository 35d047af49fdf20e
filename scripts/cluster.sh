#!/usr/bin/env bash
# scripts/cluster.sh N [DIR]: a Spillway cluster on loopback. Starts N `spillway serve`
# processes on ports BASE+1..BASE+N (stores in DIR/s1..DIR/sN, kept between runs) and twemproxy
# (nutcracker) in front of them, configured from scripts/nutcracker.yml with these N servers.
# Clients talk to the proxy, which spreads the keys over the servers by consistent hashing.
#
# Stays in the foreground; Ctrl-C or SIGTERM (kill PID, which it prints) stops the proxy and
# the servers (on SIGTERM each flushes and closes its store) and exits 0 once all are gone.
# Logs and pid files (sI.pid, nutcracker.pid) are in DIR (default ./spillway-cluster). A
# server restarted by hand is stopped too if its new pid is written to its pid file.
#
# Environment: SPILLWAY (the binary; default target/release/spillway under CARGO_TARGET_DIR
# or the repository), SPILLWAY_FSYNC (serve's --fsync: always, everysec, no),
# SPILLWAY_BASE_PORT (default 6380), SPILLWAY_PROXY_PORT (default: listen in nutcracker.yml),
# SPILLWAY_STATS_PORT (nutcracker's stats, default proxy port + 101), NUTCRACKER.
set -euo pipefail

usage() {
    echo "usage: $0 N [DIR]   (N servers behind twemproxy; see the header of this script)" >&2
    exit 2
}
[[ $# -ge 1 && $# -le 2 && $1 =~ ^[1-9][0-9]*$ ]] || usage
n=$1
dir=${2:-spillway-cluster}
repo=$(cd "$(dirname "$0")/.." && pwd)
template=$repo/scripts/nutcracker.yml

spillway=${SPILLWAY:-${CARGO_TARGET_DIR:-$repo/target}/release/spillway}
if [[ ! -x $spillway ]]; then
    echo "$0: no spillway binary at $spillway: run \`cargo build --release -p spillway-cli\`" \
        "(or set SPILLWAY to the binary)" >&2
    exit 1
fi
# Debian installs nutcracker in /usr/sbin, which a user's PATH may lack.
nutcracker=${NUTCRACKER:-$(command -v nutcracker || echo /usr/sbin/nutcracker)}
missing() { # what package
    echo "$0: $1 is missing: apt-get install $2" >&2
    exit 1
}
[[ -x $nutcracker ]] || missing nutcracker nutcracker
command -v redis-cli >/dev/null || missing redis-cli redis-tools

base_port=${SPILLWAY_BASE_PORT:-6380}
listen=$(awk '$1 == "listen:" { print $2; exit }' "$template")
proxy=${SPILLWAY_PROXY_PORT:+127.0.0.1:$SPILLWAY_PROXY_PORT}
proxy=${proxy:-$listen}
stats_port=${SPILLWAY_STATS_PORT:-$((${proxy##*:} + 101))}
fsync=()
[[ -n ${SPILLWAY_FSYNC:-} ]] && fsync=(--fsync "$SPILLWAY_FSYNC")

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

pid_files=()       # written by this run: another run's stale ones may name unrelated processes
declare -A started # pid file -> the pid this script started, whose exit status it can read
sleeper=

# SIGTERM to every process named in this run's pid files; whether all are gone within the
# deadline (those left get SIGKILL). A server's exit status counts if this script started it.
stop_all() {
    local ok=0 f pid deadline status
    [[ -n $sleeper ]] && kill "$sleeper" 2>/dev/null
    for f in "${pid_files[@]}"; do
        kill -TERM "$(cat "$f")" 2>/dev/null
    done
    deadline=$((SECONDS + 30))
    for f in "${pid_files[@]}"; do
        pid=$(cat "$f")
        while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
        if kill -0 "$pid" 2>/dev/null; then
            echo "$0: $(basename "$f" .pid) (pid $pid) ignored SIGTERM for 30 s: killed" >&2
            kill -KILL "$pid" 2>/dev/null
            ok=1
        elif [[ ${started[$f]:-} == "$pid" ]]; then
            wait "$pid" && status=0 || status=$?
            if ((status != 0)); then
                echo "$0: $(basename "$f" .pid) exited with status $status (see its log)" >&2
                ok=1
            fi
        fi
        rm -f "$f"
    done
    return $ok
}

on_exit() {
    local status=$?
    stop_all || status=1
    exit "$status"
}
trap on_exit EXIT
trap 'exit 0' INT TERM

# Fails unless nothing listens on the port: PING must reach the process started, not another.
port_free() { # name port variable
    if (exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null; then
        echo "$0: port $2 (for $1) is in use: choose another with $3" >&2
        exit 1
    fi
}

# Waits until a process answers PING on the port, or fails naming its log.
await_ping() { # name pid port log
    local tries=0
    until [[ $(redis-cli -p "$3" PING 2>/dev/null) == PONG ]]; do
        if ! kill -0 "$2" 2>/dev/null || ((++tries > 200)); then
            echo "$0: $1 did not start (port $3); the end of $4:" >&2
            tail -n 20 "$4" >&2
            exit 1
        fi
        sleep 0.05
    done
}

servers=()
for ((i = 1; i <= n; i++)); do
    port=$((base_port + i))
    port_free "s$i" "$port" SPILLWAY_BASE_PORT
    "$spillway" serve --path "$dir/s$i" --bind "127.0.0.1:$port" "${fsync[@]}" \
        >>"$dir/s$i.log" 2>&1 &
    echo $! >"$dir/s$i.pid"
    pid_files+=("$dir/s$i.pid")
    started[$dir/s$i.pid]=$!
    await_ping "s$i" $! "$port" "$dir/s$i.log"
    # Named s1..sN: ketama places keys by the names, so the ports do not matter.
    servers+=("    - 127.0.0.1:$port:1 s$i")
done

# The template's settings with this cluster's listen address and servers (servers: is last).
awk -v listen="$proxy" '
    $1 == "listen:" { sub(/listen:.*/, "listen: " listen) }
    { print }
    $1 == "servers:" { exit }
' "$template" >"$dir/nutcracker.yml"
printf '%s\n' "${servers[@]}" >>"$dir/nutcracker.yml"

port_free nutcracker "${proxy##*:}" SPILLWAY_PROXY_PORT
port_free "nutcracker's stats" "$stats_port" SPILLWAY_STATS_PORT
"$nutcracker" -c "$dir/nutcracker.yml" -o "$dir/nutcracker.log" -a 127.0.0.1 -s "$stats_port" &
echo $! >"$dir/nutcracker.pid"
pid_files+=("$dir/nutcracker.pid")
await_ping nutcracker $! "${proxy##*:}" "$dir/nutcracker.log"

cat <<EOF
spillway cluster: $n servers on 127.0.0.1:$((base_port + 1))..$((base_port + n)) (stores $dir/s1..s$n)
proxy: $proxy   e.g. redis-cli -p ${proxy##*:} SET k v   (stats: nc 127.0.0.1 $stats_port)
logs and pid files in $dir; stop with Ctrl-C or kill $$
EOF

sleep infinity &
sleeper=$!
wait "$sleeper" || true
