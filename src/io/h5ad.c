/* .h5ad reading through the HDF5 C library (see h5ad.h for the layout). */
#include "io/h5ad.h"

#include <errno.h>
#include <hdf5.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/h5_vlen_check.h"
#include "io/h5ad_legacy.h"
#include "io/limits.h"

/* HDF5 prints its whole error stack by default; our messages say what went
 * wrong in the user's terms, so printing is switched off for each call and
 * the previous handler restored afterwards. */
typedef struct h5_quiet {
  H5E_auto2_t func;
  void *data;
} h5_quiet;

static void quiet_begin(h5_quiet *q) {
  H5Eget_auto2(H5E_DEFAULT, &q->func, &q->data);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

static void quiet_end(const h5_quiet *q) { H5Eset_auto2(H5E_DEFAULT, q->func, q->data); }

static rrt_status fail(rrt_status st, char *err, size_t errlen, const char *path, const char *key,
                       const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (err && errlen && key && *key)
    snprintf(err, errlen, "%s: %s: %s", path, key, msg);
  else if (err && errlen)
    snprintf(err, errlen, "%s: %s", path, msg);
  return st;
}

/* A zarr store (a folder, or a zipped one) is AnnData too, in a format this
 * reader does not have: say so and how to convert, rather than "not HDF5". */
static int is_zarr(const char *path) {
  size_t n = strlen(path);
  while (n > 1 && path[n - 1] == '/')
    n--;
  return (n >= 5 && !strncmp(path + n - 5, ".zarr", 5)) ||
         (n >= 9 && !strncmp(path + n - 9, ".zarr.zip", 9));
}

static hid_t open_file(const char *path, char *err, size_t errlen) {
  if (is_zarr(path)) {
    fail(RRT_ERR_IO, err, errlen, path, "",
         "a zarr store, which is not read here: convert it with "
         "anndata.read_zarr(path).write_h5ad('out.h5ad')");
    return -1;
  }
  FILE *probe = fopen(path, "rb"); /* "no such file" before "not HDF5" */
  if (!probe) {
    fail(RRT_ERR_IO, err, errlen, path, "", "cannot open: %s", strerror(errno));
    return -1;
  }
  fclose(probe);
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) fail(RRT_ERR_IO, err, errlen, path, "", "cannot open as an HDF5 file");
  return f;
}

/* obsm/KEY unless KEY already names a dataset path. */
static void matrix_path(const char *key, char *out, size_t len) {
  if (strchr(key, '/'))
    snprintf(out, len, "%s", key);
  else
    snprintf(out, len, "obsm/%s", key);
}

static int link_exists(hid_t f, const char *p) {
  /* H5Lexists fails on a missing intermediate group: walk the components. */
  char buf[512];
  snprintf(buf, sizeof buf, "%s", p);
  for (char *s = buf; *s; s++) {
    if (*s == '/' && s != buf) {
      *s = 0;
      if (H5Lexists(f, buf, H5P_DEFAULT) <= 0) return 0;
      *s = '/';
    }
  }
  return H5Lexists(f, buf, H5P_DEFAULT) > 0;
}

/* The names in group G, comma separated (or "nothing"), for messages. */
static void group_members(hid_t f, const char *g, char *out, size_t len) {
  snprintf(out, len, "nothing");
  hid_t grp = link_exists(f, g) ? H5Gopen2(f, g, H5P_DEFAULT) : -1;
  if (grp < 0) return;
  H5G_info_t info;
  size_t used = 0;
  if (H5Gget_info(grp, &info) >= 0)
    for (hsize_t i = 0; i < info.nlinks && used + 1 < len; i++) {
      char name[128];
      if (H5Lget_name_by_idx(grp, ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof name,
                             H5P_DEFAULT) < 0)
        break;
      int k = snprintf(out + used, len - used, "%s%s", i ? ", " : "", name);
      used += k > 0 ? (size_t)k : 0;
    }
  H5Gclose(grp);
}

/* Why a dataset's read failed when its filters are to blame: a filter this
 * HDF5 library lacks (h5py's lzf is the usual one). 0 when none is. */
static int missing_filter(hid_t ds, char *why, size_t len) {
  hid_t dcpl = H5Dget_create_plist(ds);
  int found = 0;
  for (int i = 0, nf = dcpl >= 0 ? H5Pget_nfilters(dcpl) : 0; i < nf && !found; i++) {
    unsigned flags = 0, cd[8];
    size_t ncd = 8;
    char name[64] = "";
    H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)i, &flags, &ncd, cd, sizeof name, name, NULL);
    if (id >= 0 && H5Zfilter_avail(id) <= 0) {
      snprintf(why, len,
               "compressed with HDF5 filter %d (%s), which this HDF5 library does not have; "
               "rewrite it with gzip, e.g. adata.write_h5ad(path, compression='gzip')",
               (int)id,
               id == 32000 ? "lzf"
               : name[0]   ? name
                           : "unknown");
      found = 1;
    }
  }
  if (dcpl >= 0) H5Pclose(dcpl);
  return found;
}

/* A key of a legacy (anndata < 0.7) obsm table: a plain name, and obsm a
 * compound dataset rather than a group. */
static int legacy_obsm(hid_t f, const char *key) {
  return !strchr(key, '/') && rrt_h5ad_legacy_table(f, "obsm");
}

/* Open a 2-D float dataset; returns the dataset id and its shape. */
static rrt_status open_matrix(hid_t f, const char *path, const char *key, hid_t *ds_out,
                              int64_t *rows, int64_t *cols, char *err, size_t errlen) {
  char p[512];
  matrix_path(key, p, sizeof p);
  if (!link_exists(f, p) && link_exists(f, "matrix/barcodes"))
    return fail(RRT_ERR_INVALID_ARG, err, errlen, path, "",
                "a 10x Genomics count matrix (.h5), not an AnnData with coordinates: read it "
                "with scanpy (sc.read_10x_h5), compute a PCA (sc.pp.pca) and write an .h5ad");
  if (!link_exists(f, p) && !link_exists(f, "obs") && !link_exists(f, "obsm"))
    return fail(RRT_ERR_INVALID_ARG, err, errlen, path, "",
                "an HDF5 file but not an AnnData (no obs, no obsm): give an .h5ad with the "
                "PCA in obsm (scanpy: sc.pp.pca, adata.write_h5ad)");
  if (!link_exists(f, p)) {
    char have[400] = "";
    if (!strchr(key, '/')) group_members(f, "obsm", have, sizeof have);
    return fail(RRT_ERR_INVALID_ARG, err, errlen, path, p, "no such dataset%s%s%s",
                strchr(key, '/') ? "" : " (see --obsm; this file's obsm has: ", have,
                strchr(key, '/') ? "" : ")");
  }
  hid_t ds = H5Dopen2(f, p, H5P_DEFAULT);
  if (ds < 0) return fail(RRT_ERR_INVALID_ARG, err, errlen, path, p, "not a dataset");
  hid_t sp = H5Dget_space(ds);
  hid_t ty = H5Dget_type(ds);
  int nd = H5Sget_simple_extent_ndims(sp);
  hsize_t dims[2] = {0, 0};
  rrt_status st = RRT_SUCCESS;
  if (nd != 2) {
    st = fail(RRT_ERR_INVALID_ARG, err, errlen, path, p, "expected a 2-D matrix, found %d-D", nd);
  } else if (H5Tget_class(ty) != H5T_FLOAT && H5Tget_class(ty) != H5T_INTEGER) {
    st = fail(RRT_ERR_INVALID_ARG, err, errlen, path, p,
              "expected a dense numeric matrix (a sparse matrix is stored as a group)");
  } else {
    H5Sget_simple_extent_dims(sp, dims, NULL);
  }
  H5Tclose(ty);
  H5Sclose(sp);
  if (st != RRT_SUCCESS) {
    H5Dclose(ds);
    return st;
  }
  *ds_out = ds;
  *rows = (int64_t)dims[0];
  *cols = (int64_t)dims[1];
  return RRT_SUCCESS;
}

rrt_status rrt_h5ad_check_current_layout(const char *path, char *err, size_t errlen) {
  h5_quiet q;
  quiet_begin(&q);
  rrt_status st = RRT_SUCCESS;
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f >= 0 && rrt_h5ad_legacy_table(f, "obs"))
    st = fail(RRT_ERR_INVALID_ARG, err, errlen, path, "obs",
              "the legacy layout (anndata < 0.7), whose tables are not copied as they are; "
              "rewrite it first: anndata.read_h5ad(p).write_h5ad(p2)");
  if (f >= 0) H5Fclose(f);
  quiet_end(&q);
  return st;
}

rrt_status rrt_h5ad_matrix_shape(const char *path, const char *key, int64_t *rows, int64_t *cols,
                                 char *err, size_t errlen) {
  h5_quiet q;
  quiet_begin(&q);
  rrt_status st = RRT_ERR_IO;
  hid_t f = open_file(path, err, errlen);
  if (f >= 0) {
    hid_t ds = -1;
    if (legacy_obsm(f, key)) {
      st = rrt_h5ad_legacy_shape(f, path, "obsm", key, rows, cols, err, errlen);
    } else {
      st = open_matrix(f, path, key, &ds, rows, cols, err, errlen);
      if (st == RRT_SUCCESS) H5Dclose(ds);
    }
    H5Fclose(f);
  }
  quiet_end(&q);
  return st;
}

rrt_status rrt_h5ad_read_matrix_rows(const char *path, const char *key, int64_t row0, int64_t nrows,
                                     double **out, int64_t *cols, char *err, size_t errlen) {
  h5_quiet q;
  quiet_begin(&q);
  *out = NULL;
  rrt_status st = RRT_ERR_IO;
  hid_t f = open_file(path, err, errlen), ds = -1, fsp = -1, msp = -1;
  int64_t rows = 0, c = 0;
  double *buf = NULL;
  if (f < 0) goto done;
  int legacy = legacy_obsm(f, key);
  if (legacy)
    st = rrt_h5ad_legacy_shape(f, path, "obsm", key, &rows, &c, err, errlen);
  else
    st = open_matrix(f, path, key, &ds, &rows, &c, err, errlen);
  if (st != RRT_SUCCESS) goto done;
  if (row0 < 0 || nrows < 0 || row0 + nrows > rows) {
    st = fail(RRT_ERR_INVALID_ARG, err, errlen, path, key, "rows [%lld, %lld) outside 0..%lld",
              (long long)row0, (long long)(row0 + nrows), (long long)rows);
    goto done;
  }
  if (!rrt_io_claim_fits(rrt_io_bytes_of((uint64_t)nrows, (size_t)c), sizeof(double))) {
    st = fail(RRT_ERR_IO, err, errlen, path, key,
              "%lld rows x %lld columns of float64 need more memory than this machine has",
              (long long)nrows, (long long)c);
    goto done;
  }
  buf = malloc((size_t)(nrows * c > 0 ? nrows * c : 1) * sizeof(double));
  if (!buf) {
    st = fail(RRT_ERR_OUT_OF_MEMORY, err, errlen, path, key, "out of memory");
    goto done;
  }
  if (legacy && nrows > 0) {
    st = rrt_h5ad_legacy_read_rows(f, path, "obsm", key, row0, nrows, c, buf, err, errlen);
    if (st != RRT_SUCCESS) goto done;
  } else if (nrows > 0 && c > 0) {
    hsize_t start[2] = {(hsize_t)row0, 0}, count[2] = {(hsize_t)nrows, (hsize_t)c};
    fsp = H5Dget_space(ds);
    H5Sselect_hyperslab(fsp, H5S_SELECT_SET, start, NULL, count, NULL);
    msp = H5Screate_simple(2, count, NULL);
    /* HDF5 converts float32 (or integers) to the native double on read. */
    if (H5Dread(ds, H5T_NATIVE_DOUBLE, msp, fsp, H5P_DEFAULT, buf) < 0) {
      char why[300];
      st = fail(RRT_ERR_IO, err, errlen, path, key, "%s",
                missing_filter(ds, why, sizeof why) ? why : "read failed");
      goto done;
    }
  }
  *out = buf;
  buf = NULL;
  *cols = c;
  st = RRT_SUCCESS;
done:
  free(buf);
  if (msp >= 0) H5Sclose(msp);
  if (fsp >= 0) H5Sclose(fsp);
  if (ds >= 0) H5Dclose(ds);
  if (f >= 0) H5Fclose(f);
  quiet_end(&q);
  return st;
}

rrt_status rrt_h5ad_string_dataset(int64_t f, const char *path, const char *dpath, rrt_strings *out,
                                   char *err, size_t errlen) {
  out->count = 0;
  out->items = NULL;
  hid_t ds = H5Dopen2(f, dpath, H5P_DEFAULT);
  if (ds < 0) return fail(RRT_ERR_INVALID_ARG, err, errlen, path, dpath, "no such dataset");
  hid_t sp = H5Dget_space(ds), ty = H5Dget_type(ds), mt = -1;
  rrt_status st = RRT_SUCCESS;
  hsize_t n = 0;
  char *fixed = NULL;
  char **vl = NULL;
  if (H5Sget_simple_extent_ndims(sp) != 1 || H5Tget_class(ty) != H5T_STRING) {
    st = fail(RRT_ERR_INVALID_ARG, err, errlen, path, dpath, "expected a 1-D string dataset");
    goto done;
  }
  H5Sget_simple_extent_dims(sp, &n, NULL);
  /* Each string costs a pointer and its copy (at least one byte): a count
   * beyond memory is a malformed file, not an allocation to attempt. */
  size_t width = H5Tis_variable_str(ty) ? sizeof(char *) : H5Tget_size(ty) + 1;
  if (!rrt_io_claim_fits(n, sizeof(char *) + width + 1)) {
    st = fail(RRT_ERR_IO, err, errlen, path, dpath,
              "declares %llu strings, more than this machine's memory can hold",
              (unsigned long long)n);
    n = 0;
    goto done;
  }
  out->items = calloc(n ? n : 1, sizeof(char *));
  if (!out->items) {
    st = fail(RRT_ERR_OUT_OF_MEMORY, err, errlen, path, dpath, "out of memory for %llu strings",
              (unsigned long long)n);
    n = 0;
    goto done;
  }
  mt = H5Tcopy(H5T_C_S1);
  H5Tset_cset(mt, H5Tget_cset(ty));
  char why[256];
  if (H5Tis_variable_str(ty) && rrt_h5_vlen_check(f, path, ds, why, sizeof why) != 0) {
    st = fail(RRT_ERR_IO, err, errlen, path, dpath, "%s", why);
    goto done;
  }
  if (H5Tis_variable_str(ty)) {
    H5Tset_size(mt, H5T_VARIABLE);
    vl = calloc(n ? n : 1, sizeof(char *));
    if (!vl || H5Dread(ds, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, vl) < 0) {
      st = fail(RRT_ERR_IO, err, errlen, path, dpath, "cannot read strings");
      goto done;
    }
    for (hsize_t i = 0; i < n; i++)
      out->items[i] = strdup(vl[i] ? vl[i] : "");
#if H5_VERSION_GE(1, 12, 0)
    H5Treclaim(mt, sp, H5P_DEFAULT, vl);
#else
    H5Dvlen_reclaim(mt, sp, H5P_DEFAULT, vl);
#endif
  } else {
    size_t w = H5Tget_size(ty);
    H5Tset_size(mt, w + 1);
    H5Tset_strpad(mt, H5T_STR_NULLTERM);
    fixed = calloc(n ? n : 1, w + 1);
    if (!fixed || H5Dread(ds, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, fixed) < 0) {
      st = fail(RRT_ERR_IO, err, errlen, path, dpath, "cannot read strings");
      goto done;
    }
    for (hsize_t i = 0; i < n; i++)
      out->items[i] = strndup(fixed + i * (w + 1), w);
  }
  out->count = (int64_t)n;
  for (hsize_t i = 0; i < n; i++)
    if (!out->items[i]) st = fail(RRT_ERR_OUT_OF_MEMORY, err, errlen, path, dpath, "out of memory");
done:
  if (st != RRT_SUCCESS) {
    out->count = (int64_t)n;
    rrt_strings_free(out);
  }
  free(vl);
  free(fixed);
  if (mt >= 0) H5Tclose(mt);
  H5Tclose(ty);
  H5Sclose(sp);
  H5Dclose(ds);
  return st;
}

int rrt_h5ad_attr_string(hid_t obj, const char *name, char *out, size_t len) {
  if (H5Aexists(obj, name) <= 0) return -1;
  hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
  hid_t ty = H5Aget_type(a), sp = H5Aget_space(a);
  int rc = -1;
  if (H5Tget_class(ty) == H5T_STRING && H5Sget_simple_extent_npoints(sp) == 1) {
    hid_t mt = H5Tcopy(H5T_C_S1);
    H5Tset_cset(mt, H5Tget_cset(ty));
    if (H5Tis_variable_str(ty)) {
      H5Tset_size(mt, H5T_VARIABLE);
      rc = rrt_h5_vlen_attr_read(a, mt, out, len);
    } else {
      size_t w = H5Tget_size(ty);
      char *buf = calloc(1, w + 1);
      H5Tset_size(mt, w + 1);
      if (buf && H5Aread(a, mt, buf) >= 0) {
        snprintf(out, len, "%s", buf);
        rc = 0;
      }
      free(buf);
    }
    H5Tclose(mt);
  }
  H5Sclose(sp);
  H5Tclose(ty);
  H5Aclose(a);
  return rc;
}

rrt_status rrt_h5ad_read_obs_names(const char *path, rrt_strings *names, char *err, size_t errlen) {
  h5_quiet q;
  quiet_begin(&q);
  names->count = 0;
  names->items = NULL;
  rrt_status st = RRT_ERR_IO;
  hid_t f = open_file(path, err, errlen);
  if (f < 0) goto done;
  if (!link_exists(f, "obs")) {
    st = fail(RRT_ERR_INVALID_ARG, err, errlen, path, "obs", "no obs group");
    goto done;
  }
  if (rrt_h5ad_legacy_table(f, "obs")) {
    st = rrt_h5ad_legacy_strings(f, path, "obs", "index", names, err, errlen);
    goto done;
  }
  hid_t g = H5Oopen(f, "obs", H5P_DEFAULT);
  char col[256] = "";
  char dpath[300];
  if (rrt_h5ad_attr_string(g, "_index", col, sizeof col) == 0)
    snprintf(dpath, sizeof dpath, "obs/%s", col);
  else if (link_exists(f, "obs/_index"))
    snprintf(dpath, sizeof dpath, "obs/_index");
  else
    snprintf(dpath, sizeof dpath, "obs/index");
  H5Oclose(g);
  if (!link_exists(f, dpath)) {
    st = fail(RRT_ERR_INVALID_ARG, err, errlen, path, dpath, "obs index dataset not found");
    goto done;
  }
  st = rrt_h5ad_string_dataset(f, path, dpath, names, err, errlen);
done:
  if (f >= 0) H5Fclose(f);
  quiet_end(&q);
  return st;
}

/* Codes outside -1..ncat-1 are a malformed file, named by row. */
static rrt_status check_codes(const int32_t *codes, int64_t n, int64_t ncat, const char *path,
                              const char *where, char *err, size_t errlen) {
  for (int64_t i = 0; i < n; i++)
    if (codes[i] < -1 || codes[i] >= ncat)
      return fail(RRT_ERR_IO, err, errlen, path, where, "code %d at row %lld outside -1..%lld",
                  (int)codes[i], (long long)i, (long long)ncat - 1);
  return RRT_SUCCESS;
}

/* anndata >= 0.8: obs/COLUMN is a group with "categories" and "codes". */
static rrt_status read_categorical_group(hid_t f, const char *path, const char *column,
                                         int32_t **codes, int64_t *n, rrt_strings *categories,
                                         char *err, size_t errlen) {
  char gpath[300], cpath[320], kpath[320];
  snprintf(gpath, sizeof gpath, "obs/%s", column);
  snprintf(cpath, sizeof cpath, "obs/%s/codes", column);
  snprintf(kpath, sizeof kpath, "obs/%s/categories", column);
  if (!link_exists(f, gpath))
    return fail(RRT_ERR_INVALID_ARG, err, errlen, path, gpath, "no such obs column (see --labels)");
  if (!link_exists(f, cpath) || !link_exists(f, kpath))
    return fail(RRT_ERR_INVALID_ARG, err, errlen, path, gpath,
                "not a categorical column (expected a group with 'categories' and 'codes', "
                "anndata >= 0.8)");
  rrt_status st = rrt_h5ad_string_dataset(f, path, kpath, categories, err, errlen);
  if (st != RRT_SUCCESS) return st;
  hid_t ds = H5Dopen2(f, cpath, H5P_DEFAULT), sp = H5Dget_space(ds);
  hsize_t len = 0;
  int32_t *buf = NULL;
  if (H5Sget_simple_extent_ndims(sp) != 1) {
    st = fail(RRT_ERR_INVALID_ARG, err, errlen, path, cpath, "codes must be 1-D");
  } else {
    H5Sget_simple_extent_dims(sp, &len, NULL);
    if (!rrt_io_claim_fits(len, sizeof(int32_t)))
      st = fail(RRT_ERR_IO, err, errlen, path, cpath,
                "declares %llu codes, more than this machine's memory can hold",
                (unsigned long long)len);
    else if (!(buf = malloc((len ? len : 1) * sizeof(int32_t))) ||
             H5Dread(ds, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0)
      st = fail(RRT_ERR_IO, err, errlen, path, cpath, "cannot read codes");
  }
  H5Sclose(sp);
  H5Dclose(ds);
  *codes = buf, *n = (int64_t)len;
  return st;
}

/* anndata < 0.7: an integer member of the obs table, its categories in
 * uns/COLUMN_categories. */
static rrt_status read_categorical_legacy(hid_t f, const char *path, const char *column,
                                          int32_t **codes, int64_t *n, rrt_strings *categories,
                                          char *err, size_t errlen) {
  char kpath[320];
  snprintf(kpath, sizeof kpath, "uns/%s_categories", column);
  rrt_status st = rrt_h5ad_legacy_codes(f, path, "obs", column, codes, n, err, errlen);
  if (st != RRT_SUCCESS) return st;
  if (!link_exists(f, kpath))
    return fail(RRT_ERR_INVALID_ARG, err, errlen, path, kpath,
                "obs/%s of this legacy (anndata < 0.7) file has no categories here: not a "
                "categorical column",
                column);
  return rrt_h5ad_string_dataset(f, path, kpath, categories, err, errlen);
}

rrt_status rrt_h5ad_read_categorical(const char *path, const char *column, int32_t **codes,
                                     int64_t *n, rrt_strings *categories, char *err,
                                     size_t errlen) {
  h5_quiet q;
  quiet_begin(&q);
  *codes = NULL;
  *n = 0;
  categories->count = 0;
  categories->items = NULL;
  rrt_status st = RRT_ERR_IO;
  hid_t f = open_file(path, err, errlen);
  if (f >= 0) {
    int legacy = rrt_h5ad_legacy_table(f, "obs");
    st = (legacy ? read_categorical_legacy : read_categorical_group)(f, path, column, codes, n,
                                                                     categories, err, errlen);
    char where[300];
    snprintf(where, sizeof where, legacy ? "obs/%s" : "obs/%s/codes", column);
    if (st == RRT_SUCCESS)
      st = check_codes(*codes, *n, categories->count, path, where, err, errlen);
    H5Fclose(f);
  }
  if (st != RRT_SUCCESS) {
    rrt_strings_free(categories);
    free(*codes);
    *codes = NULL, *n = 0;
  }
  quiet_end(&q);
  return st;
}
