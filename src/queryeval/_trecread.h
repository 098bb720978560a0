/* Shared declarations of the compiled TREC reader (queryeval._trecread), built from
 * _trecread.c (Python glue), _trecread_read.c (threads), _trecread_scan.c (tokeniser and
 * UTF-8), _trecread_num.c (scores and relevance levels) and _trecread_dict.c (id tables).
 * What the module does and the reading rules: the comment at the top of _trecread.c.
 */
#ifndef QUERYEVAL_TRECREAD_H
#define QUERYEVAL_TRECREAD_H

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

/* Symbols shared between the extension's files only (not exported from the module). */
#if defined(__GNUC__) && !defined(_WIN32)
#define TR_HIDDEN __attribute__((visibility("hidden")))
#else
#define TR_HIDDEN
#endif

#if defined(__GNUC__)
#define PREFETCH(a) __builtin_prefetch((a), 0, 3)
#define PREFETCH_W(a) __builtin_prefetch((a), 1, 3)
#else
#define PREFETCH(a) ((void)0)
#define PREFETCH_W(a) ((void)0)
#endif

/* Rows (and merged names) between a look-up's prefetch and the look-up itself. */
#define PIPE 16

#define MAX_THREADS 64

#include "_trecread_dict.h"

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

/* _trecread_num.c */
enum { NUM_OK = 0, NUM_NAN = 1 };
TR_HIDDEN int tr_num_init(void); /* 0, or -1 with an ImportError set */
TR_HIDDEN int parse_score(const char *s, size_t n, double *out, int *whole, int *plain);
TR_HIDDEN int parse_level(const char *s, size_t n, int64_t *out, int *whole);

/* _trecread_scan.c */
TR_HIDDEN void tr_scan_init(void);
TR_HIDDEN void scan_chunk(Scan *st);
TR_HIDDEN size_t count_lines(const char *p, size_t n);

/* _trecread_read.c */
/* Calls fn on n arguments stride bytes apart: args 1.. in threads (POSIX), arg 0 here. */
TR_HIDDEN void run_parallel(void (*fn)(void *), void *args, size_t stride, int n);
TR_HIDDEN size_t region_start(size_t n, int k, int nthreads);
/* The whole read, without the GIL: 0, 1 (refused) or 2 (out of memory). region_lines: the \n
 * bytes in each of the nthreads regions (see region_start), or NULL (counted here). */
TR_HIDDEN int read_all(const char *buf, size_t n, int nthreads, int run, int strict,
                       const size_t *region_lines, Scan *parts, int *nparts, int32_t **qc,
                       int32_t **dc, char **val, size_t *rows, Dict *gq, Dict *gd);

/* _trecread_file.c */
/* Reads size bytes of fd from offset 0 into a new buffer (*buf, PyMem_RawMalloc'ed), the
 * nthreads regions in parallel, counting each region's \n bytes into region_lines as it
 * goes: 0, 1 (a read failed or ended early: the caller reads the file its own way) or 2 (out
 * of memory). */
TR_HIDDEN int read_fd(int fd, size_t size, int nthreads, char **buf, size_t *region_lines);

#endif
