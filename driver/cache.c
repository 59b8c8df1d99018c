/* driver/cache.c: the compiled-kernel cache: keys, memory cache, checked disk entries,
 * per-key build locks, miss reasons and LRU eviction. The file formats and naming are
 * described in cache.h.
 *
 * Robustness rules followed throughout: every byte read from the directory is distrusted
 * (sizes, magic, version, key and two checksums are checked before a payload is handed
 * out); every write goes to a private temporary file renamed into place, so readers see a
 * whole entry or none; no I/O failure fails a compile, it only costs the cache.
 */
#include "driver/cache.h"
#include "runtime/clock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#define HEADER_SIZE       64
#define MAX_PAYLOAD       ((uint64_t)1 << 30) /* larger is refused on store and corrupt on read */
#define INDEX_RECORDS     4                   /* part sets kept per group */
#define INDEX_HEADER      24
#define INDEX_PART        (RT_CACHE_PART_NAME + 8 + RT_CACHE_PART_LABEL)
#define INDEX_RECORD      (8 + RT_CACHE_MAX_PARTS * INDEX_PART)
#define STALE_SECONDS     3600                /* temporary and lock files older are leftovers */
#define LOCK_WAIT_SECONDS 300                 /* then build without the lock rather than hang */
#define MEM_MAX_BYTES     ((size_t)256 << 20) /* the memory cache's bound */
#define MEM_BUCKETS       1024

static const char entry_magic[8] = {'F', 'U', 'S', 'E', 'C', 'A', 'C', 'H'};
static const char index_magic[8] = {'F', 'U', 'S', 'E', 'C', 'I', 'D', 'X'};

struct rt_cache {
    pthread_mutex_t mu; /* guards disk_write, disk_read and the warning */
    char dir[PATH_MAX];
    int disk_read, disk_write, use_memory;
    uint64_t max_bytes;
    int has_warning, warning_taken;
    char warning[PATH_MAX + 256];
};

/* ---- small helpers -------------------------------------------------------------------- */

static void put_u32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}
static void put_u64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get_u32(const unsigned char *p) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}
static uint64_t get_u64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static void to_hex(const unsigned char *b, size_t n, char *out) {
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    out[2 * n] = '\0';
}

static void group_hex(uint64_t g, char out[17]) {
    unsigned char b[8];
    put_u64(b, g);
    to_hex(b, 8, out);
}

static int is_hex(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
    return 1;
}

static int is_alnum(char ch) {
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

enum { FILE_NONE, FILE_ENTRY, FILE_INDEX, FILE_LOCK, FILE_TEMP };

/* Which of the cache's own files a directory entry is; FILE_NONE for anything else, which
 * the cache never touches. */
static int classify(const char *name) {
    size_t n = strlen(name);
    if (n == 38 && strncmp(name, "e-", 2) == 0 && is_hex(name + 2, 32) &&
        strcmp(name + 34, ".bin") == 0)
        return FILE_ENTRY;
    if (n == 22 && strncmp(name, "i-", 2) == 0 && is_hex(name + 2, 16) &&
        strcmp(name + 18, ".idx") == 0)
        return FILE_INDEX;
    if (n == 39 && strncmp(name, "l-", 2) == 0 && is_hex(name + 2, 32) &&
        strcmp(name + 34, ".lock") == 0)
        return FILE_LOCK;
    if ((n == 25 || n == 41) && strncmp(name, "t-", 2) == 0 && is_hex(name + 2, n - 9) &&
        name[n - 7] == '.') {
        for (size_t i = n - 6; i < n; i++)
            if (!is_alnum(name[i])) return FILE_NONE;
        return FILE_TEMP;
    }
    return FILE_NONE;
}

/* Reads exactly n bytes at offset off; 0 on success. */
static int read_full(int fd, void *buf, size_t n, off_t off) {
    unsigned char *p = buf;
    while (n > 0) {
        ssize_t r = pread(fd, p, n, off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        p += r;
        n -= (size_t)r;
        off += r;
    }
    return 0;
}

static int write_full(int fd, const void *buf, size_t n) {
    const unsigned char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            if (w == 0) errno = EIO;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void set_warning(rt_cache *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_warning(rt_cache *c, const char *fmt, ...) {
    pthread_mutex_lock(&c->mu);
    if (!c->has_warning) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->warning, sizeof c->warning, fmt, ap);
        va_end(ap);
        c->has_warning = 1;
    }
    pthread_mutex_unlock(&c->mu);
}

/* Stops writing to the directory after a failure that will recur (permissions, a read-only
 * file system, a full disk), with the handle's one warning. */
static void disable_writes(rt_cache *c, int err) {
    pthread_mutex_lock(&c->mu);
    int was = c->disk_write;
    c->disk_write = 0;
    pthread_mutex_unlock(&c->mu);
    if (was)
        set_warning(c,
                    "cache directory '%s' is not writable (%s); compiled kernels are kept in "
                    "memory only",
                    c->dir, strerror(err));
}

static int can_write(rt_cache *c) {
    pthread_mutex_lock(&c->mu);
    int w = c->disk_write;
    pthread_mutex_unlock(&c->mu);
    return w;
}

static int can_read(rt_cache *c) {
    pthread_mutex_lock(&c->mu);
    int r = c->disk_read;
    pthread_mutex_unlock(&c->mu);
    return r;
}

static int persistent_write_error(int err) {
    return err == EACCES || err == EPERM || err == EROFS || err == ENOSPC || err == EDQUOT ||
           err == ENOTDIR;
}

/* ---- keys ----------------------------------------------------------------------------- */

/* The canonical (big-endian) bytes of a 128-bit hash: the same on every machine. */
static void put_digest(unsigned char *out, XXH128_hash_t h) {
    XXH128_canonical_t canon;
    XXH128_canonicalFromHash(&canon, h);
    memcpy(out, canon.digest, 16);
}

void rt_cache_key_init(rt_cache_key *k, const char *group) {
    static const char seed[] = "fusec cache key, format 1";
    memset(k, 0, sizeof *k);
    put_digest(k->digest, XXH3_128bits(seed, sizeof seed - 1));
    if (group) k->group = XXH3_64bits(group, strlen(group));
}

int rt_cache_key_part(rt_cache_key *k, const char *name, const void *data, size_t len) {
    size_t nlen = name ? strlen(name) : 0;
    if (!k) return -1;
    if (nlen == 0 || nlen >= RT_CACHE_PART_NAME || k->nparts >= RT_CACHE_MAX_PARTS ||
        (!data && len)) {
        k->bad = 1;
        return -1;
    }
    for (size_t i = 0; i < nlen; i++) {
        char ch = name[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_')) {
            k->bad = 1;
            return -1;
        }
    }
    for (int i = 0; i < k->nparts; i++) {
        if (strcmp(k->parts[i].name, name) == 0) {
            k->bad = 1;
            return -1;
        }
    }
    XXH128_hash_t h = XXH3_128bits(data ? data : "", len);
    rt_cache_part *p = &k->parts[k->nparts++];
    memcpy(p->name, name, nlen + 1);
    p->hash = h.low64;
    p->label[0] = '\0';
    if (len < RT_CACHE_PART_LABEL) {
        const unsigned char *d = data;
        size_t i = 0;
        while (i < len && d[i] >= 0x20 && d[i] < 0x7f)
            i++;
        if (i == len) {
            memcpy(p->label, d, len);
            p->label[len] = '\0';
        }
    }
    /* Chain: digest' = XXH3-128(digest | name length | name | data length | XXH3-128(data)).
     * The lengths keep ("ab","c") and ("a","bc") apart. */
    unsigned char buf[16 + 1 + RT_CACHE_PART_NAME + 8 + 16];
    size_t n = 0;
    memcpy(buf, k->digest, 16);
    n += 16;
    buf[n++] = (unsigned char)nlen;
    memcpy(buf + n, name, nlen);
    n += nlen;
    put_u64(buf + n, (uint64_t)len);
    n += 8;
    put_digest(buf + n, h);
    n += 16;
    put_digest(k->digest, XXH3_128bits(buf, n));
    return 0;
}

int rt_cache_key_part_str(rt_cache_key *k, const char *name, const char *s) {
    return rt_cache_key_part(k, name, s ? s : "", s ? strlen(s) : 0);
}

void rt_cache_key_hex(const rt_cache_key *k, char out[33]) {
    to_hex(k->digest, 16, out);
}

/* ---- the memory cache (process-wide, behind one mutex) -------------------------------- */

typedef struct mem_entry {
    struct mem_entry *next;
    unsigned char key[16];
    uint64_t tick;
    size_t len;
    unsigned char *data;
} mem_entry;

static pthread_mutex_t mem_mu = PTHREAD_MUTEX_INITIALIZER;
static mem_entry *mem_table[MEM_BUCKETS];
static size_t mem_bytes;
static uint64_t mem_tick;

static size_t mem_bucket(const unsigned char *key) {
    return (size_t)(get_u64(key) % MEM_BUCKETS);
}

/* A copy of the cached payload, or NULL. *nomem set when the copy could not be made. */
static void *mem_get(const unsigned char *key, size_t *len, int *nomem) {
    void *copy = NULL;
    pthread_mutex_lock(&mem_mu);
    for (mem_entry *e = mem_table[mem_bucket(key)]; e; e = e->next) {
        if (memcmp(e->key, key, 16) == 0) {
            e->tick = ++mem_tick;
            copy = malloc(e->len ? e->len : 1);
            if (copy) {
                memcpy(copy, e->data, e->len);
                *len = e->len;
            } else {
                *nomem = 1;
            }
            break;
        }
    }
    pthread_mutex_unlock(&mem_mu);
    return copy;
}

/* Drops the least recently used entry; caller holds mem_mu. */
static void mem_evict_one(void) {
    mem_entry **victim = NULL;
    for (size_t b = 0; b < MEM_BUCKETS; b++)
        for (mem_entry **pe = &mem_table[b]; *pe; pe = &(*pe)->next)
            if (!victim || (*pe)->tick < (*victim)->tick) victim = pe;
    if (!victim) return;
    mem_entry *e = *victim;
    *victim = e->next;
    mem_bytes -= e->len;
    free(e->data);
    free(e);
}

static void mem_put(const unsigned char *key, const void *data, size_t len) {
    if (len > MEM_MAX_BYTES / 4) return; /* one huge payload would flush everything */
    mem_entry *e = malloc(sizeof *e);
    unsigned char *copy = malloc(len ? len : 1);
    if (!e || !copy) {
        free(e);
        free(copy);
        return; /* the memory cache is an optimisation: no room is no error */
    }
    memcpy(copy, data, len);
    memcpy(e->key, key, 16);
    e->len = len;
    e->data = copy;
    pthread_mutex_lock(&mem_mu);
    size_t b = mem_bucket(key);
    for (mem_entry **pe = &mem_table[b]; *pe; pe = &(*pe)->next) {
        if (memcmp((*pe)->key, key, 16) == 0) { /* replace: same key, same payload */
            mem_entry *old = *pe;
            *pe = old->next;
            mem_bytes -= old->len;
            free(old->data);
            free(old);
            break;
        }
    }
    while (mem_bytes + len > MEM_MAX_BYTES && mem_bytes > 0)
        mem_evict_one();
    e->tick = ++mem_tick;
    e->next = mem_table[b];
    mem_table[b] = e;
    mem_bytes += len;
    pthread_mutex_unlock(&mem_mu);
}

void rt_cache_memory_clear(void) {
    pthread_mutex_lock(&mem_mu);
    for (size_t b = 0; b < MEM_BUCKETS; b++) {
        mem_entry *e = mem_table[b];
        while (e) {
            mem_entry *next = e->next;
            free(e->data);
            free(e);
            e = next;
        }
        mem_table[b] = NULL;
    }
    mem_bytes = 0;
    pthread_mutex_unlock(&mem_mu);
}

/* ---- the directory -------------------------------------------------------------------- */

int rt_cache_resolve_dir(const char *explicit_dir, char *out, size_t outlen) {
    const char *v;
    int n = -1;
    if (!out || outlen == 0) return -1;
    out[0] = '\0';
    if (explicit_dir && *explicit_dir) {
        n = snprintf(out, outlen, "%s", explicit_dir);
    } else if ((v = getenv("FUSEC_CACHE_DIR")) && *v) {
        n = snprintf(out, outlen, "%s", v);
    } else if ((v = getenv("XDG_CACHE_HOME")) && v[0] == '/') {
        /* the XDG spec: a relative XDG_CACHE_HOME is invalid and ignored */
        n = snprintf(out, outlen, "%s/fusec", v);
    } else {
        const char *home = getenv("HOME");
        struct passwd pw, *res = NULL;
        char buf[4096];
        if ((!home || !*home) && getpwuid_r(getuid(), &pw, buf, sizeof buf, &res) == 0 && res)
            home = res->pw_dir;
        if (home && *home) n = snprintf(out, outlen, "%s/.cache/fusec", home);
    }
    if (n < 0 || (size_t)n >= outlen) {
        out[0] = '\0';
        return -1;
    }
    /* trailing slashes would double up in entry paths */
    while (n > 1 && out[n - 1] == '/')
        out[--n] = '\0';
    return 0;
}

/* mkdir -p with mode 0700 for the directories it creates. 0, or -1 with errno. */
static int make_dirs(const char *dir) {
    struct stat st;
    char path[PATH_MAX];
    if (stat(dir, &st) == 0) {
        if (S_ISDIR(st.st_mode)) return 0;
        errno = ENOTDIR;
        return -1;
    }
    size_t n = strlen(dir);
    if (n >= sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(path, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (path[i] != '/' && path[i] != '\0') continue;
        char save = path[i];
        path[i] = '\0';
        if (mkdir(path, 0700) != 0 && errno != EEXIST) return -1;
        path[i] = save;
    }
    if (stat(dir, &st) != 0) return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

static uint64_t env_max_bytes(void) {
    const char *v = getenv("FUSEC_CACHE_MAX_MB");
    if (v && *v) {
        char *end;
        errno = 0;
        unsigned long long mb = strtoull(v, &end, 10);
        if (errno == 0 && *end == '\0' && v[0] != '-' && mb <= (UINT64_MAX >> 20))
            return (uint64_t)mb << 20;
    }
    return (uint64_t)RT_CACHE_DEFAULT_MAX_MB << 20;
}

rt_cache *rt_cache_open(const rt_cache_config *cfg) {
    rt_cache_config def = {0};
    if (!cfg) cfg = &def;
    rt_cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    pthread_mutex_init(&c->mu, NULL);
    c->use_memory = !cfg->no_memory;
    c->max_bytes = cfg->max_bytes ? cfg->max_bytes : env_max_bytes();
    if (cfg->no_disk) return c;
    if (rt_cache_resolve_dir(cfg->dir, c->dir, sizeof c->dir) != 0) {
        set_warning(c, "no cache directory (set FUSEC_CACHE_DIR or HOME); compiled kernels are "
                       "kept in memory only");
        return c;
    }
    if (make_dirs(c->dir) != 0) {
        set_warning(c,
                    "cache directory '%s' cannot be created (%s); compiled kernels are kept in "
                    "memory only",
                    c->dir, strerror(errno));
        c->dir[0] = '\0';
        return c;
    }
    c->disk_read = 1;
    c->disk_write = 1;
    /* access() sees a read-only mount even for root; permission bits root ignores are found
     * when the first write fails. */
    if (access(c->dir, W_OK | X_OK) != 0) disable_writes(c, errno);
    return c;
}

void rt_cache_close(rt_cache *c) {
    if (!c) return;
    pthread_mutex_destroy(&c->mu);
    free(c);
}

const char *rt_cache_warning(rt_cache *c) {
    const char *w = NULL;
    if (!c) return NULL;
    pthread_mutex_lock(&c->mu);
    if (c->has_warning && !c->warning_taken) {
        c->warning_taken = 1;
        w = c->warning;
    }
    pthread_mutex_unlock(&c->mu);
    return w;
}

const char *rt_cache_dir(const rt_cache *c) {
    return c && c->disk_read ? c->dir : "";
}

static int entry_path(const rt_cache *c, const unsigned char *key, char *out, size_t len) {
    char hex[33];
    to_hex(key, 16, hex);
    int n = snprintf(out, len, "%s/e-%s.bin", c->dir, hex);
    return n > 0 && (size_t)n < len ? 0 : -1;
}

/* Removes a bad file, unless it was meanwhile replaced (by a rename of a fresh entry). */
static void discard(const char *path, int fd) {
    struct stat a, b;
    if (fstat(fd, &a) == 0 && lstat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
        unlink(path);
}

/* Reads and checks an entry. 1: *payload and *len set; 0: no entry; -1: a bad entry, now
 * deleted, *why says what was wrong; -2: out of memory. */
static int read_entry(rt_cache *c, const unsigned char *key, void **payload, size_t *len,
                      const char **why) {
    char path[PATH_MAX + 64];
    unsigned char h[HEADER_SIZE];
    struct stat st;
    if (entry_path(c, key, path, sizeof path) != 0) return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ELOOP) {
            *why = "not a regular file";
            unlink(path);
            return -1;
        }
        return 0; /* absent, or unreadable: a miss either way */
    }
    *why = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        *why = "not a regular file";
    } else if ((uint64_t)st.st_size < HEADER_SIZE || read_full(fd, h, HEADER_SIZE, 0) != 0) {
        *why = "truncated";
    } else if (memcmp(h, entry_magic, 8) != 0 || get_u32(h + 12) != HEADER_SIZE ||
               XXH3_64bits(h, 56) != get_u64(h + 56)) {
        *why = "bad header";
    } else if (get_u32(h + 8) != RT_CACHE_FORMAT_VERSION) {
        *why = "other format version";
    } else if (memcmp(h + 16, key, 16) != 0) {
        *why = "wrong key";
    } else {
        uint64_t plen = get_u64(h + 32);
        if (plen > MAX_PAYLOAD || plen != (uint64_t)st.st_size - HEADER_SIZE) {
            *why = plen > (uint64_t)st.st_size - HEADER_SIZE ? "truncated" : "wrong length";
        } else {
            unsigned char *p = malloc(plen ? (size_t)plen : 1);
            if (!p) {
                close(fd);
                return -2;
            }
            if (read_full(fd, p, (size_t)plen, HEADER_SIZE) != 0) {
                *why = "truncated";
            } else if (XXH3_64bits(p, (size_t)plen) != get_u64(h + 40)) {
                *why = "checksum mismatch";
            } else {
                /* a hit: the modification time is the LRU clock */
                if (can_write(c)) (void)futimens(fd, NULL);
                close(fd);
                *payload = p;
                *len = (size_t)plen;
                return 1;
            }
            free(p);
        }
    }
    discard(path, fd);
    close(fd);
    return -1;
}

/* Writes the `niov` buffers to a fresh temporary file beside `final` and renames it there.
 * 0; or -1 with errno (a persistent error disables writes). */
static int write_atomic(rt_cache *c, const char *hexname, const char *final,
                        const struct iovec *iov, int niov) {
    char tmp[PATH_MAX + 64];
    int n = snprintf(tmp, sizeof tmp, "%s/t-%s.XXXXXX", c->dir, hexname);
    if (n < 0 || (size_t)n >= sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) return -1;
    for (int i = 0; i < niov; i++) {
        if (write_full(fd, iov[i].iov_base, iov[i].iov_len) != 0) {
            int e = errno;
            close(fd);
            unlink(tmp);
            errno = e;
            return -1;
        }
    }
    /* No fsync: a torn file after a power loss fails its checksum and is rebuilt, and the
     * cache is not worth a disk flush per kernel. */
    if (close(fd) != 0 || rename(tmp, final) != 0) {
        int e = errno;
        unlink(tmp);
        errno = e;
        return -1;
    }
    return 0;
}

/* ---- the per-group index of recent part sets, for miss reasons ------------------------- */

typedef struct index_record {
    int nparts;
    rt_cache_part parts[RT_CACHE_MAX_PARTS];
} index_record;

static int index_path(const rt_cache *c, uint64_t group, char *out, size_t len) {
    char hex[17];
    group_hex(group, hex);
    int n = snprintf(out, len, "%s/i-%s.idx", c->dir, hex);
    return n > 0 && (size_t)n < len ? 0 : -1;
}

/* Reads the group's records; a missing or bad index gives 0 records (a bad one is removed). */
static int read_index(rt_cache *c, uint64_t group, index_record *recs) {
    char path[PATH_MAX + 64];
    unsigned char buf[INDEX_HEADER + INDEX_RECORDS * INDEX_RECORD + 1];
    struct stat st;
    if (index_path(c, group, path, sizeof path) != 0) return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) return 0;
    int n = -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= INDEX_HEADER &&
        (size_t)st.st_size < sizeof buf && read_full(fd, buf, (size_t)st.st_size, 0) == 0) {
        uint32_t count = get_u32(buf + 12);
        if (memcmp(buf, index_magic, 8) == 0 && get_u32(buf + 8) == RT_CACHE_FORMAT_VERSION &&
            count <= INDEX_RECORDS &&
            (size_t)st.st_size == INDEX_HEADER + (size_t)count * INDEX_RECORD &&
            XXH3_64bits(buf + INDEX_HEADER, (size_t)st.st_size - INDEX_HEADER) ==
                get_u64(buf + 16)) {
            n = (int)count;
            for (int r = 0; r < n && n >= 0; r++) {
                const unsigned char *p = buf + INDEX_HEADER + (size_t)r * INDEX_RECORD;
                recs[r].nparts = (int)get_u32(p);
                if (recs[r].nparts < 0 || recs[r].nparts > RT_CACHE_MAX_PARTS) {
                    n = -1;
                    break;
                }
                for (int i = 0; i < RT_CACHE_MAX_PARTS; i++) {
                    const unsigned char *q = p + 8 + (size_t)i * INDEX_PART;
                    rt_cache_part *pt = &recs[r].parts[i];
                    memcpy(pt->name, q, RT_CACHE_PART_NAME);
                    pt->hash = get_u64(q + RT_CACHE_PART_NAME);
                    memcpy(pt->label, q + RT_CACHE_PART_NAME + 8, RT_CACHE_PART_LABEL);
                    /* never trust a string's terminator from disk */
                    pt->name[RT_CACHE_PART_NAME - 1] = '\0';
                    pt->label[RT_CACHE_PART_LABEL - 1] = '\0';
                }
            }
        }
    }
    if (n < 0) {
        discard(path, fd);
        n = 0;
    }
    close(fd);
    return n;
}

static int same_parts(const index_record *r, const rt_cache_key *k) {
    if (r->nparts != k->nparts) return 0;
    for (int i = 0; i < k->nparts; i++)
        if (strcmp(r->parts[i].name, k->parts[i].name) != 0 || r->parts[i].hash != k->parts[i].hash)
            return 0;
    return 1;
}

/* Puts the key's part set first in its group's index (keeping the INDEX_RECORDS most recent
 * distinct sets). Failures are ignored: the index only improves messages. */
static void update_index(rt_cache *c, const rt_cache_key *k) {
    index_record recs[INDEX_RECORDS];
    unsigned char buf[INDEX_HEADER + INDEX_RECORDS * INDEX_RECORD];
    char path[PATH_MAX + 64], hex[17];
    int old = read_index(c, k->group, recs), count = 0;

    memset(buf, 0, sizeof buf);
    for (int r = -1; r < old && count < INDEX_RECORDS; r++) {
        const rt_cache_part *parts = r < 0 ? k->parts : recs[r].parts;
        int np = r < 0 ? k->nparts : recs[r].nparts;
        if (r >= 0 && same_parts(&recs[r], k)) continue;
        unsigned char *p = buf + INDEX_HEADER + (size_t)count * INDEX_RECORD;
        put_u32(p, (uint32_t)np);
        for (int i = 0; i < np; i++) {
            unsigned char *q = p + 8 + (size_t)i * INDEX_PART;
            memcpy(q, parts[i].name, RT_CACHE_PART_NAME);
            put_u64(q + RT_CACHE_PART_NAME, parts[i].hash);
            memcpy(q + RT_CACHE_PART_NAME + 8, parts[i].label, RT_CACHE_PART_LABEL);
        }
        count++;
    }
    size_t size = INDEX_HEADER + (size_t)count * INDEX_RECORD;
    memcpy(buf, index_magic, 8);
    put_u32(buf + 8, RT_CACHE_FORMAT_VERSION);
    put_u32(buf + 12, (uint32_t)count);
    put_u64(buf + 16, XXH3_64bits(buf + INDEX_HEADER, size - INDEX_HEADER));
    if (index_path(c, k->group, path, sizeof path) != 0) return;
    group_hex(k->group, hex);
    struct iovec iov = {buf, size};
    (void)write_atomic(c, hex, path, &iov, 1);
}

/* "miss: new arch (sm_80 -> sm_90), new source" against the most similar recent part set
 * of the key's group. */
static void miss_reason(rt_cache *c, const rt_cache_key *k, char *out, size_t len) {
    index_record recs[INDEX_RECORDS];
    int n = read_index(c, k->group, recs), best = -1, best_diff = INT_MAX;
    if (n == 0) {
        snprintf(out, len, "miss: no entry");
        return;
    }
    for (int r = 0; r < n; r++) {
        int diff = 0;
        for (int i = 0; i < k->nparts; i++) {
            int found = 0;
            for (int j = 0; j < recs[r].nparts; j++)
                if (strcmp(recs[r].parts[j].name, k->parts[i].name) == 0)
                    found = recs[r].parts[j].hash == k->parts[i].hash;
            diff += !found;
        }
        diff += recs[r].nparts > k->nparts ? recs[r].nparts - k->nparts : 0;
        if (diff < best_diff) {
            best_diff = diff;
            best = r;
        }
    }
    if (best_diff == 0) {
        snprintf(out, len, "miss: no entry (evicted or removed)");
        return;
    }
    size_t used = (size_t)snprintf(out, len, "miss:");
    const index_record *r = &recs[best];
    for (int i = 0; i < k->nparts && used < len; i++) {
        const rt_cache_part *was = NULL;
        for (int j = 0; j < r->nparts; j++)
            if (strcmp(r->parts[j].name, k->parts[i].name) == 0) was = &r->parts[j];
        if (was && was->hash == k->parts[i].hash) continue;
        int w;
        if (was && was->label[0] && k->parts[i].label[0])
            w = snprintf(out + used, len - used, "%s new %s (%s -> %s)", used > 5 ? "," : "",
                         k->parts[i].name, was->label, k->parts[i].label);
        else
            w = snprintf(out + used, len - used, "%s new %s", used > 5 ? "," : "",
                         k->parts[i].name);
        if (w < 0) break;
        used += (size_t)w;
    }
    if (used <= 5) snprintf(out, len, "miss: new key layout");
}

/* ---- eviction ------------------------------------------------------------------------- */

typedef struct file_info {
    char name[48];
    uint64_t size;
    struct timespec mtime;
} file_info;

static int older(const void *a, const void *b) {
    const file_info *x = a, *y = b;
    if (x->mtime.tv_sec != y->mtime.tv_sec) return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
    if (x->mtime.tv_nsec != y->mtime.tv_nsec) return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Deletes leftovers (old temporary and lock files) and, while the entries and indexes pass
 * the bound, the least recently used of them, except `keep` (the entry just written). */
static void evict(rt_cache *c, const char *keep) {
    DIR *d = opendir(c->dir);
    if (!d) return;
    int dfd = dirfd(d);
    file_info *files = NULL;
    size_t nfiles = 0, cap = 0;
    uint64_t total = 0;
    time_t now = time(NULL);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        int kind = classify(de->d_name);
        struct stat st;
        if (kind == FILE_NONE || fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode))
            continue;
        if (kind == FILE_TEMP || kind == FILE_LOCK) {
            /* a lock file is safe to remove even while held: lockers check that the path
             * still names the file they locked */
            if (now - st.st_mtim.tv_sec > STALE_SECONDS) unlinkat(dfd, de->d_name, 0);
            continue;
        }
        total += (uint64_t)st.st_size;
        if (nfiles == cap) {
            size_t ncap = cap ? cap * 2 : 256;
            file_info *nf = realloc(files, ncap * sizeof *nf);
            if (!nf) break;
            files = nf;
            cap = ncap;
        }
        file_info *f = &files[nfiles++];
        memcpy(f->name, de->d_name, strlen(de->d_name) + 1); /* classify bounds the length */
        f->size = (uint64_t)st.st_size;
        f->mtime = st.st_mtim;
    }
    if (total > c->max_bytes && nfiles > 0) {
        qsort(files, nfiles, sizeof *files, older);
        for (size_t i = 0; i < nfiles && total > c->max_bytes; i++) {
            if (keep && strcmp(files[i].name, keep) == 0) continue;
            if (unlinkat(dfd, files[i].name, 0) == 0 || errno == ENOENT) total -= files[i].size;
        }
    }
    free(files);
    closedir(d);
}

/* ---- lookup, store, build ------------------------------------------------------------- */

static void info_init(rt_cache_info *info) {
    memset(info, 0, sizeof *info);
    info->source = RT_CACHE_FROM_NONE;
}

/* Memory, then disk. On a disk hit the payload is also put in memory. */
static rt_cache_status lookup_core(rt_cache *c, const rt_cache_key *k, void **payload, size_t *len,
                                   rt_cache_info *info, int want_reason) {
    int nomem = 0;
    if (c->use_memory) {
        void *p = mem_get(k->digest, len, &nomem);
        if (p) {
            *payload = p;
            info->hit = 1;
            info->source = RT_CACHE_FROM_MEMORY;
            snprintf(info->reason, sizeof info->reason, "hit (memory)");
            return RT_CACHE_OK;
        }
        if (nomem) return RT_CACHE_NOMEM;
    }
    if (!can_read(c)) {
        snprintf(info->reason, sizeof info->reason, "%s",
                 c->use_memory ? "miss: not in memory (no disk cache)" : "miss: cache off");
        return RT_CACHE_MISS;
    }
    const char *why = NULL;
    int r = read_entry(c, k->digest, payload, len, &why);
    if (r == 1) {
        if (c->use_memory) mem_put(k->digest, *payload, *len);
        info->hit = 1;
        info->source = RT_CACHE_FROM_DISK;
        snprintf(info->reason, sizeof info->reason, "hit (disk)");
        return RT_CACHE_OK;
    }
    if (r == -2) return RT_CACHE_NOMEM;
    if (r == -1) {
        info->discarded = 1;
        snprintf(info->reason, sizeof info->reason, "miss: corrupt entry discarded (%s)", why);
    } else if (want_reason) {
        miss_reason(c, k, info->reason, sizeof info->reason);
    }
    return RT_CACHE_MISS;
}

rt_cache_status rt_cache_lookup(rt_cache *c, const rt_cache_key *k, void **payload, size_t *len,
                                rt_cache_info *info) {
    rt_cache_info local;
    if (!info) info = &local;
    info_init(info);
    if (!c || !k || k->bad || !payload || !len) return RT_CACHE_INVALID;
    *payload = NULL;
    *len = 0;
    double t0 = rt_now_ms();
    rt_cache_status st = lookup_core(c, k, payload, len, info, 1);
    info->lookup_ms = rt_now_ms() - t0;
    return st;
}

rt_cache_status rt_cache_store(rt_cache *c, const rt_cache_key *k, const void *payload,
                               size_t len) {
    if (!c || !k || k->bad || (!payload && len)) return RT_CACHE_INVALID;
    if (!payload) payload = "";
    if (c->use_memory) mem_put(k->digest, payload, len);
    if (!can_write(c) || (uint64_t)len > MAX_PAYLOAD) return RT_CACHE_OK;

    unsigned char h[HEADER_SIZE];
    char hex[33], path[PATH_MAX + 64], name[48];
    memset(h, 0, sizeof h);
    memcpy(h, entry_magic, 8);
    put_u32(h + 8, RT_CACHE_FORMAT_VERSION);
    put_u32(h + 12, HEADER_SIZE);
    memcpy(h + 16, k->digest, 16);
    put_u64(h + 32, (uint64_t)len);
    put_u64(h + 40, XXH3_64bits(payload, len));
    put_u64(h + 56, XXH3_64bits(h, 56));
    rt_cache_key_hex(k, hex);
    if (entry_path(c, k->digest, path, sizeof path) != 0) return RT_CACHE_OK;
    struct iovec iov[2] = {{h, HEADER_SIZE}, {(void *)(uintptr_t)payload, len}};
    if (write_atomic(c, hex, path, iov, 2) != 0) {
        /* a vanished directory or a file raced away by `cache clear` costs only this entry */
        if (persistent_write_error(errno)) disable_writes(c, errno);
        return RT_CACHE_OK;
    }
    update_index(c, k);
    snprintf(name, sizeof name, "e-%s.bin", hex);
    evict(c, name);
    return RT_CACHE_OK;
}

/* Takes the key's lock file: returns its descriptor (held), or -1 when locking is not
 * possible (the caller then builds unlocked: right, only perhaps twice). A lock file may be
 * unlinked by its holder or by `cache clear`, so after locking we check that the path still
 * names the file locked; if not, the lock protects nothing and we try again. */
static int lock_key(rt_cache *c, const rt_cache_key *k, char *path, size_t pathlen) {
    char hex[33];
    rt_cache_key_hex(k, hex);
    int n = snprintf(path, pathlen, "%s/l-%s.lock", c->dir, hex);
    if (n < 0 || (size_t)n >= pathlen) return -1;
    double deadline = rt_now_ms() + LOCK_WAIT_SECONDS * 1e3;
    long sleep_us = 500;
    for (;;) {
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0) {
            if (persistent_write_error(errno)) disable_writes(c, errno);
            return -1;
        }
        /* Polling rather than a blocking flock: a hung holder must not hang us forever. */
        while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            if (errno != EWOULDBLOCK && errno != EINTR) {
                close(fd);
                return -1;
            }
            if (rt_now_ms() > deadline) {
                close(fd);
                return -1;
            }
            struct timespec ts = {0, sleep_us * 1000};
            nanosleep(&ts, NULL);
            if (sleep_us < 8000) sleep_us *= 2;
        }
        struct stat a, b;
        if (fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
            a.st_ino == b.st_ino)
            return fd;
        close(fd);
    }
}

static void unlock_key(int fd, const char *path) {
    if (fd < 0) return;
    unlink(path); /* while still held: see lock_key */
    close(fd);
}

rt_cache_status rt_cache_get_or_build(rt_cache *c, const rt_cache_key *k, rt_cache_build_fn build,
                                      void *ctx, void **payload, size_t *len, rt_cache_info *info) {
    rt_cache_info local;
    if (!info) info = &local;
    info_init(info);
    if (!c || !k || k->bad || !build || !payload || !len) return RT_CACHE_INVALID;
    *payload = NULL;
    *len = 0;
    double t0 = rt_now_ms();
    rt_cache_status st = lookup_core(c, k, payload, len, info, 1);
    if (st != RT_CACHE_MISS) {
        info->lookup_ms = rt_now_ms() - t0;
        return st;
    }

    char lockpath[PATH_MAX + 64];
    int lockfd = can_write(c) ? lock_key(c, k, lockpath, sizeof lockpath) : -1;
    if (lockfd >= 0) {
        /* Look again: whoever held the lock before us may have built it. */
        rt_cache_info again;
        info_init(&again);
        st = lookup_core(c, k, payload, len, &again, 0);
        if (st == RT_CACHE_OK) {
            unlock_key(lockfd, lockpath);
            info->hit = 1;
            info->source = RT_CACHE_FROM_PEER;
            snprintf(info->reason, sizeof info->reason, "hit (built meanwhile by another process)");
            info->lookup_ms = rt_now_ms() - t0;
            return RT_CACHE_OK;
        }
        if (st == RT_CACHE_NOMEM) {
            unlock_key(lockfd, lockpath);
            return st;
        }
        if (again.discarded) info->discarded = 1;
    }
    info->lookup_ms = rt_now_ms() - t0;

    void *out = NULL;
    size_t outlen = 0;
    double tb = rt_now_ms();
    int rc = build(ctx, &out, &outlen);
    info->build_ms = rt_now_ms() - tb;
    if (rc != 0) {
        free(out);
        unlock_key(lockfd, lockpath);
        return RT_CACHE_BUILD_FAILED;
    }
    if (!out) {
        outlen = 0;
        out = malloc(1);
        if (!out) {
            unlock_key(lockfd, lockpath);
            return RT_CACHE_NOMEM;
        }
    }
    info->source = RT_CACHE_FROM_BUILD;
    (void)rt_cache_store(c, k, out, outlen); /* before unlocking: waiters then find it */
    unlock_key(lockfd, lockpath);
    *payload = out;
    *len = outlen;
    return RT_CACHE_OK;
}

/* ---- stats and clear ------------------------------------------------------------------ */

static int open_dir_for(const char *dir, char *resolved, size_t rlen, DIR **d, char *err,
                        size_t errlen) {
    *d = NULL;
    if (rt_cache_resolve_dir(dir, resolved, rlen) != 0) {
        if (err && errlen)
            snprintf(err, errlen, "no cache directory (set FUSEC_CACHE_DIR or HOME)");
        return -1;
    }
    *d = opendir(resolved);
    if (!*d && errno != ENOENT) {
        if (err && errlen)
            snprintf(err, errlen, "cannot read cache directory '%s': %s", resolved,
                     strerror(errno));
        return -1;
    }
    return 0; /* *d NULL: no directory, an empty cache */
}

int rt_cache_stats_get(const char *dir, rt_cache_stats *st, char *err, size_t errlen) {
    DIR *d;
    if (!st) return -1;
    memset(st, 0, sizeof *st);
    st->max_bytes = env_max_bytes();
    if (open_dir_for(dir, st->dir, sizeof st->dir, &d, err, errlen) != 0) return -1;
    if (!d) return 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        int kind = classify(de->d_name);
        struct stat s;
        if (kind == FILE_NONE || fstatat(dirfd(d), de->d_name, &s, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(s.st_mode))
            continue;
        if (kind == FILE_ENTRY) {
            st->entries++;
            st->entry_bytes += (uint64_t)s.st_size;
        } else {
            st->other_files++;
        }
        st->total_bytes += (uint64_t)s.st_size;
    }
    closedir(d);
    return 0;
}

int rt_cache_clear(const char *dir, uint64_t *removed, char *err, size_t errlen) {
    char resolved[PATH_MAX];
    DIR *d;
    uint64_t count = 0;
    int failed = 0, fail_errno = 0;
    if (removed) *removed = 0;
    rt_cache_memory_clear();
    if (open_dir_for(dir, resolved, sizeof resolved, &d, err, errlen) != 0) return -1;
    if (!d) return 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (classify(de->d_name) == FILE_NONE) continue;
        struct stat s;
        if (fstatat(dirfd(d), de->d_name, &s, AT_SYMLINK_NOFOLLOW) != 0 ||
            !(S_ISREG(s.st_mode) || S_ISLNK(s.st_mode)))
            continue; /* never a directory, even of a matching name */
        if (unlinkat(dirfd(d), de->d_name, 0) == 0) {
            count++;
        } else if (errno != ENOENT) {
            failed++;
            fail_errno = errno;
        }
    }
    closedir(d);
    if (removed) *removed = count;
    if (failed) {
        if (err && errlen)
            snprintf(err, errlen, "could not remove %d file(s) from '%s': %s", failed, resolved,
                     strerror(fail_errno));
        return -1;
    }
    return 0;
}
