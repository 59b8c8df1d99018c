/* tools/npy.h: reading and writing numpy .npy files (format versions 1-3), converting
 * between their dtypes and fusec's. */
#ifndef FUSEC_TOOLS_NPY_H
#define FUSEC_TOOLS_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "fusec.h"

typedef enum npy_kind { NPY_BOOL, NPY_INT, NPY_UINT, NPY_FLOAT } npy_kind;

typedef struct npy_array {
    npy_kind kind;
    int itemsize; /* bytes per element: 1, 2, 4, 8 */
    int swap;     /* big-endian data: bytes need swapping */
    int rank;
    int64_t shape[FUSEC_MAX_RANK];
    int64_t count; /* elements */
    int fortran;   /* column-major ('fortran_order': True): the first index varies fastest */
    void *data;    /* malloc'd, count * itemsize bytes, as in the file */
} npy_array;

/* Reads path into *a, in C or Fortran order. 0, or -1 with a message in err (unreadable, not
 * .npy, unsupported dtype, rank above 8, a shape too large to count in bytes, truncated data:
 * a regular file shorter than its header's shape says is found before the data is
 * allocated). */
int npy_read(const char *path, npy_array *a, char *err, size_t errlen);
void npy_free(npy_array *a);

/* Converts a's elements to dtype t into a new malloc'd buffer *out: integers (uint64 too) as
 * numpy's astype converts them, wrapping to an integer dtype and rounded once from the exact
 * value to a float one; bf16 rounded to nearest even from the value; floats to ints truncate;
 * NaN to int gives 0. 0, or -1 with err. */
int npy_convert(const npy_array *a, fusec_dtype t, void **out, char *err, size_t errlen);

/* Writes count elements of dtype t (bf16 written as f32) with the given shape. 0, or -1. */
int npy_write(const char *path, fusec_dtype t, int rank, const int64_t *shape, const void *data,
              char *err, size_t errlen);

#endif
