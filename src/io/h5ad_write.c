/* .h5ad writing (see h5ad_write.h): the temporary-then-rename file and
 * anndata's encodings, one small function per element kind. */
#include "io/h5ad_write.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static rrt_status fail(rrt_h5w *w, char *err, size_t errlen, const char *obj, const char *fmt,
                       ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (err && errlen) snprintf(err, errlen, "%s: %s: %s", w->path, obj ? obj : "", msg);
  return RRT_ERR_IO;
}

rrt_status rrt_h5w_check_target(const char *path, int force, const char *force_flag, char *err,
                                size_t errlen) {
  struct stat st;
  if (force || stat(path, &st) != 0) return RRT_SUCCESS;
  snprintf(err, errlen, "%s exists (%s overwrites it)", path, force_flag);
  return RRT_ERR_IO;
}

/* ".NAME.XXXXXX" in the target's directory, created (mode as fopen gives). */
static rrt_status make_temp(rrt_h5w *w, char *err, size_t errlen) {
  const char *slash = strrchr(w->path, '/');
  size_t dlen = slash ? (size_t)(slash - w->path + 1) : 0;
  w->tmp = malloc(strlen(w->path) + 16);
  if (!w->tmp) return fail(w, err, errlen, "", "out of memory");
  sprintf(w->tmp, "%.*s.%s.XXXXXX", (int)dlen, w->path, w->path + dlen);
  /* mkstemp picks a unique name but makes the file 0600: made again under
   * that name with 0666, the umask decides its mode, as for any new file.
   * (Reading the umask means setting it, process state a library leaves
   * alone.) */
  int fd = mkstemp(w->tmp);
  if (fd >= 0) {
    close(fd);
    unlink(w->tmp);
    fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
  }
  if (fd < 0) {
    int e = errno;
    free(w->tmp), w->tmp = NULL;
    return fail(w, err, errlen, "", "cannot create a file next to it: %s", strerror(e));
  }
  close(fd);
  return RRT_SUCCESS;
}

static rrt_status begin(rrt_h5w *w, const char *path, int force, char *err, size_t errlen) {
  memset(w, 0, sizeof *w);
  w->f = -1;
  w->path = strdup(path);
  if (!w->path) return RRT_ERR_OUT_OF_MEMORY;
  rrt_status st = rrt_h5w_check_target(path, force, "--force", err, errlen);
  if (st == RRT_SUCCESS) st = make_temp(w, err, errlen);
  if (st != RRT_SUCCESS) {
    free(w->path), w->path = NULL;
    return st;
  }
  H5Eget_auto2(H5E_DEFAULT, &w->ef, &w->ed);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  return RRT_SUCCESS;
}

rrt_status rrt_h5w_create(rrt_h5w *w, const char *path, int force, char *err, size_t errlen) {
  rrt_status st = begin(w, path, force, err, errlen);
  if (st != RRT_SUCCESS) return st;
  w->f = H5Fcreate(w->tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (w->f < 0) {
    st = fail(w, err, errlen, "", "cannot create an HDF5 file");
    rrt_h5w_discard(w);
    return st;
  }
  st = rrt_h5w_encoding(w, w->f, "anndata", "0.1.0", err, errlen);
  if (st != RRT_SUCCESS) rrt_h5w_discard(w);
  return st;
}

/* Copy the bytes of src into the (created) temporary. */
static rrt_status copy_bytes(rrt_h5w *w, const char *src, char *err, size_t errlen) {
  FILE *in = fopen(src, "rb"), *out = in ? fopen(w->tmp, "wb") : NULL;
  if (!in) return fail(w, err, errlen, "", "cannot read %s: %s", src, strerror(errno));
  static char buf[1 << 16];
  size_t k;
  int bad = !out;
  while (!bad && (k = fread(buf, 1, sizeof buf, in)) > 0)
    bad = fwrite(buf, 1, k, out) != k;
  bad = bad || ferror(in);
  int e = errno;
  fclose(in);
  if (out && fclose(out) != 0) bad = 1, e = errno;
  return bad ? fail(w, err, errlen, "", "copying %s: %s", src, strerror(e)) : RRT_SUCCESS;
}

rrt_status rrt_h5w_create_copy(rrt_h5w *w, const char *src, const char *path, int force, char *err,
                               size_t errlen) {
  rrt_status st = begin(w, path, force, err, errlen);
  if (st != RRT_SUCCESS) return st;
  st = copy_bytes(w, src, err, errlen);
  if (st == RRT_SUCCESS && (w->f = H5Fopen(w->tmp, H5F_ACC_RDWR, H5P_DEFAULT)) < 0)
    st = fail(w, err, errlen, "", "cannot open the copy of %s as an HDF5 file", src);
  if (st != RRT_SUCCESS) rrt_h5w_discard(w);
  return st;
}

static void release(rrt_h5w *w) {
  if (w->path) H5Eset_auto2(H5E_DEFAULT, w->ef, w->ed);
  free(w->path), free(w->tmp);
  w->path = w->tmp = NULL;
  w->f = -1;
}

rrt_status rrt_h5w_commit(rrt_h5w *w, char *err, size_t errlen) {
  rrt_status st = RRT_SUCCESS;
  if (H5Fflush(w->f, H5F_SCOPE_GLOBAL) < 0 || H5Fclose(w->f) < 0) {
    w->f = -1;
    st = fail(w, err, errlen, "", "writing failed (disk full?)");
  }
  w->f = -1;
  if (st == RRT_SUCCESS && rename(w->tmp, w->path) != 0)
    st = fail(w, err, errlen, "", "cannot rename %s to it: %s", w->tmp, strerror(errno));
  if (st != RRT_SUCCESS) {
    rrt_h5w_discard(w);
    return st;
  }
  release(w);
  return st;
}

void rrt_h5w_discard(rrt_h5w *w) {
  if (!w->path) return;
  if (w->f >= 0) H5Fclose(w->f);
  if (w->tmp) unlink(w->tmp);
  release(w);
}

/* Variable-length UTF-8 strings, as h5py writes str. */
static hid_t vlen_utf8(void) {
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8);
  return t;
}

rrt_status rrt_h5w_attr_string(rrt_h5w *w, hid_t obj, const char *name, const char *value,
                               char *err, size_t errlen) {
  if (H5Aexists(obj, name) > 0) H5Adelete(obj, name);
  hid_t t = vlen_utf8(), sp = H5Screate(H5S_SCALAR);
  hid_t a = H5Acreate2(obj, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
  int ok = a >= 0 && H5Awrite(a, t, &value) >= 0;
  if (a >= 0) H5Aclose(a);
  H5Sclose(sp), H5Tclose(t);
  return ok ? RRT_SUCCESS : fail(w, err, errlen, name, "cannot write the attribute");
}

rrt_status rrt_h5w_encoding(rrt_h5w *w, hid_t obj, const char *type, const char *version, char *err,
                            size_t errlen) {
  rrt_status st = rrt_h5w_attr_string(w, obj, "encoding-type", type, err, errlen);
  if (st == RRT_SUCCESS) st = rrt_h5w_attr_string(w, obj, "encoding-version", version, err, errlen);
  return st;
}

rrt_status rrt_h5w_unlink(rrt_h5w *w, hid_t loc, const char *name, char *err, size_t errlen) {
  if (H5Lexists(loc, name, H5P_DEFAULT) <= 0) return RRT_SUCCESS;
  return H5Ldelete(loc, name, H5P_DEFAULT) >= 0
             ? RRT_SUCCESS
             : fail(w, err, errlen, name, "cannot remove the old one");
}

rrt_status rrt_h5w_group(rrt_h5w *w, hid_t loc, const char *name, const char *type,
                         const char *version, hid_t *g, char *err, size_t errlen) {
  *g = H5Lexists(loc, name, H5P_DEFAULT) > 0
           ? H5Gopen2(loc, name, H5P_DEFAULT)
           : H5Gcreate2(loc, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (*g < 0) return fail(w, err, errlen, name, "cannot create the group");
  rrt_status st = type ? rrt_h5w_encoding(w, *g, type, version, err, errlen) : RRT_SUCCESS;
  if (st != RRT_SUCCESS) H5Gclose(*g), *g = -1;
  return st;
}

/* Write a whole dataset loc/NAME and give it its encoding. */
static rrt_status write_dataset(rrt_h5w *w, hid_t loc, const char *name, hid_t ftype, hid_t mtype,
                                int ndim, const int64_t *dims, const void *data, const char *enc,
                                char *err, size_t errlen) {
  hsize_t d[2] = {(hsize_t)dims[0], ndim > 1 ? (hsize_t)dims[1] : 0};
  hid_t sp = H5Screate_simple(ndim, d, NULL);
  hid_t ds = H5Dcreate2(loc, name, ftype, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  int ok = ds >= 0 && (d[0] * (ndim > 1 ? d[1] : 1) == 0 ||
                       H5Dwrite(ds, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0);
  H5Sclose(sp);
  rrt_status st = ok ? rrt_h5w_encoding(w, ds, enc, "0.2.0", err, errlen)
                     : fail(w, err, errlen, name, "cannot write the dataset");
  if (ds >= 0) H5Dclose(ds);
  return st;
}

rrt_status rrt_h5w_strings(rrt_h5w *w, hid_t loc, const char *name, const char *const *items,
                           int64_t n, char *err, size_t errlen) {
  hid_t t = vlen_utf8();
  rrt_status st = write_dataset(w, loc, name, t, t, 1, &n, items, "string-array", err, errlen);
  H5Tclose(t);
  return st;
}

rrt_status rrt_h5w_array(rrt_h5w *w, hid_t loc, const char *name, hid_t mtype, int ndim,
                         const int64_t *dims, const void *data, char *err, size_t errlen) {
  return write_dataset(w, loc, name, mtype, mtype, ndim, dims, data, "array", err, errlen);
}

hid_t rrt_h5w_bool_type(void) {
  hid_t t = H5Tenum_create(H5T_NATIVE_INT8);
  int8_t v0 = 0, v1 = 1;
  H5Tenum_insert(t, "FALSE", &v0);
  H5Tenum_insert(t, "TRUE", &v1);
  return t;
}

static rrt_status attr_false(rrt_h5w *w, hid_t obj, const char *name, char *err, size_t errlen) {
  hid_t t = rrt_h5w_bool_type();
  int8_t v0 = 0;
  hid_t sp = H5Screate(H5S_SCALAR), a = H5Acreate2(obj, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
  int ok = a >= 0 && H5Awrite(a, t, &v0) >= 0;
  if (a >= 0) H5Aclose(a);
  H5Sclose(sp), H5Tclose(t);
  return ok ? RRT_SUCCESS : fail(w, err, errlen, name, "cannot write the attribute");
}

rrt_status rrt_h5w_categorical(rrt_h5w *w, hid_t loc, const char *name, const int32_t *codes,
                               int64_t n, const char *const *cats, int64_t ncat, char *err,
                               size_t errlen) {
  hid_t g;
  rrt_status st = rrt_h5w_group(w, loc, name, "categorical", "0.2.0", &g, err, errlen);
  if (st != RRT_SUCCESS) return st;
  st = attr_false(w, g, "ordered", err, errlen);
  if (st == RRT_SUCCESS) st = rrt_h5w_strings(w, g, "categories", cats, ncat, err, errlen);
  if (st == RRT_SUCCESS)
    st = rrt_h5w_array(w, g, "codes", H5T_NATIVE_INT32, 1, &n, codes, err, errlen);
  H5Gclose(g);
  return st;
}

rrt_status rrt_h5w_dataframe(rrt_h5w *w, hid_t g, const char *index, const char *const *cols,
                             int ncols, char *err, size_t errlen) {
  rrt_status st = rrt_h5w_encoding(w, g, "dataframe", "0.2.0", err, errlen);
  if (st == RRT_SUCCESS) st = rrt_h5w_attr_string(w, g, "_index", index, err, errlen);
  if (st != RRT_SUCCESS) return st;
  if (H5Aexists(g, "column-order") > 0) H5Adelete(g, "column-order");
  /* anndata writes an empty column order as an empty float64 array */
  hsize_t n = (hsize_t)ncols;
  hid_t t = ncols ? vlen_utf8() : H5Tcopy(H5T_NATIVE_DOUBLE), sp = H5Screate_simple(1, &n, NULL);
  hid_t a = H5Acreate2(g, "column-order", t, sp, H5P_DEFAULT, H5P_DEFAULT);
  int ok = a >= 0 && (!ncols || H5Awrite(a, t, cols) >= 0);
  if (a >= 0) H5Aclose(a);
  H5Sclose(sp), H5Tclose(t);
  return ok ? RRT_SUCCESS : fail(w, err, errlen, "column-order", "cannot write the attribute");
}

rrt_status rrt_h5w_extendible(rrt_h5w *w, hid_t loc, const char *name, hid_t ftype, int64_t cols,
                              hid_t *ds, char *err, size_t errlen) {
  int nd = cols > 0 ? 2 : 1;
  hsize_t d[2] = {0, (hsize_t)cols}, mx[2] = {H5S_UNLIMITED, (hsize_t)cols};
  /* chunks of about 1 MiB: whole rows of a dense matrix, runs of a 1-D one */
  hsize_t row_bytes = (hsize_t)(cols > 0 ? cols : 1) * 8;
  hsize_t ch[2] = {row_bytes >= (1u << 20) ? 1 : (1u << 20) / row_bytes, (hsize_t)cols};
  hid_t sp = H5Screate_simple(nd, d, mx), pl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(pl, nd, ch);
  *ds = H5Dcreate2(loc, name, ftype, sp, H5P_DEFAULT, pl, H5P_DEFAULT);
  H5Pclose(pl), H5Sclose(sp);
  return *ds >= 0 ? RRT_SUCCESS : fail(w, err, errlen, name, "cannot create the dataset");
}

rrt_status rrt_h5w_append(rrt_h5w *w, hid_t ds, const char *name, hid_t mtype, int64_t rows,
                          const void *data, char *err, size_t errlen) {
  if (rows <= 0) return RRT_SUCCESS;
  hid_t sp = H5Dget_space(ds);
  int nd = H5Sget_simple_extent_ndims(sp);
  hsize_t d[2] = {0, 0};
  H5Sget_simple_extent_dims(sp, d, NULL);
  H5Sclose(sp);
  hsize_t nd0[2] = {d[0] + (hsize_t)rows, d[1]}, start[2] = {d[0], 0},
          cnt[2] = {(hsize_t)rows, d[1]};
  int ok = H5Dset_extent(ds, nd0) >= 0;
  hid_t fsp = ok ? H5Dget_space(ds) : -1, msp = H5Screate_simple(nd, cnt, NULL);
  ok = ok && H5Sselect_hyperslab(fsp, H5S_SELECT_SET, start, NULL, cnt, NULL) >= 0 &&
       H5Dwrite(ds, mtype, msp, fsp, H5P_DEFAULT, data) >= 0;
  if (fsp >= 0) H5Sclose(fsp);
  H5Sclose(msp);
  return ok ? RRT_SUCCESS : fail(w, err, errlen, name, "cannot write (disk full?)");
}
