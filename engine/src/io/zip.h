/*
** io/zip.h -- the zip archives of NumPy's .npz (npy.c) and PyTorch's
** checkpoints (torch.c), read from memory (a file mapped with
** io/mapping.h) and written to a file (zip.c). Internal to engine/src/io.
**
** Reading works on an archive held in memory (a mapped file): every offset
** and size in the central directory and the local headers is checked
** against the bytes present before it is used, and a member's bytes are
** checked against its CRC. Writing streams members to a FILE and keeps the
** directory entries until em_zipw_close.
*/
#ifndef EMBER_IO_ZIP_H
#define EMBER_IO_ZIP_H

#include "core/core.h"

#include <stdio.h>

/* -- Reading ---------------------------------------------------------------- */

typedef struct {
  const char *op;      /* errors read "op: ..." */
  const uint8_t *b;
  size_t len;
  uint64_t count;      /* central directory entries */
  uint64_t next;       /* the next entry's offset */
  uint64_t end;        /* the directory's end */
  uint64_t seen;       /* entries read so far */
} em_zip_reader;

typedef struct {
  const char *name;    /* nlen bytes inside the archive, not NUL-terminated */
  uint32_t nlen;
  char shown[128];     /* the name for messages: NUL-terminated, at most 100 bytes */
  uint32_t flags, method, crc;
  uint64_t clen, ulen, loff;
} em_zip_entry;

/* Finds the central directory (zip64 records too). */
em_status em_zip_open(em_zip_reader *z, const char *op, const void *buf, size_t len);
/* The next directory entry into *e; *got = 0 when there are no more. */
em_status em_zip_next(em_zip_reader *z, em_zip_entry *e, int *got);
/* The member's bytes (e->ulen of them): *data points into the archive for a
** stored member, or to *owned (malloc'd; the caller frees it) for a
** deflated one. Checks encryption, the method, the local header, the sizes
** and the CRC. */
em_status em_zip_data(const em_zip_reader *z, const em_zip_entry *e,
                      const uint8_t **data, uint8_t **owned);
/* Does the entry's name equal prefix followed by name? */
int em_zip_name_is(const em_zip_entry *e, const char *prefix, size_t plen, const char *name);

/* -- Writing ---------------------------------------------------------------- */

/* NUMPY: the records numpy.savez writes (version 2.0, no padding).
** TORCH: the records PyTorch's PyTorchStreamWriter (caffe2/serialize,
** miniz) writes: each member's data starts at a multiple of 64 (an "FB"
** extra field of 'Z' bytes pads the local header), sizes and CRC follow the
** data in a data descriptor, and the end has zip64 records. */
typedef enum { EM_ZIP_NUMPY, EM_ZIP_TORCH } em_zip_style;

typedef struct em_zip_written em_zip_written;
typedef struct {
  const char *op, *path;
  FILE *f;
  em_zip_style style;
  em_zip_written *ents;
  int64_t n, cap;
  uint64_t pos;
  em_status st;        /* the first error; later calls do nothing */
} em_zip_writer;

em_status em_zipw_open(em_zip_writer *w, const char *op, const char *path,
                       em_zip_style style);
/* Adds member prefix+name holding len bytes; compress deflates it. */
em_status em_zipw_add(em_zip_writer *w, const char *prefix, const char *name,
                      const void *data, size_t len, int compress);
/* Writes the central directory and closes the file; after an earlier error
** only closes it. Returns the first error. */
em_status em_zipw_close(em_zip_writer *w);

#endif
