/* --summary-out: a metacell x gene AnnData written a block of rows at a
 * time by one process (see h5ad_result.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/h5ad_result.h"
#include "io/h5ad_write.h"

#define CK(x)                                                                                      \
  do {                                                                                             \
    if ((st = (x)) != RRT_SUCCESS) goto done;                                                      \
  } while (0)

struct rrt_h5ad_summary {
  rrt_h5w w;
  int sparse;
  int64_t rows, cols, done_rows, nnz;
  hid_t x, data, indices; /* X (dense) or X/data, X/indices */
  int64_t *indptr;        /* rows + 1 (sparse) */
};

static rrt_status write_obs(rrt_h5w *w, int64_t rows, const char *const *names,
                            const rrt_h5ad_column *obs, int nobs, char *err, size_t errlen) {
  hid_t g = -1;
  const char **cols = malloc((size_t)(nobs + 1) * sizeof(char *));
  rrt_status st = cols ? RRT_SUCCESS : RRT_ERR_OUT_OF_MEMORY;
  CK(st);
  for (int c = 0; c < nobs; c++)
    cols[c] = obs[c].name;
  CK(rrt_h5w_group(w, w->f, "obs", NULL, NULL, &g, err, errlen));
  CK(rrt_h5w_dataframe(w, g, "_index", cols, nobs, err, errlen));
  CK(rrt_h5w_strings(w, g, "_index", names, rows, err, errlen));
  for (int c = 0; c < nobs; c++) {
    const rrt_h5ad_column *o = &obs[c];
    if (o->codes)
      st = rrt_h5w_categorical(w, g, o->name, o->codes, rows, o->cats, o->ncat, err, errlen);
    else
      st = rrt_h5w_array(w, g, o->name, o->f64 ? H5T_NATIVE_DOUBLE : H5T_NATIVE_INT64, 1, &rows,
                         o->f64 ? (const void *)o->f64 : (const void *)o->i64, err, errlen);
    CK(st);
  }
done:
  if (g >= 0) H5Gclose(g);
  free(cols);
  return st;
}

/* var from the input (H5Ocopy keeps its encoding attributes) and the
 * empty containers anndata expects. */
static rrt_status copy_var(rrt_h5w *w, const char *input, const char *var_path, char *err,
                           size_t errlen) {
  hid_t in = H5Fopen(input, H5F_ACC_RDONLY, H5P_DEFAULT);
  H5O_info_t oi;
  int ok = in >= 0 && H5Lexists(in, var_path, H5P_DEFAULT) > 0 &&
           H5Oget_info_by_name(in, var_path, &oi, H5P_DEFAULT) >= 0 && oi.type == H5O_TYPE_GROUP;
  int copied = ok && H5Ocopy(in, var_path, w->f, "var", H5P_DEFAULT, H5P_DEFAULT) >= 0;
  if (in >= 0) H5Fclose(in);
  if (!copied) {
    snprintf(err, errlen, "%s: %s: %s", input, var_path,
             ok ? "cannot copy it" : "not a var dataframe group (legacy anndata < 0.7 layout?)");
    return RRT_ERR_INVALID_ARG;
  }
  static const char *const dicts[] = {"obsm", "varm", "obsp", "varp", "layers", "uns"};
  for (int k = 0; k < 6; k++) {
    hid_t g;
    rrt_status st = rrt_h5w_group(w, w->f, dicts[k], "dict", "0.1.0", &g, err, errlen);
    if (st != RRT_SUCCESS) return st;
    H5Gclose(g);
  }
  return RRT_SUCCESS;
}

static rrt_status open_x(rrt_h5ad_summary *s, char *err, size_t errlen) {
  rrt_h5w *w = &s->w;
  if (!s->sparse) {
    rrt_status st = rrt_h5w_extendible(w, w->f, "X", H5T_IEEE_F64LE, s->cols, &s->x, err, errlen);
    return st == RRT_SUCCESS ? rrt_h5w_encoding(w, s->x, "array", "0.2.0", err, errlen) : st;
  }
  rrt_status st = rrt_h5w_group(w, w->f, "X", "csr_matrix", "0.1.0", &s->x, err, errlen);
  if (st != RRT_SUCCESS) return st;
  hsize_t two = 2;
  int64_t shape[2] = {s->rows, s->cols};
  hid_t sp = H5Screate_simple(1, &two, NULL);
  hid_t a = H5Acreate2(s->x, "shape", H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
  int ok = a >= 0 && H5Awrite(a, H5T_NATIVE_INT64, shape) >= 0;
  if (a >= 0) H5Aclose(a);
  H5Sclose(sp);
  if (!ok) {
    snprintf(err, errlen, "%s: X: cannot write its shape", w->path);
    return RRT_ERR_IO;
  }
  st = rrt_h5w_extendible(w, s->x, "data", H5T_IEEE_F64LE, 0, &s->data, err, errlen);
  if (st == RRT_SUCCESS)
    st = rrt_h5w_extendible(w, s->x, "indices", H5T_STD_I32LE, 0, &s->indices, err, errlen);
  s->indptr = calloc((size_t)s->rows + 1, sizeof(int64_t));
  return st != RRT_SUCCESS ? st : s->indptr ? RRT_SUCCESS : RRT_ERR_OUT_OF_MEMORY;
}

rrt_status rrt_h5ad_summary_begin(const char *input, const char *var_path, const char *path,
                                  int force, int sparse, int64_t rows, int64_t cols,
                                  const char *const *names, const rrt_h5ad_column *obs, int nobs,
                                  rrt_h5ad_summary **out, char *err, size_t errlen) {
  *out = NULL;
  rrt_h5ad_summary *s = calloc(1, sizeof *s);
  if (!s) return RRT_ERR_OUT_OF_MEMORY;
  s->sparse = sparse, s->rows = rows, s->cols = cols;
  s->x = s->data = s->indices = -1;
  rrt_status st = rrt_h5w_create(&s->w, path, force, err, errlen);
  if (st != RRT_SUCCESS) {
    free(s);
    return st;
  }
  CK(copy_var(&s->w, input, var_path, err, errlen));
  CK(write_obs(&s->w, rows, names, obs, nobs, err, errlen));
  CK(open_x(s, err, errlen));
  *out = s;
  return RRT_SUCCESS;
done:
  if (st == RRT_ERR_OUT_OF_MEMORY) snprintf(err, errlen, "%s: out of memory", path);
  rrt_h5ad_summary_abort(s);
  return st;
}

rrt_status rrt_h5ad_summary_dense(rrt_h5ad_summary *s, int64_t rows, const double *val, char *err,
                                  size_t errlen) {
  s->done_rows += rows;
  return rrt_h5w_append(&s->w, s->x, "X", H5T_NATIVE_DOUBLE, rows, val, err, errlen);
}

rrt_status rrt_h5ad_summary_csr(rrt_h5ad_summary *s, int64_t rows, const int64_t *ptr,
                                const int32_t *col, const double *val, char *err, size_t errlen) {
  if (s->done_rows + rows > s->rows) {
    snprintf(err, errlen, "%s: X: more rows than the %lld declared", s->w.path, (long long)s->rows);
    return RRT_ERR_INVALID_ARG;
  }
  for (int64_t i = 0; i < rows; i++)
    s->indptr[s->done_rows + i + 1] = s->nnz + ptr[i + 1];
  s->done_rows += rows, s->nnz += ptr[rows];
  rrt_status st =
      rrt_h5w_append(&s->w, s->data, "X/data", H5T_NATIVE_DOUBLE, ptr[rows], val, err, errlen);
  return st == RRT_SUCCESS ? rrt_h5w_append(&s->w, s->indices, "X/indices", H5T_NATIVE_INT32,
                                            ptr[rows], col, err, errlen)
                           : st;
}

static void close_x(rrt_h5ad_summary *s) {
  if (s->data >= 0) H5Dclose(s->data);
  if (s->indices >= 0) H5Dclose(s->indices);
  if (s->x >= 0) H5Oclose(s->x);
  s->x = s->data = s->indices = -1;
}

rrt_status rrt_h5ad_summary_end(rrt_h5ad_summary *s, char *err, size_t errlen) {
  rrt_status st = RRT_SUCCESS;
  if (s->done_rows != s->rows) {
    snprintf(err, errlen, "%s: X: %lld rows written of %lld", s->w.path, (long long)s->done_rows,
             (long long)s->rows);
    st = RRT_ERR_INVALID_ARG;
  }
  int64_t np1 = s->rows + 1;
  if (st == RRT_SUCCESS && s->sparse)
    st = rrt_h5w_array(&s->w, s->x, "indptr", H5T_NATIVE_INT64, 1, &np1, s->indptr, err, errlen);
  close_x(s);
  if (st == RRT_SUCCESS) st = rrt_h5w_commit(&s->w, err, errlen);
  if (st != RRT_SUCCESS) rrt_h5w_discard(&s->w);
  free(s->indptr), free(s);
  return st;
}

void rrt_h5ad_summary_abort(rrt_h5ad_summary *s) {
  if (!s) return;
  close_x(s);
  rrt_h5w_discard(&s->w);
  free(s->indptr), free(s);
}
