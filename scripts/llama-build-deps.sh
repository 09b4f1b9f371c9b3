# Sourced by the scripts that build the local model (scripts/run.sh, test-llm.sh,
# test-install.sh): llama.cpp is built from source by the llama-cpp-2 crate, with Debian's
# cmake and libclang-dev (bindgen). ensure_llama_build_deps installs whichever is missing.

ensure_llama_build_deps() {
  local missing=()
  command -v cmake >/dev/null 2>&1 || missing+=(cmake)
  dpkg -s libclang-dev >/dev/null 2>&1 || missing+=(libclang-dev)
  [ "${#missing[@]}" -eq 0 ] && return 0
  local sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  echo "installing ${missing[*]} (to build llama.cpp)" >&2
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" >/dev/null \
    || { "${sudo[@]}" apt-get update >/dev/null \
      && "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" >/dev/null; }
}
