/* driver/cache_api.c: the public face of the disk cache (fusec_cache_stats and
 * fusec_cache_clear, behind `fusec cache stats|clear`). */
#include "fusec.h"

#include <stdio.h>
#include <string.h>

#include "driver/cache.h"

fusec_status fusec_cache_stats(const char *dir, fusec_cache_info *out) {
    if (!out) return FUSEC_ERR_INVALID_ARGUMENT;
    memset(out, 0, sizeof(*out));
    rt_cache_stats st;
    char err[512];
    if (rt_cache_stats_get(dir, &st, err, sizeof err) != 0) {
        snprintf(out->dir, sizeof out->dir, "%s", err);
        return FUSEC_ERR_IO;
    }
    memcpy(out->dir, st.dir, sizeof out->dir);
    out->entries = st.entries;
    out->entry_bytes = st.entry_bytes;
    out->total_bytes = st.total_bytes;
    out->max_bytes = st.max_bytes;
    return FUSEC_OK;
}

fusec_status fusec_cache_clear(const char *dir, uint64_t *removed) {
    uint64_t n = 0;
    char err[512];
    int rc = rt_cache_clear(dir, &n, err, sizeof err);
    if (removed) *removed = n;
    return rc == 0 ? FUSEC_OK : FUSEC_ERR_IO;
}
