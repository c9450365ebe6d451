/* Legacy (anndata < 0.7) .h5ad tables: see h5ad_legacy.h. Every read builds
 * a memory compound type holding only the wanted member, so HDF5 picks the
 * member by name and converts its values (float32 to float64, int8 to
 * int32, fixed strings to NUL-terminated ones) during the read. */
#include "io/h5ad_legacy.h"

#include <stdlib.h>
#include <string.h>

#include "comm/errbuf.h"
#include "io/limits.h"

int rrt_h5ad_legacy_table(hid_t f, const char *table) {
  if (H5Lexists(f, table, H5P_DEFAULT) <= 0) return 0;
  hid_t obj = H5Oopen(f, table, H5P_DEFAULT);
  if (obj < 0) return 0;
  int compound = 0;
  if (H5Iget_type(obj) == H5I_DATASET) {
    hid_t ty = H5Dget_type(obj);
    compound = H5Tget_class(ty) == H5T_COMPOUND;
    H5Tclose(ty);
  }
  H5Oclose(obj);
  return compound;
}

/* The table's dataset, its row count, and the file type of member NAME
 * (closed by the caller), or an error naming what is missing. */
static rrt_status open_member(hid_t f, const char *path, const char *table, const char *name,
                              hid_t *ds, hid_t *mtype, hsize_t *rows, char *err, size_t errlen) {
  *ds = H5Dopen2(f, table, H5P_DEFAULT);
  if (*ds < 0) return rrt_errbuf(err, errlen, RRT_ERR_IO, "%s: %s: cannot open", path, table);
  hid_t ty = H5Dget_type(*ds), sp = H5Dget_space(*ds);
  int idx = H5Tget_member_index(ty, name);
  int nd = H5Sget_simple_extent_ndims(sp);
  if (nd == 1) H5Sget_simple_extent_dims(sp, rows, NULL);
  H5Sclose(sp);
  rrt_status st = RRT_SUCCESS;
  if (nd != 1) {
    st = rrt_errbuf(err, errlen, RRT_ERR_IO, "%s: %s: a legacy table must be 1-D, found %d-D", path,
                    table, nd);
  } else if (idx < 0) {
    char have[400];
    rrt_h5ad_legacy_members(f, table, have, sizeof have);
    st = rrt_errbuf(err, errlen, RRT_ERR_INVALID_ARG,
                    "%s: %s/%s: no such column in this legacy (anndata < 0.7) table; it has: %s",
                    path, table, name, have);
  } else {
    *mtype = H5Tget_member_type(ty, (unsigned)idx);
  }
  H5Tclose(ty);
  if (st != RRT_SUCCESS) {
    H5Dclose(*ds);
    *ds = -1;
  }
  return st;
}

/* Values per row of a numeric member: 1 (scalar) or the length of a 1-D
 * array; 0 when the member is not numeric. */
static int64_t member_width(hid_t mt) {
  H5T_class_t c = H5Tget_class(mt);
  if (c == H5T_FLOAT || c == H5T_INTEGER) return 1;
  if (c != H5T_ARRAY || H5Tget_array_ndims(mt) != 1) return 0;
  hid_t base = H5Tget_super(mt);
  H5T_class_t bc = H5Tget_class(base);
  H5Tclose(base);
  if (bc != H5T_FLOAT && bc != H5T_INTEGER) return 0;
  hsize_t d = 0;
  H5Tget_array_dims2(mt, &d);
  return (int64_t)d;
}

rrt_status rrt_h5ad_legacy_shape(hid_t f, const char *path, const char *table, const char *key,
                                 int64_t *rows, int64_t *cols, char *err, size_t errlen) {
  hid_t ds, mt;
  hsize_t n = 0;
  rrt_status st = open_member(f, path, table, key, &ds, &mt, &n, err, errlen);
  if (st != RRT_SUCCESS) return st;
  int64_t w = member_width(mt);
  H5Tclose(mt);
  H5Dclose(ds);
  if (w < 1)
    return rrt_errbuf(err, errlen, RRT_ERR_INVALID_ARG,
                      "%s: %s/%s: expected numbers (a scalar or a 1-D array per row)", path, table,
                      key);
  *rows = (int64_t)n, *cols = w;
  return RRT_SUCCESS;
}

/* Read rows [row0, row0 + nrows) of a 1-D dataset into buf with memory type mem. */
static rrt_status read_rows(hid_t ds, hid_t mem, int64_t row0, int64_t nrows, void *buf) {
  if (nrows == 0) return RRT_SUCCESS;
  hsize_t start = (hsize_t)row0, count = (hsize_t)nrows;
  hid_t fsp = H5Dget_space(ds), msp = H5Screate_simple(1, &count, NULL);
  H5Sselect_hyperslab(fsp, H5S_SELECT_SET, &start, NULL, &count, NULL);
  herr_t rc = H5Dread(ds, mem, msp, fsp, H5P_DEFAULT, buf);
  H5Sclose(msp);
  H5Sclose(fsp);
  return rc < 0 ? RRT_ERR_IO : RRT_SUCCESS;
}

/* A compound memory type with one member NAME of type member (copied). */
static hid_t single_member(const char *name, hid_t member) {
  hid_t c = H5Tcreate(H5T_COMPOUND, H5Tget_size(member));
  H5Tinsert(c, name, 0, member);
  return c;
}

rrt_status rrt_h5ad_legacy_read_rows(hid_t f, const char *path, const char *table, const char *key,
                                     int64_t row0, int64_t nrows, int64_t cols, double *out,
                                     char *err, size_t errlen) {
  hid_t ds, mt;
  hsize_t n = 0;
  rrt_status st = open_member(f, path, table, key, &ds, &mt, &n, err, errlen);
  if (st != RRT_SUCCESS) return st;
  H5Tclose(mt);
  hsize_t w = (hsize_t)cols;
  hid_t arr = cols == 1 ? H5Tcopy(H5T_NATIVE_DOUBLE) : H5Tarray_create2(H5T_NATIVE_DOUBLE, 1, &w);
  hid_t mem = single_member(key, arr);
  if (row0 < 0 || nrows < 0 || (hsize_t)(row0 + nrows) > n)
    st = rrt_errbuf(err, errlen, RRT_ERR_INVALID_ARG,
                    "%s: %s/%s: rows [%lld, %lld) outside 0..%llu", path, table, key,
                    (long long)row0, (long long)(row0 + nrows), (unsigned long long)n);
  else if (read_rows(ds, mem, row0, nrows, out) != RRT_SUCCESS)
    st = rrt_errbuf(err, errlen, RRT_ERR_IO, "%s: %s/%s: read failed", path, table, key);
  H5Tclose(mem);
  H5Tclose(arr);
  H5Dclose(ds);
  return st;
}

rrt_status rrt_h5ad_legacy_strings(hid_t f, const char *path, const char *table, const char *field,
                                   rrt_strings *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  hid_t ds, mt;
  hsize_t n = 0;
  rrt_status st = open_member(f, path, table, field, &ds, &mt, &n, err, errlen);
  if (st != RRT_SUCCESS) return st;
  size_t w = H5Tget_size(mt);
  int fixed = H5Tget_class(mt) == H5T_STRING && !H5Tis_variable_str(mt);
  hid_t str = H5Tcopy(H5T_C_S1);
  H5Tset_size(str, w + 1);
  H5Tset_strpad(str, H5T_STR_NULLTERM);
  hid_t mem = single_member(field, str);
  char *buf = NULL;
  if (!fixed) {
    st = rrt_errbuf(err, errlen, RRT_ERR_INVALID_ARG,
                    "%s: %s/%s: expected fixed-length strings in a legacy table", path, table,
                    field);
  } else if (!rrt_io_claim_fits(n, w + 1 + sizeof(char *)) || !(buf = calloc(n ? n : 1, w + 1)) ||
             !(out->items = calloc(n ? n : 1, sizeof(char *)))) {
    st = rrt_errbuf(err, errlen, RRT_ERR_OUT_OF_MEMORY, "%s: %s/%s: %llu strings: out of memory",
                    path, table, field, (unsigned long long)n);
  } else if (read_rows(ds, mem, 0, (int64_t)n, buf) != RRT_SUCCESS) {
    st = rrt_errbuf(err, errlen, RRT_ERR_IO, "%s: %s/%s: read failed", path, table, field);
  } else {
    out->count = (int64_t)n;
    for (hsize_t i = 0; i < n && st == RRT_SUCCESS; i++)
      if (!(out->items[i] = strndup(buf + i * (w + 1), w)))
        st = rrt_errbuf(err, errlen, RRT_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  }
  if (st != RRT_SUCCESS) rrt_strings_free(out);
  free(buf);
  H5Tclose(mem);
  H5Tclose(str);
  H5Tclose(mt);
  H5Dclose(ds);
  return st;
}

rrt_status rrt_h5ad_legacy_codes(hid_t f, const char *path, const char *table, const char *field,
                                 int32_t **codes, int64_t *n, char *err, size_t errlen) {
  *codes = NULL;
  hid_t ds, mt;
  hsize_t rows = 0;
  rrt_status st = open_member(f, path, table, field, &ds, &mt, &rows, err, errlen);
  if (st != RRT_SUCCESS) return st;
  int integer = H5Tget_class(mt) == H5T_INTEGER;
  H5Tclose(mt);
  hid_t mem = single_member(field, H5T_NATIVE_INT32);
  int32_t *buf = NULL;
  if (!integer)
    st = rrt_errbuf(err, errlen, RRT_ERR_INVALID_ARG,
                    "%s: %s/%s: not a categorical column (a legacy one holds integer codes)", path,
                    table, field);
  else if (!rrt_io_claim_fits(rows, sizeof(int32_t)) || !(buf = malloc((rows ? rows : 1) * 4)))
    st = rrt_errbuf(err, errlen, RRT_ERR_OUT_OF_MEMORY, "%s: %s/%s: out of memory", path, table,
                    field);
  else if (read_rows(ds, mem, 0, (int64_t)rows, buf) != RRT_SUCCESS)
    st = rrt_errbuf(err, errlen, RRT_ERR_IO, "%s: %s/%s: read failed", path, table, field);
  H5Tclose(mem);
  H5Dclose(ds);
  if (st != RRT_SUCCESS) {
    free(buf);
    return st;
  }
  *codes = buf;
  *n = (int64_t)rows;
  return RRT_SUCCESS;
}

rrt_status rrt_h5ad_legacy_member(hid_t f, const char *path, const char *table, const char *field,
                                  hid_t *type, void **data, int64_t *rows, char *err,
                                  size_t errlen) {
  *data = NULL;
  *type = -1;
  hid_t ds, mt;
  hsize_t n = 0;
  rrt_status st = open_member(f, path, table, field, &ds, &mt, &n, err, errlen);
  if (st != RRT_SUCCESS) return st;
  hid_t native = H5Tget_native_type(mt, H5T_DIR_ASCEND);
  H5Tclose(mt);
  size_t el = native >= 0 ? H5Tget_size(native) : 0;
  hid_t mem = native >= 0 ? single_member(field, native) : -1;
  void *buf = NULL;
  if (mem < 0 || !el)
    st = rrt_errbuf(err, errlen, RRT_ERR_IO, "%s: %s/%s: unreadable type", path, table, field);
  else if (!rrt_io_claim_fits(n, el) || !(buf = malloc((n ? n : 1) * el)))
    st = rrt_errbuf(err, errlen, RRT_ERR_OUT_OF_MEMORY, "%s: %s/%s: out of memory", path, table,
                    field);
  else if (read_rows(ds, mem, 0, (int64_t)n, buf) != RRT_SUCCESS)
    st = rrt_errbuf(err, errlen, RRT_ERR_IO, "%s: %s/%s: read failed", path, table, field);
  if (mem >= 0) H5Tclose(mem);
  H5Dclose(ds);
  if (st != RRT_SUCCESS) {
    free(buf);
    if (native >= 0) H5Tclose(native);
    return st;
  }
  *type = native, *data = buf, *rows = (int64_t)n;
  return RRT_SUCCESS;
}

void rrt_h5ad_legacy_members(hid_t f, const char *table, char *out, size_t len) {
  out[0] = 0;
  hid_t ds = H5Dopen2(f, table, H5P_DEFAULT);
  if (ds < 0) return;
  hid_t ty = H5Dget_type(ds);
  size_t used = 0;
  for (int i = 0, nm = H5Tget_nmembers(ty); i < nm && used + 1 < len; i++) {
    char *name = H5Tget_member_name(ty, (unsigned)i);
    int k = snprintf(out + used, len - used, "%s%s", i ? ", " : "", name ? name : "?");
    used += k > 0 ? (size_t)k : 0;
    H5free_memory(name);
  }
  H5Tclose(ty);
  H5Dclose(ds);
}
