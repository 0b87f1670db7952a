/* Marker records read in C: the boundary scan's run of plain transactions (streaming/stream/batches.py) and the
   structure check's END markers (ends_vouched, below; streaming/stream/structure.py).

   take_plain(keys, values, epochs, i, last, epoch, size, first, bounds, sizes)

   takes whole plain transactions from position i on exactly as BoundaryScanner._take_plain's Python loop
   takes them -- BEGIN (no key), data records (a key holding "key":), END (no key) of the BEGIN's id with an
   event_count equal to its data records (at least one), HEARTBEATs between transactions, consecutive
   sequences from last + 1, one writer epoch per transaction (0 or ``epoch`` at its BEGIN) -- but only those
   it can vouch for without a JSON parser: every value a bytes object starting {"sequence":N with N in
   int64, every key bytes, every epoch an int, and every marker value a JSON object in a narrow grammar (no
   whitespace, strings of printable ASCII without escapes, integers of at most 18 digits, true/false/null,
   nesting under 32) whose top-level keys "status", "id" and "event_count" appear once at most: what
   orjson.loads reads from such bytes is what this reads. It stops at the start of the first transaction or
   HEARTBEAT it does not take (for any reason: a rule broken or bytes it does not vouch for), which the
   Python loop then takes or declines record by record. It never takes what the Python loop would not.

   For each END or HEARTBEAT taken it appends first + (its position + 1) to ``bounds`` and the byte count
   through it (``size`` plus the keys and values taken) to ``sizes``. Returns (taken, taken_size, last_seq,
   last_real): the position after the last record taken (i: none), the byte count through it, the sequence
   of the last record taken (``last``: none) and first + the position after the last END taken (-1: none). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#define MAX_DEPTH 32

/* The sequence at the head of a value: {"sequence":-?DIGITS followed by ',' or '}' (the Python loop's
   JSON_HEAD). Returns 0 when the head is not there or the number needs more than 18 digits. */
static int head_sequence(const char *v, Py_ssize_t n, long long *out) {
    static const char H[] = "{\"sequence\":";
    const Py_ssize_t h = (Py_ssize_t)sizeof(H) - 1;
    if (n < h + 2 || memcmp(v, H, (size_t)h) != 0) return 0;
    Py_ssize_t p = h;
    int neg = 0;
    if (v[p] == '-') { neg = 1; p++; }
    Py_ssize_t d0 = p;
    long long x = 0;
    while (p < n && v[p] >= '0' && v[p] <= '9') {
        if (p - d0 >= 18) return 0;
        x = x * 10 + (v[p] - '0');
        p++;
    }
    if (p == d0 || p >= n || (v[p] != ',' && v[p] != '}')) return 0;
    *out = neg ? -x : x;
    return 1;
}

typedef struct {
    const char *v;
    Py_ssize_t n, p;
} Cur;

/* A string at c->p (its opening quote): printable ASCII, no quote inside, no escape. Sets *s and *len to its
   contents. */
static int string_(Cur *c, const char **s, Py_ssize_t *len) {
    if (c->p >= c->n || c->v[c->p] != '"') return 0;
    Py_ssize_t a = ++c->p;
    while (c->p < c->n) {
        unsigned char ch = (unsigned char)c->v[c->p];
        if (ch == '"') {
            *s = c->v + a;
            *len = c->p - a;
            c->p++;
            return 1;
        }
        if (ch < 0x20 || ch > 0x7e || ch == '\\') return 0;
        c->p++;
    }
    return 0;
}

/* An integer: -?(0|[1-9][0-9]*), at most 18 digits, not followed by '.', 'e' or 'E'. */
static int integer_(Cur *c, long long *out) {
    Py_ssize_t p = c->p;
    int neg = 0;
    if (p < c->n && c->v[p] == '-') { neg = 1; p++; }
    Py_ssize_t d0 = p;
    long long x = 0;
    while (p < c->n && c->v[p] >= '0' && c->v[p] <= '9') {
        if (p - d0 >= 18) return 0;
        x = x * 10 + (c->v[p] - '0');
        p++;
    }
    if (p == d0 || (c->v[d0] == '0' && p - d0 > 1)) return 0;
    if (p < c->n && (c->v[p] == '.' || c->v[p] == 'e' || c->v[p] == 'E')) return 0;
    c->p = p;
    if (out) *out = neg ? -x : x;
    return 1;
}

static int word(Cur *c, const char *w) {
    size_t k = strlen(w);
    if ((size_t)(c->n - c->p) < k || memcmp(c->v + c->p, w, k) != 0) return 0;
    c->p += (Py_ssize_t)k;
    return 1;
}

static int value_(Cur *c, int depth);

/* After a member or an element: 1 past a ',' (another follows), 0 past ``close`` (the last), -1 else. */
static int more(Cur *c, char close) {
    if (c->p >= c->n) return -1;
    char ch = c->v[c->p++];
    return ch == ',' ? 1 : ch == close ? 0 : -1;
}

static int object_(Cur *c, int depth) {
    const char *s;
    Py_ssize_t len;
    if (depth >= MAX_DEPTH || c->p >= c->n || c->v[c->p] != '{') return 0;
    c->p++;
    if (c->p < c->n && c->v[c->p] == '}') { c->p++; return 1; }
    for (;;) {
        if (!string_(c, &s, &len) || c->p >= c->n || c->v[c->p] != ':') return 0;
        c->p++;
        if (!value_(c, depth + 1)) return 0;
        int m = more(c, '}');
        if (m <= 0) return m == 0;
    }
}

static int array_(Cur *c, int depth) {
    if (depth >= MAX_DEPTH || c->p >= c->n || c->v[c->p] != '[') return 0;
    c->p++;
    if (c->p < c->n && c->v[c->p] == ']') { c->p++; return 1; }
    for (;;) {
        if (!value_(c, depth + 1)) return 0;
        int m = more(c, ']');
        if (m <= 0) return m == 0;
    }
}

static int value_(Cur *c, int depth) {
    const char *s;
    Py_ssize_t len;
    if (c->p >= c->n) return 0;
    switch (c->v[c->p]) {
    case '"': return string_(c, &s, &len);
    case '{': return object_(c, depth);
    case '[': return array_(c, depth);
    case 't': return word(c, "true");
    case 'f': return word(c, "false");
    case 'n': return word(c, "null");
    default: return integer_(c, NULL);
    }
}

enum { K_OTHER, K_BEGIN, K_END, K_BEAT };

typedef struct {
    int kind;
    int has_id;             /* "id" is a string (ids of any other JSON type are left to Python) */
    const char *id;
    Py_ssize_t id_len;
    int has_count;          /* "event_count" is an integer */
    long long count;
} Marker;

/* A marker value in the narrow grammar, whole (nothing after its closing brace), its top-level "status",
   "id" and "event_count" read. Returns 0 for anything it does not vouch for. */
static int marker(const char *v, Py_ssize_t n, Marker *m) {
    Cur c = {v, n, 0};
    const char *s, *st = NULL;
    Py_ssize_t len, st_len = 0;
    int seen_status = 0, seen_id = 0, seen_count = 0;
    memset(m, 0, sizeof *m);
    if (n < 2 || v[0] != '{') return 0;
    c.p = 1;
    if (v[1] == '}') return 0;
    for (;;) {
        if (!string_(&c, &s, &len) || c.p >= n || v[c.p] != ':') return 0;
        c.p++;
        if (len == 6 && memcmp(s, "status", 6) == 0) {
            if (seen_status++ || !string_(&c, &st, &st_len)) return 0;
        } else if (len == 2 && memcmp(s, "id", 2) == 0) {
            if (seen_id++) return 0;
            if (c.p < n && v[c.p] == '"') {
                if (!string_(&c, &m->id, &m->id_len)) return 0;
                m->has_id = 1;
            } else if (!value_(&c, 1)) {
                return 0;
            }
        } else if (len == 11 && memcmp(s, "event_count", 11) == 0) {
            if (seen_count++) return 0;
            if (c.p < n && (v[c.p] == '-' || (v[c.p] >= '0' && v[c.p] <= '9'))) {
                if (!integer_(&c, &m->count)) return 0;
                m->has_count = 1;
            } else if (!value_(&c, 1)) {
                return 0;
            }
        } else if (!value_(&c, 1)) {
            return 0;
        }
        int more_ = more(&c, '}');
        if (more_ < 0) return 0;
        if (!more_) break;
    }
    if (c.p != n || !seen_status) return 0;
    if (st_len == 5 && memcmp(st, "BEGIN", 5) == 0) m->kind = K_BEGIN;
    else if (st_len == 3 && memcmp(st, "END", 3) == 0) m->kind = K_END;
    else if (st_len == 9 && memcmp(st, "HEARTBEAT", 9) == 0) m->kind = K_BEAT;
    else return 0;
    return 1;
}

/* An int (an epoch, a count) as a C long long; 0 when it is not an int (or does not fit). */
static int int64_of(PyObject *o, long long *out) {
    if (!PyLong_CheckExact(o)) return 0;
    int overflow = 0;
    long long e = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow || (e == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;
    }
    *out = e;
    return 1;
}

/* bounds.append(b); sizes.append(z) */
static int append_pair(PyObject *bounds, long long b, PyObject *sizes, long long z) {
    PyObject *bo = PyLong_FromLongLong(b), *zo = PyLong_FromLongLong(z);
    int rc = (!bo || !zo || PyList_Append(bounds, bo) < 0 || PyList_Append(sizes, zo) < 0) ? -1 : 0;
    Py_XDECREF(bo);
    Py_XDECREF(zo);
    return rc;
}

static PyObject *take_plain(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *keys, *values, *epochs, *bounds, *sizes;
    Py_ssize_t i;
    long long last, epoch, size, first;
    if (!PyArg_ParseTuple(args, "O!O!O!nLLLLO!O!", &PyList_Type, &keys, &PyList_Type, &values, &PyList_Type,
                          &epochs, &i, &last, &epoch, &size, &first, &PyList_Type, &bounds, &PyList_Type, &sizes))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(values);
    if (PyList_GET_SIZE(keys) < n || PyList_GET_SIZE(epochs) < n) n = 0;
    Py_ssize_t taken = i, begin = -1;
    long long taken_size = size, taken_last = last, last_real = -1, tx_epoch = 0, rows = 0;
    const char *txid = NULL;
    Py_ssize_t txid_len = 0;
    while (i < n) {
        PyObject *vo = PyList_GET_ITEM(values, i), *ko = PyList_GET_ITEM(keys, i);
        long long seq, e;
        if (!PyBytes_CheckExact(vo) || !int64_of(PyList_GET_ITEM(epochs, i), &e)) break;
        const char *v = PyBytes_AS_STRING(vo);
        Py_ssize_t vn = PyBytes_GET_SIZE(vo);
        if (!head_sequence(v, vn, &seq) || last == LLONG_MAX || seq != last + 1) break;
        size += vn;
        if (ko != Py_None) {  /* a data record of the open transaction */
            if (!PyBytes_CheckExact(ko) || begin < 0 || e != tx_epoch) break;
            Py_ssize_t kn = PyBytes_GET_SIZE(ko);
            const char *k = PyBytes_AS_STRING(ko);
            int has = 0;
            for (Py_ssize_t p = 0; p + 6 <= kn; p++)
                if (k[p] == '"' && memcmp(k + p, "\"key\":", 6) == 0) { has = 1; break; }
            if (!has) break;
            rows++;
            size += kn;
        } else {
            Marker m;
            if (!marker(v, vn, &m)) break;
            if (m.kind == K_BEGIN) {
                if (begin >= 0 || (e && e != epoch) || !m.has_id) break;
                begin = i;
                txid = m.id;
                txid_len = m.id_len;
                tx_epoch = e;
                rows = 0;
            } else if (m.kind == K_END) {
                if (begin < 0 || e != tx_epoch || !m.has_id || m.id_len != txid_len ||
                    memcmp(m.id, txid, (size_t)txid_len) != 0 || !rows || !m.has_count || m.count != rows)
                    break;
                begin = -1;
                last_real = first + i + 1;
            } else if (begin >= 0 || (e && e != epoch)) {  /* a HEARTBEAT inside a transaction, or of another writer */
                break;
            }
            if (begin < 0) {  /* an END or a HEARTBEAT taken: a boundary after it */
                taken = i + 1;
                taken_size = size;
                taken_last = seq;
                if (append_pair(bounds, first + taken, sizes, size) < 0) return NULL;
            }
        }
        last = seq;
        i++;
    }
    return Py_BuildValue("nLLL", taken, taken_size, taken_last, last_real);
}

/* data_collections of one object in the narrow grammar: [{"data_collection":NAME,"event_count":K,...}] with
   each of the two keys once (others allowed). Sets *name, *name_len and *count. */
static int one_collection(Cur *c, const char **name, Py_ssize_t *name_len, long long *count) {
    const char *s;
    Py_ssize_t len;
    int seen_name = 0, seen_count = 0;
    if (c->p + 1 >= c->n || c->v[c->p] != '[' || c->v[c->p + 1] != '{') return 0;
    c->p += 2;
    if (c->p < c->n && c->v[c->p] == '}') return 0;
    for (;;) {
        if (!string_(c, &s, &len) || c->p >= c->n || c->v[c->p] != ':') return 0;
        c->p++;
        if (len == 15 && memcmp(s, "data_collection", 15) == 0) {
            if (seen_name++ || !string_(c, name, name_len)) return 0;
        } else if (len == 11 && memcmp(s, "event_count", 11) == 0) {
            if (seen_count++ || !integer_(c, count)) return 0;
        } else if (!value_(c, 3)) {
            return 0;
        }
        int more_ = more(c, '}');
        if (more_ < 0) return 0;
        if (!more_) break;
    }
    if (!seen_name || !seen_count || c->p >= c->n || c->v[c->p] != ']') return 0;
    c->p++;
    return 1;
}

/* An END marker's value in the narrow grammar, whole, whose top-level "event_count" is ``k`` and whose
   "data_collections" is one collection named ``name`` of ``k`` events (each top-level key once). */
static int end_holds(const char *v, Py_ssize_t n, long long k, const char *name, Py_ssize_t name_len) {
    Cur c = {v, n, 0};
    const char *s, *dc = NULL;
    Py_ssize_t len, dc_len = 0;
    long long said = 0, one = 0;
    int seen_count = 0, seen_dcs = 0;
    if (n < 2 || v[0] != '{' || v[1] == '}') return 0;
    c.p = 1;
    for (;;) {
        if (!string_(&c, &s, &len) || c.p >= n || v[c.p] != ':') return 0;
        c.p++;
        if (len == 11 && memcmp(s, "event_count", 11) == 0) {
            if (seen_count++ || !integer_(&c, &said)) return 0;
        } else if (len == 16 && memcmp(s, "data_collections", 16) == 0) {
            if (seen_dcs++ || !one_collection(&c, &dc, &dc_len, &one)) return 0;
        } else if (!value_(&c, 1)) {
            return 0;
        }
        int more_ = more(&c, '}');
        if (more_ < 0) return 0;
        if (!more_) break;
    }
    return c.p == n && seen_count && seen_dcs && said == k && one == k && dc_len == name_len &&
           memcmp(dc, name, (size_t)name_len) == 0;
}

/* ends_vouched(metas, counts, names, i)

   The structure check's END markers (streaming/stream/structure.py _plain_whole): the first position j >= i
   whose END it does not vouch for, len(metas) when it vouches for all. It vouches for metas[j] (the END's
   value, a str) when end_holds() says so for counts[j] events of the one table names[j] (a str), i.e. exactly
   when orjson.loads(metas[j]) gives an "event_count" of counts[j] and a "data_collections" of one
   collection of that table and count. counts[j] < 0 (the run closed by the END is not of one table) is not
   vouched for. */
static PyObject *ends_vouched(PyObject *self, PyObject *args) {
    PyObject *metas, *counts, *names;
    Py_ssize_t i;
    (void)self;
    if (!PyArg_ParseTuple(args, "O!O!O!n", &PyList_Type, &metas, &PyList_Type, &counts, &PyList_Type, &names, &i))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(metas);
    if (PyList_GET_SIZE(counts) < n || PyList_GET_SIZE(names) < n) n = 0;
    for (; i < n; i++) {
        PyObject *m = PyList_GET_ITEM(metas, i), *t = PyList_GET_ITEM(names, i);
        long long k;
        if (!PyUnicode_CheckExact(m) || !PyUnicode_CheckExact(t) || !int64_of(PyList_GET_ITEM(counts, i), &k) ||
            k < 0)
            break;
        Py_ssize_t vn, tn;
        const char *v = PyUnicode_AsUTF8AndSize(m, &vn), *name = PyUnicode_AsUTF8AndSize(t, &tn);
        if (!v || !name) {
            PyErr_Clear();
            break;
        }
        if (!end_holds(v, vn, k, name, tn)) break;
    }
    return PyLong_FromSsize_t(i);
}

static PyMethodDef methods[] = {
    {"take_plain", take_plain, METH_VARARGS, "Whole plain transactions of a fetched run (see the file's comment)."},
    {"ends_vouched", ends_vouched, METH_VARARGS, "The first END marker not vouched for (see its comment)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_scan_native", NULL, -1, methods};

PyMODINIT_FUNC PyInit__scan_native(void) { return PyModule_Create(&module); }
