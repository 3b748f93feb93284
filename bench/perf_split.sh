#!/bin/bash
# CPU ms per inference per kernel class of `octet bench` at 1 thread, from perf's cpu-clock
# samples (2 kHz) over 2 warmup + 10 timed runs: oneDNN's JIT code (the products), attention
# (QAttention's qattn::*, the float attention task), the QMatMul epilogue (epilogue_row*, or
# the separate scale / GeLU / binary row kernels), quantize (quantize_row, min_max_row),
# norm (LayerNorm rows), other (includes load / optimize / session creation spread over
# the 12 runs). Needs perf; robust to load like bench/cpu_time.sh.
#   bench/perf_split.sh build/release/octet model.onnx --dim batch=8
set -euo pipefail
bin=$1; f=$2; shift 2
d=$(mktemp /tmp/perf_split.XXXXXX)
trap 'rm -f "$d"' EXIT
perf record -q -F 2000 -o "$d" -- "$bin" bench "$f" "$@" --threads 1 --warmup 2 --iters 10 >/dev/null 2>&1
perf report -i "$d" --no-children -n --sort dso,symbol 2>/dev/null | grep "%" | python3 -c "
import sys, collections
g = collections.defaultdict(int)
for line in sys.stdin:
    f = line.split()
    if len(f) < 4 or not f[1].isdigit():
        continue
    n, dso, sym = int(f[1]), f[2], ' '.join(f[4:])
    if dso.startswith('[JIT]'): k = 'gemm(jit)'
    elif 'epilogue_row' in sym: k = 'epilogue'
    elif 'qattn' in sym or 'task_avx512' in sym or 'row_exp_sum' in sym or 'softmax' in sym: k = 'attention'
    elif 'quantize_row' in sym or 'min_max_row' in sym or 'quantize_rows' in sym: k = 'quantize'
    elif 'binary_row' in sym or 'unary_row' in sym or 'scale_row' in sym: k = 'epilogue(row kernels)'
    elif 'row_norm' in sym or 'normalize_rows' in sym or 'row_sum' in sym: k = 'norm'
    else: k = 'other'
    g[k] += n
print(' '.join('%s=%.1f' % (k, v / 2000 / 12 * 1000) for k, v in sorted(g.items())))
"
