/*
** mapping.c -- the pieces the file loaders share (io/mapping.h says what
** holds).
*/
#include "io/mapping.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int em_io_host_is_little(void) {
  const uint16_t one = 1;
  return *(const uint8_t *)&one == 1;
}

void em_io_byteswap(void *data, int64_t n, int size) {
  uint8_t *p = data;
  for (int64_t i = 0; i < n; i++, p += size)
    for (int a = 0, b = size - 1; a < b; a++, b--) {
      uint8_t t = p[a];
      p[a] = p[b];
      p[b] = t;
    }
}

void em_io_byteswap_dtype(void *data, int64_t n, em_dtype dt) {
  int size = (int)em_dtype_size(dt);
  if (dt == EM_COMPLEX64 || dt == EM_COMPLEX128) em_io_byteswap(data, 2 * n, size / 2);
  else if (size > 1) em_io_byteswap(data, n, size);
}

int64_t em_io_bool_normalise(uint8_t *p, int64_t n, int fix) {
  int64_t bad = 0;
  for (int64_t i = 0; i < n; i++)
    if (p[i] > 1) {
      bad++;
      if (fix) p[i] = 1;
    }
  return bad;
}

em_status em_io_map_file(const char *op, const char *path, int shared,
                         em_io_mapping *m) {
  int fd = open(path, shared ? O_RDWR : O_RDONLY);
  if (fd < 0)
    return em_fail(EM_E_RUNTIME, "%s: cannot open '%s': %s", op, path, strerror(errno));
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    close(fd);
    return em_fail(EM_E_RUNTIME, "%s: '%s' is not a regular file", op, path);
  }
  m->len = (size_t)sb.st_size;
  m->base = NULL;
  if (m->len == 0) {
    close(fd);
    return EM_OK;
  }
  m->base = mmap(NULL, m->len, PROT_READ | PROT_WRITE,
                 shared ? MAP_SHARED : MAP_PRIVATE, fd, 0);
  int err = errno;
  close(fd);
  if (m->base == MAP_FAILED) {
    m->base = NULL;
    return em_fail(EM_E_RUNTIME, "%s: cannot map '%s': %s", op, path, strerror(err));
  }
  return EM_OK;
}

void em_io_unmap(em_io_mapping *m) {
  if (m->base) munmap(m->base, m->len);
  m->base = NULL;
  m->len = 0;
}

static void unmap_deleter(void *ctx, void *data, size_t nbytes) {
  em_io_mapping *m = ctx;
  em_io_unmap(m);
  free(m);
  (void)data; (void)nbytes;
}

em_status em_io_wrap_mapping(const char *op, em_io_mapping m, void *data,
                             size_t nbytes, em_storage **out) {
  em_io_mapping *ctx = malloc(sizeof *ctx);
  if (!ctx) {
    em_io_unmap(&m);
    return em_fail(EM_E_NOMEM, "%s: out of memory", op);
  }
  *ctx = m;
  em_status st = em_storage_wrap(data, nbytes, em_cpu(), unmap_deleter, ctx, out);
  if (st != EM_OK) {
    free(ctx);
    em_io_unmap(&m);
  }
  return st;
}
