#!/usr/bin/env bash
# Installs the Debian packages retorch needs (as root, when missing), then the test-only Python
# packages Debian lacks into the project's .deps/python (never system-wide).
set -euo pipefail
PKGS=(build-essential cmake ccache libopenblas-dev liblapack-dev libgtest-dev googletest
      libbenchmark-dev pybind11-dev python3-dev python3-pybind11 python3-numpy python3-torch
      python3-pytest python3-pip python3-yaml nlohmann-json3-dev zlib1g-dev dataset-fashion-mnist
      libplplot-dev plplot-driver-cairo libcli11-dev libdlpack-dev)
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

# tensorboard's event-file reader checks the SummaryWriter tests; it needs only protobuf and absl
# besides numpy, so the server's dependencies (grpcio, werkzeug, ...) are skipped with --no-deps.
# tests/python/conftest.py puts .deps/python on sys.path. A stamp of the pins makes reruns free.
PY=${PY:-/usr/bin/python3}
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEPS="$ROOT/.deps/python"
PIP_PKGS=(tensorboard==2.20.0 protobuf==6.33.5 absl-py==2.3.1)
if [ "$(cat "$DEPS/.installed" 2>/dev/null)" != "${PIP_PKGS[*]}" ]; then
  echo "retorch: installing ${PIP_PKGS[*]} into .deps/python"
  rm -rf "$DEPS.tmp"
  PIP_ROOT_USER_ACTION=ignore "$PY" -m pip install --quiet --disable-pip-version-check --no-deps \
    --target "$DEPS.tmp" "${PIP_PKGS[@]}"
  echo "${PIP_PKGS[*]}" > "$DEPS.tmp/.installed"
  rm -rf "$DEPS"
  mv "$DEPS.tmp" "$DEPS"
fi
