# Sourced by scripts/test-*.sh (and scripts/test.sh): each step's elapsed time, printed the same way
# everywhere.
#
#   step "what starts now"   ends the step before (if any) and starts this one
#   step_done                ends the last step and prints the script's total
#
# prints, for two steps:
#
#   == build citeflow
#   -- build citeflow: 41 s
#   == browser tests (headless Chromium)
#   -- browser tests (headless Chromium): 12 s
#   == test-web.sh: done in 53 s
#
# so `grep -h '^-- '` over a log gives every step's time.

_step_title=""
_step_since=$SECONDS
_step_script="$(basename "$0")"

_step_end() {
    [ -z "$_step_title" ] || printf -- '-- %s: %d s\n' "$_step_title" "$((SECONDS - _step_since))"
}

step() {
    _step_end
    _step_title="$*"
    _step_since=$SECONDS
    printf '\n== %s\n' "$*"
}

step_done() {
    _step_end
    _step_title=""
    printf '== %s: done in %d s\n' "$_step_script" "$SECONDS"
}
