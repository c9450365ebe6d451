/* cuDNN's fused attention for one ring item, through cudnn-frontend (an
 * installed dependency, never copied here; attn_cudnn.h has the contract).
 * One graph per item shape, built at its first use and kept in the plan's
 * cache; every call after that only binds pointers and executes. */
#include "kernels/cuda/attn_cudnn.h"

#include <cuda_runtime.h>
#include <dlfcn.h>
/* cuDNN is opened at run time (as NCCL is, comm/nccl_lib.c), so libringrt.so
 * loads where cuDNN is absent: the frontend calls it through dlsym on
 * cudnn_dlhandle, which rrt_attn_cudnn_create sets. */
#define NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING
#include <cudnn_frontend.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>

namespace fe = cudnn_frontend;

/* The frontend's handle of the opened library (one per process, as the
 * library itself is; set once, never closed). */
void *cudnn_frontend::cudnn_dlhandle = nullptr;

namespace {

enum Uid : int64_t { kQ = 1, kK, kV, kO, kStats, kDO, kDQ, kDK, kDV };

/* Everything a built graph depends on; pointers are bound per call. */
struct Key {
  int bwd, dtype, heads_q, heads_kv, head_dim;
  int64_t batch, q_rows, kv_rows, q_len, k_len, band;
  float scale;
  auto tie() const {
    return std::tie(bwd, dtype, heads_q, heads_kv, head_dim, batch, q_rows, kv_rows, q_len, k_len,
                    band, scale);
  }
  bool operator<(const Key &o) const { return tie() < o.tie(); }
};

struct Entry {
  std::shared_ptr<fe::graph::Graph> graph; /* null: cuDNN refused the shape */
  std::string why;
};

/* [batch, heads, len, head_dim] view of BSHD rows with `rows` rows a batch entry. */
std::shared_ptr<fe::graph::Tensor_attributes> bshd(fe::graph::Graph &g, const char *name,
                                                   int64_t uid, int64_t b, int64_t h, int64_t len,
                                                   int64_t d, int64_t rows) {
  return g.tensor(fe::graph::Tensor_attributes()
                      .set_name(name)
                      .set_uid(uid)
                      .set_dim({b, h, len, d})
                      .set_stride({rows * h * d, d, h * d, 1}));
}

void set_bshd(const std::shared_ptr<fe::graph::Tensor_attributes> &t, int64_t uid, int64_t b,
              int64_t h, int64_t len, int64_t d, int64_t rows) {
  t->set_output(true).set_uid(uid).set_dim({b, h, len, d}).set_stride({rows * h * d, d, h * d, 1});
}

fe::DataType_t io_type(int dtype) {
  return dtype == 5 ? fe::DataType_t::BFLOAT16 : fe::DataType_t::HALF;
}

template <class Attr> void set_band(Attr &attr, int64_t band) {
  if (band == RRT_ATTN_LIB_NO_MASK) return;
  attr.set_diagonal_alignment(fe::DiagonalAlignment_t::TOP_LEFT)
      .set_diagonal_band_right_bound((int)band);
}

/* A graph with storage-dtype tensors and f32 arithmetic inside. */
std::shared_ptr<fe::graph::Graph> new_graph(const Key &k) {
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(io_type(k.dtype))
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  return g;
}

/* The graph of the forward of an item: O in storage dtype [b, q_len, hq, d]
 * (compact), stats f32 [b, hq, q_len]. */
std::shared_ptr<fe::graph::Graph> fwd_graph(const Key &k) {
  auto g = new_graph(k);
  auto q = bshd(*g, "Q", kQ, k.batch, k.heads_q, k.q_len, k.head_dim, k.q_rows);
  auto kt = bshd(*g, "K", kK, k.batch, k.heads_kv, k.k_len, k.head_dim, k.kv_rows);
  auto v = bshd(*g, "V", kV, k.batch, k.heads_kv, k.k_len, k.head_dim, k.kv_rows);
  auto attr = fe::graph::SDPA_attributes()
                  .set_name("ringrt_fwd")
                  .set_generate_stats(true)
                  .set_attn_scale(k.scale);
  set_band(attr, k.band);
  auto [o, stats] = g->sdpa(q, kt, v, attr);
  set_bshd(o, kO, k.batch, k.heads_q, k.q_len, k.head_dim, k.q_len);
  stats->set_output(true)
      .set_uid(kStats)
      .set_data_type(fe::DataType_t::FLOAT)
      .set_dim({k.batch, k.heads_q, k.q_len, 1})
      .set_stride({k.heads_q * k.q_len, k.q_len, 1, 1});
  return g;
}

/* The graph of the backward of an item: Q, O, dO, dQ at rows q_begin of
 * [b, q_rows, hq, d]; K, V, dK, dV at rows k_begin of [b, kv_rows, hkv, d];
 * stats the final LSE [b, hq, q_rows] at q_begin. */
std::shared_ptr<fe::graph::Graph> bwd_graph(const Key &k) {
  auto g = new_graph(k);
  auto q = bshd(*g, "Q", kQ, k.batch, k.heads_q, k.q_len, k.head_dim, k.q_rows);
  auto kt = bshd(*g, "K", kK, k.batch, k.heads_kv, k.k_len, k.head_dim, k.kv_rows);
  auto v = bshd(*g, "V", kV, k.batch, k.heads_kv, k.k_len, k.head_dim, k.kv_rows);
  auto o = bshd(*g, "O", kO, k.batch, k.heads_q, k.q_len, k.head_dim, k.q_rows);
  auto dout = bshd(*g, "dO", kDO, k.batch, k.heads_q, k.q_len, k.head_dim, k.q_rows);
  auto stats = g->tensor(fe::graph::Tensor_attributes()
                             .set_name("Stats")
                             .set_uid(kStats)
                             .set_data_type(fe::DataType_t::FLOAT)
                             .set_dim({k.batch, k.heads_q, k.q_len, 1})
                             .set_stride({k.heads_q * k.q_rows, k.q_rows, 1, 1}));
  auto attr = fe::graph::SDPA_backward_attributes().set_name("ringrt_bwd").set_attn_scale(k.scale);
  set_band(attr, k.band);
  auto grads = g->sdpa_backward(q, kt, v, o, dout, stats, attr);
  set_bshd(grads[0], kDQ, k.batch, k.heads_q, k.q_len, k.head_dim, k.q_rows);
  set_bshd(grads[1], kDK, k.batch, k.heads_kv, k.k_len, k.head_dim, k.kv_rows);
  set_bshd(grads[2], kDV, k.batch, k.heads_kv, k.k_len, k.head_dim, k.kv_rows);
  return g;
}

} // namespace

struct rrt_attn_cudnn {
  cudnnHandle_t handle = nullptr;
  std::map<Key, Entry> graphs;
  void *workspace = nullptr;
  int64_t workspace_bytes = 0;
};

namespace {

rrt_status say(char *msg, size_t msglen, rrt_status st, const std::string &what) {
  if (msg && msglen) std::snprintf(msg, msglen, "%s", what.c_str());
  return st;
}

/* The built graph of `key`, building it (and growing the workspace) at
 * its first use; RRT_ERR_UNSUPPORTED when cuDNN refuses the shape. */
rrt_status graph_for(rrt_attn_cudnn *c, const Key &key, Entry **out, char *msg, size_t msglen) {
  auto it = c->graphs.find(key);
  if (it == c->graphs.end()) {
    Entry e;
    auto g = key.bwd ? bwd_graph(key) : fwd_graph(key);
    fe::error_t err = g->validate();
    if (err.is_good()) err = g->build_operation_graph(c->handle);
    if (err.is_good()) err = g->create_execution_plans({fe::HeurMode_t::A});
    if (err.is_good()) err = g->check_support(c->handle);
    if (err.is_good()) err = g->build_plans(c->handle);
    int64_t ws = 0;
    if (err.is_good()) err = g->get_workspace_size(ws);
    if (err.is_good())
      e.graph = g;
    else
      e.why = "cuDNN has no " + std::string(key.bwd ? "backward" : "forward") +
              " attention engine for this item: " + err.get_message();
    if (e.graph && ws > c->workspace_bytes) {
      if (c->workspace) cudaFree(c->workspace);
      c->workspace = nullptr;
      c->workspace_bytes = 0;
      const cudaError_t ce = cudaMalloc(&c->workspace, (size_t)ws);
      if (ce != cudaSuccess)
        return say(msg, msglen, RRT_ERR_OUT_OF_MEMORY,
                   "cuDNN workspace of " + std::to_string(ws) +
                       " bytes: " + cudaGetErrorString(ce));
      c->workspace_bytes = ws;
    }
    it = c->graphs.emplace(key, std::move(e)).first;
  }
  if (!it->second.graph) return say(msg, msglen, RRT_ERR_UNSUPPORTED, it->second.why);
  *out = &it->second;
  return RRT_SUCCESS;
}

rrt_status run(rrt_attn_cudnn *c, void *stream, Entry *e, std::unordered_map<int64_t, void *> &pack,
               char *msg, size_t msglen) {
  cudnnStatus_t cs = fe::detail::set_stream(c->handle, (cudaStream_t)stream);
  if (cs != CUDNN_STATUS_SUCCESS)
    return say(msg, msglen, RRT_ERR_CUDA,
               std::string("cudnnSetStream: ") + fe::detail::get_error_string(cs));
  fe::error_t err = e->graph->execute(c->handle, pack, c->workspace);
  if (err.is_bad()) return say(msg, msglen, RRT_ERR_CUDA, "cuDNN attention: " + err.get_message());
  return RRT_SUCCESS;
}

Key key_of(int bwd, const rrt_attn_kargs *a, const rrt_attn_item *it, int64_t band) {
  return Key{bwd,       a->dtype,   a->heads_q, a->heads_kv, a->head_dim, a->batch,
             a->q_rows, a->kv_rows, it->q_len,  it->k_len,   band,        a->scale};
}

/* Element offset of local row `row` in a BSHD tensor with `heads` heads. */
int64_t row_off(int64_t row, int heads, int head_dim) { return row * heads * (int64_t)head_dim; }

char *at(const void *base, int64_t elems) { return (char *)base + elems * 2; /* bf16/f16 */ }

/* `library` (RINGRT_CUDNN_LIBRARY: a path or a name), else libcudnn.so.9. */
rrt_status open_cudnn(const char *library, char *msg, size_t msglen) {
  if (cudnn_frontend::cudnn_dlhandle) return RRT_SUCCESS;
  const char *name = library && *library ? library : "libcudnn.so.9";
  void *h = dlopen(name, RTLD_NOW | RTLD_GLOBAL);
  if (!h) {
    const char *why = dlerror();
    return say(msg, msglen, RRT_ERR_UNSUPPORTED,
               std::string("cannot open cuDNN (") + name + "): " + (why ? why : "unknown") +
                   "; set RINGRT_CUDNN_LIBRARY");
  }
  cudnn_frontend::cudnn_dlhandle = h;
  return RRT_SUCCESS;
}

} // namespace

extern "C" rrt_status rrt_attn_cudnn_create(const char *library, rrt_attn_cudnn **out, char *msg,
                                            size_t msglen) try {
  *out = nullptr;
  rrt_status st = open_cudnn(library, msg, msglen);
  if (st != RRT_SUCCESS) return st;
  auto c = std::make_unique<rrt_attn_cudnn>();
  const cudnnStatus_t cs = fe::detail::create_handle(&c->handle);
  if (cs != CUDNN_STATUS_SUCCESS)
    return say(msg, msglen, RRT_ERR_UNSUPPORTED,
               std::string("cudnnCreate: ") + fe::detail::get_error_string(cs));
  *out = c.release();
  return RRT_SUCCESS;
} catch (const std::exception &ex) {
  return say(msg, msglen, RRT_ERR_UNSUPPORTED, std::string("cuDNN: ") + ex.what());
}

extern "C" void rrt_attn_cudnn_destroy(rrt_attn_cudnn *c) {
  if (!c) return;
  c->graphs.clear();
  if (c->workspace) cudaFree(c->workspace);
  if (c->handle) fe::detail::destroy_handle(c->handle);
  delete c;
}

extern "C" rrt_status rrt_attn_cudnn_prepare(rrt_attn_cudnn *c, const rrt_attn_kargs *a, int bwd,
                                             const rrt_attn_item *it, int64_t band, char *msg,
                                             size_t msglen) try {
  if (it->q_len <= 0 || it->k_len <= 0) return RRT_SUCCESS;
  Entry *e = nullptr;
  return graph_for(c, key_of(bwd, a, it, band), &e, msg, msglen);
} catch (const std::exception &ex) {
  return say(msg, msglen, RRT_ERR_CUDA, std::string("cuDNN attention graph: ") + ex.what());
}

extern "C" rrt_status rrt_attn_cudnn_fwd(rrt_attn_cudnn *c, void *stream, const rrt_attn_kargs *a,
                                         const rrt_attn_item *it, int64_t band, void *o_part,
                                         float *lse_part, char *msg, size_t msglen) try {
  if (it->q_len <= 0 || it->k_len <= 0) return RRT_SUCCESS;
  Entry *e = nullptr;
  rrt_status st = graph_for(c, key_of(0, a, it, band), &e, msg, msglen);
  if (st != RRT_SUCCESS) return st;
  std::unordered_map<int64_t, void *> pack = {
      {kQ, at(a->q, row_off(it->q_begin, a->heads_q, a->head_dim))},
      {kK, at(a->k, row_off(it->k_begin, a->heads_kv, a->head_dim))},
      {kV, at(a->v, row_off(it->k_begin, a->heads_kv, a->head_dim))},
      {kO, o_part},
      {kStats, lse_part}};
  return run(c, stream, e, pack, msg, msglen);
} catch (const std::exception &ex) {
  return say(msg, msglen, RRT_ERR_CUDA, std::string("cuDNN attention forward: ") + ex.what());
}

extern "C" rrt_status rrt_attn_cudnn_bwd(rrt_attn_cudnn *c, void *stream, const rrt_attn_bargs *a,
                                         const void *o, const rrt_attn_item *it, int64_t band,
                                         void *grads, char *msg, size_t msglen) try {
  if (it->q_len <= 0 || it->k_len <= 0) return RRT_SUCCESS;
  const rrt_attn_kargs *f = &a->f;
  Entry *e = nullptr;
  rrt_status st = graph_for(c, key_of(1, f, it, band), &e, msg, msglen);
  if (st != RRT_SUCCESS) return st;
  const int64_t qo = row_off(it->q_begin, f->heads_q, f->head_dim);
  const int64_t ko = row_off(it->k_begin, f->heads_kv, f->head_dim);
  const int64_t q_elems = f->batch * row_off(f->q_rows, f->heads_q, f->head_dim);
  const int64_t kv_elems = f->batch * row_off(f->kv_rows, f->heads_kv, f->head_dim);
  std::unordered_map<int64_t, void *> pack = {{kQ, at(f->q, qo)},
                                              {kK, at(f->k, ko)},
                                              {kV, at(f->v, ko)},
                                              {kO, at(o, qo)},
                                              {kDO, at(a->dout, qo)},
                                              {kStats, (void *)(a->lse + it->q_begin)},
                                              {kDQ, at(grads, qo)},
                                              {kDK, at(grads, q_elems + ko)},
                                              {kDV, at(grads, q_elems + kv_elems + ko)}};
  return run(c, stream, e, pack, msg, msglen);
} catch (const std::exception &ex) {
  return say(msg, msglen, RRT_ERR_CUDA, std::string("cuDNN attention backward: ") + ex.what());
}
