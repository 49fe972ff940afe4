/*
** npy.c -- NumPy's .npy and .npz files.
**
** What holds:
** - Every length read from a file (header length, shape; the zip records
**   in io/zip.c) is checked against the bytes actually present before
**   anything is read or allocated, so a truncated or lying file gives an
**   error, never an out-of-bounds read or a huge allocation.
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
#include "io/zip.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

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
    {EM_COMPLEX64, 'c', 8}, {EM_COMPLEX128, 'c', 16},
};

/* the unit of byte order and alignment: a complex element's parts */
static int npy_unit(em_dtype dt, int itemsize) {
  return dt == EM_COMPLEX64 || dt == EM_COMPLEX128 ? itemsize / 2 : itemsize;
}

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

/* numpy.load takes the descr through np.dtype(), which also knows the dtypes'
** names and kind+size without a byte order (native); other writers use them */
static const struct {
  const char *name, *code;
} npy_names[] = {
    {"bool", "|b1"},       {"uint8", "|u1"},      {"int8", "|i1"},
    {"int16", "=i2"},      {"int32", "=i4"},      {"int64", "=i8"},
    {"float16", "=f2"},    {"float32", "=f4"},    {"float64", "=f8"},
    {"complex64", "=c8"},  {"complex128", "=c16"}, {"b1", "|b1"},
};

static em_status parse_descr(const char *op, const char *d, npy_header *h) {
  const char *shown = d;
  char bare[8];
  for (size_t i = 0; i < sizeof npy_names / sizeof npy_names[0]; i++)
    if (strcmp(d, npy_names[i].name) == 0) d = npy_names[i].code;
  if (d == shown && d[0] >= 'a' && d[0] <= 'z' && strlen(d) < sizeof bare - 1) {
    snprintf(bare, sizeof bare, "=%s", d); /* 'f4': native order */
    d = bare;
  }
  char order = d[0];
  if (order != '<' && order != '>' && order != '|' && order != '=')
    return em_fail(EM_E_TYPE, "%s: unsupported dtype '%s'", op, shown);
  char kind = d[1];
  char *end;
  long size = kind ? strtol(d + 2, &end, 10) : 0;
  if (!kind || d[2] < '0' || d[2] > '9' || *end != '\0')
    return em_fail(EM_E_TYPE, "%s: unsupported dtype '%s'", op, shown);
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
                 "int16, int32, int64, float16, float32, float64, complex64 and "
                 "complex128)",
                 op, shown);
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
  if (buf[7] != 0) /* numpy knows 1.0, 2.0 and 3.0 only */
    return em_fail(EM_E_VALUE, "%s: unsupported .npy format version %d.%d", op, major,
                   buf[7]);
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

/* Loaded data p made the host's: bytes swapped (a complex element's parts
** each), bool bytes 0 or 1. */
static void host_order(void *p, const npy_header *h) {
  if (h->swap) {
    int u = npy_unit(h->dt, h->itemsize);
    em_io_byteswap(p, h->numel * (h->itemsize / u), u);
  }
  if (h->dt == EM_BOOL) em_io_bool_normalise(p, h->numel, 1);
}

/* A fresh tensor from the header, its data copied from src. */
static em_status make_copy(const npy_header *h, const void *src, em_tensor **out) {
  em_storage *s;
  em_status st = em_storage_new(h->data_len, em_cpu(), &s);
  if (st != EM_OK) return st;
  if (h->data_len) memcpy(em_storage_data(s), src, h->data_len);
  host_order(em_storage_data(s), h);
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
  if (st == EM_OK && (uintptr_t)data % (uintptr_t)npy_unit(h.dt, h.itemsize) != 0)
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
    host_order(em_storage_data(s), &h);
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

/* -- .npz: zip archives (io/zip.c) ----------------------------------------- */

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

static int ends_with(const char *s, size_t n, const char *suffix) {
  size_t k = strlen(suffix);
  return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

em_status em_npz_load_buffer(const void *buf, size_t len, em_npz **out) {
  const char *op = "load_npz";
  em_zip_reader zr;
  em_status st = em_zip_open(&zr, op, buf, len);
  if (st != EM_OK) return st;
  em_npz *z = calloc(1, sizeof *z);
  if (z) {
    z->names = calloc(zr.count ? zr.count : 1, sizeof *z->names);
    z->tensors = calloc(zr.count ? zr.count : 1, sizeof *z->tensors);
  }
  if (!z || !z->names || !z->tensors) {
    em_npz_free(z);
    return em_fail(EM_E_NOMEM, "%s: out of memory", op);
  }
  for (;;) {
    em_zip_entry e;
    int got;
    if ((st = em_zip_next(&zr, &e, &got)) != EM_OK || !got) break;
    if (!ends_with(e.name, e.nlen, ".npy") || memchr(e.name, '\0', e.nlen)) continue;
    const uint8_t *data;
    uint8_t *owned;
    if ((st = em_zip_data(&zr, &e, &data, &owned)) != EM_OK) break;
    em_tensor *t;
    st = em_npy_decode(data, e.ulen, &t);
    free(owned);
    if (st != EM_OK) {
      st = em_fail(st, "%s: member '%s': %s", op, e.shown, em_last_error());
      break;
    }
    char *nm = malloc(e.nlen - 4 + 1);
    if (!nm) {
      em_tensor_release(t);
      st = em_fail(EM_E_NOMEM, "%s: out of memory", op);
      break;
    }
    memcpy(nm, e.name, e.nlen - 4);
    nm[e.nlen - 4] = '\0';
    z->names[z->n] = nm;
    z->tensors[z->n] = t;
    z->n++;
  }
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

em_status em_npz_save(const char *path, int64_t n, const char *const *names,
                      const em_tensor *const *tensors, int compress) {
  const char *op = "save_npz";
  if (n < 0 || n > 65534) return em_fail(EM_E_VALUE, "%s: %lld members", op, (long long)n);
  em_zip_writer w;
  em_zipw_open(&w, op, path, EM_ZIP_NUMPY);
  for (int64_t i = 0; i < n && w.st == EM_OK; i++) {
    if (strlen(names[i]) + 4 > 65535) {
      w.st = em_fail(EM_E_VALUE, "%s: member name too long", op);
      break;
    }
    void *npy = NULL;
    size_t len;
    if ((w.st = em_npy_encode(tensors[i], &npy, &len)) != EM_OK) {
      /* "save_npy: X" -> "save_npz: member 'a': X" */
      w.st = em_fail(w.st, "%s: member '%s': %s", op, names[i], em_last_error_after("save_npy"));
      break;
    }
    em_zipw_add(&w, names[i], ".npy", npy, len, compress);
    free(npy);
  }
  return em_zipw_close(&w);
}
