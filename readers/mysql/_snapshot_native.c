/* The row packets of a text-protocol result set, decoded as PyMySQL decodes them.

   rows(buf, pos, specs, seq, out, names) reads the MySQL packets in buf[pos:] that follow a result
   set's column definitions (readers/mysql/snapshot_rows.py sends the query and reads those with
   PyMySQL) and appends one row per row packet to the list ``out``: a tuple, or with ``names`` (a
   tuple of column names) a dict {names[i]: value i}. Column i's value is None for SQL NULL, else its
   bytes decoded and converted by specs[i] = (codec, name, converter, int_fast, post, post_all),
   first exactly as PyMySQL's MySQLResult._read_row_from_packet: ``codec`` 0 keeps the bytes, 1
   decodes UTF-8, 2 ASCII, 3 the codec ``name``; ``converter`` (None: none) is then called on the
   value; ``int_fast`` says the converter is ``int``, so a plain run of at most 18 digits (and a
   sign) becomes the int here, anything else goes through ``int`` itself. Then ``post`` (None: none)
   is called on it: on every value with ``post_all``, else on a value that is not exactly an int,
   str, float or bool (the snapshot's stream_value, which keeps those as they are for most kinds).

   ``seq`` is the sequence id the next packet must carry. It returns (pos, seq, status) with ``pos``
   at the first packet it did not consume:
     NEED  (0): buf ends inside the packet at pos: read more bytes, call again from pos;
     END   (1): the EOF packet that ends the result set was consumed (pos is after it);
     OTHER (2): the packet at pos is not one it vouches for (an error packet, a packet of 16 MB or
                more continued in the next, a row shorter or longer than the columns, a sequence id
                out of order): the caller reads that packet the PyMySQL way, which raises or decodes
                it exactly as it always did.
   A decode or converter error propagates as the exception PyMySQL would have raised. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define NEED 0
#define END 1
#define OTHER 2
#define MAX_PAYLOAD 0xFFFFFF

typedef struct {
    int codec;
    const char *name;
    PyObject *converter;
    int int_fast;
    PyObject *post;
    int post_all;
} Spec;

/* A length-encoded integer at p (below end): its value, or -1 when it does not fit / is NULL (-2). */
static int64_t lenenc(const unsigned char **pp, const unsigned char *end) {
    const unsigned char *p = *pp;
    if (p >= end) return -1;
    unsigned c = *p++;
    int64_t v;
    if (c < 251) {
        v = c;
    } else if (c == 251) {
        *pp = p;
        return -2;
    } else if (c == 252) {
        if (end - p < 2) return -1;
        v = (int64_t)p[0] | ((int64_t)p[1] << 8);
        p += 2;
    } else if (c == 253) {
        if (end - p < 3) return -1;
        v = (int64_t)p[0] | ((int64_t)p[1] << 8) | ((int64_t)p[2] << 16);
        p += 3;
    } else if (c == 254) {
        if (end - p < 8) return -1;
        uint64_t u = 0;
        for (int i = 7; i >= 0; i--) u = (u << 8) | p[i];
        if (u > (uint64_t)INT64_MAX) return -1;
        v = (int64_t)u;
        p += 8;
    } else {
        return -1;
    }
    *pp = p;
    return v;
}

/* Digits with an optional leading '-': the int; NULL with no exception when it is not that plain. */
static PyObject *plain_int(const unsigned char *s, Py_ssize_t n) {
    Py_ssize_t i = 0;
    int neg = 0;
    if (n > 0 && s[0] == '-') {
        neg = 1;
        i = 1;
    }
    if (n - i < 1 || n - i > 18) return NULL;
    int64_t v = 0;
    for (; i < n; i++) {
        unsigned d = (unsigned)s[i] - '0';
        if (d > 9) return NULL;
        v = v * 10 + d;
    }
    return PyLong_FromLongLong(neg ? -v : v);
}

static PyObject *decoded(const Spec *sp, const unsigned char *s, Py_ssize_t n) {
    if (sp->int_fast) {
        PyObject *v = plain_int(s, n);
        if (v != NULL || PyErr_Occurred()) return v;
    }
    PyObject *v;
    switch (sp->codec) {
    case 0: v = PyBytes_FromStringAndSize((const char *)s, n); break;
    case 1: v = PyUnicode_DecodeUTF8((const char *)s, n, NULL); break;
    case 2: v = PyUnicode_DecodeASCII((const char *)s, n, NULL); break;
    default: v = PyUnicode_Decode((const char *)s, n, sp->name, NULL); break;
    }
    if (v == NULL || sp->converter == NULL) return v;
    PyObject *c = PyObject_CallOneArg(sp->converter, v);
    Py_DECREF(v);
    return c;
}

static PyObject *value(const Spec *sp, const unsigned char *s, Py_ssize_t n) {
    PyObject *v = decoded(sp, s, n);
    if (v == NULL || sp->post == NULL) return v;
    if (!sp->post_all && (PyLong_CheckExact(v) || PyUnicode_CheckExact(v) || PyFloat_CheckExact(v) || PyBool_Check(v)))
        return v;
    PyObject *c = PyObject_CallOneArg(sp->post, v);
    Py_DECREF(v);
    return c;
}

/* One row packet's payload as a tuple, or a dict with ``names``; NULL with no exception when its columns
   do not fit it exactly. */
static PyObject *row(const unsigned char *p, const unsigned char *end, const Spec *specs, Py_ssize_t ncols,
                     PyObject *names) {
    PyObject *t = names == NULL ? PyTuple_New(ncols) : PyDict_New();
    if (t == NULL) return NULL;
    for (Py_ssize_t i = 0; i < ncols; i++) {
        int64_t n = lenenc(&p, end);
        PyObject *v;
        if (n == -2) {
            v = Py_NewRef(Py_None);  /* post(None) is None: not called */
        } else if (n < 0 || n > end - p) {
            Py_DECREF(t);
            return NULL;
        } else {
            v = value(&specs[i], p, (Py_ssize_t)n);
            if (v == NULL) {
                Py_DECREF(t);
                return NULL;
            }
            p += n;
        }
        if (names == NULL) {
            PyTuple_SET_ITEM(t, i, v);
        } else {
            int rc = PyDict_SetItem(t, PyTuple_GET_ITEM(names, i), v);
            Py_DECREF(v);
            if (rc < 0) {
                Py_DECREF(t);
                return NULL;
            }
        }
    }
    if (p != end) {
        Py_DECREF(t);
        return NULL;
    }
    return t;
}

static PyObject *rows(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer buf;
    Py_ssize_t pos;
    PyObject *spec_list, *out, *names = Py_None;
    int seq;
    if (!PyArg_ParseTuple(args, "y*nO!iO!|O", &buf, &pos, &PyTuple_Type, &spec_list, &seq, &PyList_Type, &out,
                          &names))
        return NULL;
    Py_ssize_t ncols = PyTuple_GET_SIZE(spec_list);
    if (names == Py_None) {
        names = NULL;
    } else if (!PyTuple_Check(names) || PyTuple_GET_SIZE(names) != ncols) {
        PyBuffer_Release(&buf);
        PyErr_SetString(PyExc_ValueError, "names must be a tuple with one name per column");
        return NULL;
    }
    Spec *specs = PyMem_Calloc(ncols ? ncols : 1, sizeof(Spec));
    PyObject *result = NULL;
    if (specs == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < ncols; i++) {
        PyObject *s = PyTuple_GET_ITEM(spec_list, i);
        PyObject *name, *conv, *post;
        if (!PyArg_ParseTuple(s, "iOOpOp", &specs[i].codec, &name, &conv, &specs[i].int_fast, &post,
                              &specs[i].post_all))
            goto done;
        specs[i].post = post == Py_None ? NULL : post;
        if (specs[i].codec == 3) {
            specs[i].name = PyUnicode_AsUTF8(name);
            if (specs[i].name == NULL) goto done;
        }
        specs[i].converter = conv == Py_None ? NULL : conv;
    }
    const unsigned char *data = buf.buf;
    Py_ssize_t len = buf.len;
    if (pos < 0 || pos > len) {
        PyErr_SetString(PyExc_ValueError, "pos outside the buffer");
        goto done;
    }
    int status = NEED;
    while (len - pos >= 4) {
        const unsigned char *h = data + pos;
        Py_ssize_t n = (Py_ssize_t)h[0] | ((Py_ssize_t)h[1] << 8) | ((Py_ssize_t)h[2] << 16);
        if (h[3] != (seq & 0xFF) || n >= MAX_PAYLOAD) {
            status = OTHER;
            break;
        }
        if (len - pos - 4 < n) break;  /* NEED */
        const unsigned char *p = h + 4, *end = p + n;
        if (n > 0 && p[0] == 0xFF) {
            status = OTHER;
            break;
        }
        if (n > 0 && n < 9 && p[0] == 0xFE) {  /* EOF: the end of the rows */
            pos += 4 + n;
            seq = (seq + 1) & 0xFF;
            status = END;
            break;
        }
        PyObject *t = row(p, end, specs, ncols, names);
        if (t == NULL) {
            if (PyErr_Occurred()) goto done;
            status = OTHER;
            break;
        }
        int rc = PyList_Append(out, t);
        Py_DECREF(t);
        if (rc < 0) goto done;
        pos += 4 + n;
        seq = (seq + 1) & 0xFF;
    }
    result = Py_BuildValue("nii", pos, seq, status);
done:
    PyMem_Free(specs);
    PyBuffer_Release(&buf);
    return result;
}

static PyMethodDef methods[] = {
    {"rows", rows, METH_VARARGS, "rows(buf, pos, specs, seq, out, names=None) -> (pos, seq, status): see the source."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_snapshot_native", NULL, -1, methods};

PyMODINIT_FUNC PyInit__snapshot_native(void) {
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddIntConstant(m, "NEED", NEED) < 0 || PyModule_AddIntConstant(m, "END", END) < 0 ||
        PyModule_AddIntConstant(m, "OTHER", OTHER) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
