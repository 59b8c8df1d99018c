/* driver/cache.h: the compiled-kernel cache (SPEC §4): memory in front of a directory.
 *
 * A key is an XXH3-128 hash over named parts, everything that decides the binary:
 *
 *     rt_cache_key k;
 *     rt_cache_key_init(&k, "gelu.fuse:gelu:k0");        // group: names the kernel
 *     rt_cache_key_part_str(&k, "source", cuda_src);
 *     rt_cache_key_part_str(&k, "options", opts);        // rt_nvrtc_options_string
 *     rt_cache_key_part_str(&k, "arch", "sm_90");
 *     rt_cache_key_part_str(&k, "compiler", nvrtc_id);   // rt_nvrtc_identity
 *     rt_cache_key_part_str(&k, "fusec", "0.1.0/codegen-3");
 *     rt_cache_get_or_build(c, &k, build, ctx, &bin, &len, &info);
 *
 * The group is not part of the key (two kernels with the same identity share one binary);
 * it names the kernel so that a miss can say what changed since that kernel was last
 * stored ("miss: new arch (sm_80 -> sm_90)").
 *
 * On disk, in the cache directory (files of other names are never touched):
 *   e-<32 hex key>.bin     an entry: a 64-byte header (magic "FUSECACH", format version,
 *                          key, payload length, XXH3-64 of the payload, XXH3-64 of the
 *                          header) then the payload. Written to a temporary file and
 *                          renamed into place; checked on every read; a bad one is deleted
 *                          and rebuilt, never loaded.
 *   i-<16 hex group>.idx   the part hashes of the group's last few stored keys, checksummed:
 *                          only for miss reasons, so a lost or bad one costs nothing.
 *   l-<32 hex key>.lock    held (flock) by the one process building that key.
 *   t-<hex>.XXXXXX         a temporary file being written; stale ones (an hour) are removed.
 * Least recently used entries (by modification time, refreshed on each hit) are evicted
 * when the total passes the bound: FUSEC_CACHE_MAX_MB (default 1024).
 *
 * Thread safety: a rt_cache handle may be used from several threads at once. The memory
 * cache is process-wide, behind a mutex. Nothing here exits or prints; the one warning a
 * handle has (an unwritable directory) is fetched with rt_cache_warning.
 */
#ifndef FUSEC_RUNTIME_CACHE_H
#define FUSEC_RUNTIME_CACHE_H

#include <stddef.h>
#include <stdint.h>

#define RT_CACHE_FORMAT_VERSION 1 /* of the entry and index files */
#define RT_CACHE_MAX_PARTS      8
#define RT_CACHE_PART_NAME      16 /* a part's name, with its NUL */
#define RT_CACHE_PART_LABEL     40 /* a part's value shown in miss reasons, with its NUL */
#define RT_CACHE_DEFAULT_MAX_MB 1024
#define RT_CACHE_REASON_LEN     256

typedef struct rt_cache rt_cache;

/* One named part of a key. */
typedef struct rt_cache_part {
    char name[RT_CACHE_PART_NAME];
    uint64_t hash;                   /* XXH3-64 of the part's bytes */
    char label[RT_CACHE_PART_LABEL]; /* the bytes when short printable text, else "" */
} rt_cache_part;

typedef struct rt_cache_key {
    unsigned char digest[16]; /* XXH3-128 (canonical bytes) over the parts so far */
    uint64_t group;           /* XXH3-64 of the group name */
    int nparts;
    int bad; /* a part was refused (too many, bad name): lookups fail */
    rt_cache_part parts[RT_CACHE_MAX_PARTS];
} rt_cache_key;

typedef enum rt_cache_status {
    RT_CACHE_OK = 0,
    RT_CACHE_MISS = 1,         /* rt_cache_lookup only: not cached */
    RT_CACHE_BUILD_FAILED = 2, /* the build callback failed: its context says why */
    RT_CACHE_NOMEM = 3,
    RT_CACHE_INVALID = 4, /* a NULL argument or a refused key */
} rt_cache_status;

typedef enum rt_cache_source {
    RT_CACHE_FROM_MEMORY = 0, /* the process's memory cache */
    RT_CACHE_FROM_DISK = 1,   /* a checked entry of the directory */
    RT_CACHE_FROM_BUILD = 2,  /* built now by the callback */
    RT_CACHE_FROM_PEER = 3,   /* built meanwhile by another process or thread, then read */
    RT_CACHE_FROM_NONE = 4,   /* nothing (a miss or a failure) */
} rt_cache_source;

/* What one lookup did, for `-v`. */
typedef struct rt_cache_info {
    int hit; /* 1 when the payload came from the cache (memory, disk, peer) */
    rt_cache_source source;
    int discarded;                    /* a corrupt entry was found and deleted */
    double lookup_ms;                 /* time spent looking (not building) */
    double build_ms;                  /* time in the build callback; 0 on a hit */
    char reason[RT_CACHE_REASON_LEN]; /* "hit (memory)", "hit (disk)", "miss: new source",
                                         "miss: new arch (sm_80 -> sm_90)", "miss: no entry",
                                         "miss: corrupt entry discarded (checksum mismatch)" */
} rt_cache_info;

/* Builds a payload on a miss: sets *out (malloc'd; the cache takes it) and *outlen and
 * returns 0, or returns nonzero having kept its own error in ctx. */
typedef int (*rt_cache_build_fn)(void *ctx, void **out, size_t *outlen);

/* ---- keys ----------------------------------------------------------------------------- */

/* Starts a key. `group` (may be NULL) names the kernel for miss reasons only. */
void rt_cache_key_init(rt_cache_key *k, const char *group);
/* Adds a part: `name` is 1-15 characters of [a-z0-9_], unique in the key; parts are order
 * sensitive. Returns 0, or -1 (and marks the key bad) when refused. */
int rt_cache_key_part(rt_cache_key *k, const char *name, const void *data, size_t len);
int rt_cache_key_part_str(rt_cache_key *k, const char *name, const char *s);
/* The key as 32 lowercase hex digits and a NUL. */
void rt_cache_key_hex(const rt_cache_key *k, char out[33]);

/* ---- handles -------------------------------------------------------------------------- */

typedef struct rt_cache_config {
    const char *dir;    /* NULL: rt_cache_resolve_dir's choice */
    int no_disk;        /* neither read nor write the directory */
    int no_memory;      /* bypass the process's memory cache */
    uint64_t max_bytes; /* the directory's bound; 0: $FUSEC_CACHE_MAX_MB, else the default */
} rt_cache_config;

/* The directory per SPEC §4: `explicit_dir` when non-NULL and non-empty, else
 * $FUSEC_CACHE_DIR, else $XDG_CACHE_HOME/fusec (absolute only), else $HOME/.cache/fusec
 * (the password database's home when HOME is unset). 0, or -1 with out "" if none. */
int rt_cache_resolve_dir(const char *explicit_dir, char *out, size_t outlen);

/* Opens a cache. Never fails for a bad directory: the cache then lives in memory only and
 * rt_cache_warning says why. Returns NULL only when memory runs out. cfg may be NULL. */
rt_cache *rt_cache_open(const rt_cache_config *cfg);
void rt_cache_close(rt_cache *c); /* NULL is accepted */

/* The handle's warning the first time it is asked after one arose, else NULL. At most one
 * warning per handle, e.g. "cache directory '/x' is not writable (Read-only file system);
 * compiled kernels are kept in memory only". */
const char *rt_cache_warning(rt_cache *c);
/* The directory in use; "" when memory only. */
const char *rt_cache_dir(const rt_cache *c);

/* Looks the key up (memory, then disk). RT_CACHE_OK: *payload (malloc'd, caller frees) and
 * *len are set. RT_CACHE_MISS: info->reason says why. info may be NULL. */
rt_cache_status rt_cache_lookup(rt_cache *c, const rt_cache_key *k, void **payload, size_t *len,
                                rt_cache_info *info);

/* Stores a payload (a copy is taken) under the key, in memory and on disk, and evicts old
 * entries past the bound. Failing to write is not an error (see rt_cache_warning). */
rt_cache_status rt_cache_store(rt_cache *c, const rt_cache_key *k, const void *payload, size_t len);

/* Looks up; on a miss takes the key's lock file, looks again (another process may have
 * built it meanwhile), and only if still missing runs build(ctx) and stores the result.
 * So concurrent processes that miss on one key run the build once in total. On RT_CACHE_OK
 * *payload (malloc'd, caller frees) and *len hold the payload. */
rt_cache_status rt_cache_get_or_build(rt_cache *c, const rt_cache_key *k, rt_cache_build_fn build,
                                      void *ctx, void **payload, size_t *len, rt_cache_info *info);

/* ---- the directory as a whole (`fusec cache stats|clear`) ----------------------------- */

typedef struct rt_cache_stats {
    char dir[4096];
    uint64_t entries;     /* e-*.bin files */
    uint64_t entry_bytes; /* their total size */
    uint64_t other_files; /* index, lock and temporary files */
    uint64_t total_bytes; /* every file of the cache's own naming */
    uint64_t max_bytes;   /* the bound in force ($FUSEC_CACHE_MAX_MB or the default) */
} rt_cache_stats;

/* Statistics of `dir` (NULL: the resolved directory). A missing directory is an empty
 * cache. 0, or -1 with a message in err. */
int rt_cache_stats_get(const char *dir, rt_cache_stats *st, char *err, size_t errlen);
/* Removes every file of the cache's own naming from `dir` (NULL: the resolved one), and
 * nothing else; sets *removed (may be NULL). Also empties the process's memory cache.
 * 0, or -1 with a message in err. */
int rt_cache_clear(const char *dir, uint64_t *removed, char *err, size_t errlen);

/* Empties the process's memory cache (tests, and `--no-cache` timings). */
void rt_cache_memory_clear(void);

#endif
