/* Number parsing shared by the tokeniser and _trecread_num.c: the exact product m * 10^q of
 * the score fast paths and the SWAR digit helpers, inline. Included after _trecread.h. */
#ifndef QUERYEVAL_TRECREAD_NUM_H
#define QUERYEVAL_TRECREAD_NUM_H

#if defined(__SIZEOF_INT128__)
#define HAVE_U128 1
/* 5^q for -27 <= q <= 27 as hi:lo * 2^e with 2^127 <= hi:lo < 2^128, truncated (exact for
 * q >= 0). Generated with Python's Fraction (see tests/suite/test_trecread_score.py, which checks
 * the parser against float() on decimals of every exponent in this range). */
typedef struct {
    uint64_t hi, lo;
    int e;
} Pow5;
extern TR_HIDDEN const Pow5 pow5[55];

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

/* A score of the form [-]d.f (one integer digit, 1 to 18 fraction digits, nothing else in the
 * field: repr()'s form for scores in (-10, 10)), correctly rounded, into *out: 1; 0 for any
 * other form, or when the rounding cannot be decided (parse_score then reads the field,
 * giving the same value for this form). */
static inline int score_fast(const char *s, size_t n, double *out) {
#if defined(HAVE_U128) && PY_LITTLE_ENDIAN
    const unsigned char *u = (const unsigned char *)s;
    int neg = 0;
    if (n > 0 && u[0] == '-') {
        neg = 1;
        u++;
        n--;
    }
    if (n < 3 || n > 20 || !is_digit(u[0]) || u[1] != '.')
        return 0;
    uint64_t m = (uint64_t)(u[0] - '0');
    size_t j = 2;
    while (j + 8 <= n) {
        uint64_t w;
        memcpy(&w, u + j, 8);
        if (!eight_digits(w))
            return 0;
        m = m * 100000000ULL + parse_eight(w);
        j += 8;
    }
    for (; j < n; j++) {
        if (!is_digit(u[j]))
            return 0;
        m = m * 10 + (uint64_t)(u[j] - '0');
    }
    double v = 0.0;
    if (m != 0 && !mul_pow10(m, -(int)(n - 2), &v))
        return 0;
    *out = neg ? -v : v;
    return 1;
#else
    (void)s;
    (void)n;
    (void)out;
    return 0;
#endif
}

#endif
