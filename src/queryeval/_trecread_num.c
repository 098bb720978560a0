/* Numbers of the compiled TREC reader: a run's scores by C strtod's prefix rule, correctly
 * rounded (exact fast paths for short decimals, strtod in the "C" locale for the rest), and
 * a qrels file's relevance levels by C atol's. */
#include "_trecread.h"

#if defined(__GLIBC__) || defined(__APPLE__)
#include <locale.h>
#if defined(__APPLE__)
#include <xlocale.h>
#endif
#define HAVE_STRTOD_L 1
static locale_t c_locale;
#endif

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

#include "_trecread_num.h"

#ifdef HAVE_U128
const Pow5 pow5[55] = {
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


/* C strtod's prefix rule on a field. *whole: the field is that number; *plain: a decimal or
 * inf/infinity (what --strict accepts when whole). Returns NUM_NAN for a nan prefix. */
int parse_score(const char *s, size_t n, double *out, int *whole, int *plain) {
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
int parse_level(const char *s, size_t n, int64_t *out, int *whole) {
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

int tr_num_init(void) {
#ifdef HAVE_STRTOD_L
    if (c_locale == (locale_t)0) {
        c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
        if (c_locale == (locale_t)0) {
            PyErr_SetString(PyExc_ImportError, "cannot create the C locale");
            return -1;
        }
    }
#endif
    return 0;
}
