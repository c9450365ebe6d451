/* A legacy (anndata < 0.7) .h5ad rewritten in the current layout, for
 * --h5ad-out: X copied, obs and var tables as dataframe groups (strings,
 * categoricals with their uns/COLUMN_categories, numbers and booleans in
 * their own types), obsm members as 2-D arrays. scanpy reads the legacy
 * layout and writes the current one; so does this. uns, layers and raw of
 * the legacy file are not carried (h5ad_result.h says so). */
#include "io/h5ad_upgrade.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/h5ad.h"
#include "io/h5ad_legacy.h"

#define CK(x)                                                                                      \
  do {                                                                                             \
    if ((st = (x)) != RRT_SUCCESS) goto done;                                                      \
  } while (0)

/* X: a dense dataset copied with its encoding; a legacy sparse group (the
 * h5sparse attributes) is left out with the rest of what is not carried. */
static rrt_status copy_x(rrt_h5w *w, hid_t in, const char *path, char *err, size_t errlen) {
  H5O_info_t oi;
  if (H5Lexists(in, "X", H5P_DEFAULT) <= 0 || H5Oget_info_by_name(in, "X", &oi, H5P_DEFAULT) < 0 ||
      oi.type != H5O_TYPE_DATASET)
    return RRT_SUCCESS;
  if (H5Ocopy(in, "X", w->f, "X", H5P_DEFAULT, H5P_DEFAULT) < 0) {
    snprintf(err, errlen, "%s: X: cannot copy it", path);
    return RRT_ERR_IO;
  }
  hid_t x = H5Dopen2(w->f, "X", H5P_DEFAULT);
  rrt_status st = rrt_h5w_encoding(w, x, "array", "0.2.0", err, errlen);
  H5Dclose(x);
  return st;
}

/* The type class of member NAME of the legacy table (H5T_NO_CLASS when
 * there is none): strings are read as strings, not in their file type. */
static H5T_class_t member_class(hid_t in, const char *table, const char *name) {
  hid_t ds = H5Dopen2(in, table, H5P_DEFAULT), ty = ds >= 0 ? H5Dget_type(ds) : -1;
  int idx = ty >= 0 ? H5Tget_member_index(ty, name) : -1;
  H5T_class_t c = idx >= 0 ? H5Tget_member_class(ty, (unsigned)idx) : H5T_NO_CLASS;
  if (ty >= 0) H5Tclose(ty);
  if (ds >= 0) H5Dclose(ds);
  return c;
}

/* One column of a legacy table: categorical where uns/NAME_categories
 * exists, strings, or the member's own type. */
static rrt_status copy_column(rrt_h5w *w, hid_t in, const char *path, const char *table,
                              const char *name, hid_t g, char *err, size_t errlen) {
  char cats_path[320];
  snprintf(cats_path, sizeof cats_path, "uns/%s_categories", name);
  rrt_status st;
  if (H5Lexists(in, "uns", H5P_DEFAULT) > 0 && H5Lexists(in, cats_path, H5P_DEFAULT) > 0) {
    int32_t *codes = NULL;
    int64_t n = 0;
    rrt_strings cats = {0};
    st = rrt_h5ad_legacy_codes(in, path, table, name, &codes, &n, err, errlen);
    if (st == RRT_SUCCESS) st = rrt_h5ad_string_dataset(in, path, cats_path, &cats, err, errlen);
    if (st == RRT_SUCCESS)
      st = rrt_h5w_categorical(w, g, name, codes, n, (const char *const *)cats.items, cats.count,
                               err, errlen);
    free(codes);
    rrt_strings_free(&cats);
    return st;
  }
  if (member_class(in, table, name) == H5T_STRING) {
    rrt_strings s = {0};
    st = rrt_h5ad_legacy_strings(in, path, table, name, &s, err, errlen);
    if (st == RRT_SUCCESS)
      st = rrt_h5w_strings(w, g, name, (const char *const *)s.items, s.count, err, errlen);
    rrt_strings_free(&s);
    return st;
  }
  hid_t type;
  void *data;
  int64_t rows;
  st = rrt_h5ad_legacy_member(in, path, table, name, &type, &data, &rows, err, errlen);
  if (st != RRT_SUCCESS) return st;
  if (H5Tget_class(type) == H5T_ARRAY) {
    hsize_t width = 0;
    H5Tget_array_dims2(type, &width);
    hid_t base = H5Tget_super(type);
    int64_t dims[2] = {rows, (int64_t)width};
    st = rrt_h5w_array(w, g, name, base, 2, dims, data, err, errlen);
    H5Tclose(base);
  } else {
    st = rrt_h5w_array(w, g, name, type, 1, &rows, data, err, errlen);
  }
  H5Tclose(type);
  free(data);
  return st;
}

/* The member names of a legacy table (H5free_memory each, free the list). */
static char **member_names(hid_t in, const char *table, int *count) {
  hid_t ds = H5Dopen2(in, table, H5P_DEFAULT), ty = ds >= 0 ? H5Dget_type(ds) : -1;
  int nm = ty >= 0 ? H5Tget_nmembers(ty) : 0;
  char **names = calloc((size_t)(nm > 0 ? nm : 1), sizeof(char *));
  for (int i = 0; names && i < nm; i++)
    names[i] = H5Tget_member_name(ty, (unsigned)i);
  *count = names ? nm : 0;
  if (ty >= 0) H5Tclose(ty);
  if (ds >= 0) H5Dclose(ds);
  return names;
}

static void names_free(char **names, int count) {
  for (int i = 0; names && i < count; i++)
    H5free_memory(names[i]);
  free(names);
}

/* obs or var: a dataframe group, "index" as its _index. */
static rrt_status copy_table(rrt_h5w *w, hid_t in, const char *path, const char *table, char *err,
                             size_t errlen) {
  int nm = 0, ncols = 0;
  char **names = member_names(in, table, &nm);
  const char **cols = calloc((size_t)nm + 1, sizeof(char *));
  hid_t g = -1;
  rrt_status st = names && cols ? RRT_SUCCESS : RRT_ERR_OUT_OF_MEMORY;
  CK(st);
  CK(rrt_h5w_group(w, w->f, table, "dataframe", "0.2.0", &g, err, errlen));
  for (int i = 0; i < nm; i++) {
    int is_index = !strcmp(names[i], "index");
    if (!is_index) cols[ncols++] = names[i];
    if (is_index) { /* the index is the dataset "_index" */
      rrt_strings s = {0};
      CK(rrt_h5ad_legacy_strings(in, path, table, "index", &s, err, errlen));
      st = rrt_h5w_strings(w, g, "_index", (const char *const *)s.items, s.count, err, errlen);
      rrt_strings_free(&s);
      CK(st);
    } else {
      CK(copy_column(w, in, path, table, names[i], g, err, errlen));
    }
  }
  CK(rrt_h5w_dataframe(w, g, "_index", cols, ncols, err, errlen));
done:
  if (g >= 0) H5Gclose(g);
  names_free(names, nm);
  free(cols);
  return st;
}

/* obsm: each member a rows x width array in a dict group. */
static rrt_status copy_obsm(rrt_h5w *w, hid_t in, const char *path, char *err, size_t errlen) {
  hid_t g = -1;
  int nm = 0;
  char **names = rrt_h5ad_legacy_table(in, "obsm") ? member_names(in, "obsm", &nm) : NULL;
  rrt_status st = rrt_h5w_group(w, w->f, "obsm", "dict", "0.1.0", &g, err, errlen);
  for (int i = 0; st == RRT_SUCCESS && i < nm; i++)
    st = copy_column(w, in, path, "obsm", names[i], g, err, errlen);
  if (g >= 0) H5Gclose(g);
  names_free(names, nm);
  return st;
}

rrt_status rrt_h5ad_upgrade_into(rrt_h5w *w, const char *path, char *err, size_t errlen) {
  hid_t in = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (in < 0) {
    snprintf(err, errlen, "%s: cannot open as an HDF5 file", path);
    return RRT_ERR_IO;
  }
  rrt_status st = copy_x(w, in, path, err, errlen);
  if (st == RRT_SUCCESS) st = copy_table(w, in, path, "obs", err, errlen);
  if (st == RRT_SUCCESS && rrt_h5ad_legacy_table(in, "var"))
    st = copy_table(w, in, path, "var", err, errlen);
  if (st == RRT_SUCCESS) st = copy_obsm(w, in, path, err, errlen);
  static const char *const dicts[] = {"varm", "obsp", "varp", "layers", "uns"};
  for (int k = 0; st == RRT_SUCCESS && k < 5; k++) {
    hid_t g;
    st = rrt_h5w_group(w, w->f, dicts[k], "dict", "0.1.0", &g, err, errlen);
    if (st == RRT_SUCCESS) H5Gclose(g);
  }
  H5Fclose(in);
  return st;
}
