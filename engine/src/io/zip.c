/*
** zip.c -- zip archives for .npz (npy.c) and PyTorch checkpoints (torch.c)
** (io/zip.h).
**
** What holds:
** - Reading: the end records, every directory entry, each local header and
**   each member's sizes are checked against the archive's length before
**   they are used; a deflated member may not claim more than zlib's maximum
**   expansion of its compressed size (so a lying header cannot ask for a
**   huge allocation), and every member is checked against its CRC.
** - Writing: members are stored or deflated, never over 4 GiB in all
**   (refused, not written wrong). The NUMPY style writes the .npz bytes
**   npy.c wrote before it moved here; the TORCH style is PyTorch 1.13's
**   layout (io/zip.h).
*/
#include "io/zip.h"

#include <errno.h>
#include <stdlib.h>
#include <zlib.h>

/* -- Little-endian fields ----------------------------------------------------- */

static uint32_t rd16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t rd32(const uint8_t *p) { return rd16(p) | rd16(p + 2) << 16; }
static uint64_t rd64(const uint8_t *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }
static void wr16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void wr32(uint8_t *p, uint32_t v) { wr16(p, v & 0xffff); wr16(p + 2, v >> 16); }
static void wr64(uint8_t *p, uint64_t v) { wr32(p, (uint32_t)v); wr32(p + 4, (uint32_t)(v >> 32)); }

/* zlib's counters are 32-bit: sums and feeds at most 1 GiB at a time */
static uint32_t crc_of(const uint8_t *p, uint64_t n) {
  uLong c = crc32(0L, Z_NULL, 0);
  for (uint64_t done = 0; done < n;) {
    uInt chunk = n - done > (1u << 30) ? (1u << 30) : (uInt)(n - done);
    c = crc32(c, p + done, chunk);
    done += chunk;
  }
  return (uint32_t)c;
}

/* -- Reading ------------------------------------------------------------------ */

em_status em_zip_open(em_zip_reader *z, const char *op, const void *buf, size_t len) {
  const uint8_t *b = buf;
  memset(z, 0, sizeof *z);
  z->op = op;
  z->b = b;
  z->len = len;
  if (len < 22) return em_fail(EM_E_VALUE, "%s: not a zip archive (too short)", op);
  size_t lo = len > 22 + 65535 ? len - 22 - 65535 : 0, e = len - 22 + 1;
  int found = 0;
  while (e-- > lo)
    if (rd32(b + e) == 0x06054b50) { found = 1; break; }
  if (!found) return em_fail(EM_E_VALUE, "%s: not a zip archive (no end record)", op);
  uint64_t count = rd16(b + e + 10), cdsize = rd32(b + e + 12), cd = rd32(b + e + 16);
  if (count == 0xffff || cdsize == 0xffffffffu || cd == 0xffffffffu) {
    if (e < 20 || rd32(b + e - 20) != 0x07064b50)
      return em_fail(EM_E_VALUE, "%s: corrupt zip64 end record", op);
    uint64_t r = rd64(b + e - 20 + 8);
    if (r > len || len - r < 56 || rd32(b + r) != 0x06064b50)
      return em_fail(EM_E_VALUE, "%s: corrupt zip64 end record", op);
    count = rd64(b + r + 32);
    cdsize = rd64(b + r + 40);
    cd = rd64(b + r + 48);
  }
  if (cd > len || cdsize > len - cd || count > cdsize / 46)
    return em_fail(EM_E_VALUE, "%s: corrupt central directory", op);
  z->count = count;
  z->next = cd;
  z->end = cd + cdsize;
  return EM_OK;
}

em_status em_zip_next(em_zip_reader *z, em_zip_entry *e, int *got) {
  *got = 0;
  if (z->seen == z->count) return EM_OK;
  const uint8_t *b = z->b;
  uint64_t p = z->next;
  if (z->end - p < 46 || rd32(b + p) != 0x02014b50)
    return em_fail(EM_E_VALUE, "%s: corrupt central directory", z->op);
  e->flags = rd16(b + p + 8);
  e->method = rd16(b + p + 10);
  e->crc = rd32(b + p + 16);
  e->clen = rd32(b + p + 20);
  e->ulen = rd32(b + p + 24);
  uint32_t nlen = rd16(b + p + 28), xlen = rd16(b + p + 30), mlen = rd16(b + p + 32);
  e->loff = rd32(b + p + 42);
  if (z->end - p - 46 < (uint64_t)nlen + xlen + mlen)
    return em_fail(EM_E_VALUE, "%s: corrupt central directory", z->op);
  e->name = (const char *)b + p + 46;
  e->nlen = nlen;
  /* zip64 extra: the 64-bit values of the fields that read 0xffffffff */
  const uint8_t *x = b + p + 46 + nlen, *xend = x + xlen;
  while (xend - x >= 4) {
    uint32_t id = rd16(x), sz = rd16(x + 2);
    if ((uint32_t)(xend - x - 4) < sz) break;
    if (id == 1) {
      const uint8_t *f = x + 4, *fend = x + 4 + sz;
      if (e->ulen == 0xffffffffu && fend - f >= 8) { e->ulen = rd64(f); f += 8; }
      if (e->clen == 0xffffffffu && fend - f >= 8) { e->clen = rd64(f); f += 8; }
      if (e->loff == 0xffffffffu && fend - f >= 8) { e->loff = rd64(f); f += 8; }
    }
    x += 4 + sz;
  }
  snprintf(e->shown, sizeof e->shown, "%.*s", nlen > 100 ? 100 : (int)nlen, e->name);
  z->next = p + 46 + (uint64_t)nlen + xlen + mlen;
  z->seen++;
  *got = 1;
  return EM_OK;
}

int em_zip_name_is(const em_zip_entry *e, const char *prefix, size_t plen, const char *name) {
  size_t k = strlen(name);
  return e->nlen == plen + k && memcmp(e->name, prefix, plen) == 0 &&
         memcmp(e->name + plen, name, k) == 0;
}

/* Inflates a raw deflate stream of exactly ulen bytes. */
static em_status inflate_member(const char *op, const char *name, const uint8_t *src,
                                size_t clen, uint8_t *dst, size_t ulen) {
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  if (inflateInit2(&zs, -MAX_WBITS) != Z_OK)
    return em_fail(EM_E_NOMEM, "%s: zlib initialisation failed", op);
  int rc = Z_OK;
  size_t in_left = clen, out_left = ulen;
  zs.next_in = (Bytef *)src;
  zs.next_out = dst;
  while (rc == Z_OK) {
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
    return em_fail(EM_E_VALUE, "%s: member '%s' has corrupt compressed data", op, name);
  return EM_OK;
}

em_status em_zip_data(const em_zip_reader *z, const em_zip_entry *e,
                      const uint8_t **data, uint8_t **owned) {
  const char *op = z->op, *shown = e->shown;
  const uint8_t *b = z->b;
  size_t len = z->len;
  *owned = NULL;
  *data = NULL;
  if (e->flags & 1) return em_fail(EM_E_VALUE, "%s: member '%s' is encrypted", op, shown);
  if (e->method != 0 && e->method != 8)
    return em_fail(EM_E_VALUE, "%s: member '%s' uses unsupported compression method %u",
                   op, shown, e->method);
  uint64_t loff = e->loff, clen = e->clen, ulen = e->ulen;
  if (loff > len || len - loff < 30 || rd32(b + loff) != 0x04034b50)
    return em_fail(EM_E_VALUE, "%s: member '%s' has a corrupt local header", op, shown);
  uint64_t doff = loff + 30 + rd16(b + loff + 26) + rd16(b + loff + 28);
  if (doff > len || clen > len - doff)
    return em_fail(EM_E_VALUE, "%s: member '%s' is truncated", op, shown);
  /* deflate expands at most 1032:1; a member claiming more is corrupt,
  ** and refusing it keeps a lying header from a huge allocation */
  if ((e->method == 0 && ulen != clen) || (e->method == 8 && ulen / 1032 > clen + 1))
    return em_fail(EM_E_VALUE, "%s: member '%s' has inconsistent sizes", op, shown);
  const uint8_t *p = b + doff;
  if (e->method == 8) {
    uint8_t *tmp = malloc(ulen ? ulen : 1);
    if (!tmp)
      return em_fail(EM_E_NOMEM, "%s: out of memory (%llu bytes)", op, (unsigned long long)ulen);
    em_status st = inflate_member(op, shown, p, clen, tmp, ulen);
    if (st != EM_OK) {
      free(tmp);
      return st;
    }
    *owned = tmp;
    p = tmp;
  }
  uint32_t c = crc_of(p, ulen), crc = e->crc;
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
  crc = c; /* let the fuzzer past the CRC, into inflate and the member's format */
#endif
  if (c != crc) {
    free(*owned);
    *owned = NULL;
    return em_fail(EM_E_VALUE, "%s: member '%s' fails its CRC check", op, shown);
  }
  *data = p;
  return EM_OK;
}

/* -- Writing ------------------------------------------------------------------ */

struct em_zip_written {
  char *name;
  uint32_t crc, method;
  uint64_t clen, ulen, off;
};

enum { TORCH_ALIGN = 64 };

em_status em_zipw_open(em_zip_writer *w, const char *op, const char *path,
                       em_zip_style style) {
  memset(w, 0, sizeof *w);
  w->op = op;
  w->path = path;
  w->style = style;
  w->f = fopen(path, "wb");
  if (!w->f)
    return w->st = em_fail(EM_E_RUNTIME, "%s: cannot open '%s' for writing: %s", op, path,
                           strerror(errno));
  return EM_OK;
}

static int put(em_zip_writer *w, const void *p, size_t n) {
  if (n && fwrite(p, 1, n, w->f) != n) {
    w->st = em_fail(EM_E_RUNTIME, "%s: write error on '%s'", w->op, w->path);
    return 0;
  }
  w->pos += n;
  return 1;
}

static em_status too_big(em_zip_writer *w) {
  return w->st = em_fail(EM_E_VALUE, "%s: archives over 4 GiB are not supported", w->op);
}

/* Deflates src into a malloc'd buffer. */
static em_status deflate_member(em_zip_writer *w, const char *shown, const void *src,
                                size_t len, uint8_t **out, size_t *olen) {
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  if (len > 0xffffffffu || deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS,
                                        8, Z_DEFAULT_STRATEGY) != Z_OK)
    return w->st = em_fail(EM_E_RUNTIME, "%s: cannot compress member '%s'", w->op, shown);
  uLong bound = deflateBound(&zs, (uLong)len);
  uint8_t *z = malloc(bound);
  zs.next_in = (Bytef *)src;
  zs.avail_in = (uInt)len;
  zs.next_out = z;
  zs.avail_out = (uInt)bound;
  int rc = z ? deflate(&zs, Z_FINISH) : Z_MEM_ERROR;
  *olen = zs.total_out;
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) {
    free(z);
    return w->st = em_fail(EM_E_RUNTIME, "%s: cannot compress member '%s'", w->op, shown);
  }
  *out = z;
  return EM_OK;
}

/* Python's zipfile (numpy.savez) sets the UTF-8 flag (0x800) on a name that is
** not ASCII; without it, readers take the name as CP437 */
static uint32_t utf8_flag(const char *name) {
  for (const unsigned char *c = (const unsigned char *)name; *c; c++)
    if (*c >= 0x80) return 0x0800;
  return 0;
}

em_status em_zipw_add(em_zip_writer *w, const char *prefix, const char *name,
                      const void *data, size_t len, int compress) {
  if (w->st != EM_OK) return w->st;
  size_t plen = strlen(prefix), nlen = plen + strlen(name);
  if (nlen > 65535)
    return w->st = em_fail(EM_E_VALUE, "%s: member name too long", w->op);
  if (w->n >= 65534)
    return w->st = em_fail(EM_E_VALUE, "%s: more than 65534 members", w->op);
  if (w->n == w->cap) {
    int64_t cap = w->cap ? 2 * w->cap : 16;
    em_zip_written *e = realloc(w->ents, (size_t)cap * sizeof *e);
    if (!e) return w->st = em_fail(EM_E_NOMEM, "%s: out of memory", w->op);
    w->ents = e;
    w->cap = cap;
  }
  char *full = malloc(nlen + 1);
  if (!full) return w->st = em_fail(EM_E_NOMEM, "%s: out of memory", w->op);
  memcpy(full, prefix, plen);
  strcpy(full + plen, name);
  uint32_t crc = crc_of(data, len);
  const void *body = data;
  uint8_t *z = NULL;
  size_t blen = len;
  if (compress && deflate_member(w, full, data, len, &z, &blen) != EM_OK) {
    free(full);
    return w->st;
  }
  if (z) body = z;
  if (blen > 0xfffffffeu || len > 0xfffffffeu || w->pos > 0xfffffffeu) {
    free(full);
    free(z);
    return too_big(w);
  }
  em_zip_written *e = &w->ents[w->n++];
  *e = (em_zip_written){full, crc, compress ? 8u : 0u, blen, len, w->pos};
  uint8_t lh[30];
  memset(lh, 0, sizeof lh);
  wr32(lh, 0x04034b50);
  if (w->style == EM_ZIP_NUMPY) {
    wr16(lh + 4, 20);
    wr16(lh + 6, utf8_flag(full));
    wr16(lh + 8, e->method);
    wr16(lh + 12, 0x21);  /* 1980-01-01 00:00:00 */
    wr32(lh + 14, crc);
    wr32(lh + 18, (uint32_t)blen);
    wr32(lh + 22, (uint32_t)len);
    wr16(lh + 26, (uint32_t)nlen);
    int ok = put(w, lh, 30) && put(w, full, nlen) && put(w, body, blen);
    free(z);
    return ok ? EM_OK : w->st;
  }
  /* TORCH: sizes in the data descriptor (flag 8; miniz writes none for an
  ** empty member) and UTF-8 names (flag 0x800); an "FB" extra field of 'Z'
  ** bytes makes the data start at a multiple of 64 (PyTorchStreamWriter's
  ** getPadding) */
  uint64_t start = w->pos + 30 + nlen + 4;
  size_t pad = (size_t)((TORCH_ALIGN - start % TORCH_ALIGN) % TORCH_ALIGN);
  uint8_t extra[4 + TORCH_ALIGN];
  wr16(extra, 0x4246); /* "FB" */
  wr16(extra + 2, (uint32_t)pad);
  memset(extra + 4, 'Z', pad);
  wr16(lh + 6, len ? 0x0808 : 0x0800);
  wr16(lh + 8, e->method);
  wr16(lh + 26, (uint32_t)nlen);
  wr16(lh + 28, (uint32_t)(4 + pad));
  uint8_t dd[16];
  wr32(dd, 0x08074b50);
  wr32(dd + 4, crc);
  wr32(dd + 8, (uint32_t)blen);
  wr32(dd + 12, (uint32_t)len);
  int ok = put(w, lh, 30) && put(w, full, nlen) && put(w, extra, 4 + pad) &&
           put(w, body, blen) && (!len || put(w, dd, sizeof dd));
  free(z);
  return ok ? EM_OK : w->st;
}

static void write_directory(em_zip_writer *w) {
  uint64_t cd = w->pos;
  for (int64_t i = 0; i < w->n && w->st == EM_OK; i++) {
    const em_zip_written *e = &w->ents[i];
    size_t nlen = strlen(e->name);
    uint8_t ch[46];
    memset(ch, 0, sizeof ch);
    wr32(ch, 0x02014b50);
    if (w->style == EM_ZIP_NUMPY) {
      wr16(ch + 4, 20);
      wr16(ch + 6, 20);
      wr16(ch + 8, utf8_flag(e->name));
      wr16(ch + 14, 0x21);
      wr32(ch + 38, 0x81800000u); /* regular file, mode 0600 */
    } else {
      wr16(ch + 8, e->ulen ? 0x0808 : 0x0800);
    }
    wr16(ch + 10, e->method);
    wr32(ch + 16, e->crc);
    wr32(ch + 20, (uint32_t)e->clen);
    wr32(ch + 24, (uint32_t)e->ulen);
    wr16(ch + 28, (uint32_t)nlen);
    wr32(ch + 42, (uint32_t)e->off);
    if (!put(w, ch, 46) || !put(w, e->name, nlen)) return;
  }
  if (w->pos > 0xfffffffeu) {
    too_big(w);
    return;
  }
  uint64_t cdsize = w->pos - cd;
  if (w->style == EM_ZIP_TORCH) {
    /* miniz ends every archive with the zip64 end record and its locator */
    uint8_t z[56 + 20];
    memset(z, 0, sizeof z);
    wr32(z, 0x06064b50);
    wr64(z + 4, 44);
    wr16(z + 12, 0x031e);  /* made by: Unix, spec 3.0 */
    wr16(z + 14, 0x002d);  /* needed: 4.5 (zip64) */
    wr64(z + 24, (uint64_t)w->n);
    wr64(z + 32, (uint64_t)w->n);
    wr64(z + 40, cdsize);
    wr64(z + 48, cd);
    wr32(z + 56, 0x07064b50);
    wr64(z + 56 + 8, w->pos);
    wr32(z + 56 + 16, 1);
    if (!put(w, z, sizeof z)) return;
  }
  uint8_t eo[22];
  memset(eo, 0, sizeof eo);
  wr32(eo, 0x06054b50);
  wr16(eo + 8, (uint32_t)w->n);
  wr16(eo + 10, (uint32_t)w->n);
  wr32(eo + 12, (uint32_t)cdsize);
  wr32(eo + 16, (uint32_t)cd);
  put(w, eo, 22);
}

em_status em_zipw_close(em_zip_writer *w) {
  if (w->st == EM_OK) write_directory(w);
  if (w->f && fclose(w->f) != 0 && w->st == EM_OK)
    w->st = em_fail(EM_E_RUNTIME, "%s: write error on '%s'", w->op, w->path);
  w->f = NULL;
  for (int64_t i = 0; i < w->n; i++) free(w->ents[i].name);
  free(w->ents);
  w->ents = NULL;
  w->n = w->cap = 0;
  return w->st;
}
