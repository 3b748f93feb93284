#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs dependencies, builds Release and
# ASan+UBSan, runs every unit test in both, and the Python checks against onnx/onnxruntime
# in Release. Exits non-zero if anything fails.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh release
scripts/build.sh asan

status=0
echo "== Release: unit tests and checks against onnx / onnxruntime"
(cd build/release && ctest --output-on-failure -j2) || status=1
echo "== ASan+UBSan: unit tests"
(cd build/asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --output-on-failure -j2) || status=1
exit $status
