#!/usr/bin/env bash
# scripts/redis-suite.sh [--excluded] [RUNTEST_ARGS...]: runs Redis's own test suite (Redis
# 7.0.15: the tests/ of Debian bookworm's source package `redis`, BSD-3-licensed) against
# `spillway serve`, in runtest's external-server mode (--host/--port), and exits non-zero if
# any test not excluded fails, if the suite cannot run, or if the server dies or exits badly.
#
# - The suite: fetched once with `apt-get source --download-only redis` (Debian's deb-src, added
#   to apt if missing) and unpacked with dpkg-source (Debian's patches applied) into
#   REDIS_SRC_CACHE (default ~/.cache/spillway/redis-src), reused while it is there. Each run
#   works on a copy of its tests/ in a temporary folder, with two changes to the harness, where
#   it opens a block of tests in external mode: the FUNCTION FLUSH it sends may fail (spillway
#   has no FUNCTION), and so may the CONFIG SETs of a block's `overrides` (spillway has no
#   CONFIG SET; they set encodings' thresholds and `save`: unit/type/list and unit/type/set
#   have such blocks). An error there is not a test's: unchanged, it would end the whole run.
# - The server: SPILLWAY (a spillway binary) if set, else `cargo build --release -p
#   spillway-cli` (under CARGO_TARGET_DIR if set). It serves a fresh store in the temporary
#   folder on a free loopback port, with its default options (SPILLWAY_FSYNC sets --fsync:
#   `no` halves the run), and is stopped (SIGTERM) when the script exits.
# - What runs: the units listed below (REDIS_SUITE_UNITS="unit/a unit/b" runs others), less the
#   tests tagged as runtest's external mode cannot run (external:skip), the tags in deny_tags
#   below, and the tests named in tests/redis-suite/exclusions.txt, each with its reason.
#   runtest runs with --durable (an error reply where a test expects none fails that test
#   instead of ending the run), --ignore-encoding (OBJECT ENCODING) and --ignore-digest (DEBUG
#   DIGEST). An exclusion that names no test of the units run is an error (a typo or a renamed
#   test).
# - --excluded: runs only the excluded tests and lists those that pass now (their exclusion
#   may go); exits 0 whatever they do.
# - RUNTEST_ARGS go to runtest after ours, e.g. --verbose, --dump-logs or --only 'TEST NAME'.
# - KEEP=1 keeps the temporary folder (runtest.log, serve.log, the store); it is printed.
#
# Needs tclsh (Debian's tcl), apt-get source and dpkg-source (dpkg-dev): installed with apt-get
# when missing, as .ci/run installs its packages (which needs root).
set -euo pipefail

# The units to run: one line each. When a data type lands in the server, add its unit
# (unit/type/hash, unit/type/set, unit/type/zset, unit/type/list, ...) and run the script: its
# failures are new exclusions (with their reasons) or bugs. Tests of other units that were
# excluded for the type's commands are found with `grep COMMAND tests/redis-suite/exclusions.txt`
# and `--excluded`.
units=(
    unit/type/string
    unit/type/incr
    unit/type/hash
    unit/type/set
    unit/type/zset
    unit/type/list
    unit/keyspace
    unit/scan
    unit/protocol
    unit/introspection
    unit/info # every test is external:skip (needs CONFIG SET and a server of its own)
    unit/info-command
    unit/expire
    unit/multi
    unit/auth # every test is external:skip (needs a server started with requirepass)
    unit/other
    unit/quit
)

# Tags whose tests are skipped (runtest --tags -TAG), each for a reason of its own.
deny_tags=(
    needs:debug            # DEBUG (SET-ACTIVE-EXPIRE, RELOAD, SLEEP, OBJECT, PROTOCOL, ...)
    needs:repl             # replication (the tests read the replication stream: SYNC)
    needs:save             # unsupported: SAVE, BGSAVE
    needs:config-maxmemory # unsupported: CONFIG SET (maxmemory)
    needs:reset            # unsupported: RESET
)

repo=$(cd "$(dirname "$0")/.." && pwd)
exclusions=$repo/tests/redis-suite/exclusions.txt
cache=${REDIS_SRC_CACHE:-$HOME/.cache/spillway/redis-src}
upstream=7.0.15 # the Redis release whose suite this is (the exclusions are for its tests)

excluded_only=0
if [[ ${1:-} == --excluded ]]; then
    excluded_only=1
    shift
fi
if [[ -n ${REDIS_SUITE_UNITS:-} ]]; then
    read -r -a units <<<"$REDIS_SUITE_UNITS"
fi

fail() {
    echo "$0: $*" >&2
    exit 1
}

# --- What the suite needs: apt-get only for what is missing, as .ci/run does.
apt_updated=0
apt_install() { # package...
    ((EUID == 0)) || fail "missing: apt-get install $* (as root)"
    export DEBIAN_FRONTEND=noninteractive
    if ((!apt_updated)); then
        apt-get update -qq
        apt_updated=1
    fi
    apt-get install -y -qq "$@" >/dev/null
}
if ! command -v tclsh8.6 >/dev/null && ! command -v tclsh8.5 >/dev/null \
    && ! command -v tclsh8.7 >/dev/null; then
    echo "== installing tcl (Redis's test suite is Tcl)"
    apt_install tcl
fi

# Debian's source packages: a deb-src twin of each deb source, if apt has none yet.
ensure_deb_src() {
    if grep -Eqs '^(Types:.*deb-src|deb-src )' /etc/apt/sources.list /etc/apt/sources.list.d/*; then
        return
    fi
    ((EUID == 0)) || fail "apt has no deb-src source: add one (Types: deb-src) as root"
    if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
        echo "== adding deb-src to apt: /etc/apt/sources.list.d/spillway-deb-src.sources"
        sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
            >/etc/apt/sources.list.d/spillway-deb-src.sources
    elif grep -qs '^deb ' /etc/apt/sources.list; then
        echo "== adding deb-src to apt: /etc/apt/sources.list.d/spillway-deb-src.list"
        sed -n 's/^deb /deb-src /p' /etc/apt/sources.list \
            >/etc/apt/sources.list.d/spillway-deb-src.list
    else
        fail "no Debian apt source found to add a deb-src twin of"
    fi
    apt_updated=0
}

# Brings Debian's source package of redis into $cache (once): the .dsc, the upstream tarball,
# Debian's changes, and the tree unpacked with Debian's patches in $cache/redis.
fetch_suite() {
    command -v dpkg-source >/dev/null || {
        echo "== installing dpkg-dev (dpkg-source unpacks Debian's source package)"
        apt_install dpkg-dev
    }
    ensure_deb_src
    if ((!apt_updated)); then
        ((EUID == 0)) || fail "run apt-get update as root"
        apt-get update -qq
        apt_updated=1
    fi
    mkdir -p "$(dirname "$cache")"
    local tmp dsc version
    tmp=$(mktemp -d "$cache.XXXXXX")
    echo "== downloading Redis's source package from Debian (apt-get source redis) into $cache"
    (cd "$tmp" && apt-get source --download-only -qq redis) \
        || fail "apt-get source redis failed (is deb-src reachable?)"
    dsc=$(find "$tmp" -maxdepth 1 -name 'redis_*.dsc' | head -n 1)
    [[ -n $dsc ]] || fail "apt-get source redis brought no .dsc"
    version=$(awk '$1 == "Version:" { print $2; exit }' "$dsc")
    [[ $version == *:"$upstream"-* || $version == "$upstream"-* ]] \
        || fail "Debian's redis source is $version, not Redis $upstream: the exclusions are for $upstream's tests"
    # apt checked the files against Debian's signed indexes: no second check of the .dsc's.
    dpkg-source --no-check -x "$dsc" "$tmp/redis" >/dev/null
    [[ -f $tmp/redis/tests/test_helper.tcl ]] || fail "no tests/test_helper.tcl in $dsc"
    echo "$version" >"$tmp/VERSION"
    rm -rf "$cache"
    mv "$tmp" "$cache"
}
[[ -f $cache/redis/tests/test_helper.tcl && -f $cache/VERSION ]] || fetch_suite
echo "== Redis's test suite: Debian's redis $(cat "$cache/VERSION") (cached in $cache)"

# --- The server binary.
if [[ -n ${SPILLWAY:-} ]]; then
    spillway=$SPILLWAY
else
    echo "== cargo build --release -p spillway-cli"
    (cd "$repo" && cargo build --release -q -p spillway-cli)
    spillway=${CARGO_TARGET_DIR:-$repo/target}/release/spillway
fi
[[ -x $spillway ]] || fail "no spillway binary at $spillway"

# --- A working copy of the suite, the server's store and the logs, gone at exit unless KEEP=1.
work=$(mktemp -d "${TMPDIR:-/tmp}/spillway-redis-suite.XXXXXX")
server=
# shellcheck disable=SC2317 # run by the EXIT trap (shellcheck 0.9 takes it for unreachable)
on_exit() {
    local status=$? server_status=0 deadline
    if [[ -n $server ]] && kill -0 "$server" 2>/dev/null; then
        kill -TERM "$server" 2>/dev/null || true
        deadline=$((SECONDS + 30))
        while kill -0 "$server" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
        if kill -0 "$server" 2>/dev/null; then
            echo "$0: spillway serve ignored SIGTERM for 30 s: killed" >&2
            kill -KILL "$server" 2>/dev/null || true
            server_status=1
        fi
        wait "$server" || server_status=$?
        if ((server_status != 0)); then
            echo "$0: spillway serve exited with status $server_status on SIGTERM; the end of its log:" >&2
            tail -n 20 "$work/serve.log" >&2
            status=1
        fi
    fi
    if [[ ${KEEP:-0} == 1 ]]; then
        echo "kept: $work (runtest.log, serve.log, store/)"
    else
        rm -rf "$work"
    fi
    exit "$status"
}
trap on_exit EXIT
trap 'exit 130' INT TERM

cp -r "$cache/redis/tests" "$cache/redis/runtest" "$work/"
mkdir -p "$work/tests/tmp"
# The harness's changes (see the header), in run_external_server_test, which opens every block
# of tests (start_server) in external mode.
harness=$work/tests/support/server.tcl
# shellcheck disable=SC2016 # $param and $val are Tcl's
sed -i -e 's/^    r function flush$/    catch {r function flush}/' \
    -e 's/^        r config set \$param \$val$/        catch {r config set $param $val}/' "$harness"
# shellcheck disable=SC2016
[[ $(grep -c -e '^    catch {r function flush}$' \
    -e '^        catch {r config set $param $val}$' "$harness") == 3 ]] \
    || fail "$harness has changed: the lines to change (FUNCTION FLUSH, CONFIG SET) were not found"

# The exclusions as runtest's --skipfile: the test names, without comments and blank lines.
grep -v -e '^#' -e '^[[:space:]]*$' "$exclusions" >"$work/skipfile" || true

# --- The server on a free port (another process may take a port between the check and the bind:
# then the server exits and the next port is tried).
pong() { # port: whether a PING there answers PONG
    (
        exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
        printf 'PING\r\n' >&3
        IFS= read -r -t 2 reply <&3 || exit 1
        [[ $reply == $'+PONG\r' ]]
    ) 2>/dev/null
}
fsync=()
[[ -n ${SPILLWAY_FSYNC:-} ]] && fsync=(--fsync "$SPILLWAY_FSYNC")
port=
for _ in {1..20}; do
    candidate=$((30000 + RANDOM % 10000))
    if (exec 3<>"/dev/tcp/127.0.0.1/$candidate") 2>/dev/null; then continue; fi
    rm -rf "$work/store"
    "$spillway" serve --path "$work/store" --bind "127.0.0.1:$candidate" "${fsync[@]}" \
        >"$work/serve.log" 2>&1 &
    server=$!
    for _ in {1..200}; do
        if pong "$candidate"; then
            port=$candidate
            break 2
        fi
        kill -0 "$server" 2>/dev/null || break
        sleep 0.05
    done
    kill -0 "$server" 2>/dev/null && fail "spillway serve did not answer PING on port $candidate"
    wait "$server" || true
    server=
done
[[ -n $port ]] || fail "spillway serve did not start; the end of its log:$(printf '\n')$(tail -n 20 "$work/serve.log")"
echo "== spillway serve on 127.0.0.1:$port (pid $server, store $work/store)"

# --- runtest.
args=(--host 127.0.0.1 --port "$port" --durable --ignore-encoding --ignore-digest --timeout 300
    --tags "$(printf -- '-%s ' "${deny_tags[@]}")")
for unit in "${units[@]}"; do
    [[ -f $work/tests/$unit.tcl ]] || fail "no unit $unit in Redis $upstream's suite"
    args+=(--single "$unit")
done
if ((excluded_only)); then
    while IFS= read -r name; do args+=(--only "$name"); done <"$work/skipfile"
else
    args+=(--skipfile "$work/skipfile")
fi
echo "== ./runtest ${args[*]} $*"
started=$SECONDS
status=0
(cd "$work" && TERM=dumb timeout 1200 ./runtest "${args[@]}" "$@") 2>&1 | tee "$work/runtest.log" \
    || status=$?
elapsed=$((SECONDS - started))
log=$work/runtest.log

if ! kill -0 "$server" 2>/dev/null; then
    wait "$server" && server_status=0 || server_status=$?
    server=
    echo "$0: spillway serve died during the suite (status $server_status); the end of its log:" >&2
    tail -n 20 "$work/serve.log" >&2
    status=1
fi

if ((excluded_only)); then
    echo
    echo "Excluded tests that pass now (their exclusions may go):"
    sed -n 's/^\[ok\]: \(.*\) ([0-9]* ms)$/  \1/p' "$log"
    exit 0
fi

# --- Per unit: passed, failed, excluded (our skipfile) and skipped by tag or external mode.
echo
awk -v elapsed="$elapsed" '
    /^Testing unit\// { unit = $2; units[++n] = unit }
    /^\[ok\]:/ { ok[unit]++; tok++ }
    /^\[err\]:/ { err[unit]++; terr++ }
    /^\[exception\]:/ { err[unit]++; terr++ }
    /^\[skip\]:/ { skip[unit]++; tskip++ }
    /^\[ignore\]:/ { ign[unit]++; tign++ }
    END {
        printf "%-22s %7s %7s %9s %12s\n", "Redis 7.0.15 unit", "passed", "failed", "excluded", "tag-skipped"
        for (i = 1; i <= n; i++) {
            u = units[i]
            printf "%-22s %7d %7d %9d %12d\n", u, ok[u], err[u], skip[u], ign[u]
        }
        printf "%-22s %7d %7d %9d %12d   (%d s)\n", "total", tok, terr, tskip, tign, elapsed
        printf "redis-suite: %d passed, %d failed, %d skipped\n", tok, terr, tskip + tign
    }' "$log"
echo "(tag-skipped counts each skipped test or whole skipped block once: external:skip, ${deny_tags[*]})"

# Every exclusion must name a test that ran into it (when every unit ran to its end).
stale=
if grep -aq '^ *The End$' "$log" && ! grep -aq '^\[exception\]:' "$log" && [[ -n $server ]]; then
    stale=$(sed -n 's/^\[skip\]: //p' "$log" | sort -u | comm -23 <(sort -u "$work/skipfile") -)
fi
if [[ -n $stale ]]; then
    echo "$0: these exclusions name no test of the units run (remove or correct them):" >&2
    echo "  ${stale//$'\n'/$'\n'  }" >&2
    status=1
fi
grep -aq '^\[ok\]:' "$log" || { echo "$0: no test passed: did the suite run?" >&2; status=1; }

if ((status != 0)); then
    echo "$0: FAILED (runtest's status, a dead server or the checks above; log: $log)" >&2
    KEEP=1
fi
exit "$status"
