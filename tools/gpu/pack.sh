#!/bin/bash
# Packs a portable build for a GPU machine whose system differs from this one: libretorch, the
# C++ tests, the CLI and a Python module built for that machine's Python, with the Debian
# libraries they link, into .gpu/pack.tar.xz (tools/gpu/run.sh unpacks and runs it there).
#
# The build first, in build-gpu (no -march=native: the GPU host's CPU differs; the Python of the
# GPU machine's image, 3.12 on 2026-12-04, with pybind11 and PyYAML installed for it):
#   cmake -S . -B build-gpu -DRETORCH_NATIVE=OFF -DRETORCH_BUILD_BENCH=OFF \
#     -DRETORCH_BUILD_EXAMPLES=OFF -DPython3_EXECUTABLE=$HOME/.pyenv/versions/3.12.1/bin/python3
#   cmake --build build-gpu -j2 --target retorch_tests _C retorch_cli
set -euo pipefail
cd "$(dirname "$0")/../.."
grep -qxF "/.gpu/" .git/info/exclude || echo "/.gpu/" >> .git/info/exclude
mkdir -p .gpu
S=$(mktemp -d)
trap 'rm -rf "$S"' EXIT
mkdir -p "$S/fallback"
cp build-gpu/libretorch.so build-gpu/tests/cpp/retorch_tests build-gpu/tools/retorch "$S/"
cp python/retorch/_C.cpython-312-x86_64-linux-gnu.so "$S/"
D=/lib/x86_64-linux-gnu
# Linked libraries the GPU image lacks, and (fallback/) ones it may lack: run.sh copies those in
# only when that machine's loader cannot find them.
for l in libopenblas.so.0 libgfortran.so.5 libquadmath.so.0 libdnnl.so.2 libsleef.so.3 \
         libOpenCL.so.1 libplplot.so.17 libltdl.so.7 libshp.so.2 libcsirocsa.so.0 \
         libcsironn.so.0 libqsastime.so.0 libqhull_r.so.8.0; do cp -L "$D/$l" "$S/"; done
for l in libgomp.so.1 libz.so.1 libcrypto.so.3 libfreetype.so.6 libpng16.so.16 \
         libbrotlidec.so.1 libbrotlicommon.so.1; do cp -L "$D/$l" "$S/fallback/"; done
strip --strip-unneeded "$S/libretorch.so"  # the tests keep their symbols (stack-trace tests)
tar -cf - -C "$S" . | xz -T2 -6 > .gpu/pack.tar.xz
cp tools/gpu/run.sh .gpu/
ls -la .gpu/pack.tar.xz
