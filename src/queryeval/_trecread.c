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
#include "_trecread.h"
#include "_trecread_num.h"

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

/* What a read leaves for its Python result. */
typedef struct {
    Scan parts[MAX_THREADS];
    int nparts;
    int32_t *qc, *dc, *qo, *dof;
    char *val, *qdata, *ddata;
    size_t rows;
    Dict gq, gd;
} Result;

/* The read of buf[0:n] (see read_all), without the GIL: 0, 1 (refused) or 2 (no memory). */
static int read_buffer(const char *buf, size_t n, int nthreads, int run, int strict,
                       const size_t *region_lines, Result *r) {
    int status = read_all(buf, n, nthreads, run, strict, region_lines, r->parts, &r->nparts,
                          &r->qc, &r->dc, &r->val, &r->rows, &r->gq, &r->gd);
    if (status == 0 &&
        (dict_export(&r->gq, &r->qo, &r->qdata) < 0 || dict_export(&r->gd, &r->dof, &r->ddata) < 0))
        status = 1; /* over 2 GiB of names: leave the file to the other readers */
    return status;
}

/* The scan's Python result: the tuple of buffers (status 0), None (1) or MemoryError (2);
 * frees what the read left. */
static PyObject *result_object(int status, Result *r) {
    for (int k = 0; k < r->nparts; k++) {
        dict_free(&r->parts[k].qd);
        dict_free(&r->parts[k].dd);
    }
    size_t nq = r->gq.n, nd = r->gd.n, qbytes = r->gq.bytes, dbytes = r->gd.bytes;
    size_t rows = r->rows;
    dict_free(&r->gq);
    dict_free(&r->gd);
    if (status != 0) {
        PyMem_RawFree(r->qc);
        PyMem_RawFree(r->dc);
        PyMem_RawFree(r->val);
        PyMem_RawFree(r->qo);
        PyMem_RawFree(r->qdata);
        PyMem_RawFree(r->dof);
        PyMem_RawFree(r->ddata);
        if (status == 2)
            return PyErr_NoMemory();
        Py_RETURN_NONE;
    }
    PyObject *o_qc = owned_new(r->qc, (Py_ssize_t)(rows * 4));
    PyObject *o_qo = owned_new(r->qo, (Py_ssize_t)((nq + 1) * 4));
    PyObject *o_qd = owned_new(r->qdata, (Py_ssize_t)qbytes);
    PyObject *o_dc = owned_new(r->dc, (Py_ssize_t)(rows * 4));
    PyObject *o_do = owned_new(r->dof, (Py_ssize_t)((nd + 1) * 4));
    PyObject *o_dd = owned_new(r->ddata, (Py_ssize_t)dbytes);
    PyObject *o_v = owned_new(r->val, (Py_ssize_t)(rows * 8));
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

static int clamp_threads(int nthreads) {
    return nthreads < 1 ? 1 : nthreads > MAX_THREADS ? MAX_THREADS : nthreads;
}

static PyObject *scan(PyObject *self, PyObject *args) {
    Py_buffer view;
    int nthreads, run, strict;
    if (!PyArg_ParseTuple(args, "y*ipp", &view, &nthreads, &run, &strict))
        return NULL;
    nthreads = clamp_threads(nthreads);
    Result *r = PyMem_RawCalloc(1, sizeof(Result));
    if (r == NULL) {
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = read_buffer((const char *)view.buf, (size_t)view.len, nthreads, run, strict, NULL, r);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    PyObject *out = result_object(status, r);
    PyMem_RawFree(r);
    return out;
}

#ifndef _WIN32
/* scan_fd(fd, size, threads, run, strict): scan's result for the first size bytes of the open
 * file fd, read here, each thread its own region; False when a read fails or the file ends
 * before size (the caller then reads it its own way). */
static PyObject *scan_fd(PyObject *self, PyObject *args) {
    int fd, nthreads, run, strict;
    Py_ssize_t size;
    if (!PyArg_ParseTuple(args, "inipp", &fd, &size, &nthreads, &run, &strict))
        return NULL;
    if (size < 0) {
        PyErr_SetString(PyExc_ValueError, "negative size");
        return NULL;
    }
    nthreads = clamp_threads(nthreads);
    Result *r = PyMem_RawCalloc(1, sizeof(Result));
    if (r == NULL)
        return PyErr_NoMemory();
    size_t region_lines[MAX_THREADS];
    char *buf = NULL;
    int got, status = 0;
    Py_BEGIN_ALLOW_THREADS
    got = read_fd(fd, (size_t)size, nthreads, &buf, region_lines);
    if (got == 0)
        status = read_buffer(buf, (size_t)size, nthreads, run, strict, region_lines, r);
    PyMem_RawFree(buf); /* the names were copied out */
    Py_END_ALLOW_THREADS
    if (got != 0) {
        PyMem_RawFree(r);
        if (got == 2)
            return PyErr_NoMemory();
        Py_RETURN_FALSE;
    }
    PyObject *out = result_object(status, r);
    PyMem_RawFree(r);
    return out;
}
#endif

/* A score field read as the scan reads it (score_fast, else parse_score), for tests: (value,
 * whole, plain) or None for a nan prefix. */
static PyObject *score(PyObject *self, PyObject *args) {
    const char *s;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "y#", &s, &n))
        return NULL;
    double v;
    int whole = 1, plain = 1;
    if (!score_fast(s, (size_t)n, &v) && parse_score(s, (size_t)n, &v, &whole, &plain) != NUM_OK)
        Py_RETURN_NONE;
    return Py_BuildValue("(dOO)", v, whole ? Py_True : Py_False, plain ? Py_True : Py_False);
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(buffer, threads, run, strict) -> tuple of buffers, or None (use the exact reader)"},
#ifndef _WIN32
    {"scan_fd", scan_fd, METH_VARARGS,
     "scan_fd(fd, size, threads, run, strict) -> as scan, or False (read it another way)"},
#endif
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
    tr_scan_init();
    if (tr_num_init() < 0)
        return NULL;
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
