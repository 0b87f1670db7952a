/* SQL_REDO -> JSON of the record key and row images, for the shapes LogMiner writes for ordinary
 * values. The contract and its Python definition: readers/oracle/columnar/redo_json.py (``reference``).
 *
 * build(sqls, spec_of_row, specs[, sources]) -> [(op, key, before, after[, source]) | None, ...]
 *   sources: (scns, commit_scns, xids, rs_ids, ssns), one entry per statement (xids: the txId as JSON
 *   bytes); then each tuple also holds the Change's source fields as JSON after the opening brace:
 *   ,"scn":N,"commit_scn":N,"txId":"..","rs_id":"..","ssn":N}
 *
 * Shapes taken (anything else: None, and the row path decides, with its own errors):
 *   insert into "S"."T"("A","B") values (V, V);         values separated by "," or ", "
 *   update "S"."T" set "A" = V, "B" = V where W;
 *   delete from "S"."T" where W;
 *   W: "A" = V and "B" IS NULL [and ROWID = '...'] ;     the ROWID term only last
 *   V: NULL | '...' (doubled quotes undone) | NAME(...) kept verbatim (quotes respected, no nesting,
 *      not UNISTR); a temporal column's value must be NULL or exactly
 *      TO_DATE('YYYY-MM-DD HH:MM:SS', 'YYYY-MM-DD HH24:MI:SS'), written YYYY-MM-DDTHH:MM:SS.
 *   Identifiers: "..." without a doubled quote; the trailing ';' optional.
 * Images follow Python dict semantics (a repeated column keeps its first place and its last value;
 * an UPDATE's after image is the WHERE image overlaid with the SET values). Strings are written as
 * orjson writes them: '"', '\\' and control characters escaped (\b \t \n \f \r, else \u00xx), the
 * rest as UTF-8.
 */
#define PY_SSIZE_T_CLEAN
#define _GNU_SOURCE /* memmem */
#include <Python.h>
#include <string.h>

typedef struct {
    const char *name, *val;
    Py_ssize_t nlen, vlen;
    char kind; /* 'n' NULL, 'l' literal, 'f' function form verbatim, 'd' converted date */
    char dbl;  /* literal with doubled quotes to undo */
    char date[19];
} item_t;

typedef struct {
    item_t *v;
    Py_ssize_t n, cap;
} items_t;

typedef struct {
    char *p;
    Py_ssize_t n, cap;
} buf_t;

typedef struct {
    PyObject *owner; /* the tuple holding the str objects the pointers below point into */
    const char **names;
    Py_ssize_t *lens;
    Py_ssize_t n;
} names_t;

typedef struct {
    names_t temporal, pk;
    int whole_row; /* pk None */
} spec_t;

static PyObject *OP_C, *OP_U, *OP_D, *NULL_BYTES;

/* ---- buffers ------------------------------------------------------------------------------- */

static int grow(buf_t *b, Py_ssize_t more) {
    if (b->n + more <= b->cap) return 0;
    Py_ssize_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + more) cap *= 2;
    char *p = PyMem_Realloc(b->p, cap);
    if (!p) return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

static int put(buf_t *b, const char *s, Py_ssize_t n) {
    if (grow(b, n)) return -1;
    memcpy(b->p + b->n, s, n);
    b->n += n;
    return 0;
}

static const char HEX[] = "0123456789abcdef";

/* a JSON string as orjson writes it; undouble: "''" is one quote (a literal's text) */
static int put_str(buf_t *b, const char *s, Py_ssize_t n, int undouble) {
    if (grow(b, 6 * n + 2)) return -1;
    char *o = b->p + b->n;
    *o++ = '"';
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') {
            *o++ = (char)c;
            if (c == '\'' && undouble) i++;
            continue;
        }
        *o++ = '\\';
        switch (c) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '\b': *o++ = 'b'; break;
        case '\t': *o++ = 't'; break;
        case '\n': *o++ = 'n'; break;
        case '\f': *o++ = 'f'; break;
        case '\r': *o++ = 'r'; break;
        default:
            *o++ = 'u'; *o++ = '0'; *o++ = '0';
            *o++ = HEX[c >> 4]; *o++ = HEX[c & 15];
        }
    }
    *o++ = '"';
    b->n = o - b->p;
    return 0;
}

static int put_value(buf_t *b, const item_t *it) {
    switch (it->kind) {
    case 'n': return put(b, "null", 4);
    case 'l': return put_str(b, it->val, it->vlen, it->dbl);
    case 'd': return put_str(b, it->date, 19, 0);
    default: return put_str(b, it->val, it->vlen, 0);
    }
}

static int put_image(buf_t *b, const items_t *im) {
    if (put(b, "{", 1)) return -1;
    for (Py_ssize_t i = 0; i < im->n; i++) {
        if (i && put(b, ",", 1)) return -1;
        if (put_str(b, im->v[i].name, im->v[i].nlen, 0) || put(b, ":", 1) || put_value(b, &im->v[i])) return -1;
    }
    return put(b, "}", 1);
}

/* ---- images (dict semantics) --------------------------------------------------------------- */

static item_t *find(const items_t *im, const char *name, Py_ssize_t nlen) {
    for (Py_ssize_t i = 0; i < im->n; i++)
        if (im->v[i].nlen == nlen && memcmp(im->v[i].name, name, nlen) == 0) return &im->v[i];
    return NULL;
}

static int push(items_t *im, const item_t *it) {
    if (im->n == im->cap) {
        Py_ssize_t cap = im->cap ? im->cap * 2 : 32;
        item_t *v = PyMem_Realloc(im->v, cap * sizeof(item_t));
        if (!v) return -1;
        im->v = v;
        im->cap = cap;
    }
    im->v[im->n++] = *it;
    return 0;
}

static int add(items_t *im, const item_t *it) {
    item_t *had = find(im, it->name, it->nlen);
    if (had) {
        *had = *it;
        return 0;
    }
    return push(im, it);
}

/* ---- scanning (0: ok, 1: not a shape taken here, -1: out of memory) ------------------------- */

static int at(const char *s, Py_ssize_t n, Py_ssize_t p, const char *lit, Py_ssize_t len) {
    return p + len <= n && memcmp(s + p, lit, len) == 0;
}

static int ident(const char *s, Py_ssize_t n, Py_ssize_t *pp, const char **name, Py_ssize_t *nlen) {
    Py_ssize_t p = *pp;
    if (p >= n || s[p] != '"') return 1;
    const char *q = memchr(s + p + 1, '"', n - p - 1);
    if (!q || q == s + p + 1) return 1;
    Py_ssize_t e = q - s;
    if (e + 1 < n && s[e + 1] == '"') return 1; /* doubled quote in the name */
    *name = s + p + 1;
    *nlen = e - p - 1;
    *pp = e + 1;
    return 0;
}

/* a '...' literal at p: its text (doubled quotes kept) and whether it has any */
static int literal(const char *s, Py_ssize_t n, Py_ssize_t *pp, Py_ssize_t *start, Py_ssize_t *end, char *dbl) {
    Py_ssize_t p = *pp + 1;
    *start = p;
    *dbl = 0;
    for (;;) {
        const char *q = p < n ? memchr(s + p, '\'', n - p) : NULL;
        if (!q) return 1;
        Py_ssize_t e = q - s;
        if (e + 1 < n && s[e + 1] == '\'') {
            *dbl = 1;
            p = e + 2;
            continue;
        }
        *end = e;
        *pp = e + 1;
        return 0;
    }
}

static int is_word(char c) { return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }

static int value(const char *s, Py_ssize_t n, Py_ssize_t *pp, item_t *it) {
    Py_ssize_t p = *pp, a, e;
    if (p >= n) return 1;
    char c = s[p];
    if (c == '\'') {
        if (literal(s, n, pp, &a, &e, &it->dbl)) return 1;
        it->kind = 'l';
        it->val = s + a;
        it->vlen = e - a;
        return 0;
    }
    if (c == 'N' && at(s, n, p, "NULL", 4) && (p + 4 == n || (!is_word(s[p + 4]) && s[p + 4] != '('))) {
        it->kind = 'n';
        *pp = p + 4;
        return 0;
    }
    if (c < 'A' || c > 'Z') return 1;
    Py_ssize_t q = p + 1;
    while (q < n && is_word(s[q])) q++;
    if (q >= n || s[q] != '(' || (q - p == 6 && memcmp(s + p, "UNISTR", 6) == 0)) return 1;
    q++;
    for (;;) {
        if (q >= n) return 1;
        char d = s[q];
        if (d == ')') {
            q++;
            break;
        }
        if (d == '(') return 1;
        if (d == '\'') {
            char dbl;
            if (literal(s, n, &q, &a, &e, &dbl)) return 1;
            continue;
        }
        q++;
    }
    it->kind = 'f';
    it->val = s + p;
    it->vlen = q - p;
    *pp = q;
    return 0;
}

/* TO_DATE('YYYY-MM-DD HH:MM:SS', 'YYYY-MM-DD HH24:MI:SS') -> YYYY-MM-DDTHH:MM:SS (convert.iso_temporal) */
static int to_iso_date(item_t *it) {
    static const char head[] = "TO_DATE('", tail[] = "', 'YYYY-MM-DD HH24:MI:SS')";
    static const char shape[] = "0000-00-00 00:00:00";
    if (it->kind == 'n') return 0;
    if (it->kind != 'f' || it->vlen != 9 + 19 + 27 || memcmp(it->val, head, 9) != 0 ||
        memcmp(it->val + 28, tail, 27) != 0)
        return 1;
    const char *d = it->val + 9;
    for (int i = 0; i < 19; i++) {
        if (shape[i] == '0' ? !is_digit(d[i]) : d[i] != shape[i]) return 1;
    }
    memcpy(it->date, d, 19);
    it->date[10] = 'T';
    it->kind = 'd';
    return 0;
}

static int temporal(const spec_t *sp, item_t *it) {
    for (Py_ssize_t i = 0; i < sp->temporal.n; i++)
        if (sp->temporal.lens[i] == it->nlen && memcmp(sp->temporal.names[i], it->name, it->nlen) == 0)
            return to_iso_date(it);
    return 0;
}

static int table(const char *s, Py_ssize_t n, Py_ssize_t *pp) {
    const char *schema, *name;
    Py_ssize_t slen, tlen;
    if (ident(s, n, pp, &schema, &slen) || *pp >= n || s[*pp] != '.') return 1;
    (*pp)++;
    if (ident(s, n, pp, &name, &tlen)) return 1;
    if (slen == 7 && memcmp(schema, "UNKNOWN", 7) == 0) return 1; /* the row path names the dictionary problem */
    return 0;
}

static int at_end(const char *s, Py_ssize_t n, Py_ssize_t p) { return p == n || (p + 1 == n && s[p] == ';'); }

static int where(const char *s, Py_ssize_t n, Py_ssize_t p, const spec_t *sp, items_t *out) {
    int first = 1, r;
    for (;;) {
        item_t it = {0};
        if (!first && at(s, n, p, "ROWID = '", 9)) { /* the row address: last, no quote inside */
            const char *q = memchr(s + p + 9, '\'', n - p - 9);
            return !(q && at_end(s, n, q - s + 1));
        }
        if (ident(s, n, &p, &it.name, &it.nlen)) return 1;
        if (at(s, n, p, " = ", 3)) {
            p += 3;
            if (value(s, n, &p, &it)) return 1;
        } else if (at(s, n, p, " IS NULL", 8)) {
            p += 8;
            it.kind = 'n';
        } else {
            return 1;
        }
        if (temporal(sp, &it)) return 1;
        if ((r = add(out, &it))) return r;
        first = 0;
        if (at(s, n, p, " and ", 5)) {
            p += 5;
            continue;
        }
        return !at_end(s, n, p);
    }
}

/* 'c' / 'u' / 'd' with the images filled, 0 when not a shape taken here, -1 on error */
static int parse(const char *s, Py_ssize_t n, const spec_t *sp, items_t *before, items_t *after, items_t *tmp) {
    Py_ssize_t p;
    int r;
    before->n = after->n = tmp->n = 0;
    if (at(s, n, 0, "insert into ", 12)) {
        p = 12;
        if (table(s, n, &p)) return 0;
        if (p < n && s[p] == ' ') p++;
        if (p >= n || s[p] != '(') return 0;
        p++;
        for (;;) { /* the column names, kept in tmp */
            item_t it = {0};
            if (ident(s, n, &p, &it.name, &it.nlen)) return 0;
            if (push(tmp, &it)) return -1;
            if (p < n && s[p] == ',') {
                p++;
                continue;
            }
            break;
        }
        if (!at(s, n, p, ") values (", 10)) return 0;
        /* the row path takes the first '") values (' as the end of the names (a name may hold that text) */
        const char *first = memmem(s, n, "\") values (", 11);
        if (first != s + p - 1) return 0;
        p += 10;
        for (Py_ssize_t i = 0; i < tmp->n; i++) {
            item_t it = tmp->v[i];
            if (value(s, n, &p, &it) || temporal(sp, &it)) return 0;
            if ((r = add(after, &it))) return r;
            if (i + 1 < tmp->n) {
                if (p >= n || s[p] != ',') return 0;
                p++;
                if (p < n && s[p] == ' ') p++;
            } else if (p >= n || s[p] != ')' || !at_end(s, n, p + 1)) {
                return 0;
            }
        }
        return 'c';
    }
    if (at(s, n, 0, "update ", 7)) {
        p = 7;
        if (table(s, n, &p) || !at(s, n, p, " set ", 5)) return 0;
        p += 5;
        for (;;) {
            item_t it = {0};
            if (ident(s, n, &p, &it.name, &it.nlen) || !at(s, n, p, " = ", 3)) return 0;
            p += 3;
            if (value(s, n, &p, &it) || temporal(sp, &it)) return 0;
            if ((r = add(tmp, &it))) return r;
            if (at(s, n, p, ", ", 2)) {
                p += 2;
                continue;
            }
            if (!at(s, n, p, " where ", 7)) return 0;
            p += 7;
            break;
        }
        if ((r = where(s, n, p, sp, before))) return r < 0 ? r : 0;
        for (Py_ssize_t i = 0; i < before->n; i++)
            if ((r = add(after, &before->v[i]))) return r;
        for (Py_ssize_t i = 0; i < tmp->n; i++)
            if ((r = add(after, &tmp->v[i]))) return r;
        return 'u';
    }
    if (at(s, n, 0, "delete from ", 12)) {
        p = 12;
        if (table(s, n, &p) || !at(s, n, p, " where ", 7)) return 0;
        if ((r = where(s, n, p + 7, sp, before))) return r < 0 ? r : 0;
        return 'd';
    }
    return 0;
}

/* ---- the key ------------------------------------------------------------------------------- */

static int put_key(buf_t *b, const spec_t *sp, const items_t *row) {
    if (sp->pk.n == 1) {
        const item_t *it = find(row, sp->pk.names[0], sp->pk.lens[0]);
        return it ? put_value(b, it) : put(b, "null", 4);
    }
    if (put(b, "{", 1)) return -1;
    for (Py_ssize_t i = 0; i < sp->pk.n; i++) {
        const item_t *it = find(row, sp->pk.names[i], sp->pk.lens[i]);
        int again = 0; /* a name repeated in the key: once, in its first place (a dict) */
        for (Py_ssize_t j = 0; j < i && !again; j++)
            again = sp->pk.lens[j] == sp->pk.lens[i] && memcmp(sp->pk.names[j], sp->pk.names[i], sp->pk.lens[i]) == 0;
        if (again) continue;
        if ((i && put(b, ",", 1)) || put_str(b, sp->pk.names[i], sp->pk.lens[i], 0) || put(b, ":", 1) ||
            (it ? put_value(b, it) : put(b, "null", 4)))
            return -1;
    }
    return put(b, "}", 1);
}

/* ---- specs --------------------------------------------------------------------------------- */

static int names_of(PyObject *seq, names_t *out, const char *what) {
    PyObject *names = out->owner = PySequence_Tuple(seq); /* a copy no caller code can change under us */
    if (!names) return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    out->names = PyMem_Calloc(n ? n : 1, sizeof(char *));
    out->lens = PyMem_Calloc(n ? n : 1, sizeof(Py_ssize_t));
    out->n = n;
    if (!out->names || !out->lens) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *name = PyTuple_GET_ITEM(names, i);
        if (!PyUnicode_Check(name)) {
            PyErr_Format(PyExc_TypeError, "%s: column names must be str", what);
            return -1;
        }
        out->names[i] = PyUnicode_AsUTF8AndSize(name, &out->lens[i]); /* kept alive by ``owner`` */
        if (!out->names[i]) return -1;
    }
    return 0;
}

static void free_specs(spec_t *specs, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_XDECREF(specs[i].temporal.owner);
        Py_XDECREF(specs[i].pk.owner);
        PyMem_Free(specs[i].temporal.names);
        PyMem_Free(specs[i].temporal.lens);
        PyMem_Free(specs[i].pk.names);
        PyMem_Free(specs[i].pk.lens);
    }
    PyMem_Free(specs);
}

static PyObject *bytes_of(buf_t *b) { return PyBytes_FromStringAndSize(b->p, b->n); }

/* ---- the source fields ---------------------------------------------------------------------- */

static int put_int(buf_t *b, PyObject *v) {
    if (v == Py_None) return put(b, "null", 4);
    if (!PyLong_CheckExact(v)) {
        PyErr_SetString(PyExc_TypeError, "build: an SCN / SSN must be an int or None");
        return -1;
    }
    long long x = PyLong_AsLongLong(v);
    if (x == -1 && PyErr_Occurred()) return -1;
    char tmp[32];
    int len = snprintf(tmp, sizeof tmp, "%lld", x);
    return put(b, tmp, len);
}

/* 0 ok, 1 not encodable (the row path decides), -1 error */
static int put_source(buf_t *b, PyObject *const *src, Py_ssize_t i) {
    PyObject *scn = PySequence_Fast_GET_ITEM(src[0], i), *cscn = PySequence_Fast_GET_ITEM(src[1], i),
             *xid = PySequence_Fast_GET_ITEM(src[2], i), *rs = PySequence_Fast_GET_ITEM(src[3], i),
             *ssn = PySequence_Fast_GET_ITEM(src[4], i);
    if (!PyBytes_Check(xid)) {
        PyErr_SetString(PyExc_TypeError, "build: a txId is its JSON bytes");
        return -1;
    }
    if (put(b, ",\"scn\":", 7) || put_int(b, scn) || put(b, ",\"commit_scn\":", 14) || put_int(b, cscn) ||
        put(b, ",\"txId\":", 8) || put(b, PyBytes_AS_STRING(xid), PyBytes_GET_SIZE(xid)) || put(b, ",\"rs_id\":", 9))
        return -1;
    if (rs == Py_None) {
        if (put(b, "null", 4)) return -1;
    } else if (PyUnicode_Check(rs)) {
        Py_ssize_t len;
        const char *t = PyUnicode_AsUTF8AndSize(rs, &len);
        if (!t) {
            PyErr_Clear();
            return 1;
        }
        if (put_str(b, t, len, 0)) return -1;
    } else {
        PyErr_SetString(PyExc_TypeError, "build: an RS_ID must be a str or None");
        return -1;
    }
    if (put(b, ",\"ssn\":", 7) || put_int(b, ssn)) return -1;
    return put(b, "}", 1);
}

/* ---- build --------------------------------------------------------------------------------- */

static PyObject *build(PyObject *self, PyObject *args) {
    PyObject *sqls, *rows_spec, *spec_list, *sources = Py_None, *result = NULL, *fs = NULL, *fr = NULL,
             *fspecs = NULL, *src[5] = {0};
    spec_t *specs = NULL;
    Py_ssize_t nspecs = 0;
    items_t before = {0}, after = {0}, tmp = {0};
    buf_t kb = {0}, bb = {0}, ab = {0}, sb = {0};
    if (!PyArg_ParseTuple(args, "OOO|O:build", &sqls, &rows_spec, &spec_list, &sources)) return NULL;
    /* tuples: copies, so that nothing the caller holds can change under the loop */
    if (!(fs = PySequence_Tuple(sqls))) goto done;
    if (!(fr = PySequence_Tuple(rows_spec))) goto done;
    if (!(fspecs = PySequence_Tuple(spec_list))) goto done;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fs);
    if (PySequence_Fast_GET_SIZE(fr) != n) {
        PyErr_SetString(PyExc_ValueError, "build: sqls and spec_of_row differ in length");
        goto done;
    }
    if (sources != Py_None) {
        if (!PyTuple_Check(sources) || PyTuple_GET_SIZE(sources) != 5) {
            PyErr_SetString(PyExc_TypeError, "build: sources is (scns, commit_scns, xids, rs_ids, ssns)");
            goto done;
        }
        for (int j = 0; j < 5; j++) {
            if (!(src[j] = PySequence_Tuple(PyTuple_GET_ITEM(sources, j)))) goto done;
            if (PySequence_Fast_GET_SIZE(src[j]) != n) {
                PyErr_SetString(PyExc_ValueError, "build: sources and sqls differ in length");
                goto done;
            }
        }
    }
    nspecs = PySequence_Fast_GET_SIZE(fspecs);
    specs = PyMem_Calloc(nspecs ? nspecs : 1, sizeof(spec_t));
    if (!specs) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < nspecs; i++) {
        PyObject *sp = PySequence_Fast_GET_ITEM(fspecs, i), *t, *pk;
        if (!PyTuple_Check(sp) || PyTuple_GET_SIZE(sp) != 2) {
            PyErr_SetString(PyExc_TypeError, "build: a spec is a (temporal, pk) tuple");
            goto done;
        }
        t = PyTuple_GET_ITEM(sp, 0);
        pk = PyTuple_GET_ITEM(sp, 1);
        if (names_of(t, &specs[i].temporal, "build: temporal")) goto done;
        specs[i].whole_row = pk == Py_None;
        if (!specs[i].whole_row && names_of(pk, &specs[i].pk, "build: pk")) goto done;
        if (!specs[i].whole_row && specs[i].pk.n == 0) {
            PyErr_SetString(PyExc_ValueError, "build: an empty pk is None (the whole row is the key)");
            goto done;
        }
    }
    if (!(result = PyList_New(n))) goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *sql = PySequence_Fast_GET_ITEM(fs, i);
        Py_ssize_t k = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(fr, i)), len;
        if (k == -1 && PyErr_Occurred()) goto fail;
        if (k < 0 || k >= nspecs) {
            PyErr_Format(PyExc_IndexError, "build: spec index %zd out of range (%zd specs)", k, nspecs);
            goto fail;
        }
        if (!PyUnicode_Check(sql)) {
            PyErr_Format(PyExc_TypeError, "build: sqls[%zd] is not a str", i);
            goto fail;
        }
        const char *s = PyUnicode_AsUTF8AndSize(sql, &len);
        if (!s) { /* not encodable (a lone surrogate): the row path decides */
            PyErr_Clear();
            Py_INCREF(Py_None);
            PyList_SET_ITEM(result, i, Py_None);
            continue;
        }
        const spec_t *sp = &specs[k];
        int op = parse(s, len, sp, &before, &after, &tmp);
        if (op < 0) {
            PyErr_NoMemory();
            goto fail;
        }
        if (op == 0) {
            Py_INCREF(Py_None);
            PyList_SET_ITEM(result, i, Py_None);
            continue;
        }
        const items_t *row = op == 'd' ? &before : &after;
        PyObject *opo = op == 'c' ? OP_C : op == 'u' ? OP_U : OP_D, *bo, *ao, *ko;
        bb.n = ab.n = kb.n = 0;
        if ((op != 'c' && put_image(&bb, &before)) || (op != 'd' && put_image(&ab, &after))) {
            PyErr_NoMemory();
            goto fail;
        }
        if (!sp->whole_row && put_key(&kb, sp, row)) {
            PyErr_NoMemory();
            goto fail;
        }
        bo = op == 'c' ? (Py_INCREF(NULL_BYTES), NULL_BYTES) : bytes_of(&bb);
        ao = op == 'd' ? (Py_INCREF(NULL_BYTES), NULL_BYTES) : bytes_of(&ab);
        if (sp->whole_row) {
            ko = op == 'd' ? bo : ao;
            Py_XINCREF(ko);
        } else {
            ko = bytes_of(&kb);
        }
        if (!bo || !ao || !ko) {
            Py_XDECREF(bo);
            Py_XDECREF(ao);
            Py_XDECREF(ko);
            goto fail;
        }
        PyObject *so = NULL;
        if (src[0]) {
            sb.n = 0;
            int r = put_source(&sb, src, i);
            if (r == 0) so = bytes_of(&sb);
            if (r != 0 || !so) {
                Py_DECREF(ko);
                Py_DECREF(bo);
                Py_DECREF(ao);
                if (r < 0 || (r == 0 && !so)) goto fail;
                Py_INCREF(Py_None);
                PyList_SET_ITEM(result, i, Py_None);
                continue;
            }
        }
        Py_INCREF(opo);
        PyObject *t = so ? PyTuple_Pack(5, opo, ko, bo, ao, so) : PyTuple_Pack(4, opo, ko, bo, ao);
        Py_DECREF(opo);
        Py_DECREF(ko);
        Py_DECREF(bo);
        Py_DECREF(ao);
        Py_XDECREF(so);
        if (!t) goto fail;
        PyList_SET_ITEM(result, i, t);
    }
    goto done;
fail:
    Py_CLEAR(result);
done:
    Py_XDECREF(fs);
    Py_XDECREF(fr);
    Py_XDECREF(fspecs);
    for (int j = 0; j < 5; j++) Py_XDECREF(src[j]);
    if (specs) free_specs(specs, nspecs);
    PyMem_Free(before.v);
    PyMem_Free(after.v);
    PyMem_Free(tmp.v);
    PyMem_Free(kb.p);
    PyMem_Free(bb.p);
    PyMem_Free(ab.p);
    PyMem_Free(sb.p);
    return result;
}

static PyMethodDef methods[] = {
    {"build", build, METH_VARARGS,
     "build(sqls, spec_of_row, specs[, sources]) -> [(op, key, before, after[, source]) | None]: see "
     "readers/oracle/columnar/redo_json.py"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_redo_native", NULL, -1, methods};

PyMODINIT_FUNC PyInit__redo_native(void) {
    OP_C = PyUnicode_InternFromString("c");
    OP_U = PyUnicode_InternFromString("u");
    OP_D = PyUnicode_InternFromString("d");
    NULL_BYTES = PyBytes_FromStringAndSize("null", 4);
    if (!OP_C || !OP_U || !OP_D || !NULL_BYTES) return NULL;
    return PyModule_Create(&module);
}
