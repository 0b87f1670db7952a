/* Data records of the JSON changes topic, spliced and produced in one C loop (cdc/publish/publisher.py).

   configure(fragments) once at import: the literal parts of a record value between its holes,
   cdc.stream.wire.VALUE_FRAGMENTS (this file holds none of the record's bytes itself).

   splice(tables, rows, i, known, parts, seq, total, n, now, limit, produce, topic, partition, headers)

   formats the records of rows[i:] while tables[j] is ``known`` (a ChangeBatch's rows of one table, the
   tuples (op, key JSON, before JSON, after JSON, source fields) of cdc.stream.events.ChangeBatch) exactly as
   Publisher._splice_py does with bytes formatting:

     key   = head + kv + close
     value = F0 SEQ F1 B F2 A F3 "O" F4 NOW F5 SHEAD TS STAIL SRC F6 IDJ F7 TOTAL F8 N F9
             (Fk: the configured fragments; with cdc.stream.wire's, {"sequence":SEQ,"before":B,...}})

   with ``parts`` = (head, close, shead, stail, stail_r, ts, idj) (stail_r for op 'r'), and hands each
   record to ``produce(topic, value, key, partition, None, None, 0, headers)`` (confluent-kafka's bound
   Producer.produce: callback, on_delivery and timestamp at their defaults, all positional -- keyword
   arguments cost it a dictionary and a search per keyword; without headers, the first four alone) right
   away, in order. It stops at the first row it does not vouch for: a row not a
   5-tuple of (str op of c/u/d/r/t, bytes, bytes, bytes, bytes), or whose record is above ``limit``
   bytes (key + value): that row is left for the Python path (status 1). It never skips a row.

   Returns (j, seq, total, n, nbytes, (c, u, d, r, t), status, error): rows[i:j] were produced with
   sequences and orders up to the returned seq - 1, total and n; nbytes is the sum of their value sizes,
   the tuple counts them per op. status 0: stopped at a row of another table or the end; 1: row j needs
   the Python path; 2: produce raised BufferError for row j (local queue full: nothing of row j was
   queued; poll and call again from j); 3: produce raised something else for row j, ``error`` is
   (exception, value, key).

   splice_tx(tables, rows, i, known, parts, seq, total, n, now, limit, produce, topic, partition, headers,
             head, tail)

   a small transaction in one call (Publisher._commit_held): ``head`` (its BEGIN value, or None) is produced
   first, then rows[i:] exactly as splice() does, then ``tail`` (its END value, or None) -- only when every row
   of rows[i:] was produced here (status 0, j == len(rows)): a row of another table, a row left to the Python
   path or a produce error leaves the END to the caller. Markers have a null key and are not size-checked (as
   Publisher._produce_bytes). Returns splice()'s tuple and ``marks``: bit 0 the head was produced, bit 1 the
   tail. A BufferError on a marker is status 2 with that marker's bit clear (call again with what is left). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

static const char OPS[] = "cudrt";

static char *put(char *o, const char *s, Py_ssize_t n) {
    memcpy(o, s, (size_t)n);
    return o + n;
}

/* %d of a signed 64-bit integer; returns the end. */
static char *put_int(char *o, long long v) {
    char tmp[24];
    int k = 0;
    unsigned long long a = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do { tmp[k++] = (char)('0' + a % 10); a /= 10; } while (a);
    if (v < 0) *o++ = '-';
    while (k) *o++ = tmp[--k];
    return o;
}

static Py_ssize_t int_len(long long v) {
    Py_ssize_t n = v < 0 ? 2 : 1;
    unsigned long long a = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    while (a >= 10) { a /= 10; n++; }
    return n;
}

#define NFRAG 10
static PyObject *fragments; /* tuple of NFRAG bytes, set by configure() */

static PyObject *configure(PyObject *self, PyObject *arg) {
    if (!PyTuple_CheckExact(arg) || PyTuple_GET_SIZE(arg) != NFRAG) {
        PyErr_SetString(PyExc_ValueError, "configure: a tuple of the 10 value fragments (cdc.stream.wire)");
        return NULL;
    }
    for (int k = 0; k < NFRAG; k++) {
        if (!PyBytes_CheckExact(PyTuple_GET_ITEM(arg, k))) {
            PyErr_SetString(PyExc_TypeError, "configure: the value fragments are bytes");
            return NULL;
        }
    }
    Py_INCREF(arg);
    Py_XSETREF(fragments, arg);
    Py_RETURN_NONE;
}

static PyObject *zero; /* the timestamp argument of produce: 0, the client's default (now) */

/* produce(topic, value, None, partition, None, None, 0, headers); 0: queued, 2: BufferError (nothing queued), 3:
   another exception, kept in *error as (exception, value, None); -1: a Python error to raise. */
static int produce_marker(PyObject *produce, PyObject *topic, PyObject *value, PyObject *partition,
                          PyObject *headers, PyObject **error) {
    PyObject *call[8] = {topic, value, Py_None, partition, Py_None, Py_None, zero, headers};
    PyObject *res = PyObject_Vectorcall(produce, call, headers != Py_None ? 8 : 4, NULL);
    if (res != NULL) {
        Py_DECREF(res);
        return 0;
    }
    if (PyErr_ExceptionMatches(PyExc_BufferError)) {
        PyErr_Clear();
        return 2;
    }
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    Py_XDECREF(t);
    Py_XDECREF(tb);
    Py_XSETREF(*error, Py_BuildValue("(NOO)", v ? v : (Py_INCREF(Py_None), Py_None), value, Py_None));
    return *error == NULL ? -1 : 3;
}

/* The arguments as PyArg_ParseTuple's "O!O!nOO!LLLLLOOOO" (+ "OO" for splice_tx) reads them, from a vector
   (METH_FASTCALL: no argument tuple to build and no format to parse per call, once per small transaction). */
static int parse_args(const char *fn, PyObject *const *args, Py_ssize_t nargs, int tx, PyObject **tables,
                      PyObject **rows, Py_ssize_t *i, PyObject **known, PyObject **parts, long long ints[5],
                      PyObject **call) {
    Py_ssize_t want = tx ? 16 : 14;
    if (nargs != want) {
        PyErr_Format(PyExc_TypeError, "%s takes %zd arguments (%zd given)", fn, want, nargs);
        return -1;
    }
    if (!PyList_Check(args[0]) || !PyList_Check(args[1]) || !PyTuple_Check(args[4])) {
        PyErr_Format(PyExc_TypeError, "%s: tables and rows are lists, parts a tuple", fn);
        return -1;
    }
    *tables = args[0];
    *rows = args[1];
    *known = args[3];
    *parts = args[4];
    *i = PyNumber_AsSsize_t(args[2], PyExc_OverflowError);
    if (*i == -1 && PyErr_Occurred()) return -1;
    for (int k = 0; k < 5; k++) {
        ints[k] = PyLong_AsLongLong(args[5 + k]);
        if (ints[k] == -1 && PyErr_Occurred()) return -1;
    }
    for (int k = 0; k < (tx ? 6 : 4); k++) call[k] = args[10 + k]; /* produce, topic, partition, headers[, head, tail] */
    return 0;
}

/* a new int of v, or NULL */
static PyObject *new_int(long long v) { return PyLong_FromLongLong(v); }

static PyObject *splice_impl(PyObject *const *args, Py_ssize_t nargs, int tx) {
    PyObject *tables, *rows, *known, *parts, *produce, *topic, *partition, *headers, *head = Py_None,
             *tail = Py_None;
    Py_ssize_t i;
    long long seq, total, n, now, limit;
    {
        long long ints[5];
        PyObject *call[6];
        if (parse_args(tx ? "splice_tx" : "splice", args, nargs, tx, &tables, &rows, &i, &known, &parts, ints,
                       call) < 0)
            return NULL;
        seq = ints[0], total = ints[1], n = ints[2], now = ints[3], limit = ints[4];
        produce = call[0], topic = call[1], partition = call[2], headers = call[3];
        if (tx) {
            head = call[4], tail = call[5];
            if ((head != Py_None && !PyBytes_CheckExact(head)) || (tail != Py_None && !PyBytes_CheckExact(tail))) {
                PyErr_SetString(PyExc_TypeError, "splice_tx: head and tail are bytes or None");
                return NULL;
            }
        }
    }
    int marks = 0;
    if (fragments == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "splice before configure()");
        return NULL;
    }
    const char *fv[NFRAG];
    Py_ssize_t fl[NFRAG], fsum = 0;
    for (int k = 0; k < NFRAG; k++) {
        fv[k] = PyBytes_AS_STRING(PyTuple_GET_ITEM(fragments, k));
        fsum += fl[k] = PyBytes_GET_SIZE(PyTuple_GET_ITEM(fragments, k));
    }
    if (PyTuple_GET_SIZE(parts) != 7) {
        PyErr_SetString(PyExc_ValueError, "parts: (head, close, shead, stail, stail_r, ts, idj)");
        return NULL;
    }
    const char *pv[7];
    Py_ssize_t pl[7];
    for (int k = 0; k < 7; k++) {
        PyObject *b = PyTuple_GET_ITEM(parts, k);
        if (!PyBytes_Check(b)) {
            PyErr_SetString(PyExc_TypeError, "parts are bytes");
            return NULL;
        }
        pv[k] = PyBytes_AS_STRING(b);
        pl[k] = PyBytes_GET_SIZE(b);
    }
    enum { HEAD, CLOSE, SHEAD, STAIL, STAIL_R, TS, IDJ };
    PyObject *frag = fragments; /* held: produce() runs Python code, which could configure() again */
    Py_INCREF(frag);
    long long counts[5] = {0, 0, 0, 0, 0};
    long long nbytes = 0;
    int status = 0;
    PyObject *error = Py_None;
    Py_INCREF(error);
    size_t pargs = headers != Py_None ? 8 : 4; /* produce's positional arguments (see the top of the file) */
    Py_ssize_t nrows = PyList_GET_SIZE(rows);
    if (PyList_GET_SIZE(tables) != nrows) {
        PyErr_SetString(PyExc_ValueError, "tables and rows differ in length");
        goto fail;
    }
    if (i < 0) i = nrows;
    if (head != Py_None) {
        int r = produce_marker(produce, topic, head, partition, headers, &error);
        if (r < 0) goto fail;
        if (r) {
            status = r;
            goto done;
        }
        marks |= 1;
    }
    for (; i < nrows; i++) {
        if (PyList_GET_ITEM(tables, i) != known) break;
        PyObject *row = PyList_GET_ITEM(rows, i);
        if (!PyTuple_CheckExact(row) || PyTuple_GET_SIZE(row) != 5) { status = 1; break; }
        PyObject *op = PyTuple_GET_ITEM(row, 0);
        if (!PyUnicode_CheckExact(op) || PyUnicode_GET_LENGTH(op) != 1 || PyUnicode_READ_CHAR(op, 0) > 127) {
            status = 1;
            break;
        }
        char opc = (char)PyUnicode_READ_CHAR(op, 0);
        const char *found = opc ? strchr(OPS, opc) : NULL;
        if (found == NULL) { status = 1; break; }
        PyObject *kv = PyTuple_GET_ITEM(row, 1), *before = PyTuple_GET_ITEM(row, 2),
                 *after = PyTuple_GET_ITEM(row, 3), *src = PyTuple_GET_ITEM(row, 4);
        if (!PyBytes_CheckExact(kv) || !PyBytes_CheckExact(before) || !PyBytes_CheckExact(after)
            || !PyBytes_CheckExact(src)) {
            status = 1;
            break;
        }
        long long nn = n + 1, tt = total + 1;
        int tail = opc == 'r' ? STAIL_R : STAIL;
        Py_ssize_t klen = pl[HEAD] + PyBytes_GET_SIZE(kv) + pl[CLOSE];
        Py_ssize_t vlen = fsum + int_len(seq) + PyBytes_GET_SIZE(before) + PyBytes_GET_SIZE(after) + 3
            + int_len(now) + pl[SHEAD] + pl[TS] + pl[tail] + PyBytes_GET_SIZE(src) + pl[IDJ] + int_len(tt)
            + int_len(nn);
        if ((long long)vlen + (long long)klen > limit) { status = 1; break; }
        PyObject *value = PyBytes_FromStringAndSize(NULL, vlen);
        if (value == NULL) goto fail;
        char *o = PyBytes_AS_STRING(value);
        o = put(o, fv[0], fl[0]);
        o = put_int(o, seq);
        o = put(o, fv[1], fl[1]);
        o = put(o, PyBytes_AS_STRING(before), PyBytes_GET_SIZE(before));
        o = put(o, fv[2], fl[2]);
        o = put(o, PyBytes_AS_STRING(after), PyBytes_GET_SIZE(after));
        o = put(o, fv[3], fl[3]);
        *o++ = '"'; /* the op as JSON: one ASCII letter of OPS, quoted */
        *o++ = opc;
        *o++ = '"';
        o = put(o, fv[4], fl[4]);
        o = put_int(o, now);
        o = put(o, fv[5], fl[5]);
        o = put(o, pv[SHEAD], pl[SHEAD]);
        o = put(o, pv[TS], pl[TS]);
        o = put(o, pv[tail], pl[tail]);
        o = put(o, PyBytes_AS_STRING(src), PyBytes_GET_SIZE(src));
        o = put(o, fv[6], fl[6]);
        o = put(o, pv[IDJ], pl[IDJ]);
        o = put(o, fv[7], fl[7]);
        o = put_int(o, tt);
        o = put(o, fv[8], fl[8]);
        o = put_int(o, nn);
        o = put(o, fv[9], fl[9]);
        if (o - PyBytes_AS_STRING(value) != vlen) {
            Py_DECREF(value);
            PyErr_SetString(PyExc_SystemError, "splice: record length mismatch");
            goto fail;
        }
        PyObject *key = PyBytes_FromStringAndSize(NULL, klen);
        if (key == NULL) { Py_DECREF(value); goto fail; }
        o = PyBytes_AS_STRING(key);
        o = put(o, pv[HEAD], pl[HEAD]);
        o = put(o, PyBytes_AS_STRING(kv), PyBytes_GET_SIZE(kv));
        put(o, pv[CLOSE], pl[CLOSE]);
        PyObject *call[8] = {topic, value, key, partition, Py_None, Py_None, zero, headers};
        PyObject *res = PyObject_Vectorcall(produce, call, pargs, NULL);
        if (res == NULL) {
            if (PyErr_ExceptionMatches(PyExc_BufferError)) {
                PyErr_Clear();
                status = 2;
            } else {
                PyObject *t, *v, *tb;
                PyErr_Fetch(&t, &v, &tb);
                PyErr_NormalizeException(&t, &v, &tb);
                Py_XDECREF(t);
                Py_XDECREF(tb);
                Py_DECREF(error);
                error = Py_BuildValue("(NOO)", v ? v : (Py_INCREF(Py_None), Py_None), value, key);
                status = 3;
            }
            Py_DECREF(value);
            Py_DECREF(key);
            if (status == 3 && error == NULL) goto fail;
            break;
        }
        Py_DECREF(res);
        Py_DECREF(value);
        Py_DECREF(key);
        nbytes += vlen;
        counts[found - OPS]++;
        seq++;
        total = tt;
        n = nn;
    }
    if (tail != Py_None && status == 0 && i == nrows) {
        int r = produce_marker(produce, topic, tail, partition, headers, &error);
        if (r < 0) goto fail;
        if (r)
            status = r;
        else
            marks |= 2;
    }
done:
    Py_DECREF(frag);
    { /* (j, seq, total, n, nbytes, (c, u, d, r, t), status, error[, marks]), built item by item */
        PyObject *out = PyTuple_New(tx ? 9 : 8), *ops = PyTuple_New(5);
        if (out == NULL || ops == NULL) {
            Py_XDECREF(out);
            Py_XDECREF(ops);
            Py_DECREF(error);
            return NULL;
        }
        for (int k = 0; k < 5; k++) PyTuple_SET_ITEM(ops, k, new_int(counts[k]));
        PyTuple_SET_ITEM(out, 0, PyLong_FromSsize_t(i));
        PyTuple_SET_ITEM(out, 1, new_int(seq));
        PyTuple_SET_ITEM(out, 2, new_int(total));
        PyTuple_SET_ITEM(out, 3, new_int(n));
        PyTuple_SET_ITEM(out, 4, new_int(nbytes));
        PyTuple_SET_ITEM(out, 5, ops);
        PyTuple_SET_ITEM(out, 6, PyLong_FromLong(status));
        PyTuple_SET_ITEM(out, 7, error); /* its reference passes to the tuple */
        if (tx) PyTuple_SET_ITEM(out, 8, PyLong_FromLong(marks));
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(out); k++) {
            if (PyTuple_GET_ITEM(out, k) == NULL) { /* an int that could not be made: MemoryError is set */
                Py_DECREF(out);
                return NULL;
            }
        }
        for (int k = 0; k < 5; k++) {
            if (PyTuple_GET_ITEM(ops, k) == NULL) {
                Py_DECREF(out);
                return NULL;
            }
        }
        return out;
    }
fail:
    Py_DECREF(frag);
    Py_XDECREF(error);
    return NULL;
}

static PyObject *splice(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return splice_impl(args, nargs, 0);
}

static PyObject *splice_tx(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return splice_impl(args, nargs, 1);
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_O, "configure(fragments): the value fragments of cdc.stream.wire, once"},
    {"splice", (PyCFunction)(void (*)(void))splice, METH_FASTCALL,
     "splice(tables, rows, i, known, parts, seq, total, n, now, limit, produce, topic, partition, headers) -> "
     "(j, seq, total, n, nbytes, op counts, status, error): see the module source"},
    {"splice_tx", (PyCFunction)(void (*)(void))splice_tx, METH_FASTCALL,
     "splice_tx(tables, rows, i, known, parts, seq, total, n, now, limit, produce, topic, partition, headers, head, "
     "tail) -> splice()'s tuple + (marks,): a small transaction's BEGIN, rows and END in one call"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_splice_native", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__splice_native(void) {
    if (zero == NULL && (zero = PyLong_FromLong(0)) == NULL)
        return NULL;
    return PyModule_Create(&module);
}
