/* --h5ad-out: the input .h5ad plus a metacell run (see h5ad_result.h). */
#include "io/h5ad_result.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/h5ad_write.h"

#define CK(x)                                                                                      \
  do {                                                                                             \
    if ((st = (x)) != RRT_SUCCESS) goto done;                                                      \
  } while (0)

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* 1 when loc/NAME is a group (the current layout), 0 for a legacy table. */
static int is_group(hid_t loc, const char *name) {
  H5O_info_t oi;
  return H5Lexists(loc, name, H5P_DEFAULT) > 0 &&
         H5Oget_info_by_name(loc, name, &oi, H5P_DEFAULT) >= 0 && oi.type == H5O_TYPE_GROUP;
}

/* The labels of obs/SEACell as pandas makes them: the sorted distinct names
 * of the metacells in use; codes[i] their position (-1: no metacell). */
static rrt_status seacell_codes(const rrt_h5ad_result *r, int32_t *codes, const char **cats,
                                int64_t *ncat) {
  char *used = calloc((size_t)r->m + 1, 1);
  if (!used) return RRT_ERR_OUT_OF_MEMORY;
  for (int64_t i = 0; i < r->n; i++)
    if (r->assign[i] >= 0) used[r->assign[i]] = 1;
  int64_t k = 0;
  for (int64_t j = 0; j < r->m; j++)
    if (used[j]) cats[k++] = r->names[r->archetypes[j]];
  qsort(cats, (size_t)k, sizeof *cats, cmp_str);
  int64_t u = 0; /* distinct names (two archetypes may share one in an odd file) */
  for (int64_t t = 0; t < k; t++)
    if (!u || strcmp(cats[u - 1], cats[t])) cats[u++] = cats[t];
  *ncat = u;
  for (int64_t i = 0; i < r->n; i++) {
    codes[i] = -1;
    if (r->assign[i] < 0) continue;
    const char *key = r->names[r->archetypes[r->assign[i]]];
    const char **hit = bsearch(&key, cats, (size_t)u, sizeof *cats, cmp_str);
    codes[i] = (int32_t)(hit - cats);
  }
  free(used);
  return RRT_SUCCESS;
}

/* obs/column-order with "SEACell" appended (once). */
static rrt_status add_column(rrt_h5w *w, hid_t obs, char *err, size_t errlen) {
  char **old = NULL;
  hsize_t n = 0;
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, H5T_VARIABLE);
  if (H5Aexists(obs, "column-order") > 0) {
    hid_t a = H5Aopen(obs, "column-order", H5P_DEFAULT), sp = H5Aget_space(a), at = H5Aget_type(a);
    if (H5Tget_class(at) == H5T_STRING && H5Sget_simple_extent_ndims(sp) == 1) {
      H5Sget_simple_extent_dims(sp, &n, NULL);
      old = calloc(n + 1, sizeof(char *));
      if (!old || H5Aread(a, t, old) < 0) n = 0;
    }
    H5Tclose(at), H5Sclose(sp), H5Aclose(a);
  }
  const char **cols = calloc(n + 1, sizeof(char *));
  int k = 0;
  for (hsize_t i = 0; cols && i < n; i++)
    if (old[i] && strcmp(old[i], "SEACell")) cols[k++] = old[i];
  if (cols) cols[k++] = "SEACell";
  char idx[256] = "_index";
  hid_t ia = H5Aexists(obs, "_index") > 0 ? H5Aopen(obs, "_index", H5P_DEFAULT) : -1;
  char *iv = NULL;
  if (ia >= 0 && H5Aread(ia, t, &iv) >= 0 && iv) snprintf(idx, sizeof idx, "%s", iv);
  if (ia >= 0) H5Aclose(ia);
  free(iv);
  rrt_status st =
      cols ? rrt_h5w_dataframe(w, obs, idx, cols, k, err, errlen) : RRT_ERR_OUT_OF_MEMORY;
  for (hsize_t i = 0; old && i < n; i++)
    free(old[i]); /* HDF5 allocates vlen strings with malloc by default */
  free(old), free(cols);
  H5Tclose(t);
  return st;
}

static rrt_status write_obs(rrt_h5w *w, const rrt_h5ad_result *r, char *err, size_t errlen) {
  int32_t *codes = malloc((size_t)(r->n + 1) * sizeof(int32_t));
  const char **cats = malloc((size_t)(r->m + 1) * sizeof(char *));
  int64_t ncat = 0;
  hid_t obs = -1;
  rrt_status st = codes && cats ? RRT_SUCCESS : RRT_ERR_OUT_OF_MEMORY;
  CK(st);
  CK(seacell_codes(r, codes, cats, &ncat));
  if ((obs = H5Gopen2(w->f, "obs", H5P_DEFAULT)) < 0) {
    st = RRT_ERR_IO;
    snprintf(err, errlen, "%s: obs: cannot open", w->path);
    goto done;
  }
  CK(rrt_h5w_unlink(w, obs, "SEACell", err, errlen));
  CK(rrt_h5w_categorical(w, obs, "SEACell", codes, r->n, cats, ncat, err, errlen));
  CK(add_column(w, obs, err, errlen));
done:
  if (obs >= 0) H5Gclose(obs);
  free(codes), free(cats);
  return st;
}

/* obsm/SEACell_soft_labels (a dataframe of 5 name columns) and _weights. */
static rrt_status write_soft(rrt_h5w *w, const rrt_h5ad_result *r, char *err, size_t errlen) {
  hid_t obsm = -1, df = -1;
  const char **lab = malloc((size_t)(r->n + 1) * sizeof(char *));
  rrt_status st = lab ? RRT_SUCCESS : RRT_ERR_OUT_OF_MEMORY;
  CK(st);
  CK(rrt_h5w_group(w, w->f, "obsm", "dict", "0.1.0", &obsm, err, errlen));
  CK(rrt_h5w_unlink(w, obsm, "SEACell_soft_weights", err, errlen));
  CK(rrt_h5w_unlink(w, obsm, "SEACell_soft_labels", err, errlen));
  int64_t dims[2] = {r->n, 5};
  CK(rrt_h5w_array(w, obsm, "SEACell_soft_weights", H5T_NATIVE_DOUBLE, 2, dims, r->top_w, err,
                   errlen));
  CK(rrt_h5w_group(w, obsm, "SEACell_soft_labels", NULL, NULL, &df, err, errlen));
  static const char *const cols[5] = {"0", "1", "2", "3", "4"};
  CK(rrt_h5w_dataframe(w, df, "_index", cols, 5, err, errlen));
  CK(rrt_h5w_strings(w, df, "_index", r->names, r->n, err, errlen));
  for (int t = 0; t < 5; t++) {
    for (int64_t i = 0; i < r->n; i++) {
      int64_t j = r->top_i[i * 5 + t];
      lab[i] = j >= 0 ? r->names[r->archetypes[j]] : "";
    }
    CK(rrt_h5w_strings(w, df, cols[t], lab, r->n, err, errlen));
  }
done:
  if (df >= 0) H5Gclose(df);
  if (obsm >= 0) H5Gclose(obsm);
  free(lab);
  return st;
}

/* A scalar "string" dataset (anndata's encoding of a str in uns). */
static rrt_status scalar_string(rrt_h5w *w, hid_t loc, const char *name, const char *v, char *err,
                                size_t errlen) {
  hid_t t = H5Tcopy(H5T_C_S1), sp = H5Screate(H5S_SCALAR);
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8);
  hid_t ds = H5Dcreate2(loc, name, t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  int ok = ds >= 0 && H5Dwrite(ds, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v) >= 0;
  rrt_status st = ok ? rrt_h5w_encoding(w, ds, "string", "0.2.0", err, errlen) : RRT_ERR_IO;
  if (!ok) snprintf(err, errlen, "%s: %s: cannot write", w->path, name);
  if (ds >= 0) H5Dclose(ds);
  H5Sclose(sp), H5Tclose(t);
  return st;
}

static rrt_status write_uns(rrt_h5w *w, const rrt_h5ad_result *r, char *err, size_t errlen) {
  hid_t uns = -1, g = -1;
  const char **an = malloc((size_t)(r->m + 1) * sizeof(char *));
  rrt_status st = an ? RRT_SUCCESS : RRT_ERR_OUT_OF_MEMORY;
  CK(st);
  for (int64_t j = 0; j < r->m; j++)
    an[j] = r->names[r->archetypes[j]];
  CK(rrt_h5w_group(w, w->f, "uns", "dict", "0.1.0", &uns, err, errlen));
  CK(rrt_h5w_unlink(w, uns, "SEACells", err, errlen));
  CK(rrt_h5w_group(w, uns, "SEACells", "dict", "0.1.0", &g, err, errlen));
  CK(rrt_h5w_array(w, g, "archetypes", H5T_NATIVE_INT64, 1, &r->m, r->archetypes, err, errlen));
  CK(rrt_h5w_strings(w, g, "archetype_names", an, r->m, err, errlen));
  int64_t nr = r->nrss;
  CK(rrt_h5w_array(w, g, "RSS_iters", H5T_NATIVE_DOUBLE, 1, &nr, r->rss, err, errlen));
  CK(scalar_string(w, g, "obsm_key", r->obsm_key, err, errlen));
done:
  if (g >= 0) H5Gclose(g);
  if (uns >= 0) H5Gclose(uns);
  free(an);
  return st;
}

rrt_status rrt_h5ad_write_result(const char *input, const char *path, int force,
                                 const rrt_h5ad_result *r, char *err, size_t errlen) {
  rrt_h5w w;
  rrt_status st = rrt_h5w_create_copy(&w, input, path, force, err, errlen);
  if (st != RRT_SUCCESS) return st;
  if (!is_group(w.f, "obs")) {
    snprintf(err, errlen,
             "%s: obs: the input is in the legacy layout (anndata < 0.7), which --h5ad-out does "
             "not extend; rewrite it first: anndata.read_h5ad(p).write_h5ad(p2)",
             input);
    st = RRT_ERR_INVALID_ARG;
  }
  if (st == RRT_SUCCESS) st = write_obs(&w, r, err, errlen);
  if (st == RRT_SUCCESS) st = write_soft(&w, r, err, errlen);
  if (st == RRT_SUCCESS) st = write_uns(&w, r, err, errlen);
  if (st == RRT_ERR_OUT_OF_MEMORY) snprintf(err, errlen, "%s: out of memory", path);
  if (st != RRT_SUCCESS) {
    rrt_h5w_discard(&w);
    return st;
  }
  return rrt_h5w_commit(&w, err, errlen);
}
