# Sourced by the test scripts that install Python packages, and by scripts/prefetch.sh.
#
#   ensure_venv VENV REQUIREMENTS   creates VENV (with $PYTHON, default python3) when it is
#                                   missing and installs the exact pins of REQUIREMENTS into it
#
# It holds an exclusive lock (flock on VENV.lock) while it does, so the early install that
# scripts/test.sh starts in the background (prefetch.sh) and the test script that needs the same
# virtualenv never install into it at once: the second to come waits, then finds every
# requirement satisfied and returns in a few seconds. Safe to run twice.
#
# The test virtualenvs, each named once here with its pinned requirements: a test script takes
# its path (`VENV="$(test_venv_path NAME)"`) and installs it (`ensure_test_venv NAME`);
# scripts/prefetch.sh installs every one of `test_venv_names` early.
#
#   test_venv_path NAME           the virtualenv's directory
#   test_venv_requirements NAME   its requirements file, in the checkout
#   ensure_test_venv NAME         ensure_venv of the two
venv_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
test_venv_names="frameworks clients py server"

test_venv_path() {
    case "$1" in
    frameworks) echo "${CITEFLOW_FRAMEWORKS_VENV:-$venv_root/target/venv-frameworks}" ;;
    clients) echo "$venv_root/target/venv-clients" ;;
    py) echo "${CITEFLOW_PY_VENV:-$venv_root/target/venv-py}" ;;
    server) echo "$venv_root/target/venv-server" ;;
    *) echo "test_venv_path: no test virtualenv named '$1' (scripts/venv.sh)" >&2; return 1 ;;
    esac
}

test_venv_requirements() {
    case "$1" in
    frameworks) echo "$venv_root/crates/py/requirements-frameworks.txt" ;;
    clients) echo "$venv_root/crates/server/tests/clients/requirements.txt" ;;
    py) echo "$venv_root/crates/py/requirements-test.txt" ;;
    server) echo "$venv_root/crates/server/tests/python/requirements.txt" ;;
    *) echo "test_venv_requirements: no test virtualenv named '$1' (scripts/venv.sh)" >&2; return 1 ;;
    esac
}

ensure_test_venv() {
    local venv req
    venv="$(test_venv_path "$1")"
    req="$(test_venv_requirements "$1")"
    ensure_venv "$venv" "$req"
}

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
