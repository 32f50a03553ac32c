#!/usr/bin/env bash
# Installs the Debian packages retorch needs (when run as root and something is missing).
set -euo pipefail
PKGS=(build-essential cmake ccache libopenblas-dev liblapack-dev libgtest-dev googletest
      libbenchmark-dev pybind11-dev python3-dev python3-pybind11 python3-numpy python3-torch
      python3-pytest python3-yaml nlohmann-json3-dev zlib1g-dev dataset-fashion-mnist
      libplplot-dev plplot-driver-cairo)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
if [ "$(id -u)" -ne 0 ]; then
  echo "retorch: missing Debian packages: ${missing[*]}" >&2
  echo "retorch: run 'sudo apt-get install ${missing[*]}' (or run make as root)" >&2
  exit 1
fi
echo "retorch: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
