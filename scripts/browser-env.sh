# Sourced by the browser test scripts (test-web.sh, test-main.sh): installs what headless
# Chromium tests need when it is missing — Debian's chromium and a CJK font
# (fonts-wqy-microhei, so Japanese and Chinese render in screenshots) with apt-get, and the
# test project's npm packages (npm ci in crates/server/tests/browser). Safe to run twice.
# Expects `root` (the repository) to be set.

browser_tests="crates/server/tests/browser"

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

ensure_browser() {
  local missing=()
  [ -x /usr/bin/chromium ] || missing+=(chromium)
  fc-list :lang=ja 2>/dev/null | grep -q . || missing+=(fonts-wqy-microhei)
  if [ "${#missing[@]}" -gt 0 ]; then
    as_root apt-get update
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
  fi
  echo "node $(node --version), $(/usr/bin/chromium --version 2>/dev/null | head -n1)"
  (cd "$root/$browser_tests" && npm ci --no-audit --no-fund)
}

# wait_for_line FILE PATTERN [SECONDS] [PID]: prints the first match of PATTERN in FILE, waiting
# up to SECONDS (default 20), and gives up at once when process PID (if given) has exited.
wait_for_line() {
  local tries=$(( ${3:-20} * 10 ))
  for _ in $(seq "$tries"); do
    if grep -Eo -m1 "$2" "$1" 2>/dev/null; then return 0; fi
    if [ -n "${4:-}" ] && ! kill -0 "$4" 2>/dev/null; then
      echo "process $4 exited before '$2' appeared in $1" >&2
      return 1
    fi
    sleep 0.1
  done
  echo "timed out waiting for '$2' in $1" >&2
  tail -n 40 "$1" >&2 || true
  return 1
}
