#!/usr/bin/env bash
# Runs the Redis store's tests against a real Redis: installs redis-server (Debian package)
# if it is missing, starts it on a free loopback port in a temporary directory, runs
# citeflow-store-redis's tests (conformance, stress, fault, leases, two servers),
# and stops it on exit. Idempotent: safe to run twice, or while another run is going.
#
#   scripts/test-redis.sh [extra arguments of the test executable, e.g. a name filter]
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source=step.sh
source scripts/step.sh
# shellcheck source=debug-build.sh
source scripts/debug-build.sh
step "redis-server on a free loopback port"

if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
    echo "installing redis-server (apt-get)" >&2
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq redis-server >/dev/null
fi

# A free loopback port: ask the kernel, then check nobody answers on it.
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

DIR="$(mktemp -d -t citeflow-redis.XXXXXX)"
PORT=""
cleanup() {
    if [ -n "$PORT" ]; then
        redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true
    fi
    rm -rf "$DIR"
}
trap cleanup EXIT INT TERM

for _ in 1 2 3 4 5; do
    PORT="$(free_port)"
    if redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no \
        --dir "$DIR" --daemonize yes --pidfile "$DIR/redis.pid" --logfile "$DIR/redis.log"; then
        for _ in $(seq 1 50); do
            if redis-cli -p "$PORT" ping 2>/dev/null | grep -q PONG; then
                break 2
            fi
            sleep 0.1
        done
    fi
    PORT=""
done
if [ -z "$PORT" ]; then
    echo "could not start redis-server (log: $DIR/redis.log)" >&2
    cat "$DIR/redis.log" >&2 || true
    exit 1
fi
echo "redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/') on 127.0.0.1:$PORT" >&2

export CITEFLOW_TEST_REDIS_URL="redis://127.0.0.1:$PORT/0"
# The two-server test runs the real binary.
step "citeflow (scripts/debug-build.sh)"
debug_build
step "citeflow-store-redis's tests (--include-ignored)"
# The tests are #[ignore]d where no Redis is given (a plain `cargo test` lists them as ignored);
# the executable is the workspace build's (scripts/debug-build.sh).
tests_exe="$(debug_test_exe citeflow-store-redis tests)"
(cd crates/store-redis && "$tests_exe" --include-ignored "$@")
step_done
