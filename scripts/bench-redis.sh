#!/usr/bin/env bash
# Benchmark of the Redis store (not a test): allocations/s and logged events/s with 1, 2 and
# 4 store instances (separate connections, as separate servers) on one Redis, beside the
# SQLite store in the same run; allocations both batched (the default) and one script call
# each (allocate_batch=1, as before batching); and streamed events/s at 1,000 concurrent
# streams (a writer and a live follower each), Redis beside SQLite. Every case runs ROUNDS
# times, interleaved; it prints the median and each round's figure, with the load average
# before and after. Starts its own redis-server on a free loopback port (installs the Debian
# package if missing) and stops it on exit.
#
#   scripts/bench-redis.sh [SECONDS_PER_CASE] [ROUNDS]   (defaults 3 and 3)
set -euo pipefail

cd "$(dirname "$0")/.."
SECS="${1:-3}"
ROUNDS="${2:-3}"

if ! command -v redis-server >/dev/null 2>&1; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq redis-server >/dev/null
fi

DIR="$(mktemp -d -t citeflow-bench-redis.XXXXXX)"
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
cleanup() {
    redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true
    rm -rf "$DIR"
}
trap cleanup EXIT INT TERM
redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$DIR" \
    --daemonize yes --logfile "$DIR/redis.log"
for _ in $(seq 1 50); do
    redis-cli -p "$PORT" ping 2>/dev/null | grep -q PONG && break
    sleep 0.1
done

# citeflow-server is only a dev-dependency of the example (the tests use it); the bench does
# not run it, so it is built without optimisation, which saves most of the build time.
cargo build --release --locked -p citeflow-store-redis --example bench \
    --config 'profile.release.package.citeflow-server.opt-level=0'
echo "machine: $(nproc) cores, $(redis-server --version | cut -d' ' -f3), $(rustc --version), $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "load before: $(uptime)"
"${CARGO_TARGET_DIR:-target}/release/examples/bench" "redis://127.0.0.1:$PORT/0" "$SECS" 1 "$ROUNDS"
echo "load after:  $(uptime)"
