/*
** serialize.c -- ember's own file format (docs/serialization.md).
**
** What holds:
** - A file is a 40-byte header, an opaque metadata blob, a storage table, a
**   tensor table and the storages' bytes; every integer is little-endian
**   and of fixed width (never the platform's long).
** - Each storage is written once, however many saved tensors view it, and
**   the tensor table refers to storages by index: tensors that shared a
**   storage when saved share one after loading.
** - Loading checks every count, size and offset against the file's length
**   before allocating or reading anything, checks each tensor against its
**   storage (em_tensor_new), and normalises the bytes of bool tensors to
**   0/1; a truncated or corrupted file is an error naming what is wrong.
*/
#include "core/core.h"
#include "io/mapping.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static const char MAGIC[8] = {'\x89', 'E', 'M', 'B', 'E', 'R', '\r', '\n'};
enum { VERSION = 1, HEADER = 40, STORAGE_ENTRY = 16, TENSOR_FIXED = 24, ALIGN = 64 };

/* dtype codes in files: fixed here, independent of the em_dtype enum. */
static const em_dtype file_dtypes[] = {EM_BOOL,    EM_UINT8,    EM_INT8,    EM_INT16,
                                       EM_INT32,   EM_INT64,    EM_FLOAT16, EM_BFLOAT16,
                                       EM_FLOAT32, EM_FLOAT64,  EM_COMPLEX64, EM_COMPLEX128};
enum { N_FILE_DTYPES = sizeof file_dtypes / sizeof file_dtypes[0] };

static uint32_t file_code(em_dtype dt) {
  for (uint32_t i = 0; i < N_FILE_DTYPES; i++)
    if (file_dtypes[i] == dt) return i;
  return 0xffffffffu;
}

static uint64_t rd64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}
static uint32_t rd32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static void wr64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void wr32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* -- Loading ------------------------------------------------------------- */

struct em_loaded {
  int64_t n;
  em_tensor **tensors;
  void *meta;
  size_t metalen;
};

int64_t em_loaded_count(const em_loaded *f) { return f->n; }
em_tensor *em_loaded_tensor(const em_loaded *f, int64_t i) {
  return i >= 0 && i < f->n ? f->tensors[i] : NULL;
}
const void *em_loaded_meta(const em_loaded *f, size_t *len) {
  *len = f->metalen;
  return f->meta;
}
void em_loaded_free(em_loaded *f) {
  if (!f) return;
  for (int64_t i = 0; i < f->n; i++) em_tensor_release(f->tensors[i]);
  free(f->tensors);
  free(f->meta);
  free(f);
}

#define CORRUPT(...) em_fail(EM_E_VALUE, "load: " __VA_ARGS__)

em_status em_load_buffer(const void *buf, size_t len, em_loaded **out) {
  const uint8_t *b = buf;
  if (len < 8 || memcmp(b, MAGIC, 8) != 0)
    return CORRUPT("not an ember file (bad magic)");
  if (len < HEADER) return CORRUPT("truncated file (%zu bytes, header needs %d)", len, HEADER);
  uint32_t version = rd32(b + 8);
  if (version != VERSION)
    return em_fail(EM_E_VALUE, "load: file format version %u is not supported (this ember reads version %d)",
                   version, VERSION);
  if (!em_io_host_is_little())
    return em_fail(EM_E_RUNTIME, "load: big-endian hosts are not supported");
  uint64_t metalen = rd64(b + 16), nst = rd64(b + 24), nt = rd64(b + 32);
  uint64_t pos = HEADER;
  if (metalen > len - pos) return CORRUPT("truncated file (metadata of %llu bytes)",
                                          (unsigned long long)metalen);
  uint64_t meta_at = pos;
  pos += metalen;
  if (nst > (len - pos) / STORAGE_ENTRY)
    return CORRUPT("truncated file (%llu storages announced)", (unsigned long long)nst);
  uint64_t st_at = pos;
  pos += nst * STORAGE_ENTRY;
  if (nt > (len - pos) / TENSOR_FIXED)
    return CORRUPT("truncated file (%llu tensors announced)", (unsigned long long)nt);
  /* every storage's bytes lie inside the file */
  for (uint64_t i = 0; i < nst; i++) {
    uint64_t nb = rd64(b + st_at + 16 * i), off = rd64(b + st_at + 16 * i + 8);
    if (off > len || nb > len - off)
      return CORRUPT("truncated file (storage %llu: %llu bytes at offset %llu, the file has %zu)",
                     (unsigned long long)i, (unsigned long long)nb,
                     (unsigned long long)off, len);
  }

  em_status st = EM_OK;
  em_loaded *f = calloc(1, sizeof *f);
  em_storage **storages = calloc(nst ? nst : 1, sizeof *storages);
  if (f) {
    f->tensors = calloc(nt ? nt : 1, sizeof *f->tensors);
    f->meta = malloc(metalen ? metalen : 1);
  }
  if (!f || !storages || !f->tensors || !f->meta) {
    free(storages);
    em_loaded_free(f);
    return em_fail(EM_E_NOMEM, "load: out of memory");
  }
  memcpy(f->meta, b + meta_at, metalen);
  f->metalen = metalen;
  for (uint64_t i = 0; i < nst && st == EM_OK; i++) {
    uint64_t nb = rd64(b + st_at + 16 * i), off = rd64(b + st_at + 16 * i + 8);
    st = em_storage_new((size_t)nb, em_cpu(), &storages[i]);
    if (st == EM_OK && nb) memcpy(em_storage_data(storages[i]), b + off, nb);
  }
  for (uint64_t i = 0; i < nt && st == EM_OK; i++) {
    if (len - pos < TENSOR_FIXED) {
      st = CORRUPT("truncated tensor table");
      break;
    }
    uint32_t code = rd32(b + pos) & 0xffff, flags = rd32(b + pos) >> 16;
    uint32_t ndim = rd32(b + pos + 4);
    uint64_t si = rd64(b + pos + 8);
    int64_t offset = (int64_t)rd64(b + pos + 16);
    pos += TENSOR_FIXED;
    if (code >= N_FILE_DTYPES) {
      st = CORRUPT("tensor %llu has unknown dtype code %u", (unsigned long long)i, code);
      break;
    }
    if (ndim > EM_MAX_DIMS) {
      st = CORRUPT("tensor %llu has %u dimensions (at most %d)", (unsigned long long)i,
                   ndim, (int)EM_MAX_DIMS);
      break;
    }
    if (si >= nst) {
      st = CORRUPT("tensor %llu refers to storage %llu of %llu", (unsigned long long)i,
                   (unsigned long long)si, (unsigned long long)nst);
      break;
    }
    if (len - pos < 16 * (uint64_t)ndim) {
      st = CORRUPT("truncated tensor table");
      break;
    }
    int64_t sizes[EM_MAX_DIMS], strides[EM_MAX_DIMS];
    for (uint32_t d = 0; d < ndim; d++) {
      sizes[d] = (int64_t)rd64(b + pos + 8 * d);
      strides[d] = (int64_t)rd64(b + pos + 8 * (ndim + d));
    }
    pos += 16 * (uint64_t)ndim;
    em_dtype dt = file_dtypes[code];
    st = em_tensor_new(storages[si], offset, (int)ndim, sizes, strides, dt, &f->tensors[i]);
    if (st != EM_OK) {
      st = CORRUPT("tensor %llu does not fit its storage (%s)", (unsigned long long)i,
                   em_last_error());
      break;
    }
    f->n = (int64_t)i + 1;
    if (flags & ~1u) {
      st = CORRUPT("tensor %llu has unknown flags 0x%x", (unsigned long long)i, flags);
      break;
    }
    /* float and complex tensors may require grad (docs/autograd.md) */
    if ((flags & 1) && em_dtype_kindof(dt) != EM_KIND_FLOAT && dt != EM_COMPLEX64 &&
        dt != EM_COMPLEX128) {
      st = CORRUPT("tensor %llu of %s is marked requires_grad", (unsigned long long)i,
                   em_dtype_name(dt));
      break;
    }
    if (flags & 1) f->tensors[i]->requires_grad = true;
    if (dt == EM_BOOL && em_tensor_numel(f->tensors[i]) > 0) {
      /* the bytes the view can reach: [offset, last] */
      int64_t last = offset;
      for (uint32_t d = 0; d < ndim; d++) last += (sizes[d] - 1) * strides[d];
      uint8_t *p = em_storage_data(storages[si]);
      for (int64_t k = offset; k <= last; k++)
        if (p[k] > 1) p[k] = 1;
    }
  }
  for (uint64_t i = 0; i < nst; i++) em_storage_release(storages[i]);
  free(storages);
  if (st != EM_OK) {
    em_loaded_free(f);
    return st;
  }
  *out = f;
  return EM_OK;
}

em_status em_load(const char *path, em_loaded **out) {
  int fd = open(path, O_RDONLY);
  if (fd < 0)
    return em_fail(EM_E_RUNTIME, "load: cannot open '%s': %s", path, strerror(errno));
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    close(fd);
    return em_fail(EM_E_RUNTIME, "load: '%s' is not a regular file", path);
  }
  size_t len = (size_t)sb.st_size;
  if (len == 0) {
    close(fd);
    return em_fail(EM_E_VALUE, "load: '%s' is empty", path);
  }
  void *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
  int err = errno;
  close(fd);
  if (m == MAP_FAILED)
    return em_fail(EM_E_RUNTIME, "load: cannot map '%s': %s", path, strerror(err));
  em_status st = em_load_buffer(m, len, out);
  munmap(m, len);
  if (st != EM_OK) {
    /* "load: X" -> "load: 'path': X" */
    return em_fail(st, "load: '%s': %s", path, em_last_error_after("load"));
  }
  return EM_OK;
}

/* -- Saving -------------------------------------------------------------- */

em_status em_save(const char *path, int64_t ntensors,
                  const em_tensor *const *tensors, const void *meta,
                  size_t metalen) {
  if (ntensors < 0) return em_fail(EM_E_VALUE, "save: %lld tensors", (long long)ntensors);
  if (!em_io_host_is_little())
    return em_fail(EM_E_RUNTIME, "save: big-endian hosts are not supported");
  for (int64_t i = 0; i < ntensors; i++) {
    char d[32];
    em_device dev = tensors[i]->storage->device;
    if (!em_device_has_data(dev))
      return em_fail(EM_E_RUNTIME, "save: tensor %lld is a meta tensor: it has no data",
                     (long long)i + 1);
    if (dev.type != EM_CPU)
      return em_fail(EM_E_RUNTIME, "save: tensor %lld is on %s; use :cpu() first",
                     (long long)i + 1, em_device_str(dev, d, sizeof d));
  }
  /* distinct storages, in first-use order; sidx[i] is tensor i's index */
  em_storage **uniq = malloc((ntensors ? ntensors : 1) * sizeof *uniq);
  uint64_t *sidx = malloc((ntensors ? ntensors : 1) * sizeof *sidx);
  uint64_t *offs = malloc((ntensors ? ntensors : 1) * sizeof *offs);
  if (!uniq || !sidx || !offs) {
    free(uniq); free(sidx); free(offs);
    return em_fail(EM_E_NOMEM, "save: out of memory");
  }
  int64_t nst = 0;
  for (int64_t i = 0; i < ntensors; i++) {
    int64_t k = 0;
    while (k < nst && uniq[k] != tensors[i]->storage) k++;
    if (k == nst) uniq[nst++] = tensors[i]->storage;
    sidx[i] = (uint64_t)k;
  }
  uint64_t pos = HEADER + metalen + (uint64_t)nst * STORAGE_ENTRY;
  for (int64_t i = 0; i < ntensors; i++) pos += TENSOR_FIXED + 16 * (uint64_t)tensors[i]->ndim;
  for (int64_t k = 0; k < nst; k++) {
    pos = (pos + ALIGN - 1) / ALIGN * ALIGN;
    offs[k] = pos;
    pos += uniq[k]->nbytes;
  }
  em_status st = EM_OK;
  FILE *f = fopen(path, "wb");
  if (!f) {
    st = em_fail(EM_E_RUNTIME, "save: cannot open '%s' for writing: %s", path, strerror(errno));
    goto done;
  }
  uint8_t h[HEADER] = {0};
  memcpy(h, MAGIC, 8);
  wr32(h + 8, VERSION);
  wr32(h + 12, 0);
  wr64(h + 16, metalen);
  wr64(h + 24, (uint64_t)nst);
  wr64(h + 32, (uint64_t)ntensors);
  int ok = fwrite(h, 1, HEADER, f) == HEADER && (!metalen || fwrite(meta, 1, metalen, f) == metalen);
  uint64_t at = HEADER + metalen;
  for (int64_t k = 0; k < nst && ok; k++) {
    uint8_t e[STORAGE_ENTRY];
    wr64(e, uniq[k]->nbytes);
    wr64(e + 8, offs[k]);
    ok = fwrite(e, 1, sizeof e, f) == sizeof e;
    at += sizeof e;
  }
  for (int64_t i = 0; i < ntensors && ok; i++) {
    const em_tensor *t = tensors[i];
    uint8_t e[TENSOR_FIXED + 16 * EM_MAX_DIMS];
    wr32(e, file_code(t->dtype) | (t->requires_grad ? 1u << 16 : 0));
    wr32(e + 4, (uint32_t)t->ndim);
    wr64(e + 8, sidx[i]);
    wr64(e + 16, (uint64_t)t->offset);
    for (int d = 0; d < t->ndim; d++) {
      wr64(e + 24 + 8 * d, (uint64_t)t->sizes[d]);
      wr64(e + 24 + 8 * (t->ndim + d), (uint64_t)t->strides[d]);
    }
    size_t n = TENSOR_FIXED + 16 * (size_t)t->ndim;
    ok = fwrite(e, 1, n, f) == n;
    at += n;
  }
  static const uint8_t zeros[ALIGN];
  for (int64_t k = 0; k < nst && ok; k++) {
    ok = fwrite(zeros, 1, offs[k] - at, f) == offs[k] - at;
    size_t nb = uniq[k]->nbytes;
    ok = ok && (!nb || fwrite(uniq[k]->data, 1, nb, f) == nb);
    at = offs[k] + nb;
  }
  ok = (fclose(f) == 0) && ok;
  if (!ok) st = em_fail(EM_E_RUNTIME, "save: write error on '%s'", path);
done:
  free(uniq);
  free(sidx);
  free(offs);
  return st;
}
