/* runtime/cpu/cpu_elf.c: loading cached x86-64 ELF relocatable objects without LLVM (see
 * cpu_elf.h).
 *
 * Layout of a loaded object, one anonymous mapping:
 *   [executable sections][call stubs] (page boundary) [other allocated sections][GOT]
 * The code pages become r-x and the rest r-- once relocated; PC-relative relocations between
 * the two halves are always within reach, and calls to the process's functions go through
 * a stub (jmp *addr(%rip)) so that libm may be anywhere. .eh_frame is not loaded: fusec's
 * kernels throw nothing and nothing unwinds through them.
 */
#include "runtime/cpu/cpu_elf.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__linux__)
#include <elf.h>
#include <sys/mman.h>
#include <unistd.h>

#define RT_ELF_STUB 16 /* jmp *0(%rip) (6 bytes), then the 8-byte target */

struct rt_elf {
    unsigned char *base;
    size_t size;
    size_t text_size; /* bytes of the r-x part */
    int nsyms;
    char **names;
    void **addrs;
};

int rt_elf_supported(void) {
    return 1;
}

static int bad(char *err, size_t errlen, const char *msg, const char *detail) {
    snprintf(err, errlen, "cached object code: %s%s%s", msg, detail ? " " : "",
             detail ? detail : "");
    return -1;
}

static size_t align_up(size_t v, size_t a) {
    return a > 1 ? (v + a - 1) / a * a : v;
}

/* A symbol's target outside the object: a function or data of the process. */
typedef struct ext_sym {
    uint32_t index; /* in the symbol table */
    void *addr;
    size_t stub, got; /* offsets in the mapping, or 0 before they are made */
} ext_sym;

typedef struct loader {
    const unsigned char *obj;
    size_t len;
    const Elf64_Ehdr *eh;
    const Elf64_Shdr *sh;
    const Elf64_Sym *syms;
    size_t nsyms;
    const char *strtab;
    size_t strtab_len;
    size_t *sec_off; /* offset of each allocated section in the mapping; SIZE_MAX: not loaded */
    ext_sym *ext;
    size_t next;
    size_t stubs, gots; /* next free stub and GOT slot */
    size_t stubs_end, gots_end;
    unsigned char *base;
} loader;

static int in_bounds(const loader *L, uint64_t off, uint64_t size) {
    return off <= L->len && size <= L->len - off;
}

static int loaded_section(const loader *L, size_t i) {
    const Elf64_Shdr *s = &L->sh[i];
    if (!(s->sh_flags & SHF_ALLOC)) return 0;
    if (s->sh_type != SHT_PROGBITS && s->sh_type != SHT_NOBITS) return 0;
    const char *shstr = (const char *)L->obj + L->sh[L->eh->e_shstrndx].sh_offset;
    const char *name = shstr + s->sh_name;
    return strcmp(name, ".eh_frame") != 0;
}

/* The address a symbol stands for, or NULL (an undefined symbol the process lacks). */
static unsigned char *sym_addr(loader *L, uint32_t si, ext_sym **ext) {
    const Elf64_Sym *s = &L->syms[si];
    *ext = NULL;
    if (s->st_shndx == SHN_UNDEF) {
        for (size_t i = 0; i < L->next; i++)
            if (L->ext[i].index == si) {
                *ext = &L->ext[i];
                return L->ext[i].addr;
            }
        return NULL;
    }
    if (s->st_shndx == SHN_ABS) return (unsigned char *)(uintptr_t)s->st_value;
    if (s->st_shndx >= L->eh->e_shnum || L->sec_off[s->st_shndx] == SIZE_MAX) return NULL;
    return L->base + L->sec_off[s->st_shndx] + s->st_value;
}

static int put32(unsigned char *p, int64_t v, char *err, size_t errlen) {
    if (v < INT32_MIN || v > INT32_MAX)
        return bad(err, errlen, "a relocation is out of range", NULL);
    int32_t w = (int32_t)v;
    memcpy(p, &w, 4);
    return 0;
}

static int relocate(loader *L, const Elf64_Shdr *rs, char *err, size_t errlen) {
    size_t target = rs->sh_info;
    if (target >= L->eh->e_shnum || L->sec_off[target] == SIZE_MAX) return 0; /* not loaded */
    if (rs->sh_entsize != sizeof(Elf64_Rela) || !in_bounds(L, rs->sh_offset, rs->sh_size))
        return bad(err, errlen, "a malformed relocation section", NULL);
    const Elf64_Rela *r = (const Elf64_Rela *)(L->obj + rs->sh_offset);
    size_t n = rs->sh_size / sizeof(Elf64_Rela);
    unsigned char *sec = L->base + L->sec_off[target];
    for (size_t i = 0; i < n; i++) {
        uint32_t type = ELF64_R_TYPE(r[i].r_info), si = ELF64_R_SYM(r[i].r_info);
        uint64_t width = type == R_X86_64_64 || type == R_X86_64_PC64 ? 8 : 4;
        if (si >= L->nsyms || r[i].r_offset > L->sh[target].sh_size ||
            width > L->sh[target].sh_size - r[i].r_offset)
            return bad(err, errlen, "a relocation outside its section", NULL);
        unsigned char *P = sec + r[i].r_offset;
        ext_sym *ext;
        unsigned char *S = sym_addr(L, si, &ext);
        if (!S && type != R_X86_64_NONE)
            return bad(err, errlen, "a relocation against an unknown symbol",
                       L->strtab + L->syms[si].st_name);
        int64_t A = r[i].r_addend;
        switch (type) {
        case R_X86_64_NONE: break;
        case R_X86_64_64: {
            uint64_t v = (uint64_t)(uintptr_t)S + (uint64_t)A;
            memcpy(P, &v, 8);
        } break;
        case R_X86_64_PC64: {
            int64_t v = (int64_t)((uintptr_t)S - (uintptr_t)P) + A;
            memcpy(P, &v, 8);
        } break;
        case R_X86_64_PLT32:
        case R_X86_64_PC32: {
            if (ext && type == R_X86_64_PLT32) {
                if (!ext->stub) {
                    if (L->stubs + RT_ELF_STUB > L->stubs_end)
                        return bad(err, errlen, "too many calls out", NULL);
                    unsigned char *st = L->base + L->stubs;
                    static const unsigned char jmp[6] = {0xff, 0x25, 0, 0, 0, 0};
                    memcpy(st, jmp, 6);
                    uint64_t a = (uint64_t)(uintptr_t)ext->addr;
                    memcpy(st + 6, &a, 8);
                    ext->stub = L->stubs;
                    L->stubs += RT_ELF_STUB;
                }
                S = L->base + ext->stub;
            }
            if (put32(P, (int64_t)((intptr_t)S - (intptr_t)P) + A, err, errlen)) return -1;
        } break;
        case R_X86_64_GOTPCREL:
        case R_X86_64_GOTPCRELX:
        case R_X86_64_REX_GOTPCRELX: {
            /* a GOT slot holding S: one per external symbol, one per use otherwise */
            size_t slot;
            if (ext && ext->got) {
                slot = ext->got;
            } else {
                if (L->gots + 8 > L->gots_end)
                    return bad(err, errlen, "too many GOT entries", NULL);
                slot = L->gots;
                L->gots += 8;
                uint64_t a = (uint64_t)(uintptr_t)S;
                memcpy(L->base + slot, &a, 8);
                if (ext) ext->got = slot;
            }
            if (put32(P, (int64_t)((intptr_t)(L->base + slot) - (intptr_t)P) + A, err, errlen))
                return -1;
        } break;
        case R_X86_64_32:
        case R_X86_64_32S: {
            int64_t v = (int64_t)(uintptr_t)S + A;
            if (type == R_X86_64_32 ? (v < 0 || v > (int64_t)UINT32_MAX)
                                    : (v < INT32_MIN || v > INT32_MAX))
                return bad(err, errlen, "absolute 32-bit relocation out of range", NULL);
            uint32_t w = (uint32_t)v;
            memcpy(P, &w, 4);
        } break;
        default: {
            char t[32];
            snprintf(t, sizeof t, "%u", (unsigned)type);
            return bad(err, errlen, "unsupported relocation type", t);
        }
        }
    }
    return 0;
}

static void loader_free(loader *L) {
    free(L->sec_off);
    free(L->ext);
}

rt_elf *rt_elf_load(const void *obj, size_t len, char *err, size_t errlen) {
    return rt_elf_load_with(obj, len, NULL, NULL, err, errlen);
}

rt_elf *rt_elf_load_with(const void *obj, size_t len, rt_elf_resolver resolve, void *ctx, char *err,
                         size_t errlen) {
    loader L;
    memset(&L, 0, sizeof L);
    L.obj = obj;
    L.len = len;
    rt_elf *e = NULL;
    if (len < sizeof(Elf64_Ehdr)) {
        bad(err, errlen, "too short", NULL);
        return NULL;
    }
    L.eh = (const Elf64_Ehdr *)obj;
    const Elf64_Ehdr *eh = L.eh;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_ident[EI_DATA] != ELFDATA2LSB || eh->e_type != ET_REL || eh->e_machine != EM_X86_64 ||
        eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shstrndx >= eh->e_shnum ||
        !in_bounds(&L, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr))) {
        bad(err, errlen, "not a relocatable x86-64 ELF object", NULL);
        return NULL;
    }
    L.sh = (const Elf64_Shdr *)((const unsigned char *)obj + eh->e_shoff);
    for (size_t i = 0; i < eh->e_shnum; i++) {
        const Elf64_Shdr *s = &L.sh[i];
        if (s->sh_type != SHT_NOBITS && s->sh_type != SHT_NULL &&
            !in_bounds(&L, s->sh_offset, s->sh_size)) {
            bad(err, errlen, "a section outside the file", NULL);
            return NULL;
        }
        if (s->sh_type == SHT_SYMTAB) {
            if (s->sh_link >= eh->e_shnum || s->sh_entsize != sizeof(Elf64_Sym)) {
                bad(err, errlen, "a malformed symbol table", NULL);
                return NULL;
            }
            L.syms = (const Elf64_Sym *)((const unsigned char *)obj + s->sh_offset);
            L.nsyms = s->sh_size / sizeof(Elf64_Sym);
            L.strtab = (const char *)obj + L.sh[s->sh_link].sh_offset;
            L.strtab_len = L.sh[s->sh_link].sh_size;
        }
    }
    if (!L.syms || !L.strtab_len || L.strtab[L.strtab_len - 1] != 0) {
        bad(err, errlen, "no symbol table", NULL);
        return NULL;
    }
    for (size_t i = 0; i < L.nsyms; i++)
        if (L.syms[i].st_name >= L.strtab_len) {
            bad(err, errlen, "a symbol name outside the string table", NULL);
            return NULL;
        }

    /* external symbols: the process must have them */
    L.ext = calloc(L.nsyms + 1, sizeof(ext_sym));
    L.sec_off = malloc(((size_t)eh->e_shnum + 1) * sizeof(size_t));
    if (!L.ext || !L.sec_off) {
        bad(err, errlen, "out of memory", NULL);
        goto fail;
    }
    for (uint32_t i = 1; i < L.nsyms; i++) {
        const Elf64_Sym *s = &L.syms[i];
        if (s->st_shndx != SHN_UNDEF || !s->st_name) continue;
        const char *name = L.strtab + s->st_name;
        int failed = 0;
        void *a = resolve ? resolve(ctx, name, &failed, err, errlen) : NULL;
        if (failed) goto fail;
        if (!a) a = dlsym(RTLD_DEFAULT, name);
        if (!a) {
            bad(err, errlen, "needs a symbol the process lacks:", name);
            goto fail;
        }
        L.ext[L.next].index = i;
        L.ext[L.next].addr = a;
        L.next++;
    }

    /* layout: code and stubs, then a page boundary, then data and the GOT */
    size_t page = (size_t)sysconf(_SC_PAGESIZE), off = 0;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            off = align_up(off, 16);
            L.stubs = off;
            off += L.next * RT_ELF_STUB;
            L.stubs_end = off;
            off = align_up(off, page);
        }
        for (size_t i = 0; i < eh->e_shnum; i++) {
            if (pass == 0) L.sec_off[i] = SIZE_MAX;
            if (!loaded_section(&L, i)) continue;
            int exec = (L.sh[i].sh_flags & SHF_EXECINSTR) != 0;
            if (exec != (pass == 0)) continue;
            size_t a = L.sh[i].sh_addralign > 1 ? (size_t)L.sh[i].sh_addralign : 1;
            if (a > page) {
                bad(err, errlen, "a section aligned past a page", NULL);
                goto fail;
            }
            off = align_up(off, a);
            L.sec_off[i] = off;
            off += L.sh[i].sh_size;
        }
    }
    size_t text_size = align_up(L.stubs_end, page); /* where the data begins */
    off = align_up(off, 8);
    L.gots = off;
    /* a GOT slot per relocation at most */
    size_t nrel = 0;
    for (size_t i = 0; i < eh->e_shnum; i++)
        if (L.sh[i].sh_type == SHT_RELA) nrel += L.sh[i].sh_size / sizeof(Elf64_Rela);
    off += nrel * 8;
    L.gots_end = off;
    size_t size = align_up(off ? off : 1, page);
    void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        bad(err, errlen, "cannot map memory for code", NULL);
        goto fail;
    }
    L.base = m;
    for (size_t i = 0; i < eh->e_shnum; i++) {
        if (L.sec_off[i] == SIZE_MAX || L.sh[i].sh_type == SHT_NOBITS) continue;
        memcpy(L.base + L.sec_off[i], (const unsigned char *)obj + L.sh[i].sh_offset,
               L.sh[i].sh_size);
    }
    for (size_t i = 0; i < eh->e_shnum; i++)
        if (L.sh[i].sh_type == SHT_RELA && relocate(&L, &L.sh[i], err, errlen)) goto unmap;
    if ((text_size && mprotect(L.base, text_size, PROT_READ | PROT_EXEC) != 0) ||
        (size > text_size && mprotect(L.base + text_size, size - text_size, PROT_READ) != 0)) {
        bad(err, errlen, "cannot make the code executable", NULL);
        goto unmap;
    }

    /* the global functions, by name */
    e = calloc(1, sizeof(*e));
    if (!e) goto oom;
    e->base = L.base;
    e->size = size;
    e->text_size = text_size;
    e->names = calloc(L.nsyms + 1, sizeof(char *));
    e->addrs = calloc(L.nsyms + 1, sizeof(void *));
    if (!e->names || !e->addrs) goto oom;
    for (uint32_t i = 1; i < L.nsyms; i++) {
        const Elf64_Sym *s = &L.syms[i];
        if (ELF64_ST_BIND(s->st_info) != STB_GLOBAL || s->st_shndx == SHN_UNDEF || !s->st_name)
            continue;
        ext_sym *x;
        void *a = sym_addr(&L, i, &x);
        if (!a) continue;
        e->names[e->nsyms] = strdup(L.strtab + s->st_name);
        if (!e->names[e->nsyms]) goto oom;
        e->addrs[e->nsyms++] = a;
    }
    loader_free(&L);
    return e;
oom:
    bad(err, errlen, "out of memory", NULL);
    if (e) {
        for (int i = 0; i < e->nsyms; i++)
            free(e->names[i]);
        free(e->names);
        free(e->addrs);
        free(e);
    }
unmap:
    munmap(L.base, size);
fail:
    loader_free(&L);
    return NULL;
}

void *rt_elf_lookup(const rt_elf *e, const char *name) {
    for (int i = 0; e && i < e->nsyms; i++)
        if (strcmp(e->names[i], name) == 0) return e->addrs[i];
    return NULL;
}

void rt_elf_free(rt_elf *e) {
    if (!e) return;
    munmap(e->base, e->size);
    for (int i = 0; i < e->nsyms; i++)
        free(e->names[i]);
    free(e->names);
    free(e->addrs);
    free(e);
}

#else /* not x86-64 Linux: objects are loaded by LLVM's JIT only */

int rt_elf_supported(void) {
    return 0;
}

rt_elf *rt_elf_load(const void *obj, size_t len, char *err, size_t errlen) {
    return rt_elf_load_with(obj, len, NULL, NULL, err, errlen);
}

rt_elf *rt_elf_load_with(const void *obj, size_t len, rt_elf_resolver resolve, void *ctx, char *err,
                         size_t errlen) {
    (void)obj, (void)len, (void)resolve, (void)ctx;
    snprintf(err, errlen, "loading cached object code without LLVM needs x86-64 Linux");
    return NULL;
}

void *rt_elf_lookup(const rt_elf *e, const char *name) {
    (void)e, (void)name;
    return NULL;
}

void rt_elf_free(rt_elf *e) {
    (void)e;
}

#endif
