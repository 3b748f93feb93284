#!/usr/bin/env bash
# Configures and builds one flavour of octet into build/<flavour>.
#   scripts/build.sh release    optimized library, CLI and tests
#   scripts/build.sh asan       unit tests under AddressSanitizer + UBSan
set -euo pipefail
cd "$(dirname "$0")/.."
flavour=${1:-release}
case "$flavour" in
  release) args=(-DCMAKE_BUILD_TYPE=Release) ;;
  # -O1 -g1: the usual sanitizer setting; compiles far faster than -O2 -g on CI's 2 cores
  # and keeps stack traces readable.
  asan) args=(-DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1" -DOCTET_SANITIZE=ON -DOCTET_BUILD_CLI=OFF -DOCTET_BUILD_SHARED=OFF) ;;
  *) echo "build.sh: unknown flavour '$flavour' (release|asan)" >&2; exit 2 ;;
esac
# ccache, when installed, makes rebuilds after a branch switch (and in git worktrees,
# through CCACHE_BASEDIR) cheap; a fresh CI machine simply compiles everything.
if command -v ccache >/dev/null 2>&1; then
  args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR="$PWD"
fi
jobs=$(nproc 2>/dev/null || echo 2)
# Quiet by default: a newcomer should read a summary, not a first build's compiler chatter.
# The full log stays in build/<flavour>.log (OCTET_BUILD_VERBOSE=1 streams it); a failure
# prints its errors.
mkdir -p build
log="build/$flavour.log"
start=$SECONDS
if [[ "${OCTET_BUILD_VERBOSE:-0}" == 1 ]]; then
  cmake -S . -B "build/$flavour" "${args[@]}" >/dev/null
  cmake --build "build/$flavour" -j"$jobs" 2>&1 | tee "$log"
  exit "${PIPESTATUS[0]}"
fi
echo "build: $flavour (log: $log)"
if ! { cmake -S . -B "build/$flavour" "${args[@]}" && cmake --build "build/$flavour" -j"$jobs"; } >"$log" 2>&1; then
  echo "build: $flavour FAILED; the errors:" >&2
  grep -E "error|Error|undefined reference" "$log" | head -40 >&2 || tail -40 "$log" >&2
  exit 1
fi
warnings=$(grep -c "warning:" "$log" || true)
echo "build: $flavour done in $((SECONDS - start)) s ($warnings compiler warnings in the log)"
