# Shared by ci/test and ci/demo (sourced, not executed).
# Environment knobs:
#   LOCKSTEP_BUILD_DIR       release build folder        (default: build)
#   LOCKSTEP_ASAN_BUILD_DIR  sanitizer build folder      (default: build-asan)
#   LOCKSTEP_JOBS            parallel compile jobs       (default: 2)
#   LOCKSTEP_CMAKE_ARGS      extra arguments for every cmake configure (word-split)

# Work from the repository root whatever the caller's directory.
cd "$(dirname "${BASH_SOURCE[0]}")/.."

build_dir=${LOCKSTEP_BUILD_DIR:-build}
asan_dir=${LOCKSTEP_ASAN_BUILD_DIR:-build-asan}
jobs=${LOCKSTEP_JOBS:-2}
read -r -a extra_cmake_args <<<"${LOCKSTEP_CMAKE_ARGS:-}"

# step MESSAGE: one visible line between phases.
step() { echo "== ci/$(basename "$0"): $*" >&2; }

# configure_and_build DIR [CMAKE ARGS...] [-- BUILD ARGS...]: Ninja, RelWithDebInfo, then build
# all (or what the build arguments after `--` say, e.g. --target tests-unit).
configure_and_build() {
  local dir=$1
  shift
  local configure=() build=()
  while (($#)); do
    if [ "$1" = "--" ]; then
      shift
      build=("$@")
      break
    fi
    configure+=("$1")
    shift
  done
  step "configure $dir"
  mkdir -p "$dir"
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    ${extra_cmake_args[@]+"${extra_cmake_args[@]}"} ${configure[@]+"${configure[@]}"} >"$dir/lockstep-configure.log" 2>&1 || {
    cat "$dir/lockstep-configure.log" >&2
    echo "$(basename "$0"): configure of $dir failed (log above)" >&2
    return 1
  }
  step "build $dir (-j $jobs) ${build[*]}"
  cmake --build "$dir" -j "$jobs" ${build[@]+"${build[@]}"}
}
