/* The file read of the compiled TREC reader: each thread reads its region of the file with
 * pread, in pieces, and counts the piece's newlines while the bytes are in cache (the count
 * that sizes the outputs; a separate pass over the whole buffer before). POSIX only. */
#include "_trecread.h"

#ifndef _WIN32
#include <errno.h>
#include <unistd.h>

/* Bytes one pread asks for: a piece still in cache when its newlines are counted. */
#define PIECE ((size_t)1 << 18)

typedef struct {
    int fd;
    char *buf;
    size_t from, to; /* the region */
    size_t lines;
    int status; /* 0 ok, 1 a read failed or ended early */
} Region;

static void read_region(void *arg) {
    Region *r = (Region *)arg;
    size_t at = r->from;
    while (at < r->to) {
        size_t want = r->to - at < PIECE ? r->to - at : PIECE;
        ssize_t got = pread(r->fd, r->buf + at, want, (off_t)at);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            r->status = 1;
            return;
        }
        r->lines += count_lines(r->buf + at, (size_t)got);
        at += (size_t)got;
    }
}

int read_fd(int fd, size_t size, int nthreads, char **buf, size_t *region_lines) {
    Region regions[MAX_THREADS];
    *buf = PyMem_RawMalloc(size ? size : 1);
    if (*buf == NULL)
        return 2;
    huge_pages(*buf, size);
    for (int k = 0; k < nthreads; k++) {
        regions[k].fd = fd;
        regions[k].buf = *buf;
        regions[k].from = region_start(size, k, nthreads);
        regions[k].to = region_start(size, k + 1, nthreads);
        regions[k].lines = 0;
        regions[k].status = 0;
    }
    run_parallel(read_region, regions, sizeof(Region), nthreads);
    for (int k = 0; k < nthreads; k++) {
        if (regions[k].status)
            return 1;
        region_lines[k] = regions[k].lines;
    }
    return 0;
}
#endif
