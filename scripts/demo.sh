#!/usr/bin/env bash
# octet's main job on the bundled BERT-style model: install, build, then report.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh release >/dev/null
model=tests/models/fixtures/bert_tiny.onnx
echo "== octet inspect $model (batch=1, seq=128)"
build/release/octet inspect "$model" --dim batch=1 --dim seq=128
echo
echo "== octet run $model on random inputs (batch=1, seq=128)"
build/release/octet run "$model" --random --dim batch=1 --dim seq=128
echo
echo "== octet run $model against the torch reference outputs"
build/release/octet run "$model" --test-data tests/models/fixtures/bert_tiny_data
