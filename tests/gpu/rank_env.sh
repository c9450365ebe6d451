#!/usr/bin/env bash
# Per-rank environment for several ranks on one GPU: NCCL finds peers on the
# "same host" by a host hash and then refuses two ranks on one device
# ("Duplicate GPU detected"); a distinct NCCL_HOSTID per rank makes each rank
# its own host, so NCCL goes over its socket transport (on loopback) instead.
# mpirun -x cannot give each rank its own value, so tests/gpu/run.sh sets
# this script as RINGRT_TEST_RANK_WRAPPER (tests/CMakeLists.txt): CTest runs
# `mpirun -n N ... rank_env.sh PROGRAM ARGS`, and it runs PROGRAM with the
# rank's variables.
rank=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${PMI_RANK:-0}}}
export NCCL_HOSTID="ringrt-rank-$rank"
export NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo}
exec "$@"
