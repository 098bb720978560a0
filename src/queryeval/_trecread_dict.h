/* Id tables of the compiled TREC reader: open addressing, names kept in the input buffer.
 * The look-up is inline (the tokeniser calls it for every line); the rest is in
 * _trecread_dict.c. Included through _trecread.h. */
#ifndef QUERYEVAL_TRECREAD_DICT_H
#define QUERYEVAL_TRECREAD_DICT_H

typedef struct {
    uint64_t hash;
    uint64_t prefix; /* the name's first 8 bytes, zero-padded */
    const char *ptr; /* the name's bytes in the input buffer */
    uint64_t len;
} Entry;

/* One slot of the open-addressing table: all a look-up of a name of up to 8 bytes reads (one
 * cache line access, no visit to the Entry): its prefix, a tag (24 high hash bits and the
 * length, capped at 255) and its code + 1 (0 = empty). Equal tag and prefix mean equal names
 * when the length is at most 8 (the prefix is then the whole name). */
typedef struct {
    uint64_t prefix;
    uint32_t tag;
    int32_t code1;
} Slot;

typedef struct {
    Slot *slots;
    size_t mask;
    Entry *e; /* per code */
    size_t n, cap;
    size_t bytes; /* total length of the names */
} Dict;

static inline uint32_t make_tag(uint64_t h, size_t n) {
    return ((uint32_t)(h >> 32) & 0xFFFFFF00u) | (uint32_t)(n < 255 ? n : 255);
}

static inline uint64_t mix(uint64_t h) {
    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93ULL;
    h ^= h >> 32;
    return h;
}

/* The first min(n, 8) bytes of s, zero-padded; s + n <= end, and reading up to end is safe. */
static inline uint64_t load_prefix(const char *s, size_t n, const char *end) {
    uint64_t w = 0;
#if PY_LITTLE_ENDIAN
    if (n >= 8) {
        memcpy(&w, s, 8);
    } else if (n > 0 && end - s >= 8) {
        memcpy(&w, s, 8);
        w &= ~0ULL >> (64 - 8 * n);
    } else {
        memcpy(&w, s, n);
    }
#else
    (void)end;
    memcpy(&w, s, n < 8 ? n : 8);
#endif
    return w;
}

/* Random per process (set at import): ids are untrusted, and with a fixed hash a file of
 * ids chosen to share their low hash bits (found offline by inverting mix) makes every
 * insertion probe all earlier ones: n^2 (60,000 such ids took 1.5 s, a million hours). */
extern TR_HIDDEN uint64_t hash_seed;

static inline uint64_t hash_name(const char *s, size_t n, uint64_t prefix) {
    if (n <= 8) /* the prefix is the name; the length is implied by its zero padding */
        return mix(mix(prefix ^ hash_seed) * 0x9E3779B97F4A7C15ULL + n);
    uint64_t h = (0x9E3779B97F4A7C15ULL ^ hash_seed ^ (uint64_t)n) * 0xff51afd7ed558ccdULL;
    h = (h ^ prefix) * 0x9E3779B97F4A7C15ULL;
    for (size_t k = 8; k < n; k += 8) {
        uint64_t w = 0;
        memcpy(&w, s + k, n - k < 8 ? n - k : 8);
        h ^= h >> 29;
        h = (h ^ w) * 0x9E3779B97F4A7C15ULL;
    }
    return mix(h);
}

TR_HIDDEN void huge_pages(void *p, size_t n);
TR_HIDDEN int dict_init(Dict *d);
TR_HIDDEN void dict_free(Dict *d);
TR_HIDDEN int dict_grow_table(Dict *d);
TR_HIDDEN int dict_export(Dict *d, int32_t **offsets, char **data);
TR_HIDDEN int32_t *dict_merge(Dict *global, const Dict *local, const char *end);

/* Code of the name s[0:n] whose prefix and hash are given (added when new); -1 on memory error
 * or more than 2^31 - 16 names. */
static inline int32_t dict_code_h(Dict *d, const char *s, size_t n, uint64_t prefix,
                                  uint64_t h) {
    const uint32_t tag = make_tag(h, n);
    size_t i = h & d->mask;
    int32_t c;
    while ((c = d->slots[i].code1) != 0) {
        if (d->slots[i].tag == tag && d->slots[i].prefix == prefix) {
            if (n <= 8)
                return c - 1;
            const Entry *e = &d->e[c - 1];
            if (e->len == n && memcmp(e->ptr + 8, s + 8, n - 8) == 0)
                return c - 1;
        }
        i = (i + 1) & d->mask;
    }
    if (d->n >= 0x7FFFFFF0)
        return -1;
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 1024;
        Entry *e = PyMem_RawRealloc(d->e, cap * sizeof(Entry));
        if (e == NULL)
            return -1;
        d->e = e;
        d->cap = cap;
    }
    c = (int32_t)d->n++;
    d->e[c].hash = h;
    d->e[c].prefix = prefix;
    d->e[c].ptr = s;
    d->e[c].len = n;
    d->bytes += n;
    d->slots[i].prefix = prefix;
    d->slots[i].tag = tag;
    d->slots[i].code1 = c + 1;
    if (d->n * 2 > d->mask) {
        if (dict_grow_table(d) < 0)
            return -1;
    }
    return c;
}

/* Code of a name (added when new); -1 as dict_code_h. */
static inline int32_t dict_code(Dict *d, const char *s, size_t n, const char *end) {
    uint64_t prefix = load_prefix(s, n, end);
    return dict_code_h(d, s, n, prefix, hash_name(s, n, prefix));
}

#endif
