/* TREC run/qrels reader: trec_eval 10.0's reading rules, straight from a byte buffer.
 *
 * queryeval._trecread.scan(buffer, threads, run, strict) reads the lines of a run file
 * (run=True) or a qrels file from a bytes-like buffer with the GIL released, split at line
 * boundaries over `threads` POSIX threads (each checks its chunk is UTF-8 block by block as
 * it tokenises it; the outputs are sized from a bound on the rows the bytes can hold), and
 * returns
 *
 *     (n_rows, q_codes, q_offsets, q_data, n_q, d_codes, d_offsets, d_data, n_d, values)
 *
 * where q_codes/d_codes are int32 codes of the query and document ids (first-appearance order
 * over the whole file), q_offsets/q_data (d_...) the distinct ids as an Arrow string array's
 * int32 offsets and UTF-8 bytes, and values the float64 scores (run) or int64 relevance levels
 * (qrels); every buffer is a read-only object with the buffer protocol. It returns None when
 * the file holds anything the reader must refuse (a bad column count, a NaN score, a relevance
 * outside 64 bits, text that is not UTF-8, and under strict everything trec_eval reads by a
 * lenient rule): the caller then re-reads the file with the exact Python reader, which raises
 * the error naming the line. The rules are those of queryeval.suite.trec._parse_python:
 *
 *   fields are separated by C whitespace (space, \t, \v, \f, \r), lines end at \n; blank
 *   lines are skipped; qrels: a line whose first byte is '#' is a comment, exactly 4 fields,
 *   the relevance is the value of its longest [+-]digits prefix (0 if none); run: a line whose
 *   first non-blank byte is '#' is a comment, at least 6 fields, the score is the value of the
 *   longest prefix C's strtod reads (decimal, hexadecimal, inf[inity], nan[(...)]).
 *
 * Scores are correctly rounded (the value Python's float() gives the same prefix): exact
 * fast paths for short decimals (Clinger's, and an x87 long-double one that falls back when
 * double rounding could differ), strtod in the "C" locale for everything else.
 */
#define PY_SSIZE_T_CLEAN
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <Python.h>

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GLIBC__) || defined(__APPLE__)
#include <locale.h>
#if defined(__APPLE__)
#include <xlocale.h>
#endif
#define HAVE_STRTOD_L 1
static locale_t c_locale;
#endif

/* ------------------------------------------------------------------ owned buffer object */

typedef struct {
    PyObject_HEAD
    void *data;
    Py_ssize_t size;
} OwnedBuffer;

static void owned_dealloc(OwnedBuffer *self) {
    PyMem_RawFree(self->data);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int owned_getbuffer(OwnedBuffer *self, Py_buffer *view, int flags) {
    return PyBuffer_FillInfo(view, (PyObject *)self, self->data ? self->data : (void *)"",
                             self->size, 1, flags);
}

static PyBufferProcs owned_as_buffer = {(getbufferproc)owned_getbuffer, NULL};

static PyTypeObject OwnedBufferType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "queryeval._trecread.OwnedBuffer",
    .tp_basicsize = sizeof(OwnedBuffer),
    .tp_dealloc = (destructor)owned_dealloc,
    .tp_as_buffer = &owned_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Read-only bytes owned by the TREC reader (buffer protocol).",
};

/* Takes ownership of data (PyMem_RawMalloc'ed), also on failure. */
static PyObject *owned_new(void *data, Py_ssize_t size) {
    OwnedBuffer *self = PyObject_New(OwnedBuffer, &OwnedBufferType);
    if (self == NULL) {
        PyMem_RawFree(data);
        return NULL;
    }
    self->data = data;
    self->size = size;
    return (PyObject *)self;
}

/* ------------------------------------------------------------------ string dictionary */

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
static uint64_t hash_seed;

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

#if defined(__linux__)
#include <sys/mman.h>
#endif

/* Hint the kernel to back a large array with huge pages: one page fault per 2 MiB instead
 * of one per 4 KiB (the output arrays are written once, front to back; an id table of a
 * few MiB is touched all over as it fills). */
static void huge_pages(void *p, size_t n) {
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

static int dict_init(Dict *d) {
    memset(d, 0, sizeof(*d));
    d->mask = 1023;
    d->slots = PyMem_RawCalloc(d->mask + 1, sizeof(Slot));
    return d->slots ? 0 : -1;
}

static void dict_free(Dict *d) {
    PyMem_RawFree(d->slots);
    PyMem_RawFree(d->e);
}

static int dict_grow_table(Dict *d) {
    size_t mask = d->mask * 2 + 1;
    Slot *slots = PyMem_RawCalloc(mask + 1, sizeof(Slot));
    if (slots == NULL)
        return -1;
    huge_pages(slots, (mask + 1) * sizeof(Slot));
    for (size_t c = 0; c < d->n; c++) {
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

/* ------------------------------------------------------------------ UTF-8 (Python's rules) */

static int valid_utf8(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        /* ASCII fast path, 8 bytes at a time */
        while (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (w & 0x8080808080808080ULL)
                break;
            i += 8;
        }
        if (i >= n)
            break;
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t need;
        unsigned char lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF)
            need = 1;
        else if (c == 0xE0) {
            need = 2;
            lo = 0xA0;
        } else if (c == 0xED) {
            need = 2;
            hi = 0x9F;
        } else if (c >= 0xE1 && c <= 0xEF)
            need = 2;
        else if (c == 0xF0) {
            need = 3;
            lo = 0x90;
        } else if (c == 0xF4) {
            need = 3;
            hi = 0x8F;
        } else if (c >= 0xF1 && c <= 0xF3)
            need = 3;
        else
            return 0;
        if (i + need >= n)
            return 0;
        if (s[i + 1] < lo || s[i + 1] > hi)
            return 0;
        for (size_t k = 2; k <= need; k++)
            if (s[i + k] < 0x80 || s[i + k] > 0xBF)
                return 0;
        i += need + 1;
    }
    return 1;
}

/* ------------------------------------------------------------------ numbers */

static const double p10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                             1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                             1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

#if LDBL_MANT_DIG == 64 && (defined(__x86_64__) || defined(__i386__))
#define HAVE_X87 1
static const long double p10l[] = {
    1e0L,  1e1L,  1e2L,  1e3L,  1e4L,  1e5L,  1e6L,  1e7L,  1e8L,  1e9L,
    1e10L, 1e11L, 1e12L, 1e13L, 1e14L, 1e15L, 1e16L, 1e17L, 1e18L, 1e19L,
    1e20L, 1e21L, 1e22L, 1e23L, 1e24L, 1e25L, 1e26L, 1e27L};
#endif

#if defined(__SIZEOF_INT128__)
#define HAVE_U128 1
/* 5^q for -27 <= q <= 27 as hi:lo * 2^e with 2^127 <= hi:lo < 2^128, truncated (exact for
 * q >= 0). Generated with Python's Fraction (see tests/test_trecread_score.py, which checks
 * the parser against float() on decimals of every exponent in this range). */
typedef struct {
    uint64_t hi, lo;
    int e;
} Pow5;
static const Pow5 pow5[55] = {
    {0x9E74D1B791E07E48ULL, 0x775EA264CF55347DULL, -190}, /* 5^-27 */
    {0xC612062576589DDAULL, 0x95364AFE032A819DULL, -188}, /* 5^-26 */
    {0xF79687AED3EEC551ULL, 0x3A83DDBD83F52204ULL, -186}, /* 5^-25 */
    {0x9ABE14CD44753B52ULL, 0xC4926A9672793542ULL, -183}, /* 5^-24 */
    {0xC16D9A0095928A27ULL, 0x75B7053C0F178293ULL, -181}, /* 5^-23 */
    {0xF1C90080BAF72CB1ULL, 0x5324C68B12DD6338ULL, -179}, /* 5^-22 */
    {0x971DA05074DA7BEEULL, 0xD3F6FC16EBCA5E03ULL, -176}, /* 5^-21 */
    {0xBCE5086492111AEAULL, 0x88F4BB1CA6BCF584ULL, -174}, /* 5^-20 */
    {0xEC1E4A7DB69561A5ULL, 0x2B31E9E3D06C32E5ULL, -172}, /* 5^-19 */
    {0x9392EE8E921D5D07ULL, 0x3AFF322E62439FCFULL, -169}, /* 5^-18 */
    {0xB877AA3236A4B449ULL, 0x09BEFEB9FAD487C2ULL, -167}, /* 5^-17 */
    {0xE69594BEC44DE15BULL, 0x4C2EBE687989A9B3ULL, -165}, /* 5^-16 */
    {0x901D7CF73AB0ACD9ULL, 0x0F9D37014BF60A10ULL, -162}, /* 5^-15 */
    {0xB424DC35095CD80FULL, 0x538484C19EF38C94ULL, -160}, /* 5^-14 */
    {0xE12E13424BB40E13ULL, 0x2865A5F206B06FB9ULL, -158}, /* 5^-13 */
    {0x8CBCCC096F5088CBULL, 0xF93F87B7442E45D3ULL, -155}, /* 5^-12 */
    {0xAFEBFF0BCB24AAFEULL, 0xF78F69A51539D748ULL, -153}, /* 5^-11 */
    {0xDBE6FECEBDEDD5BEULL, 0xB573440E5A884D1BULL, -151}, /* 5^-10 */
    {0x89705F4136B4A597ULL, 0x31680A88F8953030ULL, -148}, /* 5^-9 */
    {0xABCC77118461CEFCULL, 0xFDC20D2B36BA7C3DULL, -146}, /* 5^-8 */
    {0xD6BF94D5E57A42BCULL, 0x3D32907604691B4CULL, -144}, /* 5^-7 */
    {0x8637BD05AF6C69B5ULL, 0xA63F9A49C2C1B10FULL, -141}, /* 5^-6 */
    {0xA7C5AC471B478423ULL, 0x0FCF80DC33721D53ULL, -139}, /* 5^-5 */
    {0xD1B71758E219652BULL, 0xD3C36113404EA4A8ULL, -137}, /* 5^-4 */
    {0x83126E978D4FDF3BULL, 0x645A1CAC083126E9ULL, -134}, /* 5^-3 */
    {0xA3D70A3D70A3D70AULL, 0x3D70A3D70A3D70A3ULL, -132}, /* 5^-2 */
    {0xCCCCCCCCCCCCCCCCULL, 0xCCCCCCCCCCCCCCCCULL, -130}, /* 5^-1 */
    {0x8000000000000000ULL, 0x0000000000000000ULL, -127}, /* 5^0 */
    {0xA000000000000000ULL, 0x0000000000000000ULL, -125}, /* 5^1 */
    {0xC800000000000000ULL, 0x0000000000000000ULL, -123}, /* 5^2 */
    {0xFA00000000000000ULL, 0x0000000000000000ULL, -121}, /* 5^3 */
    {0x9C40000000000000ULL, 0x0000000000000000ULL, -118}, /* 5^4 */
    {0xC350000000000000ULL, 0x0000000000000000ULL, -116}, /* 5^5 */
    {0xF424000000000000ULL, 0x0000000000000000ULL, -114}, /* 5^6 */
    {0x9896800000000000ULL, 0x0000000000000000ULL, -111}, /* 5^7 */
    {0xBEBC200000000000ULL, 0x0000000000000000ULL, -109}, /* 5^8 */
    {0xEE6B280000000000ULL, 0x0000000000000000ULL, -107}, /* 5^9 */
    {0x9502F90000000000ULL, 0x0000000000000000ULL, -104}, /* 5^10 */
    {0xBA43B74000000000ULL, 0x0000000000000000ULL, -102}, /* 5^11 */
    {0xE8D4A51000000000ULL, 0x0000000000000000ULL, -100}, /* 5^12 */
    {0x9184E72A00000000ULL, 0x0000000000000000ULL, -97}, /* 5^13 */
    {0xB5E620F480000000ULL, 0x0000000000000000ULL, -95}, /* 5^14 */
    {0xE35FA931A0000000ULL, 0x0000000000000000ULL, -93}, /* 5^15 */
    {0x8E1BC9BF04000000ULL, 0x0000000000000000ULL, -90}, /* 5^16 */
    {0xB1A2BC2EC5000000ULL, 0x0000000000000000ULL, -88}, /* 5^17 */
    {0xDE0B6B3A76400000ULL, 0x0000000000000000ULL, -86}, /* 5^18 */
    {0x8AC7230489E80000ULL, 0x0000000000000000ULL, -83}, /* 5^19 */
    {0xAD78EBC5AC620000ULL, 0x0000000000000000ULL, -81}, /* 5^20 */
    {0xD8D726B7177A8000ULL, 0x0000000000000000ULL, -79}, /* 5^21 */
    {0x878678326EAC9000ULL, 0x0000000000000000ULL, -76}, /* 5^22 */
    {0xA968163F0A57B400ULL, 0x0000000000000000ULL, -74}, /* 5^23 */
    {0xD3C21BCECCEDA100ULL, 0x0000000000000000ULL, -72}, /* 5^24 */
    {0x84595161401484A0ULL, 0x0000000000000000ULL, -69}, /* 5^25 */
    {0xA56FA5B99019A5C8ULL, 0x0000000000000000ULL, -67}, /* 5^26 */
    {0xCECB8F27F4200F3AULL, 0x0000000000000000ULL, -65}, /* 5^27 */
};

/* m * 10^q correctly rounded, for 0 < m < 2^64 and -27 <= q <= 27 (the Eisel-Lemire idea,
 * restricted to this range: every result is a normal double, one 64x128-bit product with an
 * error below one unit of its lowest word). 0 when the product is within that error of a
 * halfway point between two doubles (rounding cannot be decided: the caller asks strtod). */
static inline int mul_pow10(uint64_t m, int q, double *out) {
    const Pow5 *p = &pow5[q + 27];
    int lz = __builtin_clzll(m);
    uint64_t w = m << lz;
    __uint128_t a = (__uint128_t)w * p->lo, b = (__uint128_t)w * p->hi;
    __uint128_t mid = (a >> 64) + (uint64_t)b;
    uint64_t r1 = (uint64_t)mid;
    uint64_t r2 = (uint64_t)(b >> 64) + (uint64_t)(mid >> 64);
    int shift = 10 + (int)(r2 >> 63); /* bits of r2 below the 53-bit significand */
    uint64_t half = (uint64_t)1 << (shift - 1);
    uint64_t tail = r2 & (((uint64_t)1 << shift) - 1);
    if ((tail == half && r1 <= 1) || (tail == half - 1 && r1 == ~0ULL))
        return 0;
    uint64_t sig = (r2 >> shift) + (tail >= half);
    int e2 = shift + 128 + p->e + q - lz;
    if (sig >> 53) {
        sig >>= 1;
        e2++;
    }
    uint64_t bits = ((uint64_t)(e2 + 52 + 1023) << 52) | (sig & ((1ULL << 52) - 1));
    memcpy(out, &bits, 8);
    return 1;
}
#endif

static inline int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

#if PY_LITTLE_ENDIAN
/* Eight ASCII digits in one 64-bit word (fast_float's SWAR tricks). */
static inline int eight_digits(uint64_t v) {
    return (((v + 0x4646464646464646ULL) | (v - 0x3030303030303030ULL)) &
            0x8080808080808080ULL) == 0;
}
static inline uint64_t parse_eight(uint64_t v) {
    const uint64_t mask = 0x000000FF000000FFULL;
    const uint64_t mul1 = 0x000F424000000064ULL; /* 100 + (1000000 << 32) */
    const uint64_t mul2 = 0x0000271000000001ULL; /* 1 + (10000 << 32) */
    v -= 0x3030303030303030ULL;
    v = (v * 10) + (v >> 8);
    v = (((v & mask) * mul1) + (((v >> 16) & mask) * mul2)) >> 32;
    return (uint32_t)v;
}
#endif

/* Consumes a run of digits from u[j]: the first 19 significant ones go into *m (*nd counts
 * them all; *exact drops to 0 past 19). Returns the position after the run. */
static inline size_t digits(const unsigned char *u, size_t j, size_t n, uint64_t *m, int *nd,
                            int *exact) {
    if (*nd == 0)
        while (j < n && u[j] == '0')
            j++;
#if PY_LITTLE_ENDIAN
    while (*nd <= 11 && j + 8 <= n) {
        uint64_t w;
        memcpy(&w, u + j, 8);
        if (!eight_digits(w))
            break;
        uint64_t v = parse_eight(w);
        if (*nd == 0 && v < 10000000ULL)
            break; /* a zero ahead: count the significant digits one by one */
        *m = *m * 100000000ULL + v;
        *nd += 8;
        j += 8;
    }
#endif
    while (j < n && is_digit(u[j])) {
        if (*nd < 19)
            *m = *m * 10 + (u[j] - '0');
        else
            *exact = 0;
        if (*nd || u[j] != '0')
            (*nd)++;
        j++;
    }
    return j;
}
static inline int is_xdigit(unsigned char c) {
    return is_digit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}
static inline unsigned char lower(unsigned char c) {
    return (c >= 'A' && c <= 'Z') ? (unsigned char)(c | 0x20) : c;
}

/* strtod in the "C" locale on s[0:n] (a complete numeric token). */
static double slow_strtod(const char *s, size_t n) {
    char local[128];
    char *buf = local;
    if (n >= sizeof(local)) {
        buf = PyMem_RawMalloc(n + 1);
        if (buf == NULL)
            return NAN; /* refused: the exact reader takes over */
    }
    memcpy(buf, s, n);
    buf[n] = 0;
#ifdef HAVE_STRTOD_L
    double v = strtod_l(buf, NULL, c_locale);
#else
    double v = strtod(buf, NULL);
#endif
    if (buf != local)
        PyMem_RawFree(buf);
    return v;
}

enum { NUM_OK = 0, NUM_NAN = 1 };

/* C strtod's prefix rule on a field. *whole: the field is that number; *plain: a decimal or
 * inf/infinity (what --strict accepts when whole). Returns NUM_NAN for a nan prefix. */
static int parse_score(const char *s, size_t n, double *out, int *whole, int *plain) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    int neg = 0;
    *plain = 0;
    if (i < n && (u[i] == '+' || u[i] == '-')) {
        neg = u[i] == '-';
        i++;
    }
    /* hexadecimal: 0x(?:h+\.?h*|\.h+)(?:p[+-]?d+)? */
    if (i + 1 < n && u[i] == '0' && lower(u[i + 1]) == 'x') {
        size_t j = i + 2, h1 = 0, h2 = 0;
        while (j < n && is_xdigit(u[j]))
            j++, h1++;
        int ok = h1 > 0;
        if (j < n && u[j] == '.') {
            size_t k = j + 1;
            while (k < n && is_xdigit(u[k]))
                k++, h2++;
            if (h1 > 0 || h2 > 0) {
                ok = 1;
                j = k;
            }
        }
        if (ok) {
            if (j < n && lower(u[j]) == 'p') {
                size_t k = j + 1;
                if (k < n && (u[k] == '+' || u[k] == '-'))
                    k++;
                if (k < n && is_digit(u[k])) {
                    while (k < n && is_digit(u[k]))
                        k++;
                    j = k;
                }
            }
            *out = slow_strtod(s, j);
            *whole = j == n;
            return isnan(*out) ? NUM_NAN : NUM_OK;
        }
    }
    /* decimal: (?:d+\.?d*|\.d+)(?:e[+-]?d+)? */
    {
        size_t j = i, d1, d2 = 0;
        uint64_t m = 0;
        int nd = 0, exact = 1;
        long e10 = 0;
        j = digits(u, j, n, &m, &nd, &exact);
        d1 = j - i;
        if (j < n && u[j] == '.') {
            size_t k = digits(u, j + 1, n, &m, &nd, &exact);
            d2 = k - (j + 1);
            e10 -= (long)d2;
            if (d1 > 0 || d2 > 0)
                j = k;
        }
        if (d1 > 0 || d2 > 0) {
            if (j < n && lower(u[j]) == 'e') {
                size_t k = j + 1;
                int eneg = 0;
                if (k < n && (u[k] == '+' || u[k] == '-')) {
                    eneg = u[k] == '-';
                    k++;
                }
                if (k < n && is_digit(u[k])) {
                    long ev = 0;
                    while (k < n && is_digit(u[k])) {
                        if (ev < 100000000L)
                            ev = ev * 10 + (u[k] - '0');
                        else
                            exact = 0; /* capped: only strtod has the true exponent */
                        k++;
                    }
                    e10 += eneg ? -ev : ev;
                    j = k;
                }
            }
            *whole = j == n;
            *plain = 1;
            double v;
            if (m == 0 && exact) {
                v = 0.0;
            }
#ifdef HAVE_U128
            else if (exact && e10 >= -27 && e10 <= 27 && mul_pow10(m, (int)e10, &v)) {
            }
#endif
#if FLT_EVAL_METHOD == 0
            else if (exact && m <= (1ULL << 53) && e10 >= -22 && e10 <= 22) {
                v = (double)m;
                v = e10 < 0 ? v / p10[-e10] : v * p10[e10];
            }
#endif
#ifdef HAVE_X87
            else if (exact && e10 >= -27 && e10 <= 27) {
                long double x = (long double)m;
                x = e10 < 0 ? x / p10l[-e10] : x * p10l[e10];
                uint64_t sig;
                memcpy(&sig, &x, 8);
                unsigned low = (unsigned)(sig & 0x7FF);
                if (low >= 0x3FF && low <= 0x401)
                    v = slow_strtod(s + i, j - i);
                else
                    v = (double)x;
            }
#endif
            else {
                v = slow_strtod(s + i, j - i);
            }
            *out = neg ? -v : v;
            return isnan(v) ? NUM_NAN : NUM_OK;
        }
    }
    /* inf(inity)? | nan(\([0-9a-z_]*\))? */
    if (i + 3 <= n) {
        unsigned char a = lower(u[i]), b = lower(u[i + 1]), c = lower(u[i + 2]);
        if (a == 'i' && b == 'n' && c == 'f') {
            size_t j = i + 3;
            static const char rest[] = "inity";
            if (j + 5 <= n) {
                size_t k = 0;
                while (k < 5 && lower(u[j + k]) == (unsigned char)rest[k])
                    k++;
                if (k == 5)
                    j += 5;
            }
            *out = neg ? -INFINITY : INFINITY;
            *whole = j == n;
            *plain = 1;
            return NUM_OK;
        }
        if (a == 'n' && b == 'a' && c == 'n') {
            *out = NAN;
            *whole = 0;
            return NUM_NAN;
        }
    }
    *out = 0.0;
    *whole = 0;
    return NUM_OK;
}

/* C atol's prefix rule; 0 when it fits int64, -1 when it does not. */
static int parse_level(const char *s, size_t n, int64_t *out, int *whole) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    int neg = 0;
    if (i < n && (u[i] == '+' || u[i] == '-')) {
        neg = u[i] == '-';
        i++;
    }
    if (i >= n || !is_digit(u[i])) {
        *out = 0;
        *whole = 0;
        return 0;
    }
    uint64_t m = 0;
    const uint64_t limit = neg ? (uint64_t)1 << 63 : ((uint64_t)1 << 63) - 1;
    while (i < n && is_digit(u[i])) {
        unsigned d = u[i] - '0';
        if (m > (limit - d) / 10)
            return -1;
        m = m * 10 + d;
        i++;
    }
    *out = neg ? (int64_t)(0 - m) : (int64_t)m;
    *whole = i == n;
    return 0;
}

/* ------------------------------------------------------------------ the scan */

/* 0: ordinary byte, 1: field separator, 2: end of line */
static unsigned char cls[256];

/* First byte at or after p that ends a field (C whitespace or \n), or e. */
static inline const char *field_end(const char *p, const char *e) {
#if PY_LITTLE_ENDIAN && defined(__GNUC__)
    while (e - p >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        /* bytes below 0x21 (all separators are): the lowest flagged byte is exact */
        uint64_t t = (w - 0x2121212121212121ULL) & ~w & 0x8080808080808080ULL;
        if (t == 0) {
            p += 8;
            continue;
        }
        p += __builtin_ctzll(t) >> 3;
        if (cls[(unsigned char)*p] != 0)
            return p;
        p++; /* a control byte that is part of the field */
    }
#endif
    while (p < e && cls[(unsigned char)*p] == 0)
        p++;
    return p;
}

typedef struct {
    const char *buf; /* the chunk: whole lines */
    size_t n;
    int run, strict;
    /* out: rows written at qc/dc/val (room for cap rows) */
    int32_t *qc, *dc;
    char *val;
    size_t cap, rows;
    Dict qd, dd;
    int status; /* 0 ok, 1 refused (exact reader), 2 out of memory */
} Scan;

/* Newline bytes in p[0:n]. */
static size_t count_lines(const char *p, size_t n) {
    size_t lines = 0, k = 0;
#if PY_LITTLE_ENDIAN && defined(__GNUC__)
    for (; k + 8 <= n; k += 8) {
        uint64_t w;
        memcpy(&w, p + k, 8);
        w ^= 0x0A0A0A0A0A0A0A0AULL; /* \n bytes become 0 */
        uint64_t t = (w - 0x0101010101010101ULL) & ~w & 0x8080808080808080ULL;
        if (t) {
            /* exact count: mark zero bytes without borrows */
            uint64_t z = ((w & 0x7F7F7F7F7F7F7F7FULL) + 0x7F7F7F7F7F7F7F7FULL) | w;
            lines += (size_t)((((~z & 0x8080808080808080ULL) >> 7) * 0x0101010101010101ULL) >> 56);
        }
    }
#endif
    for (; k < n; k++)
        lines += p[k] == '\n';
    return lines;
}

/* A row's ids waiting for their look-ups (software pipelining: on a file of many distinct
 * ids the tables outgrow the caches, and each look-up would otherwise wait for memory). The
 * query id is looked up only when it differs from the previous row's (files are grouped by
 * query): qsame then takes the previous row's code. */
#define PIPE 16
typedef struct {
    const char *s, *qs;
    size_t n, qn;
    uint64_t prefix, h, qprefix, qh;
    size_t row;
    int qsame;
} Pending;

#if defined(__GNUC__)
#define PREFETCH(a) __builtin_prefetch((a), 0, 3)
#else
#define PREFETCH(a) ((void)0)
#endif

/* Rows are resolved in order: the previous row's query code is known. */
static inline int resolve(Scan *st, const Pending *pd) {
    int32_t qc = pd->qsame ? st->qc[pd->row - 1]
                           : dict_code_h(&st->qd, pd->qs, pd->qn, pd->qprefix, pd->qh);
    int32_t dc = dict_code_h(&st->dd, pd->s, pd->n, pd->prefix, pd->h);
    if (qc < 0 || dc < 0) {
        st->status = 2;
        return -1;
    }
    st->qc[pd->row] = qc;
    st->dc[pd->row] = dc;
    return 0;
}

/* Checks the next 64 KiB block from *at (to a character boundary) is UTF-8 and moves *at
 * past it: the scan checks each block as it reaches it, while the bytes are in cache. */
static inline int check_block(const char **at, const char *e) {
    const char *a = *at, *b = e - a > (1 << 16) ? a + (1 << 16) : e;
    while (b < e && ((unsigned char)*b & 0xC0) == 0x80)
        b++; /* never split a UTF-8 sequence */
    *at = b;
    return valid_utf8((const unsigned char *)a, (size_t)(b - a));
}

static void scan_chunk(Scan *st) {
    Pending pend[PIPE];
    const size_t first = st->rows;
    const char *p = st->buf, *e = st->buf + st->n;
    const int run = st->run, strict = st->strict;
    const int want = run ? 6 : 4;
    const char *last_q = NULL;
    size_t last_qn = 0;
    const char *checked = p; /* the bytes before are valid UTF-8 */
    while (p < e) {
        if (p >= checked && !check_block(&checked, e)) {
            st->status = 1;
            return;
        }
        const char *line = p;
        while (p < e && cls[(unsigned char)*p] == 1)
            p++;
        if (p == e)
            break;
        if (*p == '\n') {
            p++;
            continue;
        }
        if (run ? *p == '#' : *line == '#') {
            if (strict) {
                st->status = 1;
                return;
            }
            const char *nl = memchr(p, '\n', (size_t)(e - p));
            p = nl ? nl + 1 : e;
            continue;
        }
        const char *fs[6];
        size_t fl[6];
        int nf = 0;
        for (;;) {
            const char *f = p;
            p = field_end(p, e);
            if (nf < 6) {
                fs[nf] = f;
                fl[nf] = (size_t)(p - f);
            }
            nf++;
            while (p < e && cls[(unsigned char)*p] == 1)
                p++;
            if (p == e)
                break;
            if (*p == '\n') {
                p++;
                break;
            }
        }
        if (nf < want || (nf > want && (strict || !run))) {
            st->status = 1;
            return;
        }
        size_t row = st->rows;
        if (row >= st->cap) { /* cannot happen: cap counts the lines */
            st->status = 2;
            return;
        }
        if (run) {
            double v;
            int whole, plain;
            if (parse_score(fs[4], fl[4], &v, &whole, &plain) != NUM_OK ||
                (strict && !(whole && plain))) {
                st->status = 1;
                return;
            }
            ((double *)st->val)[row] = v;
        } else {
            int64_t v;
            int whole;
            if (parse_level(fs[3], fl[3], &v, &whole) != 0 || (strict && !whole)) {
                st->status = 1;
                return;
            }
            ((int64_t *)st->val)[row] = v;
        }
        /* the ids are looked up PIPE rows later: their slots are fetched meanwhile */
        Pending *pd = &pend[row & (PIPE - 1)];
        if (row - first >= PIPE && resolve(st, pd) < 0)
            return;
        pd->qsame = last_q && last_qn == fl[0] && memcmp(last_q, fs[0], fl[0]) == 0;
        if (!pd->qsame) {
            last_q = fs[0];
            last_qn = fl[0];
            pd->qs = fs[0];
            pd->qn = fl[0];
            pd->qprefix = load_prefix(fs[0], fl[0], e);
            pd->qh = hash_name(fs[0], fl[0], pd->qprefix);
            PREFETCH(&st->qd.slots[pd->qh & st->qd.mask]);
        }
        pd->s = fs[2];
        pd->n = fl[2];
        pd->prefix = load_prefix(fs[2], fl[2], e);
        pd->h = hash_name(fs[2], fl[2], pd->prefix);
        pd->row = row;
        PREFETCH(&st->dd.slots[pd->h & st->dd.mask]);
        st->rows = row + 1;
    }
    while (checked < e)
        if (!check_block(&checked, e)) {
            st->status = 1;
            return;
        }
    for (size_t row = st->rows > first + PIPE ? st->rows - PIPE : first; row < st->rows; row++)
        if (resolve(st, &pend[row & (PIPE - 1)]) < 0)
            return;
}

/* Offsets (int32, n + 1) and bytes of a dictionary's names, in code order. */
static int dict_export(Dict *d, int32_t **offsets, char **data) {
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
static int32_t *dict_merge(Dict *global, const Dict *local, const char *end) {
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

/* ------------------------------------------------------------------ threads */

#define MAX_THREADS 64

typedef struct {
    Scan *st;
    int phase; /* 0: count the lines (room for the rows), 1: scan */
} Job;

static void run_job(Job *job) {
    Scan *st = job->st;
    if (job->phase == 1)
        scan_chunk(st);
    else /* a last line without \n counts */
        st->cap = count_lines(st->buf, st->n) + (st->n && st->buf[st->n - 1] != '\n');
}

#ifndef _WIN32
#include <pthread.h>
static void *job_main(void *arg) {
    run_job((Job *)arg);
    return NULL;
}
#endif

/* Runs the phase over all parts: parts 1.. in threads (POSIX), part 0 here. */
static void run_phase(Scan *parts, int n, int phase) {
    Job jobs[MAX_THREADS];
    for (int k = 0; k < n; k++) {
        jobs[k].st = &parts[k];
        jobs[k].phase = phase;
    }
#ifndef _WIN32
    pthread_t tids[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    for (int k = 1; k < n; k++)
        started[k] = pthread_create(&tids[k], NULL, job_main, &jobs[k]) == 0;
    run_job(&jobs[0]);
    for (int k = 1; k < n; k++) {
        if (started[k])
            pthread_join(tids[k], NULL);
        else
            run_job(&jobs[k]); /* no thread to be had: run it here */
    }
#else
    for (int k = 0; k < n; k++)
        run_job(&jobs[k]);
#endif
}

/* The whole read, without the GIL. Returns 0, 1 (refused) or 2 (out of memory). */
static int read_all(const char *buf, size_t n, int nthreads, int run, int strict, Scan *parts,
                    int *nparts, int32_t **qc, int32_t **dc, char **val, size_t *rows,
                    Dict *gq, Dict *gd) {
    /* chunks end after a \n */
    int np = 0;
    size_t from = 0;
    for (int k = 1; k <= nthreads && (from < n || np == 0); k++) {
        size_t to = n;
        if (k < nthreads) {
            size_t at = (size_t)((double)n * k / nthreads);
            if (at < from)
                at = from;
            const char *nl = at < n ? memchr(buf + at, '\n', n - at) : NULL;
            to = nl ? (size_t)(nl - buf) + 1 : n;
        }
        Scan *st = &parts[np++];
        memset(st, 0, sizeof(*st));
        st->buf = buf + from;
        st->n = to - from;
        st->run = run;
        st->strict = strict;
        if (dict_init(&st->qd) < 0 || dict_init(&st->dd) < 0)
            return *nparts = np, 2;
        from = to;
    }
    *nparts = np;
    /* Room for the rows. One part: a bound from the bytes (a row is at least 6 or 4
     * one-byte fields, their separators and a newline), no pass over the file; the pages of
     * the bound that no row reaches are never touched. Several: each part's lines, counted
     * first (a later part's rows are moved down to follow the earlier ones': with a bound,
     * the pages between would be touched twice, +40% peak memory on the default shape). */
    size_t total = 0;
    if (np == 1)
        parts[0].cap = parts[0].n / (run ? 12 : 8) + 1;
    else
        run_phase(parts, np, 0);
    for (int k = 0; k < np; k++)
        total += parts[k].cap;
    if (total == 0)
        total = 1;
    *qc = PyMem_RawMalloc(total * sizeof(int32_t));
    *dc = PyMem_RawMalloc(total * sizeof(int32_t));
    *val = PyMem_RawMalloc(total * 8);
    if (*qc == NULL || *dc == NULL || *val == NULL)
        return 2;
    huge_pages(*qc, total * sizeof(int32_t));
    huge_pages(*dc, total * sizeof(int32_t));
    huge_pages(*val, total * 8);
    size_t off = 0;
    for (int k = 0; k < np; k++) {
        parts[k].qc = *qc + off;
        parts[k].dc = *dc + off;
        parts[k].val = *val + off * 8;
        off += parts[k].cap;
    }
    run_phase(parts, np, 1);
    for (int k = 0; k < np; k++)
        if (parts[k].status)
            return parts[k].status;
    /* one dictionary: part 0's, extended by the others' names in order; rows packed */
    const char *end = buf + n;
    *gq = parts[0].qd;
    *gd = parts[0].dd;
    memset(&parts[0].qd, 0, sizeof(Dict));
    memset(&parts[0].dd, 0, sizeof(Dict));
    size_t at = parts[0].rows;
    for (int k = 1; k < np; k++) {
        Scan *st = &parts[k];
        int32_t *rq = dict_merge(gq, &st->qd, end);
        int32_t *rd = rq ? dict_merge(gd, &st->dd, end) : NULL;
        if (rd == NULL) {
            PyMem_RawFree(rq);
            return 2;
        }
        int32_t *oq = *qc + at, *od = *dc + at;
        for (size_t i = 0; i < st->rows; i++) {
            oq[i] = rq[st->qc[i]];
            od[i] = rd[st->dc[i]];
        }
        if (st->val != *val + at * 8)
            memmove(*val + at * 8, st->val, st->rows * 8);
        at += st->rows;
        PyMem_RawFree(rq);
        PyMem_RawFree(rd);
    }
    *rows = at;
    return 0;
}

static PyObject *scan(PyObject *self, PyObject *args) {
    Py_buffer view;
    int nthreads, run, strict;
    if (!PyArg_ParseTuple(args, "y*ipp", &view, &nthreads, &run, &strict))
        return NULL;
    if (nthreads < 1)
        nthreads = 1;
    if (nthreads > MAX_THREADS)
        nthreads = MAX_THREADS;
    Scan parts[MAX_THREADS];
    int nparts = 0;
    int32_t *qc = NULL, *dc = NULL, *qo = NULL, *dof = NULL;
    char *val = NULL, *qdata = NULL, *ddata = NULL;
    size_t rows = 0;
    Dict gq, gd;
    memset(&gq, 0, sizeof(gq));
    memset(&gd, 0, sizeof(gd));
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = read_all((const char *)view.buf, (size_t)view.len, nthreads, run, strict, parts,
                      &nparts, &qc, &dc, &val, &rows, &gq, &gd);
    if (status == 0 && (dict_export(&gq, &qo, &qdata) < 0 || dict_export(&gd, &dof, &ddata) < 0))
        status = 1; /* over 2 GiB of names: leave the file to the other readers */
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    for (int k = 0; k < nparts; k++) {
        dict_free(&parts[k].qd);
        dict_free(&parts[k].dd);
    }
    size_t nq = gq.n, nd = gd.n, qbytes = gq.bytes, dbytes = gd.bytes;
    dict_free(&gq);
    dict_free(&gd);
    if (status != 0) {
        PyMem_RawFree(qc);
        PyMem_RawFree(dc);
        PyMem_RawFree(val);
        PyMem_RawFree(qo);
        PyMem_RawFree(qdata);
        PyMem_RawFree(dof);
        PyMem_RawFree(ddata);
        if (status == 2)
            return PyErr_NoMemory();
        Py_RETURN_NONE;
    }
    PyObject *o_qc = owned_new(qc, (Py_ssize_t)(rows * 4));
    PyObject *o_qo = owned_new(qo, (Py_ssize_t)((nq + 1) * 4));
    PyObject *o_qd = owned_new(qdata, (Py_ssize_t)qbytes);
    PyObject *o_dc = owned_new(dc, (Py_ssize_t)(rows * 4));
    PyObject *o_do = owned_new(dof, (Py_ssize_t)((nd + 1) * 4));
    PyObject *o_dd = owned_new(ddata, (Py_ssize_t)dbytes);
    PyObject *o_v = owned_new(val, (Py_ssize_t)(rows * 8));
    PyObject *out = NULL;
    if (o_qc && o_qo && o_qd && o_dc && o_do && o_dd && o_v)
        out = Py_BuildValue("(nOOOnOOOnO)", (Py_ssize_t)rows, o_qc, o_qo, o_qd, (Py_ssize_t)nq,
                            o_dc, o_do, o_dd, (Py_ssize_t)nd, o_v);
    Py_XDECREF(o_qc);
    Py_XDECREF(o_qo);
    Py_XDECREF(o_qd);
    Py_XDECREF(o_dc);
    Py_XDECREF(o_do);
    Py_XDECREF(o_dd);
    Py_XDECREF(o_v);
    return out;
}

/* parse_score on one field, for tests: (value, whole, plain) or None for a nan prefix. */
static PyObject *score(PyObject *self, PyObject *args) {
    const char *s;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "y#", &s, &n))
        return NULL;
    double v;
    int whole, plain;
    if (parse_score(s, (size_t)n, &v, &whole, &plain) != NUM_OK)
        Py_RETURN_NONE;
    return Py_BuildValue("(dOO)", v, whole ? Py_True : Py_False, plain ? Py_True : Py_False);
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(buffer, threads, run, strict) -> tuple of buffers, or None (use the exact reader)"},
    {"score", score, METH_VARARGS,
     "score(field: bytes) -> (value, whole, plain), or None for a nan prefix"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_trecread",
    "TREC run/qrels tokeniser (trec_eval 10.0's reading rules); see queryeval.suite.trec.",
    -1, methods,
};

PyMODINIT_FUNC PyInit__trecread(void) {
    static const char seps[] = " \t\v\f\r";
    for (const char *c = seps; *c; c++)
        cls[(unsigned char)*c] = 1;
    cls['\n'] = 2;
#ifdef HAVE_STRTOD_L
    if (c_locale == (locale_t)0) {
        c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
        if (c_locale == (locale_t)0) {
            PyErr_SetString(PyExc_ImportError, "cannot create the C locale");
            return NULL;
        }
    }
#endif
    if (hash_seed == 0) {
        PyObject *os = PyImport_ImportModule("os");
        PyObject *r = os ? PyObject_CallMethod(os, "urandom", "i", 8) : NULL;
        Py_XDECREF(os);
        if (r == NULL)
            return NULL;
        memcpy(&hash_seed, PyBytes_AS_STRING(r), 8);
        Py_DECREF(r);
        hash_seed |= 1;
    }
    if (PyType_Ready(&OwnedBufferType) < 0)
        return NULL;
    return PyModule_Create(&module);
}
