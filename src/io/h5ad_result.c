/* --h5ad-out: the input .h5ad plus a metacell run (see h5ad_result.h). */
#include "io/h5ad_result.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/h5ad.h"
#include "io/h5ad_upgrade.h"
#include "io/h5ad_write.h"

#define CK(x)                                                                                      \
  do {                                                                                             \
    if ((st = (x)) != RRT_SUCCESS) goto done;                                                      \
  } while (0)

#define KEY "SEACell"

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Categories must be distinct for pandas: the archetypes' obs names are,
 * unless the obs index repeats a name. */
static rrt_status check_distinct(const char *path, const char **an, int64_t m, char *err,
                                 size_t errlen) {
  const char **c = malloc((size_t)(m + 1) * sizeof(char *));
  if (!c) return RRT_ERR_OUT_OF_MEMORY;
  memcpy(c, an, (size_t)m * sizeof(char *));
  qsort(c, (size_t)m, sizeof *c, cmp_str);
  rrt_status st = RRT_SUCCESS;
  for (int64_t j = 1; j < m && st == RRT_SUCCESS; j++)
    if (!strcmp(c[j - 1], c[j])) {
      snprintf(err, errlen,
               "%s: obs: the obs name '%s' is given to two archetype cells; make the names "
               "unique (adata.obs_names_make_unique())",
               path, c[j]);
      st = RRT_ERR_INVALID_ARG;
    }
  free(c);
  return st;
}

/* 1 when loc/NAME is a group (the current layout), 0 for a legacy table. */
static int is_group(hid_t loc, const char *name) {
  H5O_info_t oi;
  return H5Lexists(loc, name, H5P_DEFAULT) > 0 &&
         H5Oget_info_by_name(loc, name, &oi, H5P_DEFAULT) >= 0 && oi.type == H5O_TYPE_GROUP;
}

/* obs/column-order with KEY appended (once). The old order, an array
 * attribute, is read by H5Aread directly: h5_vlen_check.h checks datasets
 * and scalar attributes only (a known gap for a corrupt input's heap). */
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
      H5Tset_cset(t, H5Tget_cset(at)); /* HDF5 converts no vlen string across character sets */
      if (!old || H5Aread(a, t, old) < 0) n = 0;
    }
    H5Tclose(at), H5Sclose(sp), H5Aclose(a);
  }
  const char **cols = calloc(n + 1, sizeof(char *));
  int k = 0;
  for (hsize_t i = 0; cols && i < n; i++)
    if (old[i] && strcmp(old[i], KEY)) cols[k++] = old[i];
  if (cols) cols[k++] = KEY;
  char idx[256] = "_index";
  if (rrt_h5ad_attr_string(obs, "_index", idx, sizeof idx) != 0)
    snprintf(idx, sizeof idx, "_index");
  rrt_status st =
      cols ? rrt_h5w_dataframe(w, obs, idx, cols, k, err, errlen) : RRT_ERR_OUT_OF_MEMORY;
  for (hsize_t i = 0; old && i < n; i++)
    free(old[i]); /* HDF5 allocates vlen strings with malloc by default */
  free(old), free(cols);
  H5Tclose(t);
  return st;
}

/* Metacell indices as int32 categorical codes (-1 kept). */
static int32_t *codes_of(const int64_t *idx, int64_t count, int64_t stride) {
  int32_t *c = malloc((size_t)(count + 1) * sizeof(int32_t));
  for (int64_t i = 0; c && i < count; i++)
    c[i] = (int32_t)idx[i * stride];
  return c;
}

static rrt_status write_obs(rrt_h5w *w, const rrt_h5ad_result *r, const char **an, char *err,
                            size_t errlen) {
  int32_t *codes = codes_of(r->assign, r->n, 1);
  hid_t obs = -1;
  rrt_status st = codes ? RRT_SUCCESS : RRT_ERR_OUT_OF_MEMORY;
  CK(st);
  if ((obs = H5Gopen2(w->f, "obs", H5P_DEFAULT)) < 0) {
    st = RRT_ERR_IO;
    snprintf(err, errlen, "%s: obs: cannot open", w->path);
    goto done;
  }
  CK(rrt_h5w_unlink(w, obs, KEY, err, errlen));
  CK(rrt_h5w_categorical(w, obs, KEY, codes, r->n, an, r->m, err, errlen));
  CK(add_column(w, obs, err, errlen));
done:
  if (obs >= 0) H5Gclose(obs);
  free(codes);
  return st;
}

/* obsm/KEY_soft_labels (a dataframe of 5 categorical columns), _index, _weights. */
static rrt_status write_soft(rrt_h5w *w, const rrt_h5ad_result *r, const char **an, char *err,
                             size_t errlen) {
  static const char *const cols[5] = {KEY "_0", KEY "_1", KEY "_2", KEY "_3", KEY "_4"};
  static const char *const keys[3] = {KEY "_soft_labels", KEY "_soft_index", KEY "_soft_weights"};
  hid_t obsm = -1, df = -1;
  int32_t *codes = NULL;
  int64_t dims[2] = {r->n, 5};
  rrt_status st;
  CK(rrt_h5w_group(w, w->f, "obsm", "dict", "0.1.0", &obsm, err, errlen));
  for (int k = 0; k < 3; k++)
    CK(rrt_h5w_unlink(w, obsm, keys[k], err, errlen));
  CK(rrt_h5w_array(w, obsm, keys[1], H5T_NATIVE_INT64, 2, dims, r->top_i, err, errlen));
  CK(rrt_h5w_array(w, obsm, keys[2], H5T_NATIVE_DOUBLE, 2, dims, r->top_w, err, errlen));
  CK(rrt_h5w_group(w, obsm, keys[0], NULL, NULL, &df, err, errlen));
  CK(rrt_h5w_dataframe(w, df, "_index", cols, 5, err, errlen));
  CK(rrt_h5w_strings(w, df, "_index", r->names, r->n, err, errlen));
  for (int t = 0; t < 5; t++) {
    free(codes);
    if (!(codes = codes_of(r->top_i + t, r->n, 5))) {
      st = RRT_ERR_OUT_OF_MEMORY;
      goto done;
    }
    CK(rrt_h5w_categorical(w, df, cols[t], codes, r->n, an, r->m, err, errlen));
  }
done:
  if (df >= 0) H5Gclose(df);
  if (obsm >= 0) H5Gclose(obsm);
  free(codes);
  return st;
}

/* A scalar dataset with anndata's encoding of a str or number in uns. */
static rrt_status scalar(rrt_h5w *w, hid_t loc, const char *name, hid_t t, const void *v,
                         const char *enc, char *err, size_t errlen) {
  hid_t sp = H5Screate(H5S_SCALAR);
  hid_t ds = H5Dcreate2(loc, name, t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  int ok = ds >= 0 && H5Dwrite(ds, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0;
  rrt_status st = ok ? rrt_h5w_encoding(w, ds, enc, "0.2.0", err, errlen) : RRT_ERR_IO;
  if (!ok) snprintf(err, errlen, "%s: %s: cannot write", w->path, name);
  if (ds >= 0) H5Dclose(ds);
  H5Sclose(sp);
  return st;
}

static rrt_status scalar_string(rrt_h5w *w, hid_t loc, const char *name, const char *v, char *err,
                                size_t errlen) {
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8);
  rrt_status st = scalar(w, loc, name, t, &v, "string", err, errlen);
  H5Tclose(t);
  return st;
}

static rrt_status write_params(rrt_h5w *w, hid_t loc, const rrt_h5ad_result *r, char *err,
                               size_t errlen) {
  hid_t g;
  rrt_status st = rrt_h5w_group(w, loc, "params", "dict", "0.1.0", &g, err, errlen);
  for (int k = 0; st == RRT_SUCCESS && k < r->nparams; k++) {
    const rrt_h5ad_param *p = &r->params[k];
    if (p->str)
      st = scalar_string(w, g, p->name, p->str, err, errlen);
    else if (p->is_float)
      st = scalar(w, g, p->name, H5T_NATIVE_DOUBLE, &p->f, "numeric-scalar", err, errlen);
    else
      st = scalar(w, g, p->name, H5T_NATIVE_INT64, &p->i, "numeric-scalar", err, errlen);
  }
  if (g >= 0) H5Gclose(g);
  return st;
}

static rrt_status write_uns(rrt_h5w *w, const rrt_h5ad_result *r, const char **an, char *err,
                            size_t errlen) {
  hid_t uns = -1, g = -1, bt = rrt_h5w_bool_type();
  int64_t nr = r->nrss, it = r->iterations;
  int8_t conv = (int8_t)(r->converged != 0);
  rrt_status st;
  CK(rrt_h5w_group(w, w->f, "uns", "dict", "0.1.0", &uns, err, errlen));
  CK(rrt_h5w_unlink(w, uns, KEY, err, errlen));
  CK(rrt_h5w_group(w, uns, KEY, "dict", "0.1.0", &g, err, errlen));
  CK(write_params(w, g, r, err, errlen));
  CK(rrt_h5w_array(w, g, "archetypes", H5T_NATIVE_INT64, 1, &r->m, r->archetypes, err, errlen));
  CK(rrt_h5w_strings(w, g, "archetype_names", an, r->m, err, errlen));
  CK(rrt_h5w_array(w, g, "rss", H5T_NATIVE_DOUBLE, 1, &nr, r->rss, err, errlen));
  CK(scalar(w, g, "iterations", H5T_NATIVE_INT64, &it, "numeric-scalar", err, errlen));
  CK(scalar(w, g, "converged", bt, &conv, "numeric-scalar", err, errlen));
  CK(rrt_h5w_array(w, g, "compactness", H5T_NATIVE_DOUBLE, 1, &r->m, r->comp, err, errlen));
  CK(rrt_h5w_array(w, g, "separation", H5T_NATIVE_DOUBLE, 1, &r->m, r->sep, err, errlen));
done:
  if (g >= 0) H5Gclose(g);
  if (uns >= 0) H5Gclose(uns);
  H5Tclose(bt);
  return st;
}

rrt_status rrt_h5ad_write_result(const char *input, const char *path, int force,
                                 const rrt_h5ad_result *r, char *err, size_t errlen) {
  rrt_h5w w;
  /* the current layout is copied whole and extended; a legacy one is
   * rewritten (h5ad_upgrade.c), as scanpy reads the old and writes the new */
  int legacy = rrt_h5ad_check_current_layout(input, err, errlen) != RRT_SUCCESS;
  rrt_status st = legacy ? rrt_h5w_create(&w, path, force, err, errlen)
                         : rrt_h5w_create_copy(&w, input, path, force, err, errlen);
  if (st != RRT_SUCCESS) return st;
  if (legacy) st = rrt_h5ad_upgrade_into(&w, input, err, errlen);
  if (st == RRT_SUCCESS && !is_group(w.f, "obs")) {
    snprintf(err, errlen, "%s: obs: not a dataframe group", input);
    st = RRT_ERR_INVALID_ARG;
  }
  const char **an = malloc((size_t)(r->m + 1) * sizeof(char *));
  if (st == RRT_SUCCESS && !an) st = RRT_ERR_OUT_OF_MEMORY;
  for (int64_t j = 0; an && j < r->m; j++)
    an[j] = r->names[r->archetypes[j]];
  if (st == RRT_SUCCESS) st = check_distinct(input, an, r->m, err, errlen);
  if (st == RRT_SUCCESS) st = write_obs(&w, r, an, err, errlen);
  if (st == RRT_SUCCESS) st = write_soft(&w, r, an, err, errlen);
  if (st == RRT_SUCCESS) st = write_uns(&w, r, an, err, errlen);
  free(an);
  if (st == RRT_ERR_OUT_OF_MEMORY) snprintf(err, errlen, "%s: out of memory", path);
  if (st != RRT_SUCCESS) {
    rrt_h5w_discard(&w);
    return st;
  }
  return rrt_h5w_commit(&w, err, errlen);
}
