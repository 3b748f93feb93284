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
echo
echo "== octet quantize $model (static W8A8, minmax calibration on 20 generated samples)"
python3 tests/models/make_calibration.py build/calib --samples 20 --models bert_tiny >/dev/null
build/release/octet quantize "$model" -o build/bert_tiny_int8.onnx --calib build/calib/bert_tiny \
  --force -q --report build/bert_tiny_int8_report.json
echo
echo "== octet bench: float vs int8 (batch=1, seq=128, 2 threads)"
for m in "$model" build/bert_tiny_int8.onnx; do
  build/release/octet bench "$m" --dim batch=1 --dim seq=128 --threads 2 --iters 200 | grep -E "^(model|latency|memory)"
done
