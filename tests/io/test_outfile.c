/* Outputs written whole or not at all (comm/outfile.h): a completed write
 * replaces the target (new files get the permissions fopen gives, replaced
 * files keep theirs); a write that fails midway (a file-size limit, a full
 * device) leaves the old target and no temporary behind and names the file
 * and the OS error; the probe refuses what cannot be written; the library
 * writers (npy, Matrix Market) go through it. */
#define _DEFAULT_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "comm/outfile.h"
#include "io/mmio.h"
#include "io/npy.h"
#include "test_util.h"

static char dir[256];

static const char *at(const char *name) {
  static char buf[4][512];
  static int k = 0;
  k = (k + 1) % 4;
  snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
  return buf[k];
}

static void put(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  if (f) fputs(text, f), fclose(f);
}

static int holds(const char *path, const char *text) {
  char buf[256] = "";
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  return strcmp(buf, text) == 0;
}

/* Files in the folder: a temporary left behind shows as one too many. */
static int entries(void) {
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));)
    n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  if (d) closedir(d);
  return n;
}

static void test_write_and_replace(void) {
  rrt_outfile o;
  char err[512];
  CHECK_OK(rrt_outfile_open(&o, at("new.txt"), err, sizeof err));
  fputs("hello\n", o.f);
  CHECK(access(at("new.txt"), F_OK) != 0); /* nothing at the target before the commit */
  CHECK_OK(rrt_outfile_commit(&o, err, sizeof err));
  struct stat st;
  CHECK(stat(at("new.txt"), &st) == 0 && (st.st_mode & 0777) == 0640); /* 0666 & ~umask 027 */
  CHECK(holds(at("new.txt"), "hello\n"));
  CHECK(entries() == 1);
  chmod(at("new.txt"), 0600);
  CHECK_OK(rrt_outfile_open(&o, at("new.txt"), err, sizeof err));
  fputs("again\n", o.f);
  CHECK(holds(at("new.txt"), "hello\n")); /* the old content until the commit */
  CHECK_OK(rrt_outfile_commit(&o, err, sizeof err));
  CHECK(holds(at("new.txt"), "again\n"));
  CHECK(stat(at("new.txt"), &st) == 0 && (st.st_mode & 0777) == 0600); /* kept, as fopen would */
  CHECK_OK(rrt_outfile_open(&o, at("new.txt"), err, sizeof err));
  fputs("abandoned\n", o.f);
  rrt_outfile_discard(&o);
  CHECK(holds(at("new.txt"), "again\n"));
  CHECK(entries() == 1);
  /* through a symlink: the file it points to is replaced, the link stays */
  CHECK(symlink("new.txt", at("link.txt")) == 0);
  CHECK_OK(rrt_outfile_open(&o, at("link.txt"), err, sizeof err));
  fputs("linked\n", o.f);
  CHECK_OK(rrt_outfile_commit(&o, err, sizeof err));
  CHECK(lstat(at("link.txt"), &st) == 0 && S_ISLNK(st.st_mode));
  CHECK(holds(at("new.txt"), "linked\n"));
  unlink(at("link.txt"));
}

/* A write that fails midway: past RLIMIT_FSIZE write() fails with EFBIG. */
static void test_fails_midway(void) {
  put(at("keep.txt"), "precious\n");
  struct rlimit old, small = {4096, 0};
  getrlimit(RLIMIT_FSIZE, &old);
  small.rlim_max = old.rlim_max;
  signal(SIGXFSZ, SIG_IGN);
  CHECK(setrlimit(RLIMIT_FSIZE, &small) == 0);
  rrt_outfile o;
  char err[512] = "";
  CHECK_OK(rrt_outfile_open(&o, at("keep.txt"), err, sizeof err));
  for (int i = 0; i < 10000; i++)
    fputs("0123456789", o.f);
  CHECK(rrt_outfile_commit(&o, err, sizeof err) == RRT_ERR_IO);
  CHECK_MSG(strstr(err, "keep.txt: write failed: File too large") != NULL, "%s", err);
  int64_t shape[1] = {100000};
  double *zeros = calloc(100000, sizeof(double));
  CHECK(rrt_npy_write(at("keep.txt"), "<f8", 1, shape, zeros, err, sizeof err) == RRT_ERR_IO);
  CHECK_MSG(strstr(err, "keep.txt: write failed: File too large") != NULL, "%s", err);
  free(zeros);
  setrlimit(RLIMIT_FSIZE, &old);
  CHECK(holds(at("keep.txt"), "precious\n"));
  CHECK_MSG(entries() == 2, "%d entries: a temporary was left behind", entries());
}

/* A full device cannot be a rename target: written directly, the error kept. */
static void test_full_device(void) {
  rrt_outfile o;
  char err[512] = "";
  CHECK_OK(rrt_outfile_open(&o, "/dev/full", err, sizeof err));
  fputs("x\n", o.f);
  CHECK(rrt_outfile_commit(&o, err, sizeof err) == RRT_ERR_IO);
  CHECK_MSG(strcmp(err, "/dev/full: write failed: No space left on device") == 0, "%s", err);
  int64_t r[3] = {0, 1, 2}, c[2] = {0, 1};
  double v[2] = {1, 2};
  rrt_csr a = {2, 2, 2, r, c, v};
  CHECK(rrt_mm_write("/dev/full", &a, NULL, err, sizeof err) == RRT_ERR_IO);
  CHECK_MSG(strstr(err, "No space left on device") != NULL, "%s", err);
  CHECK_OK(rrt_mm_write("/dev/null", &a, NULL, err, sizeof err));
}

static void test_probe_and_same(void) {
  char err[512] = "";
  CHECK_OK(rrt_outfile_probe(at("fresh.txt"), err, sizeof err));
  CHECK(access(at("fresh.txt"), F_OK) != 0 && entries() == 2); /* the probe left nothing */
  CHECK(rrt_outfile_probe(at("nodir/x.csv"), err, sizeof err) == RRT_ERR_IO);
  CHECK_MSG(strstr(err, "nodir/x.csv: cannot create a file in ") && strstr(err, "/nodir: No such"),
            "%s", err);
  CHECK(rrt_outfile_probe(at("keep.txt/x.csv"), err, sizeof err) == RRT_ERR_IO);
  CHECK_MSG(strstr(err, "Not a directory") != NULL, "%s", err);
  CHECK(rrt_outfile_probe(dir, err, sizeof err) == RRT_ERR_IO);
  CHECK_MSG(strstr(err, "is a directory") != NULL, "%s", err);
  CHECK_OK(rrt_outfile_probe("/dev/null", err, sizeof err));
  char other[600];
  snprintf(other, sizeof other, "%s/../%s/keep.txt", dir, strrchr(dir, '/') + 1);
  CHECK(rrt_outfile_same(at("keep.txt"), other));              /* one file, two spellings */
  CHECK(rrt_outfile_same(at("later.csv"), at("./later.csv"))); /* not there yet */
  CHECK(!rrt_outfile_same(at("keep.txt"), at("new.txt")));
  CHECK(!rrt_outfile_same(at("later.csv"), at("other.csv")));
  CHECK(!rrt_outfile_same("/dev/null", "/dev/null")); /* special files take any number */
}

int main(void) {
  umask(027);
  snprintf(dir, sizeof dir, "%s/rrt_outfile_XXXXXX", rrt_test_tmpdir());
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  test_write_and_replace();
  test_fails_midway();
  test_full_device();
  test_probe_and_same();
  unlink(at("new.txt")), unlink(at("keep.txt"));
  rmdir(dir);
  return test_result();
}
