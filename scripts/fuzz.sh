#!/usr/bin/env bash
# libFuzzer over octet's file readers (tests/fuzz/): model loading + check + optimizer +
# inference (fuzz_model) and .npy/.npz reading (fuzz_npy), each under ASan+UBSan.
#   scripts/fuzz.sh [SECONDS_PER_TARGET]     default 40: the short run CI can afford
#   scripts/fuzz.sh 1800                     the longer run (docs/fuzzing.md has its result)
# Seeds come from the fixtures and bad files; new inputs the fuzzer finds collect in
# build/fuzz/corpus/, crashes in build/fuzz/crashes/ (the script then exits 1 and names them).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-40}
scripts/setup.sh --fuzz >/dev/null

args=(-DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1" -DOCTET_FUZZ=ON -DOCTET_BUILD_TESTS=OFF
      -DOCTET_BUILD_CLI=OFF -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang)
if command -v ccache >/dev/null 2>&1; then
  args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR="$PWD"
fi
cmake -S . -B build/fuzz "${args[@]}" >/dev/null
cmake --build build/fuzz -j"$(nproc 2>/dev/null || echo 2)" --target fuzz_model fuzz_npy

corpus=build/fuzz/corpus
crashes=build/fuzz/crashes
mkdir -p "$corpus/model" "$corpus/npy" "$crashes"
# Seeds: every fixture model under 2 MB and every bad file; arrays written by numpy.
find tests/models/fixtures tests/bad_files/generated -name '*.onnx' -size -2M -exec cp -n {} "$corpus/model/" \; 2>/dev/null || true
python3 - "$corpus/npy" <<'PY'
import os, sys
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(0)
arrays = {"f32": rng.standard_normal((2, 3)).astype(np.float32), "i64": np.arange(6, dtype=np.int64),
          "f16": np.ones((4,), np.float16), "b": np.array([True, False]), "u8": np.zeros((2, 2, 2), np.uint8),
          "scalar": np.float64(3.5), "empty": np.zeros((0, 4), np.float32)}
for k, a in arrays.items():
    np.save(os.path.join(d, k + ".npy"), a)
np.savez(os.path.join(d, "pair.npz"), input_ids=arrays["i64"].reshape(1, 6), attention_mask=np.ones((1, 6), np.int64))
np.savez_compressed(os.path.join(d, "compressed.npz"), x=arrays["f32"])
PY

status=0
for target in fuzz_model fuzz_npy; do
  dir=$corpus/${target#fuzz_}
  echo "== $target for ${secs}s (seeds: $(ls "$dir" | wc -l))"
  # rss/malloc limits: a model may legitimately ask for a lot; 2 GB is the cap here.
  if ! build/fuzz/$target "$dir" -max_total_time="$secs" -timeout=30 -rss_limit_mb=2560 -malloc_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$crashes/$target-" 2>build/fuzz/$target.log; then
    status=1
  fi
  grep -E "^(stat::|Done|INFO: seed corpus|#[0-9]+ *DONE)" build/fuzz/$target.log | tail -8 || true
done
if ls "$crashes"/* >/dev/null 2>&1; then
  echo "fuzz: crashes found:"; ls -l "$crashes"
  status=1
fi
exit $status
