/* The whole read of the compiled TREC reader: the file split at line boundaries over POSIX
 * threads, each part scanned, the parts' id tables merged and their rows packed. */
#include "_trecread.h"

/* ------------------------------------------------------------------ threads */

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

static void job_void(void *arg) { run_job((Job *)arg); }

#ifndef _WIN32
#include <pthread.h>
typedef struct {
    void (*fn)(void *);
    void *arg;
} Task;
static void *task_main(void *arg) {
    Task *t = (Task *)arg;
    t->fn(t->arg);
    return NULL;
}
#endif

void run_parallel(void (*fn)(void *), void *args, size_t stride, int n) {
#ifndef _WIN32
    pthread_t tids[MAX_THREADS];
    Task tasks[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    for (int k = 1; k < n; k++) {
        tasks[k].fn = fn;
        tasks[k].arg = (char *)args + k * stride;
        started[k] = pthread_create(&tids[k], NULL, task_main, &tasks[k]) == 0;
    }
    fn(args);
    for (int k = 1; k < n; k++) {
        if (started[k])
            pthread_join(tids[k], NULL);
        else
            fn((char *)args + k * stride); /* no thread to be had: run it here */
    }
#else
    for (int k = 0; k < n; k++)
        fn((char *)args + k * stride);
#endif
}

/* Runs the phase over all parts: parts 1.. in threads (POSIX), part 0 here. */
static void run_phase(Scan *parts, int n, int phase) {
    Job jobs[MAX_THREADS];
    for (int k = 0; k < n; k++) {
        jobs[k].st = &parts[k];
        jobs[k].phase = phase;
    }
    run_parallel(job_void, jobs, sizeof(Job), n);
}

/* Start of region k of k = 0..nthreads: the file's bytes split evenly (each thread reads
 * its region; a part, scanned by one thread, runs from after the first \n at or after its
 * region's start to after the first \n at or after the next region's). */
size_t region_start(size_t n, int k, int nthreads) {
    return k >= nthreads ? n : (size_t)((double)n * k / nthreads);
}

/* The \n bytes in buf[0:x], from the regions' counts and a count of the rest of x's region
 * (short: x is a part boundary, a line past a region's start). */
static size_t lines_before(const char *buf, size_t n, int nthreads, const size_t *region_lines,
                           size_t x) {
    size_t lines = 0;
    int k = 0;
    while (k < nthreads && region_start(n, k + 1, nthreads) <= x)
        lines += region_lines[k++];
    if (k < nthreads) {
        const size_t s = region_start(n, k, nthreads);
        lines += count_lines(buf + s, x - s);
    }
    return lines;
}

/* The whole read, without the GIL. Returns 0, 1 (refused) or 2 (out of memory). */
int read_all(const char *buf, size_t n, int nthreads, int run, int strict,
             const size_t *region_lines, Scan *parts, int *nparts, int32_t **qc, int32_t **dc,
             char **val, size_t *rows, Dict *gq, Dict *gd) {
    /* chunks end after a \n */
    int np = 0;
    size_t from = 0;
    for (int k = 1; k <= nthreads && (from < n || np == 0); k++) {
        size_t to = n;
        if (k < nthreads) {
            size_t at = region_start(n, k, nthreads);
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
    else if (region_lines != NULL) /* counted as the file was read */
        for (int k = 0; k < np; k++) {
            const Scan *st = &parts[k];
            const size_t from = (size_t)(st->buf - buf), to = from + st->n;
            parts[k].cap = lines_before(buf, n, nthreads, region_lines, to) -
                           lines_before(buf, n, nthreads, region_lines, from) +
                           (st->n && st->buf[st->n - 1] != '\n');
        }
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
