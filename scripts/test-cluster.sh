#!/usr/bin/env bash
# Runs the Redis store's tests against a real Redis Cluster: installs redis-server (Debian
# package) if it is missing, starts 6 nodes (3 masters, 3 replicas, cluster-node-timeout
# 2000 ms, no persistence) on free loopback ports in a temporary directory, joins them with
# `redis-cli --cluster create … --cluster-replicas 1`, waits until every replica has synced,
# and runs `cargo test -p citeflow-store-redis` with CITEFLOW_TEST_REDIS_URL set to the node
# list: the conformance suite, the lease tests and two `citeflow serve --store
# redis+cluster://…` processes resuming each other's streams; then, each step alone, the
# allocation stress test (it prints allocations/s) and the failover:: tests, which start
# clusters of their own since they kill or stop nodes: a master killed mid streams and
# allocations (it prints the failover time), and an allocation no replica acknowledged.
# The test executable and `citeflow` are those of the workspace's debug build
# (scripts/debug-build.sh; `cargo test -p citeflow-store-redis` resolved other features and
# compiled 29 crates again): nothing is compiled twice. Prints each step's time. Stops every node on exit; safe to run
# twice, or while another run is going.
#
#   scripts/test-cluster.sh [extra arguments of the test executable, e.g. a name filter]
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source=step.sh
source scripts/step.sh
# shellcheck source=debug-build.sh
source scripts/debug-build.sh
step "start the cluster (3 masters + 3 replicas)"

if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
    echo "installing redis-server (apt-get)" >&2
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq redis-server >/dev/null
fi

# A free loopback port whose cluster bus port (+10000) is free too.
free_port() {
    python3 - <<'EOF'
import random, socket
for _ in range(1000):
    p = random.randrange(20000, 45000)
    ok = True
    for q in (p, p + 10000):
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", q))
        except OSError:
            ok = False
        finally:
            s.close()
    if ok:
        print(p)
        break
EOF
}

DIR="$(mktemp -d -t citeflow-cluster.XXXXXX)"
PORTS=()
cleanup() {
    for p in "${PORTS[@]}"; do
        redis-cli -p "$p" shutdown nosave >/dev/null 2>&1 || true
    done
    rm -rf "$DIR"
}
trap cleanup EXIT INT TERM


start_node() {
    local port="$1"
    mkdir -p "$DIR/$port"
    # A replica must finish its first sync before it can take over; the default diskless
    # sync waits 5 s for more replicas first.
    redis-server --port "$port" --bind 127.0.0.1 --cluster-enabled yes \
        --cluster-config-file nodes.conf --cluster-node-timeout 2000 \
        --save '' --appendonly no --repl-diskless-sync-delay 0 --dir "$DIR/$port" \
        --daemonize yes --pidfile "$DIR/$port/redis.pid" --logfile "$DIR/$port/redis.log" ||
        return 1
    for _ in $(seq 1 50); do
        if redis-cli -p "$port" ping 2>/dev/null | grep -q PONG; then
            return 0
        fi
        sleep 0.1
    done
    return 1
}

while [ "${#PORTS[@]}" -lt 6 ]; do
    port="$(free_port)"
    if start_node "$port"; then
        PORTS+=("$port")
    else
        redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
        echo "redis-server did not start on $port, trying another port" >&2
    fi
done

NODES=()
for p in "${PORTS[@]}"; do NODES+=("127.0.0.1:$p"); done
redis-cli --cluster create "${NODES[@]}" --cluster-replicas 1 --cluster-yes >"$DIR/create.log" 2>&1 || {
    cat "$DIR/create.log" >&2
    exit 1
}
# Ready: every node sees the cluster ok, every replica has synced with its master.
for p in "${PORTS[@]}"; do
    for i in $(seq 1 100); do
        info="$(redis-cli -p "$p" cluster info 2>/dev/null; redis-cli -p "$p" info replication 2>/dev/null)"
        if grep -q 'cluster_state:ok' <<<"$info" &&
            { grep -q 'master_link_status:up' <<<"$info" || grep -q 'state=online' <<<"$info"; }; then
            break
        fi
        if [ "$i" -eq 100 ]; then
            echo "cluster not ready on port $p:" >&2
            echo "$info" >&2
            exit 1
        fi
        sleep 0.2
    done
done
echo "redis cluster $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'): 3 masters + 3 replicas on ${NODES[*]}" >&2

export CITEFLOW_TEST_REDIS_URL="redis+cluster://$(IFS=,; echo "${NODES[*]}")"
# The two-server test runs the real binary with --store redis+cluster://…; both builds are
# the ones scripts/test-redis.sh makes.
step "build (the workspace's debug build, scripts/debug-build.sh)"
debug_build
tests_exe="$(debug_test_exe citeflow-store-redis tests)"
redis_tests() { (cd crates/store-redis && "$tests_exe" "$@"); }
step "tests on the cluster"
# fault:: kills a standalone Redis of its own (scripts/test-redis.sh runs it); failover::
# runs apart below, so its failover time is not stretched by the other tests' load.
redis_tests --include-ignored --skip fault:: --skip failover:: --skip stress:: "$@"
# Alone, so the allocations/s it prints are not shared with the other tests.
step "allocation stress test"
redis_tests --include-ignored stress:: --nocapture "$@"
step "failover tests (own clusters)"
redis_tests --include-ignored failover:: --nocapture "$@"
step_done
