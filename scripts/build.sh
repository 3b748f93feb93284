#!/usr/bin/env bash
# Configures and builds one flavour of octet into build/<flavour>.
#   scripts/build.sh release    optimized library, CLI and tests
#   scripts/build.sh asan       unit tests under AddressSanitizer + UBSan
set -euo pipefail
cd "$(dirname "$0")/.."
flavour=${1:-release}
case "$flavour" in
  release) args=(-DCMAKE_BUILD_TYPE=Release) ;;
  asan) args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DOCTET_SANITIZE=ON -DOCTET_BUILD_CLI=OFF) ;;
  *) echo "build.sh: unknown flavour '$flavour' (release|asan)" >&2; exit 2 ;;
esac
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B "build/$flavour" "${args[@]}" >/dev/null
cmake --build "build/$flavour" -j"$jobs"
