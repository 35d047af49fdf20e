#!/usr/bin/env bash
# Runs a command in a memory cgroup capped at LIMIT bytes (page cache included), so that a store
# larger than the cap must be read from the device. Usage: scripts/with-memory-limit.sh LIMIT CMD...
# Needs root and a writable cgroup hierarchy (v2 unified, or v1 memory controller).
set -euo pipefail
limit=${1:?usage: scripts/with-memory-limit.sh LIMIT_BYTES CMD...}; shift
name=spillway-bench-$$
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    group=/sys/fs/cgroup/$name
    mkdir "$group"
    echo "$limit" > "$group/memory.max"
else
    group=/sys/fs/cgroup/memory/$name
    mkdir "$group"
    echo "$limit" > "$group/memory.limit_in_bytes"
fi
# The cgroup can only be removed once empty: run the command in a child that joins it.
status=0
bash -c 'echo $$ > "$1/cgroup.procs"; shift; exec "$@"' _ "$group" "$@" || status=$?
rmdir "$group" 2>/dev/null || true
exit $status
