#!/usr/bin/env bash
# Installs the Debian packages retorch needs (as root, when missing), then the Python packages
# Debian lacks (test-only ones, the wheel build backend) into the project's .deps (never
# system-wide).
set -euo pipefail
PKGS=(build-essential cmake ccache libopenblas-dev liblapack-dev libgtest-dev googletest
      libbenchmark-dev pybind11-dev python3-dev python3-pybind11 python3-numpy python3-torch
      python3-pytest python3-pip python3-yaml nlohmann-json3-dev zlib1g-dev dataset-fashion-mnist
      libplplot-dev plplot-driver-cairo libcli11-dev libsleef-dev libtorch-dev libdlpack-dev libdnnl-dev libssl-dev)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -ne 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "retorch: missing Debian packages: ${missing[*]}" >&2
    echo "retorch: run 'sudo apt-get install ${missing[*]}' (or run make as root)" >&2
    exit 1
  fi
  echo "retorch: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

PY=${PY:-/usr/bin/python3}
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# pip_target DIR PKG==VER...: installs the pinned packages, without their dependencies, into
# .deps/DIR. A stamp of the pins makes reruns free; nothing is fetched at test time.
pip_target() {
  local deps="$ROOT/.deps/$1"
  shift
  if [ "$(cat "$deps/.installed" 2>/dev/null)" != "$*" ]; then
    echo "retorch: installing $* into .deps/${deps##*/}"
    rm -rf "$deps.tmp"
    PIP_ROOT_USER_ACTION=ignore "$PY" -m pip install --quiet --disable-pip-version-check \
      --no-deps --target "$deps.tmp" "$@"
    echo "$*" > "$deps.tmp/.installed"
    rm -rf "$deps"
    mv "$deps.tmp" "$deps"
  fi
}

# tensorboard's event-file reader checks the SummaryWriter tests; it needs only protobuf and absl
# besides numpy, so the server's dependencies (grpcio, werkzeug, ...) are skipped.
# tests/python/conftest.py puts .deps/python on sys.path.
# The LLM tests' oracles: Hugging Face transformers (LlamaForCausalLM on Debian's torch), the
# tokenizers package (jinja2 for its chat templates), and llama.cpp's gguf writer/dequantizer.
pip_target python tensorboard==2.20.0 protobuf==6.33.5 absl-py==2.3.1 \
  transformers==4.44.2 tokenizers==0.19.1 huggingface-hub==0.23.4 safetensors==0.4.3 \
  regex==2024.5.15 tqdm==4.66.4 filelock==3.15.4 gguf==0.17.1 jinja2==3.1.4 markupsafe==2.1.5

# numpy 2 for tests/python/test_numpy2.py, which runs the module against it in a child process
# (Debian's numpy 1.24 stays the suite's, as Debian's torch needs it).
pip_target numpy2 numpy==2.2.6

# The PEP 517 backend of pyproject.toml with its dependencies (Debian's python3-packaging is too
# old for it), for `make test-install`: pip builds the wheel with --no-build-isolation and
# PYTHONPATH=.deps/build-backend, so the build itself downloads nothing. pybind11 2.13 builds
# the Python module (both builds; python/CMakeLists.txt): Debian's 2.10 rejects numpy 2 arrays.
pip_target build-backend scikit-build-core==1.1.2 packaging==26.3 pathspec==1.1.1 \
  pybind11==2.13.6
