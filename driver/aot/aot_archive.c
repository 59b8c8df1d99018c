/* driver/aot/aot_archive.c: reading and writing static libraries (System V / GNU `ar`
 * archives) for fusec --emit=lib: the runtime's archive (libfusec_rt.a) is read member by
 * member, and the library written with those members and its own, behind the symbol index a
 * linker needs (the "/" member: each defined global symbol and the offset of the member that
 * defines it), as `ar rcs` would. Names longer than 15 characters go to the "//" member.
 * The file is written beside its destination and renamed over it, so that a failure never
 * leaves half a library.
 */
#include "driver/aot/aot_write.h"

#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define AR_MAGIC "!<arch>\n"
#define AR_HDR   60

/* ---- reading -------------------------------------------------------------------------------- */

static long field(const unsigned char *p, int n) {
    char buf[16];
    memcpy(buf, p, (size_t)n);
    buf[n] = 0;
    char *end;
    long v = strtol(buf, &end, 10);
    return end == buf || v < 0 ? -1 : v;
}

int rt_ar_read(const unsigned char *data, size_t len, rt_ar_member **members, int *n, char *err,
               size_t errlen) {
    *members = NULL;
    *n = 0;
    if (len < 8 || memcmp(data, AR_MAGIC, 8) != 0) {
        snprintf(err, errlen, "not an archive");
        return -1;
    }
    const char *longnames = NULL;
    size_t longlen = 0, at = 8;
    int cap = 0;
    while (at + AR_HDR <= len) {
        const unsigned char *h = data + at;
        long size = field(h + 48, 10);
        if (size < 0 || (size_t)size > len - at - AR_HDR || h[58] != '`' || h[59] != '\n') break;
        const unsigned char *body = h + AR_HDR;
        char name[256];
        int k = 0;
        if (h[0] == '/' && h[1] == '/') {
            longnames = (const char *)body, longlen = (size_t)size;
        } else if (h[0] == '/' && h[1] >= '0' && h[1] <= '9') {
            long off = field(h + 1, 15);
            while (longnames && off >= 0 && (size_t)off + (size_t)k < longlen && k < 255 &&
                   longnames[off + k] != '/' && longnames[off + k] != '\n')
                name[k] = longnames[off + k], k++;
        } else if (h[0] != '/') {
            while (k < 16 && h[k] != '/' && h[k] != ' ')
                name[k] = (char)h[k], k++;
        }
        name[k] = 0;
        if (k > 0) {
            if (*n == cap) {
                cap = cap ? cap * 2 : 32;
                rt_ar_member *m = realloc(*members, (size_t)cap * sizeof(*m));
                if (!m) goto oom;
                *members = m;
            }
            char *copy = strdup(name);
            if (!copy) goto oom;
            rt_ar_member m = {copy, body, (size_t)size};
            (*members)[(*n)++] = m;
        }
        at += AR_HDR + (size_t)size + ((size_t)size & 1);
    }
    if (at != len && at + 1 != len) {
        snprintf(err, errlen, "a malformed archive");
        goto fail;
    }
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
fail:
    rt_ar_members_free(*members, *n);
    *members = NULL;
    *n = 0;
    return -1;
}

void rt_ar_members_free(rt_ar_member *members, int n) {
    for (int i = 0; members && i < n; i++)
        free((char *)members[i].name);
    free(members);
}

/* ---- the symbol index ----------------------------------------------------------------------- */

typedef struct strs {
    char **v;
    int *member;
    int n, cap;
} strs;

static int add(strs *s, const char *name, size_t len, int member) {
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 256;
        char **v = realloc(s->v, (size_t)cap * sizeof(*v));
        if (!v) return -1;
        s->v = v;
        int *m = realloc(s->member, (size_t)cap * sizeof(*m));
        if (!m) return -1;
        s->member = m;
        s->cap = cap;
    }
    if (!(s->v[s->n] = strndup(name, len))) return -1;
    s->member[s->n++] = member;
    return 0;
}

/* The global symbols ELF member m defines, into s (an object fusec cannot read defines none:
 * the linker then finds nothing in it through the index, as with any member ranlib skips). */
static int defined_symbols(const rt_ar_member *m, int member, strs *s) {
    Elf64_Ehdr eh;
    if (m->len < sizeof eh) return 0;
    memcpy(&eh, m->data, sizeof eh);
    if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > m->len ||
        (size_t)eh.e_shnum * sizeof(Elf64_Shdr) > m->len - eh.e_shoff)
        return 0;
    for (int i = 0; i < eh.e_shnum; i++) {
        Elf64_Shdr sh, str;
        memcpy(&sh, m->data + eh.e_shoff + (size_t)i * sizeof sh, sizeof sh);
        if (sh.sh_type != SHT_SYMTAB || sh.sh_link >= eh.e_shnum) continue;
        memcpy(&str, m->data + eh.e_shoff + (size_t)sh.sh_link * sizeof str, sizeof str);
        if (sh.sh_offset > m->len || sh.sh_size > m->len - sh.sh_offset || str.sh_offset > m->len ||
            str.sh_size > m->len - str.sh_offset)
            return 0;
        for (size_t j = 1; j < sh.sh_size / sizeof(Elf64_Sym); j++) {
            Elf64_Sym sym;
            memcpy(&sym, m->data + sh.sh_offset + j * sizeof sym, sizeof sym);
            int bind = ELF64_ST_BIND(sym.st_info);
            if ((bind != STB_GLOBAL && bind != STB_WEAK) || sym.st_shndx == SHN_UNDEF ||
                sym.st_name >= str.sh_size)
                continue;
            const char *name = (const char *)m->data + str.sh_offset + sym.st_name;
            size_t len = strnlen(name, str.sh_size - sym.st_name);
            if (len && add(s, name, len, member)) return -1;
        }
    }
    return 0;
}

/* ---- writing -------------------------------------------------------------------------------- */

/* A member's header: name, date 0, owner 0, group 0, mode 644, size (rt_ar_write keeps every
 * size below 2^32, inside the field's 10 digits). */
static void header(FILE *f, const char *name, size_t size) {
    char h[128];
    snprintf(h, sizeof h, "%-16.16s%-12d%-6d%-6d%-8o%-10llu`\n", name, 0, 0, 0, 0644,
             (unsigned long long)size);
    fwrite(h, 1, AR_HDR, f);
}

static void be32(FILE *f, uint32_t v) {
    unsigned char b[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 8), (unsigned char)v};
    fwrite(b, 1, 4, f);
}

/* Writes the archive to f: the index, the long names, the members. */
static void write_all(FILE *f, const rt_ar_member *mem, int n, const strs *s) {
    size_t names = 0, longs = 0;
    for (int i = 0; i < s->n; i++)
        names += strlen(s->v[i]) + 1;
    for (int i = 0; i < n; i++)
        if (strlen(mem[i].name) > 15) longs += strlen(mem[i].name) + 2;
    size_t index = 4 + 4 * (size_t)s->n + names;
    size_t at = 8 + AR_HDR + index + (index & 1) + (longs ? AR_HDR + longs + (longs & 1) : 0);
    uint32_t *offset = calloc((size_t)(n > 0 ? n : 1), sizeof(uint32_t));
    for (int i = 0; offset && i < n; i++) {
        offset[i] = (uint32_t)at;
        at += AR_HDR + mem[i].len + (mem[i].len & 1);
    }
    fwrite(AR_MAGIC, 1, 8, f);
    header(f, "/", index);
    be32(f, (uint32_t)s->n);
    for (int i = 0; i < s->n; i++)
        be32(f, offset ? offset[s->member[i]] : 0);
    for (int i = 0; i < s->n; i++)
        fwrite(s->v[i], 1, strlen(s->v[i]) + 1, f);
    if (index & 1) fputc('\n', f);
    if (longs) {
        header(f, "//", longs);
        for (int i = 0; i < n; i++)
            if (strlen(mem[i].name) > 15) fprintf(f, "%s/\n", mem[i].name);
        if (longs & 1) fputc('\n', f);
    }
    size_t longat = 0;
    for (int i = 0; i < n; i++) {
        char name[32];
        size_t len = strlen(mem[i].name);
        if (len > 15) {
            snprintf(name, sizeof name, "/%zu", longat);
            longat += len + 2;
        } else {
            snprintf(name, sizeof name, "%s/", mem[i].name);
        }
        header(f, name, mem[i].len);
        fwrite(mem[i].data, 1, mem[i].len, f);
        if (mem[i].len & 1) fputc('\n', f);
    }
    free(offset);
}

int rt_ar_write(const char *path, const rt_ar_member *members, int n, char *err, size_t errlen) {
    strs s = {NULL, NULL, 0, 0};
    int rc = -1;
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += members[i].len + AR_HDR + 256; /* with room for its index entries */
    if (total >= UINT32_MAX / 2) {              /* the index's offsets are 32 bits */
        snprintf(err, errlen, "a library of %zu bytes is too large for an archive", total);
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (defined_symbols(&members[i], i, &s)) {
            snprintf(err, errlen, "out of memory");
            goto done;
        }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
        goto done;
    }
    write_all(f, members, n, &s);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno ? errno : EIO));
        unlink(tmp);
        goto done;
    }
    rc = 0;
done:
    for (int i = 0; i < s.n; i++)
        free(s.v[i]);
    free(s.v);
    free(s.member);
    return rc;
}
