/*
** io/mapping.h -- what the file loaders share (npy.c, safetensors.c,
** serialize.c): the host's byte order, byte swapping, bool normalising, and
** file mappings wrapped as storages.
**
** What holds:
** - A mapping is always writable: copy-on-write (private) or shared. ember
**   has no read-only tensors, so a PROT_READ mapping would turn an ordinary
**   write into a segfault.
** - em_io_wrap_mapping takes the mapping whatever happens: on success the
**   storage's deleter unmaps it exactly once, when the last view goes; on
**   failure it is unmapped before the call returns.
*/
#ifndef EMBER_IO_MAPPING_H
#define EMBER_IO_MAPPING_H

#include "core/core.h"

typedef struct em_io_mapping {
  void *base;  /* NULL for an empty file */
  size_t len;
} em_io_mapping;

int em_io_host_is_little(void);
/* Reverses the bytes of each of n elements of `size` bytes. */
void em_io_byteswap(void *data, int64_t n, int size);
/* The same for n elements of dtype dt: a complex element is two parts,
** each reversed on its own. */
void em_io_byteswap_dtype(void *data, int64_t n, em_dtype dt);
/* Counts the bool bytes other than 0 and 1; with fix, sets them to 1. */
int64_t em_io_bool_normalise(uint8_t *p, int64_t n, int fix);

/* Maps the whole regular file `path` (shared = 1: MAP_SHARED, writes reach
** the file; 0: MAP_PRIVATE, copy-on-write). Errors name op and path. */
em_status em_io_map_file(const char *op, const char *path, int shared,
                         em_io_mapping *m);
void em_io_unmap(em_io_mapping *m);
/* A storage over [data, data + nbytes), which lies inside m. */
em_status em_io_wrap_mapping(const char *op, em_io_mapping m, void *data,
                             size_t nbytes, em_storage **out);

#endif
