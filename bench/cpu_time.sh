#!/bin/bash
# CPU time per inference of `octet bench` at 1 thread: the process's task-clock over 16 timed
# runs minus that over 4 (so loading, optimizing and session creation cancel), / 12.
# A load-robust A/B measure on a shared machine (wall time swings with whoever has the
# cores; task-clock only counts this process's time on a core). Needs perf.
#   bench/cpu_time.sh build/release/octet model.onnx --dim batch=8      -> "163.7" (ms)
set -euo pipefail
bin=$1; f=$2; shift 2
clock() {
  local it=$1; shift
  perf stat -x, -e task-clock -- "$bin" bench "$f" "$@" --threads 1 --warmup 2 --iters "$it" 2>&1 >/dev/null |
    grep task-clock | cut -d, -f1
}
a=$(clock 4 "$@"); b=$(clock 16 "$@")
python3 -c "print('%.1f' % (($b - $a) / 12))"
