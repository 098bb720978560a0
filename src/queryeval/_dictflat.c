/* Flattening of pytrec_eval-shaped dicts ({qid: {docid: value}}) into flat float64 columns.
 *
 * queryeval._dictflat.flatten(qrels, run, skip) selects the evaluated query ids (every query
 * of qrels with a non-empty dict; skip: only those also in run), sorts them, walks run[qid]
 * (absent: empty) and qrels[qid] of each once with the CPython C API and returns
 *
 *     (qids, n_missing, segs, judgements, seg_len, scores, j_len, rels, j_score)
 *
 * n_missing: judged queries absent from run; segs / judgements: lists of the per-query dicts
 * (run's, or one shared empty dict; qrels'); seg_len / j_len: int64 per query; scores: float64
 * run values in dict order; rels: float64 relevance levels (integers) in dict order; j_score:
 * float64, the run's score of each judged document (NaN when not retrieved). Every buffer is a
 * bytearray (numpy wraps it, no copy).
 *
 * It returns None, leaving every decision to the exact Python builder
 * (queryeval.metrics.ranking._arrays), whenever anything is not plain: a container that is not
 * exactly a dict (a run[qid] of None, which the Python builder reads as empty, included), a key
 * that is not exactly a str (whose __hash__/__eq__ could run Python code and mutate what we
 * walk), a value that is not exactly a float, an int or a bool (subclasses may override
 * __float__; numpy scalars), an int too large for a double, a NaN score, a relevance that is
 * not a finite integer within int64. The Python builder then accepts or refuses the input with
 * its own error messages, so both paths agree by construction. No Python code runs while we
 * hold borrowed references: exact str keys hash and compare in C, exact int/float conversions
 * call nothing, and the GIL is held throughout.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

/* 1 and *out set: a plain number; 0: not plain (caller returns None); -1: error raised. */
static int plain_double(PyObject *v, double *out) {
    if (PyFloat_CheckExact(v)) {
        *out = PyFloat_AS_DOUBLE(v);
        return 1;
    }
    if (PyLong_CheckExact(v) || PyBool_Check(v)) {
        double d = PyLong_AsDouble(v);
        if (d == -1.0 && PyErr_Occurred()) {
            if (!PyErr_ExceptionMatches(PyExc_OverflowError))
                return -1;
            PyErr_Clear();
            return 0;
        }
        *out = d;
        return 1;
    }
    return 0;
}

/* 1: every key of the exact dict d is an exact str; 0 otherwise. */
static int str_keys(PyObject *d) {
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(d, &pos, &k, &v))
        if (!PyUnicode_CheckExact(k))
            return 0;
    return 1;
}

static PyObject *new_buffer(Py_ssize_t n, void **data) {
    PyObject *b = PyByteArray_FromStringAndSize(NULL, n * 8);
    if (b != NULL)
        *data = PyByteArray_AS_STRING(b);
    return b;
}

/* The judged query ids, sorted: qrels' queries with a non-empty dict. A new list, None when
 * something is not plain (see above), NULL on error. */
static PyObject *judged_ids(PyObject *qrels) {
    PyObject *qids = PyList_New(0);
    if (qids == NULL)
        return NULL;
    Py_ssize_t pos = 0;
    PyObject *q, *j;
    while (PyDict_Next(qrels, &pos, &q, &j)) {
        if (!PyUnicode_CheckExact(q) || !PyDict_CheckExact(j)) {
            Py_DECREF(qids);
            Py_RETURN_NONE;
        }
        if (PyDict_GET_SIZE(j) > 0 && PyList_Append(qids, q) < 0) { /* empty: not judged */
            Py_DECREF(qids);
            return NULL;
        }
    }
    if (PyList_Sort(qids) < 0) { /* exact str: compared in C */
        Py_DECREF(qids);
        return NULL;
    }
    return qids;
}

static PyObject *flatten(PyObject *self, PyObject *args) {
    PyObject *qrels, *run;
    int skip;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOp", &qrels, &run, &skip))
        return NULL;
    if (!PyDict_CheckExact(qrels) || !PyDict_CheckExact(run))
        Py_RETURN_NONE;
    if (!str_keys(run))
        Py_RETURN_NONE;
    PyObject *judged = judged_ids(qrels);
    if (judged == NULL || judged == Py_None)
        return judged;
    Py_ssize_t n_judged = PyList_GET_SIZE(judged), nq = 0, n_missing = 0;
    PyObject *qids = NULL, *segs = NULL, *judgements = NULL, *empty = NULL, *out = NULL;
    PyObject *b_seg_len = NULL, *b_scores = NULL, *b_j_len = NULL, *b_rels = NULL,
             *b_j_score = NULL;
    int64_t *seg_len, *j_len;
    double *scores, *rels, *j_score;
    qids = PyList_New(n_judged);
    segs = PyList_New(n_judged);
    judgements = PyList_New(n_judged);
    empty = PyDict_New();
    if (qids == NULL || segs == NULL || judgements == NULL || empty == NULL)
        goto fail;
    b_seg_len = new_buffer(n_judged, (void **)&seg_len);
    b_j_len = new_buffer(n_judged, (void **)&j_len);
    if (b_seg_len == NULL || b_j_len == NULL)
        goto fail;
    /* Pass 1: the evaluated queries and their dicts, one look-up each into run and qrels
     * (judged is our own list; nothing below runs Python code). Under skip, the judged
     * queries absent from run are dropped: the first nq items are kept. */
    Py_ssize_t n = 0, r_all = 0;
    for (Py_ssize_t i = 0; i < n_judged; i++) {
        PyObject *q = PyList_GET_ITEM(judged, i);
        PyObject *seg = PyDict_GetItemWithError(run, q);
        if (seg == NULL) {
            if (PyErr_Occurred())
                goto fail;
            n_missing++;
            if (skip)
                continue;
            seg = empty;
        }
        PyObject *j = PyDict_GetItemWithError(qrels, q);
        if (j == NULL) {
            if (PyErr_Occurred())
                goto fail;
            goto plain_fail; /* cannot happen: q is a key of qrels */
        }
        if (!PyDict_CheckExact(seg) || !PyDict_CheckExact(j))
            goto plain_fail;
        Py_INCREF(q);
        PyList_SET_ITEM(qids, nq, q);
        Py_INCREF(seg);
        PyList_SET_ITEM(segs, nq, seg);
        Py_INCREF(j);
        PyList_SET_ITEM(judgements, nq, j);
        seg_len[nq] = (int64_t)PyDict_GET_SIZE(seg);
        j_len[nq] = (int64_t)PyDict_GET_SIZE(j);
        n += PyDict_GET_SIZE(seg);
        r_all += PyDict_GET_SIZE(j);
        nq++;
    }
    if (nq < n_judged && (PyList_SetSlice(qids, nq, n_judged, NULL) < 0 ||
                          PyList_SetSlice(segs, nq, n_judged, NULL) < 0 ||
                          PyList_SetSlice(judgements, nq, n_judged, NULL) < 0 ||
                          PyByteArray_Resize(b_seg_len, nq * 8) < 0 ||
                          PyByteArray_Resize(b_j_len, nq * 8) < 0))
        goto fail;
    seg_len = (int64_t *)PyByteArray_AS_STRING(b_seg_len);
    j_len = (int64_t *)PyByteArray_AS_STRING(b_j_len);
    b_scores = new_buffer(n, (void **)&scores);
    b_rels = new_buffer(r_all, (void **)&rels);
    b_j_score = new_buffer(r_all, (void **)&j_score);
    if (b_scores == NULL || b_rels == NULL || b_j_score == NULL)
        goto fail;
    /* Pass 2, query by query (its run dict still in cache for the look-ups): the run scores
     * in dict order, then each judgement's relevance and run score. A run dict's keys are all
     * checked (exact str) before it is searched, so look-ups compare str with str in C. */
    Py_ssize_t at = 0, jat = 0;
    for (Py_ssize_t i = 0; i < nq; i++) {
        PyObject *seg = PyList_GET_ITEM(segs, i), *j = PyList_GET_ITEM(judgements, i), *k, *v;
        Py_ssize_t pos = 0;
        while (PyDict_Next(seg, &pos, &k, &v)) {
            if (at >= n || !PyUnicode_CheckExact(k))
                goto plain_fail; /* (at >= n cannot happen: sizes were read in pass 1) */
            int ok = plain_double(v, &scores[at]);
            if (ok < 0)
                goto fail;
            if (ok == 0 || isnan(scores[at]))
                goto plain_fail;
            at++;
        }
        pos = 0;
        while (PyDict_Next(j, &pos, &k, &v)) {
            if (jat >= r_all || !PyUnicode_CheckExact(k))
                goto plain_fail;
            double rel;
            int ok = plain_double(v, &rel);
            if (ok < 0)
                goto fail;
            /* finite, integral, and inside int64 (what the Python builder's astype keeps) */
            if (ok == 0 || !(rel >= -9223372036854775808.0 && rel < 9223372036854775808.0) ||
                rel != floor(rel))
                goto plain_fail;
            rels[jat] = (double)(int64_t)rel;
            PyObject *s = PyDict_GetItemWithError(seg, k);
            if (s == NULL) {
                if (PyErr_Occurred())
                    goto fail;
                j_score[jat] = NAN;
            } else if (plain_double(s, &j_score[jat]) != 1) {
                goto plain_fail; /* cannot happen: converted above */
            }
            jat++;
        }
    }
    if (at != n || jat != r_all)
        goto plain_fail;
    out = Py_BuildValue("(OnOOOOOOO)", qids, n_missing, segs, judgements, b_seg_len, b_scores,
                        b_j_len, b_rels, b_j_score);
    goto done;
plain_fail:
    out = Py_None;
    Py_INCREF(out);
    goto done;
fail:
    out = NULL;
done:
    Py_DECREF(judged);
    Py_XDECREF(qids);
    Py_XDECREF(segs);
    Py_XDECREF(judgements);
    Py_XDECREF(empty);
    Py_XDECREF(b_seg_len);
    Py_XDECREF(b_scores);
    Py_XDECREF(b_j_len);
    Py_XDECREF(b_rels);
    Py_XDECREF(b_j_score);
    return out;
}

/* ------------------------------------------------------------------------------------------
 * judge(q, doc, value, qmap, docmap, seg_start, seg_len, run_doc, scores, n_run_docs): the
 * judgement side of
 * queryeval.metrics.ranking._columns.arrays_from_columns in one pass over the judgements.
 *
 * q, doc: int32 codes of each judgement's query and document (qrels dictionaries); value: its
 * int64 relevance; qmap: int64 per qrels query code, the evaluated query index or -1; docmap:
 * int64 per qrels document code, its code in the run's document dictionary (n_run_docs codes)
 * or -1; seg_start,
 * seg_len: int64 per evaluated query, its segment of run_doc (int32 run document codes) and
 * scores (float64). Judgements are visited query by query (grouped already, or by a counting
 * sort of row numbers); each query's run segment is stamped into a table indexed by run
 * document code, so a judgement's score is one look-up. Returns
 *
 *     (qrels_dup, run_dup, covered, n_sel, jq, jrun, jgain, jscore)
 *
 * qrels_dup / run_dup: a (query, document) pair occurs twice in the qrels / in a visited run
 * segment (the caller finds the exact pair with its own code); covered: run entries visited
 * (segments of evaluated queries that have judgements); n_sel: judgements of evaluated queries;
 * jq, jrun, jgain, jscore: per judgement (input order), qmap[q], docmap[doc], the relevance as
 * float64 and the run's score (NaN: not retrieved or query not evaluated), bytearrays. Codes
 * out of range raise ValueError (never read out of bounds). The GIL is held throughout (the
 * codes are checked once and then trusted: no other thread may change them in between).
 */

static int check_buffer(Py_buffer *b, Py_ssize_t itemsize, const char *name, Py_ssize_t *n) {
    if (b->len % itemsize != 0) {
        PyErr_Format(PyExc_ValueError, "judge: %s is not a buffer of %zd-byte items", name,
                     itemsize);
        return -1;
    }
    *n = b->len / itemsize;
    return 0;
}

static PyObject *judge(PyObject *self, PyObject *args) {
    Py_buffer bq, bdoc, bval, bqmap, bdocmap, bstart, blen, brdoc, bscores;
    Py_ssize_t n_rdocs;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*y*y*n", &bq, &bdoc, &bval, &bqmap, &bdocmap,
                          &bstart, &blen, &brdoc, &bscores, &n_rdocs))
        return NULL;
    PyObject *out = NULL, *b_jq = NULL, *b_jrun = NULL, *b_jgain = NULL, *b_jscore = NULL;
    int32_t *rstamp = NULL, *jstamp = NULL;
    int64_t *rslot = NULL, *order = NULL, *first = NULL, *count = NULL, *last = NULL;
    Py_ssize_t r, r2, r3, nqc, njd, nq, nq2, n, n2;
    if (check_buffer(&bq, 4, "q", &r) < 0 || check_buffer(&bdoc, 4, "doc", &r2) < 0 ||
        check_buffer(&bval, 8, "value", &r3) < 0 || check_buffer(&bqmap, 8, "qmap", &nqc) < 0 ||
        check_buffer(&bdocmap, 8, "docmap", &njd) < 0 ||
        check_buffer(&bstart, 8, "seg_start", &nq) < 0 ||
        check_buffer(&blen, 8, "seg_len", &nq2) < 0 ||
        check_buffer(&brdoc, 4, "run_doc", &n) < 0 || check_buffer(&bscores, 8, "scores", &n2) < 0)
        goto done;
    if (r2 != r || r3 != r || nq2 != nq || n2 != n || r >= INT32_MAX || nqc >= INT32_MAX ||
        njd >= INT32_MAX || nq >= INT32_MAX || n_rdocs < 0 || n_rdocs >= INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "judge: column lengths differ");
        goto done;
    }
    const int32_t *q = bq.buf, *doc = bdoc.buf, *rdoc = brdoc.buf;
    const int64_t *value = bval.buf, *qmap = bqmap.buf, *docmap = bdocmap.buf,
                  *seg_start = bstart.buf, *seg_len = blen.buf;
    const double *scores = bscores.buf;
    int64_t *jq, *jrun;
    double *jgain, *jscore;
    b_jq = new_buffer(r, (void **)&jq);
    b_jrun = new_buffer(r, (void **)&jrun);
    b_jgain = new_buffer(r, (void **)&jgain);
    b_jscore = new_buffer(r, (void **)&jscore);
    if (b_jq == NULL || b_jrun == NULL || b_jgain == NULL || b_jscore == NULL)
        goto done;
    /* Every code and segment in range: the run document codes the tables are indexed by. */
    for (Py_ssize_t k = 0; k < n; k++)
        if (rdoc[k] < 0 || rdoc[k] >= n_rdocs)
            goto bad_code;
    for (Py_ssize_t i = 0; i < njd; i++)
        if (docmap[i] < -1 || docmap[i] >= n_rdocs)
            goto bad_code;
    for (Py_ssize_t i = 0; i < nqc; i++)
        if (qmap[i] < -1 || qmap[i] >= nq)
            goto bad_code;
    for (Py_ssize_t e = 0; e < nq; e++)
        if (seg_start[e] < 0 || seg_len[e] < 0 || seg_start[e] > n - seg_len[e])
            goto bad_code;
    for (Py_ssize_t i = 0; i < r; i++)
        if (q[i] < 0 || q[i] >= nqc || doc[i] < 0 || doc[i] >= njd)
            goto bad_code;
    rstamp = PyMem_Calloc((size_t)n_rdocs + 1, sizeof(int32_t));
    rslot = PyMem_Malloc(((size_t)n_rdocs + 1) * sizeof(int64_t));
    jstamp = PyMem_Calloc((size_t)njd + 1, sizeof(int32_t));
    first = PyMem_Malloc(((size_t)nqc + 1) * sizeof(int64_t));
    count = PyMem_Calloc((size_t)nqc + 1, sizeof(int64_t));
    last = PyMem_Malloc(((size_t)nqc + 1) * sizeof(int64_t));
    if (rstamp == NULL || rslot == NULL || jstamp == NULL || first == NULL || count == NULL ||
        last == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    int qrels_dup = 0, run_dup = 0, grouped = 1;
    Py_ssize_t covered = 0, n_sel = 0;
    /* Rows of each query code: contiguous (a grouped file) or not. */
    for (Py_ssize_t i = 0; i < r; i++) {
        int32_t c = q[i];
        if (count[c] == 0)
            first[c] = i;
        else if (last[c] != i - 1)
            grouped = 0;
        last[c] = i;
        count[c]++;
    }
    if (!grouped) { /* counting sort of the row numbers by query code */
        order = PyMem_Malloc(((size_t)r + 1) * sizeof(int64_t));
        if (order != NULL) {
            int64_t at = 0;
            for (Py_ssize_t c = 0; c < nqc; c++) {
                first[c] = at;
                last[c] = at; /* next free slot */
                at += count[c];
            }
            for (Py_ssize_t i = 0; i < r; i++)
                order[last[q[i]]++] = i;
        }
    }
    if (grouped || order != NULL) {
        for (Py_ssize_t c = 0; c < nqc; c++) {
            if (count[c] == 0)
                continue;
            int64_t e = qmap[c];
            int32_t tag = (int32_t)(c + 1);
            if (e >= 0) { /* stamp the query's run segment: document code -> entry */
                const int32_t etag = (int32_t)(e + 1);
                for (int64_t k = seg_start[e], end = seg_start[e] + seg_len[e]; k < end; k++) {
                    int32_t d = rdoc[k];
                    if (rstamp[d] == etag)
                        run_dup = 1;
                    rstamp[d] = etag;
                    rslot[d] = k;
                }
                covered += seg_len[e];
                n_sel += count[c];
            }
            for (int64_t t = first[c], end = first[c] + count[c]; t < end; t++) {
                int64_t i = grouped ? t : order[t];
                int32_t dd = doc[i];
                if (jstamp[dd] == tag)
                    qrels_dup = 1;
                jstamp[dd] = tag;
                int64_t rd = docmap[dd];
                jq[i] = e;
                jrun[i] = rd;
                jgain[i] = (double)value[i];
                jscore[i] = (e >= 0 && rd >= 0 && rstamp[rd] == (int32_t)(e + 1)) ? scores[rslot[rd]]
                                                                                : NAN;
            }
        }
    }
    if (!grouped && order == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    out = Py_BuildValue("(iinnOOOO)", qrels_dup, run_dup, covered, n_sel, b_jq, b_jrun,
                        b_jgain, b_jscore);
    goto done;
bad_code:
    PyErr_SetString(PyExc_ValueError, "judge: a code or segment is out of range");
done:
    PyMem_Free(rstamp);
    PyMem_Free(rslot);
    PyMem_Free(jstamp);
    PyMem_Free(first);
    PyMem_Free(count);
    PyMem_Free(last);
    PyMem_Free(order);
    Py_XDECREF(b_jq);
    Py_XDECREF(b_jrun);
    Py_XDECREF(b_jgain);
    Py_XDECREF(b_jscore);
    PyBuffer_Release(&bq);
    PyBuffer_Release(&bdoc);
    PyBuffer_Release(&bval);
    PyBuffer_Release(&bqmap);
    PyBuffer_Release(&bdocmap);
    PyBuffer_Release(&bstart);
    PyBuffer_Release(&blen);
    PyBuffer_Release(&brdoc);
    PyBuffer_Release(&bscores);
    return out;
}

/* count_levels(q, rel, nq, top): judgements per (query, relevance level), the table of
 * queryeval.metrics.ranking._hits.level_counts in one pass and no temporary arrays. q: int64
 * query index per judgement (0 <= q < nq); rel: float64 relevance (<= top, not NaN). Returns a
 * bytearray of int64 [nq * (top + 2)]: column top - max(rel, -1) (truncated toward zero, as
 * numpy's cast) of row q counts each judgement. Anything out of range raises ValueError. */
static PyObject *count_levels(PyObject *self, PyObject *args) {
    Py_buffer bq, brel;
    Py_ssize_t nq, top, r, r2;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*nn", &bq, &brel, &nq, &top))
        return NULL;
    PyObject *out = NULL;
    int64_t *counts;
    if (check_buffer(&bq, 8, "q", &r) < 0 || check_buffer(&brel, 8, "rel", &r2) < 0)
        goto done;
    if (r2 != r || nq < 0 || top < 0 || top > 1 << 20 || (nq > 0 && top + 2 > PY_SSIZE_T_MAX / 8 / nq)) {
        PyErr_SetString(PyExc_ValueError, "count_levels: bad sizes");
        goto done;
    }
    const Py_ssize_t width = top + 2;
    const int64_t *q = bq.buf;
    const double *rel = brel.buf;
    const double dtop = (double)top;
    out = new_buffer(nq * width, (void **)&counts);
    if (out == NULL)
        goto done;
    memset(counts, 0, (size_t)(nq * width) * 8);
    for (Py_ssize_t i = 0; i < r; i++) {
        double v = rel[i] < -1.0 ? -1.0 : rel[i];
        if (!(v <= dtop) || q[i] < 0 || q[i] >= nq) { /* NaN fails v <= dtop */
            Py_CLEAR(out);
            PyErr_SetString(PyExc_ValueError, "count_levels: a query or level is out of range");
            goto done;
        }
        counts[q[i] * width + (int64_t)(dtop - v)]++;
    }
done:
    PyBuffer_Release(&bq);
    PyBuffer_Release(&brel);
    return out;
}

static PyMethodDef methods[] = {
    {"count_levels", count_levels, METH_VARARGS,
     "count_levels(q, rel, nq, top) -> int64 bytearray [nq * (top + 2)]: judgements per "
     "(query, level); see queryeval/_dictflat.c"},
    {"judge", judge, METH_VARARGS,
     "judge(q, doc, value, qmap, docmap, seg_start, seg_len, run_doc, scores, n_run_docs) -> "
     "(qrels_dup, run_dup, covered, n_sel, jq, jrun, jgain, jscore): see queryeval/_dictflat.c"},
    {"flatten", flatten, METH_VARARGS,
     "flatten(qrels: dict, run: dict, skip: bool) -> (qids, n_missing, segs, judgements, "
     "seg_len, scores, j_len, rels, j_score), or None (not plain: use the Python builder)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_dictflat",
    "Flattening of {qid: {docid: value}} dicts (see queryeval.metrics.ranking._arrays) and the "
    "judgement side of the columns builder (queryeval.metrics.ranking._columns).",
    -1, methods,
};

PyMODINIT_FUNC PyInit__dictflat(void) { return PyModule_Create(&module); }
