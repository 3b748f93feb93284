#!/usr/bin/env bash
# libFuzzer over octet's file readers (tests/fuzz/): model loading + check + optimizer +
# inference (fuzz_model) and .npy/.npz reading (fuzz_npy). The library itself is built with
# clang under ASan+UBSan and the fuzzer's coverage (build/fuzz, -DOCTET_FUZZ=ON), so the
# fuzzer is guided through octet's code and a bad read inside it is a report.
#   scripts/fuzz.sh [SECONDS_PER_TARGET [TARGET...]]   default 30 s, both targets: what CI runs
#   scripts/fuzz.sh 900 fuzz_model           a longer run of one target (docs/fuzzing.md)
# Seeds: the fixtures, the bad files, tests/fuzz/corpus/ and a few numpy-written arrays;
# inputs the fuzzer finds interesting collect in build/fuzz/corpus/. A crash, sanitizer
# report, timeout or out-of-memory is written to build/fuzz/crashes/; the script then exits
# 1 and names the file and the command that replays it.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-30}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(fuzz_model fuzz_npy)
scripts/setup.sh --fuzz >/dev/null

# -O1 -g1 as the ASan flavour; no tests, CLI or shared library: only the library's objects
# and the two targets are compiled.
args=(-DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1" -DOCTET_FUZZ=ON -DOCTET_BUILD_TESTS=OFF
      -DOCTET_BUILD_CLI=OFF -DOCTET_BUILD_SHARED=OFF -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang)
if command -v ccache >/dev/null 2>&1; then
  args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR="$PWD"
fi
mkdir -p build
start=$SECONDS
if ! { cmake -S . -B build/fuzz "${args[@]}" &&
       cmake --build build/fuzz -j"$(nproc 2>/dev/null || echo 2)" --target fuzz_model fuzz_npy; } >build/fuzz.log 2>&1; then
  echo "fuzz: build FAILED (build/fuzz.log); the errors:" >&2
  grep -E "error|Error|undefined reference" build/fuzz.log | head -40 >&2 || tail -40 build/fuzz.log >&2
  exit 1
fi
echo "fuzz: build/fuzz (clang, ASan+UBSan+coverage) ready in $((SECONDS - start)) s"

corpus=build/fuzz/corpus
crashes=build/fuzz/crashes
mkdir -p "$corpus/model" "$corpus/npy" "$crashes"
# Seeds: the fixture models and bad files under FUZZ_MODEL_MAX_KB (default 64), the committed
# corpus, arrays numpy writes. Small models are what makes fuzz_model fast: seeded with the
# 1 MB transformer fixtures it ran 8-15 inputs/s, with the ones under 64 KB about 190/s
# (docs/fuzzing.md); mutated inputs are capped at the same size.
max_kb=${FUZZ_MODEL_MAX_KB:-64}
find tests/models/fixtures tests/bad_files/generated -name '*.onnx' -size -"$((max_kb + 1))"k -exec cp -n {} "$corpus/model/" \; 2>/dev/null || true
for kind in model npy; do
  [[ -d tests/fuzz/corpus/$kind ]] && cp -n tests/fuzz/corpus/$kind/* "$corpus/$kind/" 2>/dev/null || true
done
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

# fuzz_model's dictionary: op types (ONNX's, com.microsoft's, octet's own) and domains, so a
# mutation can turn one node into another op instead of only breaking the protobuf.
python3 - build/fuzz/model.dict <<'PY'
import re, pathlib, sys
import onnx.defs
names = {s.name for s in onnx.defs.get_all_schemas() if s.domain in ("", "com.microsoft")}
for f in pathlib.Path("src/ops").glob("*.cpp"):
    names |= set(re.findall(r'\{"octet", *"([A-Za-z0-9]+)"', f.read_text()))
words = sorted(names) + ["octet", "com.microsoft", "ai.onnx"]
pathlib.Path(sys.argv[1]).write_text("".join(f'"{w}"\n' for w in words))
PY

stamp=$(mktemp build/fuzz/.run_started.XXXXXX)
trap 'rm -f "$stamp"' EXIT
status=0
for target in "${targets[@]}"; do
  dir=$corpus/${target#fuzz_}
  log=build/fuzz/$target.log
  extra=(); [[ $target == fuzz_model ]] && extra=(-dict=build/fuzz/model.dict -max_len=$((max_kb * 1024)))
  echo "== $target for ${secs}s (corpus: $(ls "$dir" | wc -l) files; log: $log)"
  # -timeout: one input may take 20 s (fuzz_model skips runs over 10^8 MACs or 256 MB);
  # rss/malloc: 2 GB per allocation, 2.5 GB in all; more is reported as a finding.
  if ! OCTET_FUZZ_STATS=1 build/fuzz/$target "$dir" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2560 \
        -malloc_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$crashes/$target-" "${extra[@]}" 2>"$log"; then
    status=1
    echo "fuzz: $target FAILED:"
    grep -E "^(==[0-9]+==ERROR|SUMMARY|.*runtime error|==[0-9]+== ERROR: libFuzzer)" "$log" | head -5 || tail -20 "$log"
  fi
  grep -E "^(stat::number_of_executed_units|stat::new_units_added|stat::peak_rss_mb|fuzz_model stages)" "$log" || true
  grep -E "^#[0-9]+[[:space:]]+(INITED|DONE)" "$log" | tail -2 || true
done
new=$(find "$crashes" -type f -newer "$stamp" | sort)
if [[ -n "$new" ]]; then
  echo "fuzz: inputs that failed (replay one with build/fuzz/<target> FILE):"
  echo "$new" | sed 's/^/  /'
  status=1
fi
exit $status
