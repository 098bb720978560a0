/* Id tables of the compiled TREC reader: growth, export, merge (the look-up itself is
 * inline in _trecread_dict.h). */
#include "_trecread.h"

/* Random per process (set at import, see _trecread_dict.h). */
uint64_t hash_seed;

#if defined(__linux__)
#include <sys/mman.h>
#endif

/* Hint the kernel to back a large array with huge pages: one page fault per 2 MiB instead
 * of one per 4 KiB (the output arrays are written once, front to back; an id table of a
 * few MiB is touched all over as it fills). */
void huge_pages(void *p, size_t n) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    const uintptr_t huge = (uintptr_t)1 << 21;
    uintptr_t a = ((uintptr_t)p + huge - 1) & ~(huge - 1), b = ((uintptr_t)p + n) & ~(huge - 1);
    if (b > a)
        madvise((void *)a, b - a, MADV_HUGEPAGE);
#else
    (void)p;
    (void)n;
#endif
}

int dict_init(Dict *d) {
    memset(d, 0, sizeof(*d));
    d->mask = 1023;
    d->slots = PyMem_RawCalloc(d->mask + 1, sizeof(Slot));
    return d->slots ? 0 : -1;
}

void dict_free(Dict *d) {
    PyMem_RawFree(d->slots);
    PyMem_RawFree(d->e);
}

int dict_grow_table(Dict *d) {
    size_t mask = d->mask * 2 + 1;
    Slot *slots = PyMem_RawCalloc(mask + 1, sizeof(Slot));
    if (slots == NULL)
        return -1;
    huge_pages(slots, (mask + 1) * sizeof(Slot));
    for (size_t c = 0; c < d->n; c++) {
        /* the slot PIPE names ahead is fetched while this one is placed (a table past the
         * caches: each placement would otherwise wait for memory) */
        if (c + PIPE < d->n)
            PREFETCH_W(&slots[d->e[c + PIPE].hash & mask]);
        const Entry *e = &d->e[c];
        size_t i = e->hash & mask;
        while (slots[i].code1)
            i = (i + 1) & mask;
        slots[i].prefix = e->prefix;
        slots[i].tag = make_tag(e->hash, e->len);
        slots[i].code1 = (int32_t)(c + 1);
    }
    PyMem_RawFree(d->slots);
    d->slots = slots;
    d->mask = mask;
    return 0;
}

/* Offsets (int32, n + 1) and bytes of a dictionary's names, in code order. */
int dict_export(Dict *d, int32_t **offsets, char **data) {
    if (d->bytes > 0x7FFFFFFF)
        return -1;
    *offsets = PyMem_RawMalloc((d->n + 1) * sizeof(int32_t));
    *data = PyMem_RawMalloc(d->bytes ? d->bytes : 1);
    if (*offsets == NULL || *data == NULL) {
        PyMem_RawFree(*offsets);
        PyMem_RawFree(*data);
        return -1;
    }
    size_t at = 0;
    (*offsets)[0] = 0;
    for (size_t c = 0; c < d->n; c++) {
        memcpy(*data + at, d->e[c].ptr, d->e[c].len);
        at += d->e[c].len;
        (*offsets)[c + 1] = (int32_t)at;
    }
    return 0;
}

/* Codes of chunk-local names in the global dictionary (adding the new ones, in order). */
int32_t *dict_merge(Dict *global, const Dict *local, const char *end) {
    int32_t *remap = PyMem_RawMalloc((local->n ? local->n : 1) * sizeof(int32_t));
    if (remap == NULL)
        return NULL;
    (void)end;
    for (size_t c = 0; c < local->n; c++) {
        /* same hash function in every part: the stored hash is reused; the slot PIPE names
         * ahead is fetched while this one is looked up */
        if (c + PIPE < local->n)
            PREFETCH(&global->slots[local->e[c + PIPE].hash & global->mask]);
        const Entry *e = &local->e[c];
        remap[c] = dict_code_h(global, e->ptr, e->len, e->prefix, e->hash);
        if (remap[c] < 0) {
            PyMem_RawFree(remap);
            return NULL;
        }
    }
    return remap;
}
