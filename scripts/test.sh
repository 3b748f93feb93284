#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs dependencies, builds Release and
# ASan+UBSan, runs the official ONNX backend node tests (per-op counts and pass rate),
# every unit test in both builds, the Python checks against onnx/onnxruntime in Release,
# the installed C++ package (ctest install.*) and the Python package (`pip install .`,
# then pytest tests/package), and each libFuzzer target for 30 s (scripts/fuzz.sh: a clang
# build of the library, see docs/fuzzing.md). Exits non-zero if anything fails.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh release
scripts/build.sh asan

status=0
echo "== ONNX backend node tests (from the pip onnx package) on the reference kernels (the oracle)"
python3 tests/onnx_backend/generate_node_tests.py build/onnx_node_tests
build/release/octet_node_tests build/onnx_node_tests --allow-list tests/onnx_backend/allow_list.txt --reference || status=1
echo "== the same node tests on the optimized kernels"
build/release/octet_node_tests build/onnx_node_tests --allow-list tests/onnx_backend/allow_list.txt || status=1
echo "== the same node tests after the optimizer pipeline, optimized kernels"
build/release/octet_node_tests build/onnx_node_tests --allow-list tests/onnx_backend/allow_list.txt --optimize || status=1
echo "== Python package: pip install . (its build reuses build/release: nothing compiles twice)"
# --no-build-isolation: the build backend comes from scripts/setup.sh, not from a download.
CMAKE_GENERATOR="Unix Makefiles" python3 -m pip install -q --disable-pip-version-check --no-build-isolation \
  --no-deps -C build-dir=build/release . || status=1
echo "== Python package: pytest tests/package (octet against onnxruntime, quantize from dicts/text/images)"
(cd tests/package && python3 -m pytest -q -p no:cacheprovider .) || status=1
echo "== Release: unit tests and checks against onnx / onnxruntime"
(cd build/release && ctest --output-on-failure -j2) || status=1
echo "== ASan+UBSan: unit tests"
(cd build/asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --output-on-failure -j2) || status=1
echo "== libFuzzer: model loading + check + inference, and .npy/.npz reading, 30 s each"
scripts/fuzz.sh 30 || status=1
exit $status
