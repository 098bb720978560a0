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

static PyMethodDef methods[] = {
    {"flatten", flatten, METH_VARARGS,
     "flatten(qrels: dict, run: dict, skip: bool) -> (qids, n_missing, segs, judgements, "
     "seg_len, scores, j_len, rels, j_score), or None (not plain: use the Python builder)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_dictflat",
    "Flattening of {qid: {docid: value}} dicts; see queryeval.metrics.ranking._arrays.",
    -1, methods,
};

PyMODINIT_FUNC PyInit__dictflat(void) { return PyModule_Create(&module); }
