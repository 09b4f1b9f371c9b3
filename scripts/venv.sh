# Sourced by the test scripts that install Python packages, and by scripts/prefetch.sh.
#
#   ensure_venv VENV REQUIREMENTS   creates VENV (with $PYTHON, default python3) when it is
#                                   missing and installs the exact pins of REQUIREMENTS into it
#
# It holds an exclusive lock (flock on VENV.lock) while it does, so the early install that
# scripts/test.sh starts in the background (prefetch.sh) and the test script that needs the same
# virtualenv never install into it at once: the second to come waits, then finds every
# requirement satisfied and returns in a few seconds. Safe to run twice.
ensure_venv() {
    local venv="$1" req="$2"
    mkdir -p "$(dirname "$venv")"
    (
        flock 9
        if [ ! -x "$venv/bin/python" ]; then
            "${PYTHON:-python3}" -m venv "$venv"
        fi
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req"
    ) 9>"$venv.lock"
}
