#!/usr/bin/env bash
# `make test-install`: builds a wheel with pip (pyproject.toml, scikit-build-core) from a clean
# copy of the source, installs it into a temp dir, and imports it from there alone (check.py).
# The copy is every tracked or untracked-but-not-ignored file, so no build tree or in-place
# python/retorch/_C*.so can leak into the wheel. Its build tree, build-pip-test/build-wheel,
# lies beside the copy as build/ lies beside the source, so reruns are incremental and ccache
# (base_dir) shares objects with the in-place build.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
PY=${PY:-/usr/bin/python3}
JOBS=${JOBS:-$(nproc)}
backend="$root/.deps/build-backend"
[ -d "$backend/scikit_build_core" ] ||
  { echo "test-install: run scripts/setup.sh first" >&2; exit 1; }
git -C "$root" rev-parse --is-inside-work-tree > /dev/null 2>&1 ||
  { echo "test-install: needs a git checkout to know which files are source" >&2; exit 1; }

copy="$root/build-pip-test"
mkdir -p "$copy"
# A build tree configured for another source path (the checkout moved) starts over.
grep -qsxF "CMAKE_HOME_DIRECTORY:INTERNAL=$copy" "$copy/build-wheel/CMakeCache.txt" ||
  rm -rf "$copy/build-wheel"
find "$copy" -mindepth 1 -maxdepth 1 ! -name build-wheel -exec rm -rf {} +
git -C "$root" ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' f; do if [ -e "$root/$f" ]; then printf '%s\0' "$f"; fi; done |
  tar -C "$root" --null -T - -cf - | tar -C "$copy" -xf -

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)
# --no-build-isolation: the backend comes from .deps/build-backend, nothing is downloaded.
# Unix Makefiles like the in-place build (scikit-build-core would take Ninja where installed), so
# ccache hits the in-place build's objects; -j comes from CMAKE_BUILD_PARALLEL_LEVEL.
CMAKE_GENERATOR="Unix Makefiles" CMAKE_BUILD_PARALLEL_LEVEL="$JOBS" PYTHONPATH="$backend" \
  "$PY" -m pip wheel --quiet --disable-pip-version-check --no-build-isolation --no-deps \
  --wheel-dir "$tmp/wheel" "$copy"
echo "test-install: wheel built in $(( $(date +%s) - start )) s: $(cd "$tmp/wheel" && ls)"
PIP_ROOT_USER_ACTION=ignore "$PY" -m pip install --quiet --disable-pip-version-check --no-deps \
  --no-index --target "$tmp/site" "$tmp"/wheel/retorch-*.whl

# Only the install dir (and Debian's site-packages, for numpy) on the path: no PYTHONPATH=python,
# no LD_LIBRARY_PATH, nothing from the checkout.
cp "$root/tests/install_pip/check.py" "$tmp/"
cd "$tmp"
env -u LD_LIBRARY_PATH PYTHONPATH="$tmp/site" "$PY" -s "$tmp/check.py" "$tmp/site" "$root"
