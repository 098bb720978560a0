/* The tokeniser of the compiled TREC reader: one thread's chunk of whole lines into rows
 * (ids looked up through a prefetch pipeline, UTF-8 checked block by block). */
#include "_trecread.h"
#include "_trecread_num.h"

/* ------------------------------------------------------------------ UTF-8 (Python's rules) */

static int valid_utf8(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        /* ASCII fast path, 32 then 8 bytes at a time */
        while (i + 32 <= n) {
            uint64_t w[4];
            memcpy(w, s + i, 32);
            if ((w[0] | w[1] | w[2] | w[3]) & 0x8080808080808080ULL)
                break;
            i += 32;
        }
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

/* Newline bytes in p[0:n]. */
size_t count_lines(const char *p, size_t n) {
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

#if defined(__SSE2__) && PY_LITTLE_ENDIAN && defined(__GNUC__)
#define TR_LINE_MASKS 1
#include <emmintrin.h>
/* Bit k of *ws: p[k] separates fields (C whitespace: \t \n \v \f \r or space); of *nl:
 * p[k] is \n; for k < 64 (four 16-byte compares: the whole of a typical line at once). */
static inline void line_masks(const char *p, uint64_t *ws, uint64_t *nl) {
    const __m128i tab = _mm_set1_epi8('\t'), four = _mm_set1_epi8(4);
    const __m128i space = _mm_set1_epi8(' '), lf = _mm_set1_epi8('\n');
    uint64_t w = 0, n = 0;
    for (int k = 0; k < 4; k++) {
        const __m128i x = _mm_loadu_si128((const __m128i *)(p + 16 * k));
        const __m128i t = _mm_sub_epi8(x, tab); /* \t..\r -> 0..4 */
        const __m128i sep = _mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(t, four), t),
                                         _mm_cmpeq_epi8(x, space));
        w |= (uint64_t)(uint32_t)_mm_movemask_epi8(sep) << (16 * k);
        n |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(x, lf)) << (16 * k);
    }
    *ws = w;
    *nl = n;
}
#else
#define TR_LINE_MASKS 0
#endif

/* A row's ids waiting for their look-ups (software pipelining: on a file of many distinct
 * ids the tables outgrow the caches, and each look-up would otherwise wait for memory). The
 * query id is looked up only when it differs from the previous row's (files are grouped by
 * query): qsame then takes the previous row's code. */
typedef struct {
    const char *s, *qs;
    size_t n, qn;
    uint64_t prefix, h, qprefix, qh;
    size_t row;
    int qsame;
} Pending;

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

void scan_chunk(Scan *st) {
    Pending pend[PIPE];
    const size_t first = st->rows;
    const char *p = st->buf, *e = st->buf + st->n;
    const int run = st->run, strict = st->strict;
    const int want = run ? 6 : 4;
    const char *last_q = NULL;
    size_t last_qn = 0;
    uint64_t last_qprefix = 0;
#if TR_LINE_MASKS
    const char *wb = NULL; /* the window: masks of wb[0:64] */
    uint64_t wws = 0, wnl = 0;
#endif
    const char *checked = p; /* the bytes before are valid UTF-8 */
    while (p < e) {
        if (p >= checked && !check_block(&checked, e)) {
            st->status = 1;
            return;
        }
        const char *line = p;
        const char *fs[6];
        size_t fl[6];
        int nf = 0;
#if TR_LINE_MASKS
        /* A line that ends within the 64 bytes whose masks are at hand (the rest of the
         * last window, or a new one from the line's start): split at once */
        {
            uint64_t ws = 0, nl = 0;
            if (wb != NULL && (size_t)(p - wb) < 64 && (wnl >> (p - wb)) != 0) {
                ws = wws >> (p - wb);
                nl = wnl >> (p - wb);
            } else if (e - p >= 64) {
                line_masks(p, &wws, &wnl);
                wb = p;
                ws = wws;
                nl = wnl;
            }
            if (nl != 0) {
                const uint64_t in_line = (nl & (0 - nl)) - 1; /* the bytes before the \n */
                uint64_t f = ~ws & in_line;               /* field bytes */
                uint64_t starts = f & ~(f << 1), ends = f & ~(f >> 1);
                if (f != 0 && p[__builtin_ctzll(f)] != '#' && *p != '#') {
                    while (starts != 0 && nf < 6) {
                        const int a = __builtin_ctzll(starts), b = __builtin_ctzll(ends);
                        fs[nf] = p + a;
                        fl[nf] = (size_t)(b + 1 - a);
                        nf++;
                        starts &= starts - 1;
                        ends &= ends - 1;
                    }
                    nf += starts != 0; /* more than 6 fields: the count is only compared */
                    p += __builtin_ctzll(nl) + 1;
                    goto fields_done;
                }
            }
        }
#endif
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
#if TR_LINE_MASKS
    fields_done:
#endif
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
            if (!score_fast(fs[4], fl[4], &v) &&
                (parse_score(fs[4], fl[4], &v, &whole, &plain) != NUM_OK ||
                 (strict && !(whole && plain)))) {
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
        pd->qsame = last_q && last_qn == fl[0] &&
                    (fl[0] <= 8 ? load_prefix(fs[0], fl[0], e) == last_qprefix
                                : memcmp(last_q, fs[0], fl[0]) == 0);
        if (!pd->qsame) {
            last_q = fs[0];
            last_qn = fl[0];
            last_qprefix = pd->qprefix = load_prefix(fs[0], fl[0], e);
            pd->qs = fs[0];
            pd->qn = fl[0];
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

void tr_scan_init(void) {
    static const char seps[] = " \t\v\f\r";
    for (const char *c = seps; *c; c++)
        cls[(unsigned char)*c] = 1;
    cls['\n'] = 2;
}
