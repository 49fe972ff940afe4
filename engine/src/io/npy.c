/*
** npy.c -- NumPy's .npy and .npz files.
**
** What holds:
** - Every length read from a file (header length, shape, zip sizes and
**   offsets) is checked against the bytes actually present before anything
**   is read or allocated, so a truncated or lying file gives an error, never
**   an out-of-bounds read or a huge allocation. A deflated .npz member may
**   not claim more than zlib's maximum expansion of its compressed size.
** - Loaded data is in the host's byte order; bool bytes are 0 or 1 (other
**   bytes are normalised on a copy, refused on a mapping), so C's bool loads
**   stay defined.
** - A mapped load (EM_NPY_MMAP_*) wraps the mapping in a storage whose
**   deleter unmaps it exactly once, when the last view goes. Mappings are
**   always writable: copy-on-write (private) or shared. ember has no
**   read-only tensors, so a PROT_READ mapping would turn an ordinary write
**   into a segfault.
** - Files we write are byte-identical to numpy.save's (version 1.0 header,
**   the same dict text, growth padding and 64-byte alignment).
*/
#include "core/core.h"
#include "core/errmsg.h"
#include "io/mapping.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

void em_free(void *p) { free(p); }

/* -- dtypes -------------------------------------------------------------- */

typedef struct {
  em_dtype dt;
  char kind;   /* numpy's kind letter */
  int size;
} npy_type;

static const npy_type npy_types[] = {
    {EM_BOOL, 'b', 1},    {EM_UINT8, 'u', 1},   {EM_INT8, 'i', 1},
    {EM_INT16, 'i', 2},   {EM_INT32, 'i', 4},   {EM_INT64, 'i', 8},
    {EM_FLOAT16, 'f', 2}, {EM_FLOAT32, 'f', 4}, {EM_FLOAT64, 'f', 8},
};

/* -- Header parsing ------------------------------------------------------ */

typedef struct {
  em_dtype dt;
  int itemsize;
  int swap;          /* file byte order differs from the host's */
  int fortran;
  int ndim;
  int64_t sizes[EM_MAX_DIMS];
  int64_t numel;
  size_t data_off;   /* where the data starts in the file */
  size_t data_len;   /* numel * itemsize */
} npy_header;

typedef struct {
  const char *p, *end;
} cursor;

static void skip_ws(cursor *c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' ||
                           *c->p == '\r'))
    c->p++;
}

static int accept(cursor *c, char ch) {
  skip_ws(c);
  if (c->p < c->end && *c->p == ch) {
    c->p++;
    return 1;
  }
  return 0;
}

/* A Python string literal ('...' or "..."), no escapes (numpy's keys and
** descrs have none). Copies at most n-1 bytes into out. */
static int parse_str(cursor *c, char *out, size_t n) {
  skip_ws(c);
  if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return 0;
  char q = *c->p++;
  size_t k = 0;
  while (c->p < c->end && *c->p != q) {
    if (*c->p == '\\' || k + 1 >= n) return 0;
    out[k++] = *c->p++;
  }
  if (c->p >= c->end) return 0;
  c->p++;
  out[k] = '\0';
  return 1;
}

static int parse_word(cursor *c, const char *w) {
  skip_ws(c);
  size_t n = strlen(w);
  if ((size_t)(c->end - c->p) >= n && memcmp(c->p, w, n) == 0) {
    c->p += n;
    return 1;
  }
  return 0;
}

static em_status parse_descr(const char *op, const char *d, npy_header *h) {
  char order = d[0];
  if (order != '<' && order != '>' && order != '|' && order != '=')
    return em_fail(EM_E_TYPE, "%s: unsupported dtype '%s'", op, d);
  char kind = d[1];
  char *end;
  long size = kind ? strtol(d + 2, &end, 10) : 0;
  if (!kind || d[2] < '0' || d[2] > '9' || *end != '\0')
    return em_fail(EM_E_TYPE, "%s: unsupported dtype '%s'", op, d);
  for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
    if (npy_types[i].kind == kind && npy_types[i].size == size) {
      h->dt = npy_types[i].dt;
      h->itemsize = (int)size;
      int little = order == '<' || (order == '=' && em_io_host_is_little());
      h->swap = size > 1 && order != '|' && little != em_io_host_is_little();
      return EM_OK;
    }
  return em_fail(EM_E_TYPE,
                 "%s: unsupported dtype '%s' (ember reads bool, uint8, int8, "
                 "int16, int32, int64, float16, float32 and float64)",
                 op, d);
}

static em_status parse_shape(const char *op, cursor *c, npy_header *h) {
  if (!accept(c, '(')) return em_fail(EM_E_VALUE, "%s: malformed header: bad shape", op);
  h->ndim = 0;
  for (;;) {
    if (accept(c, ')')) break;
    skip_ws(c);
    if (c->p >= c->end || *c->p < '0' || *c->p > '9')
      return em_fail(EM_E_VALUE, "%s: malformed header: bad shape", op);
    int64_t v = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
      if (__builtin_mul_overflow(v, 10, &v) ||
          __builtin_add_overflow(v, *c->p - '0', &v))
        return em_fail(EM_E_VALUE, "%s: malformed header: shape entry too large", op);
      c->p++;
    }
    if (c->p < c->end && *c->p == 'L') c->p++; /* Python 2 longs */
    if (h->ndim == EM_MAX_DIMS)
      return em_fail(EM_E_VALUE, "%s: more than %d dimensions", op, (int)EM_MAX_DIMS);
    h->sizes[h->ndim++] = v;
    if (accept(c, ')')) break;
    if (!accept(c, ','))
      return em_fail(EM_E_VALUE, "%s: malformed header: bad shape", op);
  }
  return EM_OK;
}

/* Parses the header of the .npy image buf[0..len) (len may cover only the
** header and data; the data length is checked against it). */
static em_status parse_header(const char *op, const uint8_t *buf, size_t len,
                              npy_header *h) {
  if (len < 10 || memcmp(buf, "\x93NUMPY", 6) != 0)
    return em_fail(EM_E_VALUE, "%s: not a .npy file (bad magic)", op);
  int major = buf[6];
  size_t hlen, start;
  if (major == 1) {
    hlen = (size_t)buf[8] | (size_t)buf[9] << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (len < 12) return em_fail(EM_E_VALUE, "%s: truncated header", op);
    hlen = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 |
           (size_t)buf[11] << 24;
    start = 12;
  } else {
    return em_fail(EM_E_VALUE, "%s: unsupported .npy format version %d.%d", op,
                   major, buf[7]);
  }
  if (hlen > len - start)
    return em_fail(EM_E_VALUE,
                   "%s: truncated header (%zu bytes announced, %zu present)", op,
                   hlen, len - start);
  cursor c = {(const char *)buf + start, (const char *)buf + start + hlen};
  int seen_descr = 0, seen_order = 0, seen_shape = 0;
  if (!accept(&c, '{')) return em_fail(EM_E_VALUE, "%s: malformed header", op);
  for (;;) {
    if (accept(&c, '}')) break;
    char key[32], val[32];
    if (!parse_str(&c, key, sizeof key) || !accept(&c, ':'))
      return em_fail(EM_E_VALUE, "%s: malformed header", op);
    em_status st;
    if (strcmp(key, "descr") == 0 && !seen_descr) {
      if (!parse_str(&c, val, sizeof val))
        return em_fail(EM_E_TYPE,
                       "%s: unsupported dtype (structured or malformed descr)", op);
      if ((st = parse_descr(op, val, h)) != EM_OK) return st;
      seen_descr = 1;
    } else if (strcmp(key, "fortran_order") == 0 && !seen_order) {
      if (parse_word(&c, "True")) h->fortran = 1;
      else if (parse_word(&c, "False")) h->fortran = 0;
      else return em_fail(EM_E_VALUE, "%s: malformed header: bad fortran_order", op);
      seen_order = 1;
    } else if (strcmp(key, "shape") == 0 && !seen_shape) {
      if ((st = parse_shape(op, &c, h)) != EM_OK) return st;
      seen_shape = 1;
    } else {
      return em_fail(EM_E_VALUE, "%s: malformed header: unexpected key '%s'", op, key);
    }
    if (accept(&c, '}')) break;
    if (!accept(&c, ',')) return em_fail(EM_E_VALUE, "%s: malformed header", op);
  }
  if (!seen_descr || !seen_order || !seen_shape)
    return em_fail(EM_E_VALUE,
                   "%s: malformed header: needs 'descr', 'fortran_order' and 'shape'", op);
  em_status st = em_numel_checked(op, h->ndim, h->sizes, &h->numel);
  if (st != EM_OK) return st;
  int64_t bytes;
  if (em_mul_overflow_i64(h->numel, h->itemsize, &bytes))
    return em_fail(EM_E_VALUE, "%s: header shape is too large", op);
  h->data_off = start + hlen;
  h->data_len = (size_t)bytes;
  return EM_OK;
}

/* C- or Fortran-order strides. With a zero-size dim the other sizes may
** multiply past int64 (numel is 0, so nothing checked them): the strides of
** an empty tensor address nothing, so they saturate instead of overflowing. */
static void npy_strides(const npy_header *h, int64_t *strides) {
  int64_t s = 1;
  for (int k = 0; k < h->ndim; k++) {
    int i = h->fortran ? k : h->ndim - 1 - k;
    strides[i] = s;
    int64_t n = h->sizes[i] > 1 ? h->sizes[i] : 1;
    if (__builtin_mul_overflow(s, n, &s)) s = INT64_MAX;
  }
}

static em_status check_data(const char *op, const npy_header *h, size_t len) {
  if (h->data_len > len - h->data_off) {
    char b[EM_SHAPE_BUF];
    return em_fail(EM_E_VALUE,
                   "%s: truncated data: shape %s of %s needs %zu bytes, the file "
                   "holds %zu",
                   op, em_fmt_shape(b, sizeof b, h->ndim, h->sizes),
                   em_dtype_name(h->dt), h->data_len, len - h->data_off);
  }
  return EM_OK;
}

/* A fresh tensor from the header, its data copied from src. */
static em_status make_copy(const npy_header *h, const void *src, em_tensor **out) {
  em_storage *s;
  em_status st = em_storage_new(h->data_len, em_cpu(), &s);
  if (st != EM_OK) return st;
  if (h->data_len) memcpy(em_storage_data(s), src, h->data_len);
  if (h->swap) em_io_byteswap(em_storage_data(s), h->numel, h->itemsize);
  if (h->dt == EM_BOOL) em_io_bool_normalise(em_storage_data(s), h->numel, 1);
  int64_t strides[EM_MAX_DIMS];
  npy_strides(h, strides);
  st = em_tensor_new(s, 0, h->ndim, h->sizes, strides, h->dt, out);
  em_storage_release(s);
  return st;
}

em_status em_npy_decode(const void *buf, size_t len, em_tensor **out) {
  npy_header h = {0};
  em_status st = parse_header("load_npy", buf, len, &h);
  if (st == EM_OK) st = check_data("load_npy", &h, len);
  if (st != EM_OK) return st;
  return make_copy(&h, (const uint8_t *)buf + h.data_off, out);
}

/* -- Loading files ------------------------------------------------------- */

static em_status load_mapped(const char *path, int shared, em_tensor **out) {
  const char *op = "load_npy";
  em_io_mapping m;
  em_status st = em_io_map_file(op, path, shared, &m);
  if (st != EM_OK) return st;
  npy_header h = {0};
  st = parse_header(op, m.base, m.len, &h);
  if (st == EM_OK) st = check_data(op, &h, m.len);
  uint8_t *data = (uint8_t *)m.base + h.data_off;
  if (st == EM_OK && h.swap)
    st = em_fail(EM_E_VALUE,
                 "%s: cannot map '%s': its data is in the other byte order; load "
                 "it without mmap to convert",
                 op, path);
  if (st == EM_OK && (uintptr_t)data % (uintptr_t)h.itemsize != 0)
    st = em_fail(EM_E_VALUE,
                 "%s: cannot map '%s': its data is not aligned for %s; load it "
                 "without mmap",
                 op, path, em_dtype_name(h.dt));
  if (st == EM_OK && h.dt == EM_BOOL && em_io_bool_normalise(data, h.numel, 0))
    st = em_fail(EM_E_VALUE,
                 "%s: cannot map '%s': its bool data holds bytes other than 0 and 1",
                 op, path);
  if (st != EM_OK) {
    em_io_unmap(&m);
    return st;
  }
  em_storage *s;
  st = em_io_wrap_mapping(op, m, data, h.data_len, &s);
  if (st != EM_OK) return st;
  /* from here the storage owns the mapping */
  int64_t strides[EM_MAX_DIMS];
  npy_strides(&h, strides);
  st = em_tensor_new(s, 0, h.ndim, h.sizes, strides, h.dt, out);
  em_storage_release(s);
  return st;
}

static em_status load_read(const char *path, em_tensor **out) {
  const char *op = "load_npy";
  FILE *f = fopen(path, "rb");
  if (!f)
    return em_fail(EM_E_RUNTIME, "%s: cannot open '%s': %s", op, path, strerror(errno));
  struct stat sb;
  if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
    fclose(f);
    return em_fail(EM_E_RUNTIME, "%s: '%s' is not a regular file", op, path);
  }
  size_t flen = (size_t)sb.st_size;
  /* The header is at most 12 + 2^32 bytes by the format; numpy keeps it
  ** under 10000 bytes. Read the prefix, then exactly the header. */
  uint8_t pre[12];
  size_t got = fread(pre, 1, sizeof pre < flen ? sizeof pre : flen, f);
  em_status st = EM_OK;
  uint8_t *hdr = NULL;
  size_t hsize = 0;
  if (got < 10 || memcmp(pre, "\x93NUMPY", 6) != 0) {
    st = em_fail(EM_E_VALUE, "%s: '%s' is not a .npy file (bad magic)", op, path);
  } else {
    size_t hlen = pre[6] == 1 ? ((size_t)pre[8] | (size_t)pre[9] << 8)
                              : got < 12 ? 0
                                         : ((size_t)pre[8] | (size_t)pre[9] << 8 |
                                            (size_t)pre[10] << 16 | (size_t)pre[11] << 24);
    hsize = (pre[6] == 1 ? 10 : 12) + hlen;
    if (hsize > flen) hsize = flen;  /* parse_header reports the truncation */
    if (hsize > ((size_t)1 << 20))
      st = em_fail(EM_E_VALUE, "%s: header of %zu bytes is too large", op, hsize);
    else if (!(hdr = malloc(hsize)))
      st = em_fail(EM_E_NOMEM, "%s: out of memory", op);
    else if (fseek(f, 0, SEEK_SET) != 0 || fread(hdr, 1, hsize, f) != hsize)
      st = em_fail(EM_E_RUNTIME, "%s: read error on '%s'", op, path);
  }
  npy_header h = {0};
  if (st == EM_OK) st = parse_header(op, hdr, hsize, &h);
  free(hdr);
  if (st == EM_OK) st = check_data(op, &h, flen);
  em_storage *s = NULL;
  if (st == EM_OK) st = em_storage_new(h.data_len, em_cpu(), &s);
  if (st == EM_OK && h.data_len &&
      fread(em_storage_data(s), 1, h.data_len, f) != h.data_len)
    st = em_fail(EM_E_RUNTIME, "%s: read error on '%s'", op, path);
  fclose(f);
  if (st == EM_OK) {
    if (h.swap) em_io_byteswap(em_storage_data(s), h.numel, h.itemsize);
    if (h.dt == EM_BOOL) em_io_bool_normalise(em_storage_data(s), h.numel, 1);
    int64_t strides[EM_MAX_DIMS];
    npy_strides(&h, strides);
    st = em_tensor_new(s, 0, h.ndim, h.sizes, strides, h.dt, out);
  }
  em_storage_release(s);
  return st;
}

em_status em_npy_load(const char *path, em_npy_mode mode, em_tensor **out) {
  switch (mode) {
    case EM_NPY_READ: return load_read(path, out);
    case EM_NPY_MMAP_COPY: return load_mapped(path, 0, out);
    case EM_NPY_MMAP_SHARED: return load_mapped(path, 1, out);
  }
  return em_fail(EM_E_VALUE, "load_npy: unknown mode %d", (int)mode);
}

/* -- Writing ------------------------------------------------------------- */

static const npy_type *npy_type_of(em_dtype dt) {
  for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
    if (npy_types[i].dt == dt) return &npy_types[i];
  return NULL;
}

/* Fortran-contiguous: dims (ignoring size-1 dims) packed column-major. */
static int is_f_contiguous(const em_tensor *t) {
  int64_t expect = 1;
  for (int i = 0; i < t->ndim; i++) {
    if (t->sizes[i] == 1) continue;
    if (t->strides[i] != expect) return 0;
    expect *= t->sizes[i];
  }
  return 1;
}

/* Writes numpy's header for (dt, shape, fortran) into hdr (>= 1024 bytes);
** returns its length (a multiple of 64). */
static size_t make_header(char *hdr, const npy_type *ty, int ndim,
                          const int64_t *sizes, int fortran) {
  char dict[768];
  int n = snprintf(dict, sizeof dict, "{'descr': '%c%c%d', 'fortran_order': %s, 'shape': (",
                   ty->size == 1 ? '|' : '<', ty->kind, ty->size,
                   fortran ? "True" : "False");
  for (int i = 0; i < ndim; i++)
    n += snprintf(dict + n, sizeof dict - n, i ? ", %lld" : "%lld", (long long)sizes[i]);
  n += snprintf(dict + n, sizeof dict - n, "%s), }", ndim == 1 ? "," : "");
  if (ndim > 0) { /* numpy's spare room for growing the leading axis */
    char num[24];
    int digits = snprintf(num, sizeof num, "%lld",
                          (long long)sizes[fortran ? ndim - 1 : 0]);
    for (int i = digits; i < 21; i++) dict[n++] = ' ';
  }
  size_t hlen = (size_t)n + 1;
  size_t pad = 64 - (10 + hlen) % 64;
  memcpy(hdr, "\x93NUMPY\x01\x00", 8);
  hdr[8] = (char)((hlen + pad) & 0xff);
  hdr[9] = (char)((hlen + pad) >> 8);
  memcpy(hdr + 10, dict, (size_t)n);
  memset(hdr + 10 + n, ' ', pad);
  hdr[10 + n + pad] = '\n';
  return 10 + hlen + pad;
}

/* The header and a pointer to t's bytes in file order; *tmp is a copy to
** release (or NULL). */
static em_status prepare_write(const char *op, const em_tensor *t, char *hdr,
                               size_t *hlen, const void **data, size_t *dlen,
                               em_tensor **tmp) {
  *tmp = NULL;
  em_status vst = em_tensor_check_values(op, t);
  if (vst != EM_OK) return vst;
  if (t->storage->device.type != EM_CPU) {
    char d[32];
    return em_fail(EM_E_RUNTIME, EM_MSG_CPU_ONLY, op, em_device_str(t->storage->device, d, sizeof d));
  }
  const npy_type *ty = npy_type_of(t->dtype);
  if (!ty)
    return em_fail(EM_E_TYPE,
                   "%s: NumPy has no %s dtype; convert first (e.g. t:float())", op,
                   em_dtype_name(t->dtype));
  if (!em_io_host_is_little())
    return em_fail(EM_E_RUNTIME, "%s: big-endian hosts are not supported", op);
  int fortran = 0;
  const em_tensor *src = t;
  if (!em_tensor_is_contiguous(t)) {
    if (is_f_contiguous(t)) {
      fortran = 1;
    } else {
      em_status st = em_contiguous(t, tmp);
      if (st != EM_OK) return st;
      src = *tmp;
    }
  }
  *hlen = make_header(hdr, ty, t->ndim, t->sizes, fortran);
  *data = em_tensor_data(src);
  *dlen = (size_t)em_tensor_numel(t) * (size_t)ty->size;
  return EM_OK;
}

em_status em_npy_encode(const em_tensor *t, void **buf, size_t *len) {
  char hdr[1024];
  size_t hlen = 0, dlen = 0;  /* set by prepare_write; zeroed for -Wmaybe-uninitialized */
  const void *data = NULL;
  em_tensor *tmp = NULL;
  em_status st = prepare_write("save_npy", t, hdr, &hlen, &data, &dlen, &tmp);
  if (st != EM_OK) return st;
  uint8_t *out = malloc(hlen + dlen ? hlen + dlen : 1);
  if (!out) {
    em_tensor_release(tmp);
    return em_fail(EM_E_NOMEM, "save_npy: out of memory");
  }
  memcpy(out, hdr, hlen);
  if (dlen) memcpy(out + hlen, data, dlen);
  em_tensor_release(tmp);
  *buf = out;
  *len = hlen + dlen;
  return EM_OK;
}

em_status em_npy_save(const char *path, const em_tensor *t) {
  char hdr[1024];
  size_t hlen = 0, dlen = 0;  /* set by prepare_write; zeroed for -Wmaybe-uninitialized */
  const void *data = NULL;
  em_tensor *tmp = NULL;
  em_status st = prepare_write("save_npy", t, hdr, &hlen, &data, &dlen, &tmp);
  if (st != EM_OK) return st;
  FILE *f = fopen(path, "wb");
  if (!f) {
    em_tensor_release(tmp);
    return em_fail(EM_E_RUNTIME, "save_npy: cannot open '%s' for writing: %s", path,
                   strerror(errno));
  }
  int ok = fwrite(hdr, 1, hlen, f) == hlen && (!dlen || fwrite(data, 1, dlen, f) == dlen);
  ok = (fclose(f) == 0) && ok;
  em_tensor_release(tmp);
  if (!ok) return em_fail(EM_E_RUNTIME, "save_npy: write error on '%s'", path);
  return EM_OK;
}

/* -- .npz: zip archives -------------------------------------------------- */

struct em_npz {
  int64_t n;
  char **names;
  em_tensor **tensors;
};

int64_t em_npz_count(const em_npz *z) { return z->n; }
const char *em_npz_name(const em_npz *z, int64_t i) {
  return i >= 0 && i < z->n ? z->names[i] : NULL;
}
em_tensor *em_npz_tensor(const em_npz *z, int64_t i) {
  return i >= 0 && i < z->n ? z->tensors[i] : NULL;
}
void em_npz_free(em_npz *z) {
  if (!z) return;
  for (int64_t i = 0; i < z->n; i++) {
    free(z->names[i]);
    em_tensor_release(z->tensors[i]);
  }
  free(z->names);
  free(z->tensors);
  free(z);
}

static uint32_t rd16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t rd32(const uint8_t *p) { return rd16(p) | rd16(p + 2) << 16; }
static uint64_t rd64(const uint8_t *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }

/* Inflates a raw deflate stream of exactly ulen bytes. */
static em_status inflate_member(const char *name, const uint8_t *src, size_t clen,
                                uint8_t *dst, size_t ulen) {
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  if (inflateInit2(&zs, -MAX_WBITS) != Z_OK)
    return em_fail(EM_E_NOMEM, "load_npz: zlib initialisation failed");
  int rc = Z_OK;
  size_t in_left = clen, out_left = ulen;
  zs.next_in = (Bytef *)src;
  zs.next_out = dst;
  while (rc == Z_OK) {
    /* zlib's counters are 32-bit: feed at most 1 GiB at a time */
    uInt in_chunk = in_left > (1u << 30) ? (1u << 30) : (uInt)in_left;
    uInt out_chunk = out_left > (1u << 30) ? (1u << 30) : (uInt)out_left;
    zs.avail_in = in_chunk;
    zs.avail_out = out_chunk;
    rc = inflate(&zs, Z_NO_FLUSH);
    in_left -= in_chunk - zs.avail_in;
    out_left -= out_chunk - zs.avail_out;
    if (rc == Z_BUF_ERROR && (in_left == 0 || out_left == 0)) break;
    if (rc == Z_OK && in_chunk == zs.avail_in && out_chunk == zs.avail_out) break;
  }
  inflateEnd(&zs);
  if (rc != Z_STREAM_END || out_left != 0)
    return em_fail(EM_E_VALUE, "load_npz: member '%s' has corrupt compressed data", name);
  return EM_OK;
}

static int ends_with(const char *s, size_t n, const char *suffix) {
  size_t k = strlen(suffix);
  return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/* Finds the central directory: *cd offset, *count entries, *cdsize bytes. */
static em_status find_directory(const uint8_t *b, size_t len, uint64_t *cd,
                                uint64_t *count, uint64_t *cdsize) {
  const char *op = "load_npz";
  if (len < 22) return em_fail(EM_E_VALUE, "%s: not a zip archive (too short)", op);
  size_t lo = len > 22 + 65535 ? len - 22 - 65535 : 0, e = len - 22 + 1;
  int found = 0;
  while (e-- > lo)
    if (rd32(b + e) == 0x06054b50) { found = 1; break; }
  if (!found) return em_fail(EM_E_VALUE, "%s: not a zip archive (no end record)", op);
  *count = rd16(b + e + 10);
  *cdsize = rd32(b + e + 12);
  *cd = rd32(b + e + 16);
  if (*count == 0xffff || *cdsize == 0xffffffffu || *cd == 0xffffffffu) {
    if (e < 20 || rd32(b + e - 20) != 0x07064b50)
      return em_fail(EM_E_VALUE, "%s: corrupt zip64 end record", op);
    uint64_t z = rd64(b + e - 20 + 8);
    if (z > len || len - z < 56 || rd32(b + z) != 0x06064b50)
      return em_fail(EM_E_VALUE, "%s: corrupt zip64 end record", op);
    *count = rd64(b + z + 32);
    *cdsize = rd64(b + z + 40);
    *cd = rd64(b + z + 48);
  }
  if (*cd > len || *cdsize > len - *cd || *count > *cdsize / 46)
    return em_fail(EM_E_VALUE, "%s: corrupt central directory", op);
  return EM_OK;
}

em_status em_npz_load_buffer(const void *buf, size_t len, em_npz **out) {
  const char *op = "load_npz";
  const uint8_t *b = buf;
  uint64_t cd = 0, count = 0, cdsize = 0;
  em_status st = find_directory(b, len, &cd, &count, &cdsize);
  if (st != EM_OK) return st;
  em_npz *z = calloc(1, sizeof *z);
  if (z) {
    z->names = calloc(count ? count : 1, sizeof *z->names);
    z->tensors = calloc(count ? count : 1, sizeof *z->tensors);
  }
  if (!z || !z->names || !z->tensors) {
    em_npz_free(z);
    return em_fail(EM_E_NOMEM, "%s: out of memory", op);
  }
  uint64_t p = cd, end = cd + cdsize;
  uint8_t *tmp = NULL;
  for (uint64_t k = 0; k < count && st == EM_OK; k++) {
    if (end - p < 46 || rd32(b + p) != 0x02014b50) {
      st = em_fail(EM_E_VALUE, "%s: corrupt central directory", op);
      break;
    }
    uint32_t flags = rd16(b + p + 8), method = rd16(b + p + 10);
    uint32_t crc = rd32(b + p + 16);
    uint64_t clen = rd32(b + p + 20), ulen = rd32(b + p + 24);
    uint32_t nlen = rd16(b + p + 28), xlen = rd16(b + p + 30), mlen = rd16(b + p + 32);
    uint64_t loff = rd32(b + p + 42);
    if (end - p - 46 < (uint64_t)nlen + xlen + mlen) {
      st = em_fail(EM_E_VALUE, "%s: corrupt central directory", op);
      break;
    }
    const char *name = (const char *)b + p + 46;
    /* zip64 extra: the 64-bit values of the fields that read 0xffffffff */
    const uint8_t *x = b + p + 46 + nlen, *xend = x + xlen;
    while (xend - x >= 4) {
      uint32_t id = rd16(x), sz = rd16(x + 2);
      if ((uint32_t)(xend - x - 4) < sz) break;
      if (id == 1) {
        const uint8_t *f = x + 4, *fend = x + 4 + sz;
        if (ulen == 0xffffffffu && fend - f >= 8) { ulen = rd64(f); f += 8; }
        if (clen == 0xffffffffu && fend - f >= 8) { clen = rd64(f); f += 8; }
        if (loff == 0xffffffffu && fend - f >= 8) { loff = rd64(f); f += 8; }
      }
      x += 4 + sz;
    }
    p += 46 + (uint64_t)nlen + xlen + mlen;
    char shown[128];
    snprintf(shown, sizeof shown, "%.*s", nlen > 100 ? 100 : (int)nlen, name);
    if (!ends_with(name, nlen, ".npy") || memchr(name, '\0', nlen)) continue;
    if (flags & 1) {
      st = em_fail(EM_E_VALUE, "%s: member '%s' is encrypted", op, shown);
      break;
    }
    if (method != 0 && method != 8) {
      st = em_fail(EM_E_VALUE, "%s: member '%s' uses unsupported compression method %u",
                   op, shown, method);
      break;
    }
    if (loff > len || len - loff < 30 || rd32(b + loff) != 0x04034b50) {
      st = em_fail(EM_E_VALUE, "%s: member '%s' has a corrupt local header", op, shown);
      break;
    }
    uint64_t doff = loff + 30 + rd16(b + loff + 26) + rd16(b + loff + 28);
    if (doff > len || clen > len - doff) {
      st = em_fail(EM_E_VALUE, "%s: member '%s' is truncated", op, shown);
      break;
    }
    /* deflate expands at most 1032:1; a member claiming more is corrupt,
    ** and refusing it keeps a lying header from a huge allocation */
    if ((method == 0 && ulen != clen) ||
        (method == 8 && ulen / 1032 > clen + 1)) {
      st = em_fail(EM_E_VALUE, "%s: member '%s' has inconsistent sizes", op, shown);
      break;
    }
    const uint8_t *data = b + doff;
    if (method == 8) {
      tmp = malloc(ulen ? ulen : 1);
      if (!tmp) {
        st = em_fail(EM_E_NOMEM, "%s: out of memory (%llu bytes)", op,
                     (unsigned long long)ulen);
        break;
      }
      st = inflate_member(shown, data, clen, tmp, ulen);
      if (st != EM_OK) break;
      data = tmp;
    }
    uLong c = crc32(0L, Z_NULL, 0);
    for (uint64_t done = 0; done < ulen;) {
      uInt chunk = ulen - done > (1u << 30) ? (1u << 30) : (uInt)(ulen - done);
      c = crc32(c, data + done, chunk);
      done += chunk;
    }
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
    crc = (uint32_t)c; /* let the fuzzer past the CRC, into inflate and .npy */
#endif
    if ((uint32_t)c != crc) {
      st = em_fail(EM_E_VALUE, "%s: member '%s' fails its CRC check", op, shown);
      break;
    }
    em_tensor *t;
    st = em_npy_decode(data, ulen, &t);
    if (st != EM_OK) {
      char msg[512];
      snprintf(msg, sizeof msg, "%s", em_last_error());
      st = em_fail(st, "%s: member '%s': %s", op, shown, msg);
      break;
    }
    free(tmp);
    tmp = NULL;
    char *nm = malloc(nlen - 4 + 1);
    if (!nm) {
      em_tensor_release(t);
      st = em_fail(EM_E_NOMEM, "%s: out of memory", op);
      break;
    }
    memcpy(nm, name, nlen - 4);
    nm[nlen - 4] = '\0';
    z->names[z->n] = nm;
    z->tensors[z->n] = t;
    z->n++;
  }
  free(tmp);
  if (st != EM_OK) {
    em_npz_free(z);
    return st;
  }
  *out = z;
  return EM_OK;
}

em_status em_npz_load(const char *path, em_npz **out) {
  em_io_mapping m = {0};
  em_status st = em_io_map_file("load_npz", path, 0, &m);
  if (st != EM_OK) return st;
  st = em_npz_load_buffer(m.base ? m.base : "", m.len, out);
  em_io_unmap(&m);
  return st;
}

static void wr16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void wr32(uint8_t *p, uint32_t v) { wr16(p, v & 0xffff); wr16(p + 2, v >> 16); }

typedef struct {
  uint32_t crc, method;
  uint64_t clen, ulen, off;
} zentry;

em_status em_npz_save(const char *path, int64_t n, const char *const *names,
                      const em_tensor *const *tensors, int compress) {
  const char *op = "save_npz";
  if (n < 0 || n > 65534) return em_fail(EM_E_VALUE, "%s: %lld members", op, (long long)n);
  zentry *ents = calloc(n ? (size_t)n : 1, sizeof *ents);
  if (!ents) return em_fail(EM_E_NOMEM, "%s: out of memory", op);
  FILE *f = fopen(path, "wb");
  if (!f) {
    free(ents);
    return em_fail(EM_E_RUNTIME, "%s: cannot open '%s' for writing: %s", op, path,
                   strerror(errno));
  }
  em_status st = EM_OK;
  uint64_t pos = 0;
  for (int64_t i = 0; i < n && st == EM_OK; i++) {
    size_t nlen = strlen(names[i]) + 4;
    if (nlen > 65535) {
      st = em_fail(EM_E_VALUE, "%s: member name too long", op);
      break;
    }
    void *npy = NULL, *z = NULL;
    size_t len;
    st = em_npy_encode(tensors[i], &npy, &len);
    if (st != EM_OK) break;
    const void *body = npy;
    size_t blen = len;
    uLong c = crc32(crc32(0L, Z_NULL, 0), npy, 0);
    for (size_t done = 0; done < len;) {
      uInt chunk = len - done > (1u << 30) ? (1u << 30) : (uInt)(len - done);
      c = crc32(c, (const Bytef *)npy + done, chunk);
      done += chunk;
    }
    if (compress) {
      z_stream zs;
      memset(&zs, 0, sizeof zs);
      if (len > 0xffffffffu || deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED,
                                            -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        free(npy);
        st = em_fail(EM_E_RUNTIME, "%s: cannot compress member '%s'", op, names[i]);
        break;
      }
      uLong bound = deflateBound(&zs, (uLong)len);
      z = malloc(bound);
      zs.next_in = npy;
      zs.avail_in = (uInt)len;
      zs.next_out = z;
      zs.avail_out = (uInt)bound;
      int rc = z ? deflate(&zs, Z_FINISH) : Z_MEM_ERROR;
      blen = zs.total_out;
      deflateEnd(&zs);
      if (rc != Z_STREAM_END) {
        free(npy);
        free(z);
        st = em_fail(EM_E_RUNTIME, "%s: cannot compress member '%s'", op, names[i]);
        break;
      }
      body = z;
    }
    if (blen > 0xfffffffeu || len > 0xfffffffeu || pos > 0xfffffffeu) {
      free(npy);
      free(z);
      st = em_fail(EM_E_VALUE, "%s: archives over 4 GiB are not supported", op);
      break;
    }
    ents[i] = (zentry){(uint32_t)c, compress ? 8u : 0u, blen, len, pos};
    uint8_t lh[30];
    wr32(lh, 0x04034b50);
    wr16(lh + 4, 20);
    wr16(lh + 6, 0);
    wr16(lh + 8, ents[i].method);
    wr16(lh + 10, 0);      /* 00:00:00 */
    wr16(lh + 12, 0x21);   /* 1980-01-01 */
    wr32(lh + 14, ents[i].crc);
    wr32(lh + 18, (uint32_t)blen);
    wr32(lh + 22, (uint32_t)len);
    wr16(lh + 26, (uint32_t)nlen);
    wr16(lh + 28, 0);
    int ok = fwrite(lh, 1, 30, f) == 30 &&
             fwrite(names[i], 1, nlen - 4, f) == nlen - 4 &&
             fwrite(".npy", 1, 4, f) == 4 && (!blen || fwrite(body, 1, blen, f) == blen);
    free(npy);
    free(z);
    if (!ok) st = em_fail(EM_E_RUNTIME, "%s: write error on '%s'", op, path);
    pos += 30 + nlen + blen;
  }
  uint64_t cd = pos;
  for (int64_t i = 0; i < n && st == EM_OK; i++) {
    size_t nlen = strlen(names[i]) + 4;
    uint8_t ch[46];
    memset(ch, 0, sizeof ch);
    wr32(ch, 0x02014b50);
    wr16(ch + 4, 20);
    wr16(ch + 6, 20);
    wr16(ch + 10, ents[i].method);
    wr16(ch + 14, 0x21);
    wr32(ch + 16, ents[i].crc);
    wr32(ch + 20, (uint32_t)ents[i].clen);
    wr32(ch + 24, (uint32_t)ents[i].ulen);
    wr16(ch + 28, (uint32_t)nlen);
    wr32(ch + 38, 0x81800000u); /* regular file, mode 0600 */
    wr32(ch + 42, (uint32_t)ents[i].off);
    if (fwrite(ch, 1, 46, f) != 46 || fwrite(names[i], 1, nlen - 4, f) != nlen - 4 ||
        fwrite(".npy", 1, 4, f) != 4)
      st = em_fail(EM_E_RUNTIME, "%s: write error on '%s'", op, path);
    pos += 46 + nlen;
  }
  if (st == EM_OK && pos > 0xfffffffeu)
    st = em_fail(EM_E_VALUE, "%s: archives over 4 GiB are not supported", op);
  if (st == EM_OK) {
    uint8_t eo[22];
    memset(eo, 0, sizeof eo);
    wr32(eo, 0x06054b50);
    wr16(eo + 8, (uint32_t)n);
    wr16(eo + 10, (uint32_t)n);
    wr32(eo + 12, (uint32_t)(pos - cd));
    wr32(eo + 16, (uint32_t)cd);
    if (fwrite(eo, 1, 22, f) != 22)
      st = em_fail(EM_E_RUNTIME, "%s: write error on '%s'", op, path);
  }
  if (fclose(f) != 0 && st == EM_OK)
    st = em_fail(EM_E_RUNTIME, "%s: write error on '%s'", op, path);
  free(ents);
  return st;
}
