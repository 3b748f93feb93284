#!/usr/bin/env bash
# Installs what octet needs to build and test, and nothing twice: Debian packages only
# when one is missing, pip packages only when an import fails or a version differs.
#   scripts/setup.sh            build + test dependencies
#   scripts/setup.sh --torch    also Debian's python3-torch (only to regenerate fixtures)
#   scripts/setup.sh --fuzz     also clang, its libFuzzer runtime and OpenMP (libomp) (only for scripts/fuzz.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(build-essential cmake g++ pkg-config
  libonnx-dev libprotobuf-dev protobuf-compiler
  libdnnl-dev libcli11-dev nlohmann-json3-dev zlib1g-dev
  libgtest-dev libgmock-dev libbenchmark-dev)
if [[ "${1:-}" == "--torch" ]]; then APT_PACKAGES+=(python3-torch python3-onnx); fi
if [[ "${1:-}" == "--fuzz" ]]; then APT_PACKAGES+=(clang libclang-rt-14-dev libomp-dev); fi

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Test-side Python (onnx's checker and onnxruntime as references nobody here wrote).
PYTHON=${PYTHON:-python3}
if ! "$PYTHON" - <<'PY' 2>/dev/null
import importlib.metadata as md, sys
want = dict(l.strip().split("==") for l in open("tests/requirements.txt") if "==" in l)
sys.exit(0 if all(md.version(k) == v for k, v in want.items()) else 1)
PY
then
  echo "setup: installing Python test packages from tests/requirements.txt"
  "$PYTHON" -m pip install -q --disable-pip-version-check -r tests/requirements.txt
fi
echo "setup: dependencies ready"
