#!/usr/bin/env bash
# Installs the built library into a temp prefix and builds + runs a find_package consumer.
set -euo pipefail
build_dir=$1
src_dir=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build_dir" --prefix "$tmp/prefix" > /dev/null
cmake -S "$src_dir" -B "$tmp/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" > /dev/null
cmake --build "$tmp/build" > /dev/null
LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/build/consumer"
