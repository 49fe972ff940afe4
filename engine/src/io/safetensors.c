/*
** safetensors.c -- Hugging Face's .safetensors files (docs/serialization.md).
**
** A file is an 8-byte little-endian header length N, N bytes of JSON, and
** the byte buffer. The JSON is one object: per tensor name
** {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]} (offsets
** into the byte buffer, end exclusive; data little-endian, row-major), and
** optionally "__metadata__": {string: string}.
**
** What holds:
** - Loading checks what the reference implementation (huggingface/
**   safetensors, safetensors/src/tensor.rs) checks, and what its README
**   says MUST hold: N at most 100,000,000 and inside the file; the header
**   valid UTF-8 and strict JSON beginning with '{' (trailing spaces are
**   padding); no name twice (the reference's JSON maps keep the last one
**   silently: two entries could alias one range); sorted by data_offsets,
**   the tensors tile the byte buffer from 0 to its end, without gaps or
**   overlaps, each end - begin = numel * itemsize. It is stricter where
**   loosening buys nothing: a tensor entry holds exactly dtype, shape and
**   data_offsets; numbers are plain non-negative integers that fit int64;
**   \u0000 is refused in strings (names are C strings).
** - The parser reads only inside [header, header + N); every allocation is
**   bounded by N (names, shapes and entries are all shorter decoded than
**   in the JSON text).
** - Loaded tensors are copies (one storage each), or views of one mapping
**   of the file (one storage over the whole mapping, which it unmaps when
**   the last view goes). A mapping is copy-on-write or shared, never
**   read-only (io/mapping.h). Bool bytes are 0 or 1: normalised on a copy,
**   refused on a mapping.
** - Saving writes what the reference's serialize writes: tensors sorted by
**   descending dtype alignment, then name; their bytes in that order; the
**   header as serde_json prints it ("__metadata__" first, then the tensors
**   in data order; no spaces; its escapes), padded with spaces to a
**   multiple of 8 so every tensor is aligned when the file is mapped.
*/
#include "core/core.h"
#include "core/errmsg.h"
#include "io/mapping.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

enum { MAX_HEADER = 100000000, SHOWN = 100 };

/* -- dtypes -------------------------------------------------------------- */

typedef struct {
  const char *name;
  em_dtype dt;
  int size;
  int rank;  /* position in the reference's Dtype enum (increasing alignment) */
} st_type;

static const st_type st_types[] = {
    {"BOOL", EM_BOOL, 1, 0},      {"U8", EM_UINT8, 1, 4},      {"I8", EM_INT8, 1, 5},
    {"I16", EM_INT16, 2, 11},     {"F16", EM_FLOAT16, 2, 13},  {"BF16", EM_BFLOAT16, 2, 14},
    {"I32", EM_INT32, 4, 15},     {"F32", EM_FLOAT32, 4, 17},  {"F64", EM_FLOAT64, 8, 19},
    {"I64", EM_INT64, 8, 20},     {"C64", EM_COMPLEX64, 8, 18},
};
enum { N_TYPES = sizeof st_types / sizeof st_types[0] };

/* The format's dtypes that ember has no dtype for. */
static const char *const st_foreign[] = {
    "F4", "F6_E2M3", "F6_E3M2", "F8_E5M2", "F8_E4M3", "F8_E8M0", "F8_E4M3FNUZ",
    "F8_E5M2FNUZ", "U16", "U32", "U64", NULL};

#define ST_EMBER_TYPES "BOOL, U8, I8, I16, I32, I64, F16, BF16, F32, F64 and C64"

static const st_type *type_of(em_dtype dt) {
  for (int i = 0; i < N_TYPES; i++)
    if (st_types[i].dt == dt) return &st_types[i];
  return NULL;
}

/* "name" for messages: at most SHOWN bytes of it, then "...". */
static const char *shown(char *buf, size_t n, const char *name) {
  size_t len = strlen(name);
  snprintf(buf, n, "%.*s%s", (int)(len > SHOWN ? SHOWN : len), name,
           len > SHOWN ? "..." : "");
  return buf;
}

/* 0 when s[0..n) is UTF-8 as Rust's str::from_utf8 accepts it (no overlong
** forms, no surrogates, nothing past U+10FFFF); else 1 and *at = the
** offset of the first bad byte. */
static int utf8_bad(const uint8_t *s, size_t n, size_t *at) {
  size_t i = 0;
  while (i < n) {
    uint8_t c = s[i];
    size_t k;
    uint8_t lo = 0x80, hi = 0xbf;
    if (c < 0x80) { i++; continue; }
    if (c >= 0xc2 && c <= 0xdf) k = 1;
    else if (c >= 0xe0 && c <= 0xef) {
      k = 2;
      if (c == 0xe0) lo = 0xa0;
      if (c == 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      k = 3;
      if (c == 0xf0) lo = 0x90;
      if (c == 0xf4) hi = 0x8f;
    } else {
      *at = i;
      return 1;
    }
    if (n - i <= k) { *at = i; return 1; }
    if (s[i + 1] < lo || s[i + 1] > hi) { *at = i; return 1; }
    for (size_t j = 2; j <= k; j++)
      if (s[i + j] < 0x80 || s[i + j] > 0xbf) { *at = i; return 1; }
    i += k + 1;
  }
  return 0;
}

/* -- The result ---------------------------------------------------------- */

struct em_safetensors {
  int64_t n;
  char **names;
  em_tensor **tensors;
  int64_t nmeta;
  char **keys, **values;
};

int64_t em_safetensors_count(const em_safetensors *f) { return f->n; }
const char *em_safetensors_name(const em_safetensors *f, int64_t i) {
  return i >= 0 && i < f->n ? f->names[i] : NULL;
}
em_tensor *em_safetensors_tensor(const em_safetensors *f, int64_t i) {
  return i >= 0 && i < f->n ? f->tensors[i] : NULL;
}
int64_t em_safetensors_meta_count(const em_safetensors *f) { return f->nmeta; }
const char *em_safetensors_meta_key(const em_safetensors *f, int64_t i) {
  return i >= 0 && i < f->nmeta ? f->keys[i] : NULL;
}
const char *em_safetensors_meta_value(const em_safetensors *f, int64_t i) {
  return i >= 0 && i < f->nmeta ? f->values[i] : NULL;
}

void em_safetensors_free(em_safetensors *f) {
  if (!f) return;
  for (int64_t i = 0; i < f->n; i++) {
    free(f->names[i]);
    em_tensor_release(f->tensors[i]);
  }
  for (int64_t i = 0; i < f->nmeta; i++) {
    free(f->keys[i]);
    free(f->values[i]);
  }
  free(f->names);
  free(f->tensors);
  free(f->keys);
  free(f->values);
  free(f);
}

/* -- The header parser --------------------------------------------------- */

typedef struct {
  char *key, *value;
} st_pair;

typedef struct {
  char *name;
  const st_type *ty;
  int ndim;
  size_t dims;            /* where its sizes start in the parser's dims pool */
  uint64_t begin, end;
} st_entry;

typedef struct {
  const char *op;
  const uint8_t *start, *p, *end;
  st_entry *ents;
  size_t n, cap;
  int64_t *dims;
  size_t ndims, dcap;
  st_pair *meta;
  size_t nmeta, mcap;
  int seen_meta;
} parser;

static void parser_free(parser *P) {
  for (size_t i = 0; i < P->n; i++) free(P->ents[i].name);
  for (size_t i = 0; i < P->nmeta; i++) {
    free(P->meta[i].key);
    free(P->meta[i].value);
  }
  free(P->ents);
  free(P->dims);
  free(P->meta);
}

/* "op: invalid header: <what> (at byte K of the header)" */
static em_status bad(parser *P, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static em_status bad(parser *P, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return em_fail(EM_E_VALUE, "%s: invalid header: %s (at byte %zu of the header)", P->op,
                 msg, (size_t)(P->p - P->start));
}

static em_status nomem(parser *P) { return em_fail(EM_E_NOMEM, "%s: out of memory", P->op); }

/* Grows *arr (elements of size sz) to hold one more than *n. */
static int grow(void **arr, size_t *cap, size_t n, size_t sz) {
  if (n < *cap) return 1;
  size_t c = *cap ? *cap * 2 : 16;
  if (c > ((size_t)-1) / sz) return 0;
  void *q = realloc(*arr, c * sz);
  if (!q) return 0;
  *arr = q;
  *cap = c;
  return 1;
}

static void ws(parser *P) {
  while (P->p < P->end && (*P->p == ' ' || *P->p == '\t' || *P->p == '\n' || *P->p == '\r'))
    P->p++;
}

static int peek(parser *P) { return P->p < P->end ? *P->p : -1; }

static int accept(parser *P, int ch) {
  ws(P);
  if (peek(P) == ch) {
    P->p++;
    return 1;
  }
  return 0;
}

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static int hex4(parser *P, uint32_t *v) {
  if (P->end - P->p < 4) return 0;
  *v = 0;
  for (int i = 0; i < 4; i++) {
    int h = hexval(P->p[i]);
    if (h < 0) return 0;
    *v = *v << 4 | (uint32_t)h;
  }
  P->p += 4;
  return 1;
}

/* A JSON string at P->p (after whitespace), decoded into a fresh C string.
** The header is valid UTF-8 already; decoded strings are never longer than
** their JSON text. */
static em_status parse_string(parser *P, const char *what, char **out) {
  ws(P);
  if (peek(P) != '"') return bad(P, "expected %s (a string)", what);
  P->p++;
  const uint8_t *q = P->p;
  while (q < P->end && *q != '"') q += *q == '\\' && q + 1 < P->end ? 2 : 1;
  if (q >= P->end) return bad(P, "unterminated string");
  char *s = malloc((size_t)(q - P->p) + 1);
  if (!s) return nomem(P);
  size_t k = 0;
  while (*P->p != '"') {
    uint8_t c = *P->p;
    if (c < 0x20) {
      free(s);
      return bad(P, "control character 0x%02x in a string (JSON needs it escaped)", c);
    }
    if (c != '\\') {
      s[k++] = (char)c;
      P->p++;
      continue;
    }
    P->p++;
    uint8_t e = *P->p++;
    uint32_t cp;
    switch (e) {
      case '"': s[k++] = '"'; continue;
      case '\\': s[k++] = '\\'; continue;
      case '/': s[k++] = '/'; continue;
      case 'b': s[k++] = '\b'; continue;
      case 'f': s[k++] = '\f'; continue;
      case 'n': s[k++] = '\n'; continue;
      case 'r': s[k++] = '\r'; continue;
      case 't': s[k++] = '\t'; continue;
      case 'u': break;
      default:
        P->p -= 2;  /* at the backslash */
        free(s);
        return bad(P, "invalid escape '\\%c' in a string", e >= 0x20 && e < 0x7f ? e : '?');
    }
    if (!hex4(P, &cp)) {
      free(s);
      return bad(P, "invalid \\u escape in a string");
    }
    if (cp >= 0xdc00 && cp <= 0xdfff) {
      free(s);
      return bad(P, "lone low surrogate \\u%04x in a string", (unsigned)cp);
    }
    if (cp >= 0xd800 && cp <= 0xdbff) {
      uint32_t lo;
      if (P->end - P->p < 2 || P->p[0] != '\\' || P->p[1] != 'u') {
        free(s);
        return bad(P, "lone high surrogate \\u%04x in a string", (unsigned)cp);
      }
      P->p += 2;
      if (!hex4(P, &lo) || lo < 0xdc00 || lo > 0xdfff) {
        free(s);
        return bad(P, "lone high surrogate \\u%04x in a string", (unsigned)cp);
      }
      cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
    }
    if (cp == 0) {
      free(s);
      return bad(P, "\\u0000 in a string (ember's names and metadata are C strings)");
    }
    if (cp < 0x80) {
      s[k++] = (char)cp;
    } else if (cp < 0x800) {
      s[k++] = (char)(0xc0 | cp >> 6);
      s[k++] = (char)(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      s[k++] = (char)(0xe0 | cp >> 12);
      s[k++] = (char)(0x80 | ((cp >> 6) & 0x3f));
      s[k++] = (char)(0x80 | (cp & 0x3f));
    } else {
      s[k++] = (char)(0xf0 | cp >> 18);
      s[k++] = (char)(0x80 | ((cp >> 12) & 0x3f));
      s[k++] = (char)(0x80 | ((cp >> 6) & 0x3f));
      s[k++] = (char)(0x80 | (cp & 0x3f));
    }
  }
  P->p++;
  s[k] = '\0';
  *out = s;
  return EM_OK;
}

/* A non-negative integer that fits int64, as JSON writes it (no leading
** zeros, no fraction or exponent). */
static em_status parse_uint(parser *P, const char *what, uint64_t *v) {
  ws(P);
  int c = peek(P);
  if (c == '-') return bad(P, "%s must be a non-negative integer, got a negative number", what);
  if (c < '0' || c > '9') return bad(P, "%s must be a non-negative integer", what);
  uint64_t x = 0;
  if (c == '0') {
    P->p++;
  } else {
    while ((c = peek(P)) >= '0' && c <= '9') {
      if (x > (uint64_t)(INT64_MAX - (c - '0')) / 10)
        return bad(P, "%s is too large (more than 2^63 - 1)", what);
      x = x * 10 + (uint64_t)(c - '0');
      P->p++;
    }
  }
  c = peek(P);
  if ((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E')
    return bad(P, "%s must be a plain non-negative integer", what);
  *v = x;
  return EM_OK;
}

static em_status parse_metadata(parser *P) {
  ws(P);
  if (P->end - P->p >= 4 && memcmp(P->p, "null", 4) == 0) {
    P->p += 4;
    return EM_OK;
  }
  if (!accept(P, '{'))
    return bad(P, "__metadata__ must be an object of strings");
  if (accept(P, '}')) return EM_OK;
  for (;;) {
    if (!grow((void **)&P->meta, &P->mcap, P->nmeta, sizeof *P->meta)) return nomem(P);
    char *key, *val;
    em_status st = parse_string(P, "a __metadata__ key", &key);
    if (st != EM_OK) return st;
    if (!accept(P, ':')) {
      free(key);
      return bad(P, "expected ':' after a key");
    }
    ws(P);
    if (peek(P) != '"') {
      char b[SHOWN + 8];
      em_status e = bad(P, "__metadata__ value of '%s' is not a string (metadata maps strings to strings)",
                        shown(b, sizeof b, key));
      free(key);
      return e;
    }
    st = parse_string(P, "a string", &val);
    if (st != EM_OK) {
      free(key);
      return st;
    }
    P->meta[P->nmeta++] = (st_pair){key, val};
    if (accept(P, '}')) return EM_OK;
    if (!accept(P, ',')) return bad(P, "expected ',' or '}' in __metadata__");
  }
}

static em_status parse_entry(parser *P, st_entry *e) {
  char b[SHOWN + 8];
  const char *nm = shown(b, sizeof b, e->name);
  if (!accept(P, '{'))
    return bad(P, "tensor '%s' must be an object {dtype, shape, data_offsets}", nm);
  int seen_dtype = 0, seen_shape = 0, seen_off = 0;
  if (!accept(P, '}'))
    for (;;) {
      char *key;
      ws(P);
      const uint8_t *key_at = P->p;
      em_status st = parse_string(P, "a key", &key);
      if (st != EM_OK) return st;
      if (!accept(P, ':')) {
        free(key);
        return bad(P, "expected ':' after a key");
      }
      int which = strcmp(key, "dtype") == 0 ? 1 : strcmp(key, "shape") == 0 ? 2
                  : strcmp(key, "data_offsets") == 0 ? 3 : 0;
      if (!which || (which == 1 && seen_dtype) || (which == 2 && seen_shape) ||
          (which == 3 && seen_off)) {
        char kb[SHOWN + 8];
        P->p = key_at;  /* point at the key */
        st = which ? bad(P, "tensor '%s': '%s' appears twice", nm, key)
                   : bad(P, "tensor '%s': unexpected key '%s' (a tensor has dtype, shape and data_offsets)",
                         nm, shown(kb, sizeof kb, key));
        free(key);
        return st;
      }
      free(key);
      if (which == 1) {
        seen_dtype = 1;
        ws(P);
        if (peek(P) != '"') return bad(P, "tensor '%s': dtype must be a string", nm);
        char *d;
        if ((st = parse_string(P, "a dtype", &d)) != EM_OK) return st;
        for (int i = 0; i < N_TYPES && !e->ty; i++)
          if (strcmp(d, st_types[i].name) == 0) e->ty = &st_types[i];
        if (!e->ty) {
          int foreign = 0;
          for (const char *const *f = st_foreign; *f && !foreign; f++) foreign = strcmp(d, *f) == 0;
          char db[SHOWN + 8];
          st = foreign
                   ? em_fail(EM_E_TYPE,
                             "%s: tensor '%s' has dtype %s, which ember does not have (ember "
                             "reads " ST_EMBER_TYPES ")",
                             P->op, nm, d)
                   : bad(P, "tensor '%s': unknown dtype '%s'", nm, shown(db, sizeof db, d));
          free(d);
          return st;
        }
        free(d);
      } else if (which == 2) {
        seen_shape = 1;
        if (!accept(P, '[')) return bad(P, "tensor '%s': shape must be an array of non-negative integers", nm);
        e->dims = P->ndims;
        if (!accept(P, ']'))
          for (;;) {
            uint64_t v;
            if ((st = parse_uint(P, "a shape entry", &v)) != EM_OK) return st;
            if (e->ndim == EM_MAX_DIMS)
              return bad(P, "tensor '%s' has more than %d dimensions", nm, (int)EM_MAX_DIMS);
            if (!grow((void **)&P->dims, &P->dcap, P->ndims, sizeof *P->dims)) return nomem(P);
            P->dims[P->ndims++] = (int64_t)v;
            e->ndim++;
            if (accept(P, ']')) break;
            if (!accept(P, ',')) return bad(P, "tensor '%s': expected ',' or ']' in shape", nm);
          }
      } else {
        seen_off = 1;
        if (!accept(P, '[')) return bad(P, "tensor '%s': data_offsets must be [begin, end]", nm);
        if ((st = parse_uint(P, "a data offset", &e->begin)) != EM_OK) return st;
        if (!accept(P, ',')) return bad(P, "tensor '%s': data_offsets must be [begin, end]", nm);
        if ((st = parse_uint(P, "a data offset", &e->end)) != EM_OK) return st;
        if (!accept(P, ']')) return bad(P, "tensor '%s': data_offsets must be [begin, end]", nm);
      }
      if (accept(P, '}')) break;
      if (!accept(P, ',')) return bad(P, "tensor '%s': expected ',' or '}'", nm);
    }
  if (!seen_dtype || !seen_shape || !seen_off)
    return bad(P, "tensor '%s' has no '%s'", nm,
               !seen_dtype ? "dtype" : !seen_shape ? "shape" : "data_offsets");
  return EM_OK;
}

static em_status parse_object(parser *P) {
  if (P->p == P->end || *P->p != '{') return bad(P, "the header does not begin with '{'");
  P->p++;
  if (!accept(P, '}'))
    for (;;) {
      char *key;
      em_status st = parse_string(P, "a tensor name", &key);
      if (st != EM_OK) return st;
      if (!accept(P, ':')) {
        free(key);
        return bad(P, "expected ':' after a key");
      }
      if (strcmp(key, "__metadata__") == 0) {
        free(key);
        if (P->seen_meta) return bad(P, "__metadata__ appears twice");
        P->seen_meta = 1;
        st = parse_metadata(P);
      } else {
        if (!grow((void **)&P->ents, &P->cap, P->n, sizeof *P->ents)) {
          free(key);
          return nomem(P);
        }
        st_entry *e = &P->ents[P->n++];
        memset(e, 0, sizeof *e);
        e->name = key;  /* owned by the parser from here */
        st = parse_entry(P, e);
      }
      if (st != EM_OK) return st;
      if (accept(P, '}')) break;
      if (!accept(P, ',')) return bad(P, "expected ',' or '}'");
    }
  ws(P);
  if (P->p != P->end) return bad(P, "unexpected bytes after the header's object");
  return EM_OK;
}

/* -- Checking the parsed header ------------------------------------------ */

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The first name that appears twice in names[0..n) (sorted in place). */
static const char *duplicate(char **names, size_t n) {
  if (n < 2) return NULL;  /* (qsort may not take NULL, even for 0 entries) */
  qsort(names, n, sizeof *names, cmp_str);
  for (size_t i = 1; i < n; i++)
    if (strcmp(names[i - 1], names[i]) == 0) return names[i];
  return NULL;
}

static int cmp_pair(const void *a, const void *b) {
  return strcmp(((const st_pair *)a)->key, ((const st_pair *)b)->key);
}

/* Sorts pairs[0..n) by key; returns the first key that appears twice. */
static const char *sort_pairs(st_pair *pairs, size_t n) {
  if (n < 2) return NULL;
  qsort(pairs, n, sizeof *pairs, cmp_pair);
  for (size_t i = 1; i < n; i++)
    if (strcmp(pairs[i - 1].key, pairs[i].key) == 0) return pairs[i].key;
  return NULL;
}

static int cmp_offsets(const void *a, const void *b) {
  const st_entry *x = a, *y = b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  if (x->end != y->end) return x->end < y->end ? -1 : 1;
  return strcmp(x->name, y->name);
}

/* Duplicate names, then the offsets as the reference validates them: in
** order of data_offsets, each tensor begins where the previous one ended
** (the first at 0), ends no earlier than it begins, holds exactly numel *
** itemsize bytes, and the last ends at the end of the byte buffer (blen). */
static em_status check_entries(parser *P, uint64_t blen) {
  const char *op = P->op;
  char b[SHOWN + 8];
  char **tmp = malloc((P->n ? P->n : 1) * sizeof *tmp);
  if (!tmp) return nomem(P);
  for (size_t i = 0; i < P->n; i++) tmp[i] = P->ents[i].name;
  const char *d = duplicate(tmp, P->n);
  if (d) {
    em_status st = em_fail(EM_E_VALUE, "%s: tensor name '%s' appears twice in the header", op,
                           shown(b, sizeof b, d));
    free(tmp);
    return st;
  }
  free(tmp);
  d = sort_pairs(P->meta, P->nmeta);
  if (d)
    return em_fail(EM_E_VALUE, "%s: __metadata__ key '%s' appears twice in the header", op,
                   shown(b, sizeof b, d));

  if (P->n > 1) qsort(P->ents, P->n, sizeof *P->ents, cmp_offsets);
  uint64_t at = 0;
  for (size_t i = 0; i < P->n; i++) {
    const st_entry *e = &P->ents[i];
    const char *nm = shown(b, sizeof b, e->name);
    unsigned long long s = e->begin, x = e->end;
    if (x < s)
      return em_fail(EM_E_VALUE, "%s: tensor '%s': data_offsets [%llu, %llu] end before they begin",
                     op, nm, s, x);
    if (x > blen)
      return em_fail(EM_E_VALUE,
                     "%s: tensor '%s': data_offsets [%llu, %llu] run past the end of the byte "
                     "buffer (%llu bytes)",
                     op, nm, s, x, (unsigned long long)blen);
    if (s > at)
      return em_fail(EM_E_VALUE,
                     "%s: tensor '%s': data_offsets [%llu, %llu] leave bytes [%llu, %llu) of the "
                     "byte buffer to no tensor",
                     op, nm, s, x, (unsigned long long)at, s);
    if (s < at)
      return em_fail(EM_E_VALUE,
                     "%s: tensor '%s': data_offsets [%llu, %llu] overlap the tensor before it "
                     "(which ends at %llu)",
                     op, nm, s, x, (unsigned long long)at);
    char sb[EM_SHAPE_BUF];
    const int64_t *sizes = P->dims + e->dims;
    int64_t numel = 1, nbytes = 0;
    int over = 0;
    for (int k = 0; k < e->ndim && !over; k++) over = em_mul_overflow_i64(numel, sizes[k], &numel);
    over = over || em_mul_overflow_i64(numel, e->ty->size, &nbytes);
    em_fmt_shape(sb, sizeof sb, e->ndim, sizes);
    if (over)
      return em_fail(EM_E_VALUE, "%s: tensor '%s': shape %s of %s is too large", op, nm, sb,
                     e->ty->name);
    if ((uint64_t)nbytes != x - s)
      return em_fail(EM_E_VALUE,
                     "%s: tensor '%s': shape %s of %s needs %lld bytes, its data_offsets [%llu, "
                     "%llu] hold %llu",
                     op, nm, sb, e->ty->name, (long long)nbytes, s, x, x - s);
    at = x;
  }
  if (at != blen)
    return em_fail(EM_E_VALUE,
                   "%s: the tensors cover %llu bytes of the byte buffer, which holds %llu: "
                   "bytes [%llu, %llu) belong to no tensor",
                   op, (unsigned long long)at, (unsigned long long)blen,
                   (unsigned long long)at, (unsigned long long)blen);
  return EM_OK;
}

/* -- Decoding ------------------------------------------------------------ */

static em_status new_result(parser *P, em_safetensors **out) {
  em_safetensors *f = calloc(1, sizeof *f);
  if (f) {
    f->names = calloc(P->n ? P->n : 1, sizeof *f->names);
    f->tensors = calloc(P->n ? P->n : 1, sizeof *f->tensors);
    f->keys = calloc(P->nmeta ? P->nmeta : 1, sizeof *f->keys);
    f->values = calloc(P->nmeta ? P->nmeta : 1, sizeof *f->values);
  }
  if (!f || !f->names || !f->tensors || !f->keys || !f->values) {
    em_safetensors_free(f);
    return nomem(P);
  }
  /* the metadata in key order (check_entries sorted it); the strings move */
  for (size_t i = 0; i < P->nmeta; i++) {
    f->keys[i] = P->meta[i].key;
    f->values[i] = P->meta[i].value;
  }
  f->nmeta = (int64_t)P->nmeta;
  P->nmeta = 0;
  *out = f;
  return EM_OK;
}

/* Parses and checks buf[0..len) (a whole file). m: the file's mapping, to
** make the tensors views of it (it is taken whatever happens), or NULL to
** copy. On success the tensors are in data order. */
static em_status decode(const char *op, const uint8_t *buf, size_t len, em_io_mapping *m,
                        em_safetensors **out) {
  em_status st = EM_OK;
  em_safetensors *f = NULL;
  em_storage *ms = NULL;
  size_t at, data_at;
  uint64_t n = 0;
  parser P;
  memset(&P, 0, sizeof P);
  P.op = op;
  if (len < 8) {
    st = em_fail(EM_E_VALUE,
                 "%s: not a safetensors file: %zu bytes, too short for the 8-byte header "
                 "length", op, len);
    goto fail;
  }
  for (int i = 7; i >= 0; i--) n = n << 8 | buf[i];
  if (n > MAX_HEADER) {
    st = em_fail(EM_E_VALUE,
                 "%s: header length %llu is over the format's limit of %d bytes", op,
                 (unsigned long long)n, MAX_HEADER);
    goto fail;
  }
  if (n > len - 8) {
    st = em_fail(EM_E_VALUE,
                 "%s: header length %llu runs past the end of the file (%zu bytes follow "
                 "the length)",
                 op, (unsigned long long)n, len - 8);
    goto fail;
  }
  if (utf8_bad(buf + 8, (size_t)n, &at)) {
    st = em_fail(EM_E_VALUE, "%s: invalid header: not valid UTF-8 (at byte %zu of the header)",
                 op, at);
    goto fail;
  }
  P.start = P.p = buf + 8;
  P.end = buf + 8 + n;
  if ((st = parse_object(&P)) != EM_OK) goto fail;
  data_at = 8 + (size_t)n;
  if ((st = check_entries(&P, len - data_at)) != EM_OK) goto fail;
  if (m && !em_io_host_is_little()) {
    st = em_fail(EM_E_VALUE, "%s: cannot map a little-endian file on a big-endian host; load it without mmap", op);
    goto fail;
  }
  for (size_t i = 0; m && i < P.n; i++) {
    const st_entry *e = &P.ents[i];
    char b[SHOWN + 8];
    if (e->end == e->begin) continue;
    if ((data_at + e->begin) % (size_t)e->ty->size != 0) {
      st = em_fail(EM_E_VALUE,
                   "%s: cannot map tensor '%s': its data is not aligned for %s; load it "
                   "without mmap",
                   op, shown(b, sizeof b, e->name), e->ty->name);
      goto fail;
    }
    if (e->ty->dt == EM_BOOL &&
        em_io_bool_normalise((uint8_t *)m->base + data_at + e->begin,
                             (int64_t)(e->end - e->begin), 0)) {
      st = em_fail(EM_E_VALUE,
                   "%s: cannot map tensor '%s': its BOOL data holds bytes other than 0 and 1; "
                   "load it without mmap",
                   op, shown(b, sizeof b, e->name));
      goto fail;
    }
  }
  if ((st = new_result(&P, &f)) != EM_OK) goto fail;
  if (m) {
    st = em_io_wrap_mapping(op, *m, m->base, m->len, &ms);
    m->base = NULL;  /* taken */
    if (st != EM_OK) {
      em_safetensors_free(f);
      goto fail;
    }
  }
  for (size_t i = 0; i < P.n && st == EM_OK; i++) {
    st_entry *e = &P.ents[i];
    const int64_t *sizes = P.dims + e->dims;
    int64_t strides[EM_MAX_DIMS];
    em_contiguous_strides(e->ndim, sizes, strides);
    size_t nbytes = (size_t)(e->end - e->begin);
    if (ms) {
      int64_t off = nbytes ? (int64_t)((data_at + e->begin) / (size_t)e->ty->size) : 0;
      st = em_tensor_new(ms, off, e->ndim, sizes, strides, e->ty->dt, &f->tensors[i]);
    } else {
      em_storage *s;
      st = em_storage_new(nbytes, em_cpu(), &s);
      if (st != EM_OK) break;
      if (nbytes) {
        uint8_t *p = em_storage_data(s);
        memcpy(p, buf + data_at + e->begin, nbytes);
        if (!em_io_host_is_little())
          em_io_byteswap_dtype(p, (int64_t)(nbytes / (size_t)e->ty->size), e->ty->dt);
        if (e->ty->dt == EM_BOOL) em_io_bool_normalise(p, (int64_t)nbytes, 1);
      }
      st = em_tensor_new(s, 0, e->ndim, sizes, strides, e->ty->dt, &f->tensors[i]);
      em_storage_release(s);
    }
    if (st != EM_OK) break;
    f->names[i] = e->name;
    e->name = NULL;
    f->n = (int64_t)i + 1;
  }
  em_storage_release(ms);
  if (st != EM_OK) {
    em_safetensors_free(f);
    parser_free(&P);
    return st;
  }
  parser_free(&P);
  *out = f;
  return EM_OK;
fail:
  if (m) em_io_unmap(m);
  parser_free(&P);
  return st;
}

em_status em_safetensors_decode(const void *buf, size_t len, em_safetensors **out) {
  return decode("load_safetensors", buf, len, NULL, out);
}

em_status em_safetensors_load(const char *path, em_npy_mode mode, em_safetensors **out) {
  const char *op = "load_safetensors";
  if (mode != EM_NPY_READ && mode != EM_NPY_MMAP_COPY && mode != EM_NPY_MMAP_SHARED)
    return em_fail(EM_E_VALUE, "%s: unknown mode %d", op, (int)mode);
  em_io_mapping m;
  em_status st = em_io_map_file(op, path, mode == EM_NPY_MMAP_SHARED, &m);
  if (st != EM_OK) return st;
  const uint8_t *base = m.base ? m.base : (const uint8_t *)"";
  size_t len = m.len;
  if (mode == EM_NPY_READ) {
    st = decode(op, base, len, NULL, out);
    em_io_unmap(&m);
  } else {
    st = decode(op, base, len, &m, out);
  }
  if (st != EM_OK) {
    /* "load_safetensors: X" -> "load_safetensors: 'path': X" */
    return em_fail(st, "%s: '%s': %s", op, path, em_last_error_after(op));
  }
  return st;
}

/* -- Saving -------------------------------------------------------------- */

typedef struct {
  char *p;
  size_t n, cap;
  int failed;
} sbuf;

static void put(sbuf *b, const void *s, size_t n) {
  if (b->failed) return;
  if (b->cap - b->n < n) {
    size_t c = b->cap ? b->cap : 256;
    while (c - b->n < n) {
      if (c > ((size_t)-1) / 2) { b->failed = 1; return; }
      c *= 2;
    }
    char *q = realloc(b->p, c);
    if (!q) { b->failed = 1; return; }
    b->p = q;
    b->cap = c;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
}

static void puts_(sbuf *b, const char *s) { put(b, s, strlen(s)); }

/* A JSON string as serde_json writes it: '"' and '\\' escaped, the control
** characters as \b \f \n \r \t or \u00xx; everything else (UTF-8) as is. */
static void put_json_str(sbuf *b, const char *s) {
  put(b, "\"", 1);
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
    char e[8];
    switch (*c) {
      case '"': puts_(b, "\\\""); break;
      case '\\': puts_(b, "\\\\"); break;
      case '\b': puts_(b, "\\b"); break;
      case '\f': puts_(b, "\\f"); break;
      case '\n': puts_(b, "\\n"); break;
      case '\r': puts_(b, "\\r"); break;
      case '\t': puts_(b, "\\t"); break;
      default:
        if (*c < 0x20) {
          snprintf(e, sizeof e, "\\u%04x", *c);
          puts_(b, e);
        } else {
          put(b, c, 1);
        }
    }
  }
  put(b, "\"", 1);
}

typedef struct {
  const char *name;
  const em_tensor *t;
  const st_type *ty;
  uint64_t nbytes;
} save_item;

static int cmp_save(const void *a, const void *b) {
  const save_item *x = a, *y = b;
  if (x->ty->rank != y->ty->rank) return y->ty->rank - x->ty->rank;
  return strcmp(x->name, y->name);
}

/* A string for the header must be UTF-8 (the reference reads the header as
** a Rust str). */
static em_status check_text(const char *op, const char *what, const char *s) {
  size_t at;
  if (utf8_bad((const uint8_t *)s, strlen(s), &at)) {
    char b[SHOWN + 8];
    return em_fail(EM_E_VALUE, "%s: %s '%s' is not valid UTF-8 (at byte %zu)", op, what,
                   shown(b, sizeof b, s), at);
  }
  return EM_OK;
}

em_status em_safetensors_save(const char *path, int64_t n, const char *const *names,
                              const em_tensor *const *tensors, int64_t nmeta,
                              const char *const *keys, const char *const *values) {
  const char *op = "save_safetensors";
  if (n < 0 || nmeta < 0)
    return em_fail(EM_E_VALUE, "%s: %lld tensors and %lld metadata entries", op, (long long)n,
                   (long long)nmeta);
  if (!em_io_host_is_little())
    return em_fail(EM_E_RUNTIME, "%s: big-endian hosts are not supported", op);
  save_item *items = calloc(n ? (size_t)n : 1, sizeof *items);
  st_pair *meta = calloc(nmeta ? (size_t)nmeta : 1, sizeof *meta);
  char **tmp = calloc(n ? (size_t)n : 1, sizeof *tmp);
  sbuf h = {0};
  em_status st = EM_OK;
  int64_t total = 0;
  char b[SHOWN + 8];
  if (!items || !meta || !tmp) {
    st = em_fail(EM_E_NOMEM, "%s: out of memory", op);
    goto done;
  }
  for (int64_t i = 0; i < n && st == EM_OK; i++) {
    const em_tensor *t = tensors[i];
    char who[SHOWN + 64];
    snprintf(who, sizeof who, "%s: tensor '%s'", op, shown(b, sizeof b, names[i]));
    if (strcmp(names[i], "__metadata__") == 0) {
      st = em_fail(EM_E_VALUE, "%s: a tensor cannot be named '__metadata__' (the format "
                               "keeps that key for the metadata)", op);
      break;
    }
    if ((st = check_text(op, "tensor name", names[i])) != EM_OK) break;
    if ((st = em_tensor_check_values(who, t)) != EM_OK) break;
    if (t->storage->device.type != EM_CPU) {
      char d[32];
      st = em_fail(EM_E_RUNTIME, EM_MSG_CPU_ONLY, who,
                   em_device_str(t->storage->device, d, sizeof d));
      break;
    }
    const st_type *ty = type_of(t->dtype);
    if (!ty) {
      st = em_fail(EM_E_TYPE, "%s: %s has no safetensors dtype", who, em_dtype_name(t->dtype));
      break;
    }
    int64_t nbytes;
    /* an expanded tensor may have more elements than memory holds */
    if (em_mul_overflow_i64(em_tensor_numel(t), ty->size, &nbytes) ||
        __builtin_add_overflow(total, nbytes, &total)) {
      st = em_fail(EM_E_VALUE, "%s: the tensors are too large to write (more than 2^63 bytes)", who);
      break;
    }
    items[i] = (save_item){names[i], t, ty, (uint64_t)nbytes};
    tmp[i] = (char *)names[i];
  }
  if (st != EM_OK) goto done;
  const char *d = duplicate(tmp, (size_t)n);
  if (d) {
    st = em_fail(EM_E_VALUE, "%s: two tensors named '%s'", op, shown(b, sizeof b, d));
    goto done;
  }
  for (int64_t i = 0; i < nmeta && st == EM_OK; i++) {
    if ((st = check_text(op, "metadata key", keys[i])) != EM_OK) break;
    if ((st = check_text(op, "metadata value", values[i])) != EM_OK) break;
    meta[i] = (st_pair){(char *)keys[i], (char *)values[i]};
  }
  if (st != EM_OK) goto done;
  d = sort_pairs(meta, (size_t)nmeta);
  if (d) {
    st = em_fail(EM_E_VALUE, "%s: two metadata entries with key '%s'", op, shown(b, sizeof b, d));
    goto done;
  }
  qsort(items, (size_t)n, sizeof *items, cmp_save);

  /* the header */
  puts_(&h, "{");
  if (nmeta > 0) {
    puts_(&h, "\"__metadata__\":{");
    for (int64_t i = 0; i < nmeta; i++) {
      if (i) puts_(&h, ",");
      put_json_str(&h, meta[i].key);
      puts_(&h, ":");
      put_json_str(&h, meta[i].value);
    }
    puts_(&h, "}");
  }
  uint64_t off = 0;
  for (int64_t i = 0; i < n; i++) {
    const em_tensor *t = items[i].t;
    char num[64];
    if (i || nmeta > 0) puts_(&h, ",");
    put_json_str(&h, items[i].name);
    puts_(&h, ":{\"dtype\":");
    put_json_str(&h, items[i].ty->name);
    puts_(&h, ",\"shape\":[");
    for (int k = 0; k < t->ndim; k++) {
      snprintf(num, sizeof num, k ? ",%lld" : "%lld", (long long)t->sizes[k]);
      puts_(&h, num);
    }
    snprintf(num, sizeof num, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
             (unsigned long long)(off + items[i].nbytes));
    puts_(&h, num);
    off += items[i].nbytes;
  }
  puts_(&h, "}");
  while (!h.failed && h.n % 8) puts_(&h, " ");
  if (h.failed) {
    st = em_fail(EM_E_NOMEM, "%s: out of memory", op);
    goto done;
  }
  if (h.n > MAX_HEADER) {
    st = em_fail(EM_E_VALUE,
                 "%s: the header would take %zu bytes, over the format's limit of %d", op, h.n,
                 MAX_HEADER);
    goto done;
  }

  FILE *fp = fopen(path, "wb");
  if (!fp) {
    st = em_fail(EM_E_RUNTIME, "%s: cannot open '%s' for writing: %s", op, path,
                 strerror(errno));
    goto done;
  }
  uint8_t len8[8];
  for (int i = 0; i < 8; i++) len8[i] = (uint8_t)((uint64_t)h.n >> (8 * i));
  int ok = fwrite(len8, 1, 8, fp) == 8 && fwrite(h.p, 1, h.n, fp) == h.n;
  for (int64_t i = 0; i < n && ok && st == EM_OK; i++) {
    size_t nb = (size_t)items[i].nbytes;
    if (!nb) continue;
    const em_tensor *t = items[i].t;
    em_tensor *c = NULL;
    if (!em_tensor_is_contiguous(t)) {
      if ((st = em_contiguous(t, &c)) != EM_OK) {
        st = em_fail(st, "%s: tensor '%s': %s", op, shown(b, sizeof b, items[i].name),
                     em_last_error());
        break;
      }
      t = c;
    }
    ok = fwrite(em_tensor_data(t), 1, nb, fp) == nb;
    em_tensor_release(c);
  }
  ok = (fclose(fp) == 0) && ok;
  if (st == EM_OK && !ok) st = em_fail(EM_E_RUNTIME, "%s: write error on '%s'", op, path);
  if (st != EM_OK) remove(path);  /* no half-written file */
done:
  free(items);
  free(meta);
  free(tmp);
  free(h.p);
  return st;
}
