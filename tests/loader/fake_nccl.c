/* A fake NCCL for the loader tests: every function of ringrt's table
 * (src/comm/nccl_lib.h), a distinctive ncclGetVersion (2.99.1), and nothing
 * that works. Built as libnccl.so.2 (found by name), libfakecomm.so (found
 * by its ncclGetVersion) and, with RRT_FAKE_PARTIAL, without ncclBroadcast
 * (the missing symbol must name itself). */
#include <nccl.h>

#define FAKE_VERSION 29901

ncclResult_t ncclGetVersion(int *version) {
  *version = FAKE_VERSION;
  return ncclSuccess;
}
const char *ncclGetErrorString(ncclResult_t result) {
  (void)result;
  return "fake NCCL";
}
const char *ncclGetLastError(ncclComm_t comm) {
  (void)comm;
  return "fake NCCL";
}
ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  (void)id;
  return ncclInternalError;
}
ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
                                    ncclConfig_t *config) {
  (void)comm, (void)nranks, (void)id, (void)rank, (void)config;
  return ncclInternalError;
}
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *async) {
  (void)comm;
  *async = ncclInternalError;
  return ncclSuccess;
}
ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  (void)comm;
  return ncclInternalError;
}
ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  (void)comm;
  return ncclInternalError;
}
ncclResult_t ncclCommAbort(ncclComm_t comm) {
  (void)comm;
  return ncclInternalError;
}
ncclResult_t ncclGroupStart(void) { return ncclInternalError; }
ncclResult_t ncclGroupEnd(void) { return ncclInternalError; }
ncclResult_t ncclSend(const void *buf, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  (void)buf, (void)count, (void)type, (void)peer, (void)comm, (void)stream;
  return ncclInternalError;
}
ncclResult_t ncclRecv(void *buf, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  (void)buf, (void)count, (void)type, (void)peer, (void)comm, (void)stream;
  return ncclInternalError;
}
ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t type,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  (void)send, (void)recv, (void)count, (void)type, (void)op, (void)comm, (void)stream;
  return ncclInternalError;
}
ncclResult_t ncclAllGather(const void *send, void *recv, size_t count, ncclDataType_t type,
                           ncclComm_t comm, cudaStream_t stream) {
  (void)send, (void)recv, (void)count, (void)type, (void)comm, (void)stream;
  return ncclInternalError;
}
#ifndef RRT_FAKE_PARTIAL
ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, ncclDataType_t type,
                           int root, ncclComm_t comm, cudaStream_t stream) {
  (void)send, (void)recv, (void)count, (void)type, (void)root, (void)comm, (void)stream;
  return ncclInternalError;
}
#endif
