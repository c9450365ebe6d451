#!/usr/bin/env bash
# The whole test suite: install dependencies, build, run CTest; then the
# sanitizer job: the same sources built with AddressSanitizer + UBSan and
# the suite run again with leak checking on.
# GPU tests are reported as skipped where there is no GPU.
#   RINGRT_BUILD_DIR          build folder (default ./build)
#   RINGRT_SANITIZE_BUILD_DIR sanitizer build folder (default ./build-asan)
#   RINGRT_SANITIZER_JOB=0    skip the sanitizer job (a quicker local run)
# Extra arguments go to both ctest runs (e.g. -L ilu).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${RINGRT_BUILD_DIR:-$root/build}"
# The Python tests' interpreter (a venv with torch, anndata, scipy, mpi4py,
# petsc4py: launch/python-deps.sh); RINGRT_PYTHON=/path/python uses another.
python="${RINGRT_PYTHON:-$(bash "$root/launch/python-deps.sh" | tail -n 1)}"
# Everything this machine can have, switched on: where nvcc is, the CUDA
# backend and cuDNN's fused attention are required (launch/deps.sh installs
# the cudnn-frontend headers), so a leak or a break that only that
# configuration shows cannot hide behind a build that left it off.
gpu=AUTO
command -v nvcc >/dev/null && gpu=ON
bash "$root/launch/build.sh" -DRINGRT_PYTHON="$python" -DRINGRT_CUDA=$gpu -DRINGRT_CUDNN=$gpu
(cd "$build" && ctest --output-on-failure -j "$(nproc)" "$@")

[ "${RINGRT_SANITIZER_JOB:-1}" = 0 ] && exit 0
# The sanitizer job builds the CPU backends only (nvcc code cannot run here
# anyway) and leaves out what cannot run under ASan: GPU tests, the Slurm and
# mpirun-wrapper tests (a throwaway Slurm and launcher scripts, no library
# code of ours), and the install and python tests (an outside program or
# interpreter that loads the sanitized libringrt.so would need the ASan
# runtime preloaded), the build test (it builds the sources again without
# the sanitizers, as the normal suite already did), and the twins (label
# twin, tests/CMakeLists.txt: the most-ranks run of a test that also runs
# at fewer ranks, the eager emu run of a test that also runs deferred
# at the same rank count, and the emulator's hazard-mode reruns of the
# tensor-core kernel tests). Leaks inside
# Open MPI, PMIx, hwloc and the loader are suppressed by library name
# (tests/sanitize/lsan.supp); slow unwinding gives the whole stack, so a leak
# is suppressed only when one of those libraries is on it. The cli cases
# run without the leak check (tests/cli/CMakeLists.txt says why).
asan="${RINGRT_SANITIZE_BUILD_DIR:-$root/build-asan}"
echo "ringrt: sanitizer job (AddressSanitizer + UBSan, leak checking on) in $asan"
RINGRT_BUILD_DIR="$asan" bash "$root/launch/build.sh" -DRINGRT_SANITIZE=ON -DRINGRT_CUDA=OFF
export ASAN_OPTIONS="detect_leaks=1:fast_unwind_on_malloc=0:abort_on_error=0"
# use_tls=0: GCC 12's LeakSanitizer misreads glibc 2.36's dynamic TLS
# vectors and crashes in its tracer ("Tracer caught signal 11", in
# ScanRangeForPointers) at exit, depending on which dlopened Open MPI
# components got TLS blocks, which depends on the environment (TMPDIR's
# path among others). Without the TLS scan, memory that only a thread-local
# pointer holds at exit would show as a leak: the library keeps none.
export LSAN_OPTIONS="suppressions=$root/tests/sanitize/lsan.supp:print_suppressions=0:use_tls=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
(cd "$asan" && ctest --output-on-failure -j "$(nproc)" -LE 'gpu|launch|install|python|twin|build' "$@")
