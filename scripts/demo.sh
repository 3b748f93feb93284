#!/usr/bin/env bash
# octet's main job on a real pretrained model: install, build, fetch the model, quantize
# with real calibration text, then report fidelity on held-out text and fp32 vs int8 speed
# (scripts/demo_real_model.py; all output under build/demo/).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh release
python3 scripts/demo_real_model.py "$@"
