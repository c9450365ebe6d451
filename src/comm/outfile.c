/* Output files written whole or not at all: a temporary next to the
 * target, renamed over it after a checked write (see outfile.h). */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* realpath */
#include "comm/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "comm/errbuf.h"

/* The directory part of path ("." when there is none), malloc'd. */
static char *dir_of(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return strdup(".");
  size_t n = slash == path ? 1 : (size_t)(slash - path);
  char *d = malloc(n + 1);
  if (d) memcpy(d, path, n), d[n] = '\0';
  return d;
}

static const char *base_of(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

/* A fresh, unused name ".BASE.XXXXXX" in the target's directory, opened
 * O_CREAT|O_EXCL. Mode 0666 lets the umask decide, as fopen would; the
 * caller copies the mode of a file being replaced. Returns the descriptor
 * (*tmp malloc'd) or -1 with errno set. */
static int create_temp(const char *target, char **tmp) {
  static const char digits[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  char *dir = dir_of(target);
  size_t len = (dir ? strlen(dir) : 0) + strlen(base_of(target)) + 16;
  *tmp = dir ? malloc(len) : NULL;
  if (!*tmp) {
    free(dir);
    errno = ENOMEM;
    return -1;
  }
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t z = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ ((uint64_t)getpid() << 40);
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
    z = z * 6364136223846793005ull + 1442695040888963407ull; /* a new suffix per attempt */
    char suffix[7];
    for (int k = 0; k < 6; k++)
      suffix[k] = digits[(z >> (10 + 7 * k)) % (sizeof digits - 1)];
    suffix[6] = '\0';
    /* the name is cut, not the directory, so that it stays under NAME_MAX */
    snprintf(*tmp, len, "%s/.%.200s.%s", dir, base_of(target), suffix);
    fd = open(*tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  int e = errno;
  free(dir);
  if (fd < 0) free(*tmp), *tmp = NULL;
  errno = e;
  return fd;
}

static void release(rrt_outfile *o) {
  free(o->name), free(o->target), free(o->tmp);
  memset(o, 0, sizeof *o);
}

/* An existing special file: written in place, nothing to rename. */
static rrt_status open_direct(rrt_outfile *o, char *err, size_t errlen) {
  o->f = fopen(o->name, "w");
  if (o->f) return RRT_SUCCESS;
  int e = errno;
  rrt_status st =
      rrt_errbuf(err, errlen, RRT_ERR_IO, "%s: cannot open for writing: %s", o->name, strerror(e));
  release(o);
  return st;
}

rrt_status rrt_outfile_open(rrt_outfile *o, const char *path, char *err, size_t errlen) {
  memset(o, 0, sizeof *o);
  if (!path || !*path) return rrt_errbuf(err, errlen, RRT_ERR_IO, "empty output file name");
  struct stat st;
  int exists = stat(path, &st) == 0;
  if (exists && S_ISDIR(st.st_mode))
    return rrt_errbuf(err, errlen, RRT_ERR_IO, "%s: is a directory", path);
  o->name = strdup(path);
  if (!o->name) return rrt_errbuf(err, errlen, RRT_ERR_IO, "%s: out of memory", path);
  if (exists && !S_ISREG(st.st_mode)) return open_direct(o, err, errlen);
  /* through a symlink, replace the file it points to, not the link */
  o->target = exists ? realpath(path, NULL) : strdup(path);
  int fd = o->target ? create_temp(o->target, &o->tmp) : -1;
  if (fd >= 0 && exists && fchmod(fd, st.st_mode & 07777) != 0) {
    close(fd), unlink(o->tmp);
    fd = -1;
  }
  if (fd >= 0) o->f = fdopen(fd, "wb");
  if (!o->f) {
    int e = errno;
    char *dir = dir_of(o->target ? o->target : path);
    rrt_errbuf(err, errlen, RRT_ERR_IO, "%s: cannot create a file in %s: %s", path,
               dir ? dir : "its directory", strerror(e));
    free(dir);
    if (fd >= 0) close(fd), unlink(o->tmp);
    release(o);
    return RRT_ERR_IO;
  }
  return RRT_SUCCESS;
}

/* Flush and close, checking every step: 0, or the first errno. */
static int finish_stream(rrt_outfile *o) {
  int e = 0;
  errno = 0;
  if (fflush(o->f) != 0) e = errno ? errno : EIO;
  if (!e && ferror(o->f)) e = EIO; /* an earlier write failed and its data is gone */
  if (!e && o->tmp && fsync(fileno(o->f)) != 0) e = errno;
  if (fclose(o->f) != 0 && !e) e = errno ? errno : EIO;
  o->f = NULL;
  return e;
}

/* After a rename, make the new directory entry durable (best effort: not
 * every file system can fsync a directory). */
static void sync_dir(const char *target) {
  char *dir = dir_of(target);
  int fd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
  if (fd >= 0) fsync(fd), close(fd);
  free(dir);
}

rrt_status rrt_outfile_commit(rrt_outfile *o, char *err, size_t errlen) {
  if (!o->f) return rrt_errbuf(err, errlen, RRT_ERR_IO, "output file not open");
  rrt_status st = RRT_SUCCESS;
  int e = finish_stream(o);
  if (e)
    st = rrt_errbuf(err, errlen, RRT_ERR_IO, "%s: write failed: %s", o->name, strerror(e));
  else if (o->tmp && rename(o->tmp, o->target) != 0)
    st = rrt_errbuf(err, errlen, RRT_ERR_IO, "%s: cannot replace the file: %s", o->name,
                    strerror(errno));
  if (st != RRT_SUCCESS && o->tmp) unlink(o->tmp);
  if (st == RRT_SUCCESS && o->tmp) sync_dir(o->target);
  release(o);
  return st;
}

void rrt_outfile_discard(rrt_outfile *o) {
  if (o->f) fclose(o->f);
  if (o->tmp) unlink(o->tmp);
  release(o);
}

rrt_status rrt_outfile_probe(const char *path, char *err, size_t errlen) {
  struct stat st;
  if (path && stat(path, &st) == 0 && !S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
    /* a device or FIFO: opening it could block or have effects; ask only */
    if (access(path, W_OK) == 0) return RRT_SUCCESS;
    return rrt_errbuf(err, errlen, RRT_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
  }
  rrt_outfile o;
  rrt_status s = rrt_outfile_open(&o, path, err, errlen);
  if (s == RRT_SUCCESS) rrt_outfile_discard(&o);
  return s;
}

/* What names a file: device and inode of a regular file, or of the
 * directory plus the name for one that does not exist yet. 0 when there is
 * no such identity (a special file, a missing directory). */
typedef struct file_id {
  dev_t dev;
  ino_t ino;
  const char *name; /* NULL for an existing file */
} file_id;

static int id_of(const char *path, file_id *id) {
  struct stat st;
  if (stat(path, &st) == 0) {
    id->dev = st.st_dev, id->ino = st.st_ino, id->name = NULL;
    return S_ISREG(st.st_mode);
  }
  char *dir = dir_of(path);
  int ok = dir && stat(dir, &st) == 0;
  free(dir);
  if (ok) id->dev = st.st_dev, id->ino = st.st_ino, id->name = base_of(path);
  return ok;
}

int rrt_outfile_same(const char *a, const char *b) {
  file_id x, y;
  if (!a || !b || !id_of(a, &x) || !id_of(b, &y)) return 0;
  if (x.dev != y.dev || x.ino != y.ino) return 0;
  if (!x.name || !y.name) return !x.name && !y.name;
  return strcmp(x.name, y.name) == 0;
}
