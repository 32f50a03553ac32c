#!/bin/bash
# On the GPU machine (the device tool's `run`, carrying .gpu): unpacks tools/gpu/pack.sh's build
# and runs the CUDA checks named, each under a time limit, logs in $OUT. 2026-12-04, an H200:
#   run: bash .gpu/run.sh probe gtest pytest bench llm sanitize   carry: [".gpu"]
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD; G=$ROOT/.gpu; L=$G/lib
mkdir -p "$L" && tar -xJf "$G/pack.tar.xz" -C "$L"
cp "$L/_C.cpython-312-x86_64-linux-gnu.so" python/retorch/
for l in $(ls "$L/fallback"); do ldconfig -p | grep -q "$l " || cp "$L/fallback/$l" "$L/"; done
export LD_LIBRARY_PATH=$L
# The CUDA libraries torch's wheels bring (so retorch and torch share one copy in a process).
first() { find "$@" 2>/dev/null | head -1; }
where="/opt /usr/local /usr/lib/x86_64-linux-gnu"
export RETORCH_CUBLAS=$(first $where -name 'libcublas.so.1[23]*')
export RETORCH_CUDNN=$(first $where -name 'libcudnn.so.9*')
export RETORCH_NVRTC=$(first $where -name 'libnvrtc.so.1[23]*' -not -name '*builtins*')
export RETORCH_CUBLASLT=$(first $where -name 'libcublasLt.so.1[23]*')
export RETORCH_CUSOLVER=$(first $where -name 'libcusolver.so.1[12]*')
NCCL=$(first $where -name 'libnccl.so.2*')
[ -n "$NCCL" ] && export LD_LIBRARY_PATH=$L:$(dirname "$NCCL")
# cuSOLVER's own dependencies (cuSPARSE, nvJitLink, cuBLAS) from the same wheels.
for dep in 'libcusparse.so.1[12]*' 'libnvJitLink.so.1[23]*' 'libcublas.so.1[23]*'; do
  d=$(first $where -name "$dep")
  [ -n "$d" ] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(dirname "$d")
done
export PYTHONPATH=$ROOT/python PYTHONUNBUFFERED=1 RETORCH_CACHE_DIR=/tmp/rtcache
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
step() {
  local name=$1 t=$2; shift 2
  echo "=== $name (limit ${t}s) $(date +%T)"
  timeout -k 5 "$t" "$@" > "$OUT/$name.log" 2>&1
  echo "=== $name rc=$? $(date +%T)"; tail -n "${TAILN:-25}" "$OUT/$name.log"
}
for s in "$@"; do case $s in
probe)
  nvidia-smi -L; grep -m1 'model name' /proc/cpuinfo
  echo "cublas=$RETORCH_CUBLAS cublasLt=$RETORCH_CUBLASLT cusolver=$RETORCH_CUSOLVER"
  echo "cudnn=$RETORCH_CUDNN nvrtc=$RETORCH_NVRTC nccl=$NCCL"
  python3 -c "import torch, retorch; print('torch', torch.__version__, torch.cuda.is_available(),
'retorch cuda', retorch.cuda.is_available())"
  ldd "$L/libretorch.so" "$L/retorch" | grep 'not found' ;;
gtest) f='Cuda*:Devices*:DeviceTest*:Distributed*:FakeDeviceMemory*:CompilerTest*:Profiler*:Autocast*'
  step gtest 60 "$L/retorch_tests" --gtest_filter="$f" ;;
pytest) TAILN=40 step pytest 200 python3 -m pytest -q -p no:cacheprovider -n 8 --timeout 150 -rs \
  tests/python/test_cuda_ops.py tests/python/test_cuda_llm.py tests/python/test_cuda_streams.py \
  tests/python/test_cuda_index.py tests/python/test_cuda_pointwise.py tests/python/test_cuda_image.py \
  tests/python/test_cuda_misc_ops.py tests/python/test_cuda_count.py \
  tests/python/test_cuda_gather.py tests/python/test_cuda_linalg.py \
  tests/python/test_compile_cuda.py \
  tests/python/test_devices.py tests/python/test_autocast.py tests/python/test_graphed_callables.py \
  tests/python/test_distributed.py tests/python/test_profiler.py \
  "tests/python/test_llama.py::test_generation_on_cuda_is_token_identical" \
  "tests/python/test_llama.py::test_decode_graphs_on_cuda_give_the_eager_tokens" \
  "tests/python/test_llama.py::test_sixteen_bit_decode_on_cuda_runs_the_fused_layers" \
  "tests/python/test_llama.py::test_sample_rows_on_cuda_run_on_the_device" \
  "tests/python/test_llama.py::test_sampled_generation_on_cuda_gives_the_cpu_tokens" ;;
bench) step bench 75 python3 bench/bench_cuda.py ;;
llm) step llm 210 python3 bench/bench_llm_cuda.py --retorch "$L/retorch" ;;
profile) TAILN=45 RETORCH_PROFILE=/tmp/llm.json step profile 60 "$L/retorch" \
  bench-llm --model 1b --format bf16 --device cuda --batch 1 --prompt-len 128 --gen-len 64 --eager ;;
profileg) TAILN=45 RETORCH_PROFILE=/tmp/llmg.json step profileg 60 "$L/retorch" \
  bench-llm --model 1b --format bf16 --device cuda --batch 1 --prompt-len 128 --gen-len 64 ;;
nsys)  # the graphed decode step's kernels on the device, where the image has Nsight Systems
  N=$(command -v nsys || first /opt /usr/local -name nsys -type f -perm -u+x)
  if [ -z "$N" ]; then echo "nsys: not on this machine"; else
    TAILN=60 step nsys 150 "$N" profile -o /tmp/decode --force-overwrite true --stats=true \
      "$L/retorch" bench-llm --model 1b --format bf16 --device cuda --batch 1 --prompt-len 128 \
      --gen-len 32
  fi ;;
sanitize)
  step memcheck 50 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
    "$L/retorch_tests" --gtest_filter='Cuda*'
  step racecheck 50 compute-sanitizer --tool racecheck --error-exitcode 9 "$L/retorch_tests" \
    --gtest_filter='Cuda*' ;;
esac; done
