/* The rows of one MySQL/MariaDB rows event, decoded straight to the stream's values.

   decode(data, start, end, plan, bitmaps, row_type, keys[, masks]) reads the row images in
   data[start:end] (the body of a WRITE/UPDATE/DELETE rows event after its column
   bitmaps) and returns a list with one dict per row: {keys[k]: row_type(...)} per image,
   each image mapping column name to the value readers/mysql/binlog/decode.py's RowConverter
   makes of the library's value (cdc/schema/values.py: DECIMAL as text, temporal types as ISO
   text, binary as base64, SET as 'a,b', ...). ``plan`` holds one (name, kind, a, b, obj)
   tuple per column (readers/mysql/binlog/native_rows.py builds it from the TABLE_MAP). With ``masks`` (a
   shape() plan naming the same columns in the same order) every image comes shaped, as shape() below makes it.

   It returns None for anything it does not vouch for (a value outside its type's valid
   range, a truncated row, a text that does not decode, a JSON document the callback
   refuses): the caller then decodes the whole event on the Python path, which yields or
   raises exactly what it always did.

   shape(rows, keys, plan, clear_type, out_type) is the transforms' column mapper (cdc/transforms/mapper.py) over
   such rows, for the masks it implements (native_rows.py builds ``plan`` from the mapper's mask plan): every
   image a new out_type dict of the kept columns in table order, excluded columns left out, masked values
   replaced (HMAC-SHA256 hex, truncate, keep_last, replace, null: masks.py's functions, byte for byte). None for
   anything it does not vouch for (an image not of clear_type, a value with no mask text): the caller then shapes
   in Python. It never returns an image holding a clear value of a masked or excluded column. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_sha256.h"

enum {
    K_INT = 1, K_UINT, K_FLOAT, K_DOUBLE, K_YEAR, K_DECIMAL, K_DATE, K_DATETIME, K_DATETIME2,
    K_TIMESTAMP, K_TIMESTAMP2, K_TIME, K_TIME2, K_UTF8, K_CODEC, K_B64, K_BINARY, K_ENUM, K_SET,
    K_BIT, K_CALL, K_LAST
};

#define OK 0
#define ERR (-1)
#define FALLBACK 1

typedef struct {
    PyObject *name;
    int kind;
    long a, b;
    PyObject *obj;
    const char *codec;
} Col;

static const uint64_t POW10[] = {1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL,
                                 100000000ULL, 1000000000ULL};
static const int DEC_BYTES[] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 4};
static const int FRAC_BYTES[] = {0, 1, 1, 2, 2, 3, 3};
static const long FRAC_UNIT_US[] = {1, 10000, 100, 1};

#define NEED(n) do { if ((size_t)(end - p) < (size_t)(n)) return FALLBACK; } while (0)

static uint64_t le(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static uint64_t be(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = (v << 8) | p[i];
    return v;
}

static PyObject *ascii(const char *s, Py_ssize_t n) { return PyUnicode_DecodeASCII(s, n, NULL); }

/* printf's "%0*llu" of v into o (at least ``width`` digits, zero-padded; o has room for 20): its length. */
static int zpad(char *o, unsigned long long v, int width) {
    char tmp[24];
    int k = 0, n = 0;
    do { tmp[k++] = (char)('0' + v % 10); v /= 10; } while (v);
    while (k + n < width) o[n++] = '0';
    while (k) o[n++] = tmp[--k];
    return n;
}

/* printf's "%0*ld" of v into o (o has room for 24). */
static int zpad_l(char *o, long v, int width) {
    if (v < 0) return snprintf(o, 24, "%0*ld", width, v);
    return zpad(o, (unsigned long long)v, width);
}

static int leap(long y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

static int days_in(long y, long m) {
    static const int D[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && leap(y) ? 29 : D[m - 1];
}

/* Python's date(y, m, d) accepts exactly these. */
static int valid_date(long y, long m, long d) {
    return y >= 1 && y <= 9999 && m >= 1 && m <= 12 && d >= 1 && d <= days_in(y, m);
}

static PyObject *iso_datetime(long y, long mo, long d, long h, long mi, long s, long us, int z) {
    char buf[200];  /* "%04ld-%02ld-%02ldT%02ld:%02ld:%02ld" [".%06ld"] */
    int n = zpad_l(buf, y, 4);
    buf[n++] = '-';
    n += zpad_l(buf + n, mo, 2);
    buf[n++] = '-';
    n += zpad_l(buf + n, d, 2);
    buf[n++] = 'T';
    n += zpad_l(buf + n, h, 2);
    buf[n++] = ':';
    n += zpad_l(buf + n, mi, 2);
    buf[n++] = ':';
    n += zpad_l(buf + n, s, 2);
    if (us) {
        buf[n++] = '.';
        n += zpad_l(buf + n, us, 6);
    }
    if (z) buf[n++] = 'Z';
    return ascii(buf, n);
}

/* cdc.schema.values.time_text of a signed number of microseconds. */
static PyObject *time_text(long long us) {
    char buf[48];  /* "%s%02llu:%02llu:%02llu" [".%06llu"] */
    unsigned long long a = us < 0 ? 0ULL - (unsigned long long)us : (unsigned long long)us;
    unsigned long long secs = a / 1000000ULL, frac = a % 1000000ULL;
    int n = 0;
    if (us < 0) buf[n++] = '-';
    n += zpad(buf + n, secs / 3600, 2);
    buf[n++] = ':';
    n += zpad(buf + n, secs % 3600 / 60, 2);
    buf[n++] = ':';
    n += zpad(buf + n, secs % 60, 2);
    if (frac) {
        buf[n++] = '.';
        n += zpad(buf + n, frac, 6);
    }
    return ascii(buf, n);
}

static PyObject *base64(const unsigned char *s, Py_ssize_t n, Py_ssize_t pad_to) {
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    Py_ssize_t len = n < pad_to ? pad_to : n;
    PyObject *out = PyUnicode_New(4 * ((len + 2) / 3), 127);
    if (out == NULL) return NULL;
    char *o = (char *)PyUnicode_1BYTE_DATA(out);
    Py_ssize_t i = 0;
#define AT(k) ((k) < n ? s[(k)] : 0)
    for (; i + 2 < len; i += 3) {
        uint32_t v = ((uint32_t)AT(i) << 16) | ((uint32_t)AT(i + 1) << 8) | AT(i + 2);
        *o++ = A[v >> 18]; *o++ = A[(v >> 12) & 63]; *o++ = A[(v >> 6) & 63]; *o++ = A[v & 63];
    }
    if (len - i == 1) {
        uint32_t v = (uint32_t)AT(i) << 16;
        *o++ = A[v >> 18]; *o++ = A[(v >> 12) & 63]; *o++ = '='; *o++ = '=';
    } else if (len - i == 2) {
        uint32_t v = ((uint32_t)AT(i) << 16) | ((uint32_t)AT(i + 1) << 8);
        *o++ = A[v >> 18]; *o++ = A[(v >> 12) & 63]; *o++ = A[(v >> 6) & 63]; *o++ = '=';
    }
#undef AT
    return out;
}

/* The library's __read_fsp: the fraction of a TIMESTAMP2/DATETIME2 in microseconds, -1 when invalid. */
static long read_fsp(const unsigned char **pp, const unsigned char *end, long fsp) {
    const unsigned char *p = *pp;
    int n = FRAC_BYTES[fsp];
    if ((size_t)(end - p) < (size_t)n) return -2;
    *pp = p + n;
    if (n == 0) return 0;
    if (p[0] & 0x80) return -1;  /* a negative fraction: never written by a server */
    long v = (long)be(p, n);
    if (fsp % 2) v /= 10;
    v *= (long)POW10[6 - fsp];
    return v;
}

/* The DECIMAL text format(Decimal(library text), "f") gives. */
static int decimal(const unsigned char **pp, const unsigned char *end, long precision, long scale, PyObject **out) {
    const unsigned char *p = *pp;
    long integral = precision - scale;
    int ui = (int)(integral / 9), ci = (int)(integral - ui * 9), uf = (int)(scale / 9), cf = (int)(scale - uf * 9);
    int size = DEC_BYTES[ci] + 4 * ui + 4 * uf + DEC_BYTES[cf];
    unsigned char b[64];
    char text[160];
    int t = 0;
    if (size <= 0 || size > (int)sizeof b) return FALLBACK;
    NEED(size);
    memcpy(b, p, size);
    int negative = !(b[0] & 0x80);
    b[0] ^= 0x80;
    if (negative)
        for (int i = 0; i < size; i++) b[i] = (unsigned char)~b[i];
    const unsigned char *q = b;
    char digits[160];
    int nd = 0;
    if (DEC_BYTES[ci]) {
        uint64_t v = be(q, DEC_BYTES[ci]);
        q += DEC_BYTES[ci];
        if (v >= POW10[ci]) return FALLBACK;
        nd += zpad(digits + nd, (unsigned long long)v, ci);
    }
    for (int i = 0; i < ui; i++, q += 4) {
        uint64_t v = be(q, 4);
        if (v >= POW10[9]) return FALLBACK;
        nd += zpad(digits + nd, (unsigned long long)v, 9);
    }
    if (negative) text[t++] = '-';
    int lead = 0;
    while (lead < nd && digits[lead] == '0') lead++;
    if (lead == nd) text[t++] = '0';
    else { memcpy(text + t, digits + lead, nd - lead); t += nd - lead; }
    if (scale > 0) {
        text[t++] = '.';
        for (int i = 0; i < uf; i++, q += 4) {
            uint64_t v = be(q, 4);
            if (v >= POW10[9]) return FALLBACK;
            t += zpad(text + t, (unsigned long long)v, 9);
        }
        if (DEC_BYTES[cf]) {
            uint64_t v = be(q, DEC_BYTES[cf]);
            if (v >= POW10[cf]) return FALLBACK;
            t += zpad(text + t, (unsigned long long)v, cf);
        }
    }
    *pp = p + size;
    *out = ascii(text, t);
    return *out ? OK : ERR;
}

/* days since 1970-01-01 -> civil date (H. Hinnant's algorithm). */
static void civil(long long z, long *y, long *m, long *d) {
    z += 719468;
    long long era = (z >= 0 ? z : z - 146096) / 146097;
    long long doe = z - era * 146097;
    long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    long long yy = yoe + era * 400;
    long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    long long mp = (5 * doy + 2) / 153;
    *d = (long)(doy - (153 * mp + 2) / 5 + 1);
    *m = (long)(mp < 10 ? mp + 3 : mp - 9);
    *y = (long)(yy + (*m <= 2));
}

static int length_prefixed(const unsigned char **pp, const unsigned char *end, int lenbytes,
                           const unsigned char **s, Py_ssize_t *n) {
    const unsigned char *p = *pp;
    if (lenbytes < 1 || lenbytes > 4) return FALLBACK;
    NEED(lenbytes);
    uint64_t len = le(p, lenbytes);
    p += lenbytes;
    NEED(len);
    *s = p;
    *n = (Py_ssize_t)len;
    *pp = p + len;
    return OK;
}

static int value(const Col *c, const unsigned char **pp, const unsigned char *end, PyObject **out) {
    const unsigned char *p = *pp;
    const unsigned char *s;
    Py_ssize_t n;
    int rc;
    switch (c->kind) {
    case K_INT: {
        int w = (int)c->a;
        NEED(w);
        uint64_t v = le(p, w);
        int64_t sv = w == 8 ? (int64_t)v : (v & (1ULL << (8 * w - 1))) ? (int64_t)(v - (1ULL << (8 * w))) : (int64_t)v;
        *pp = p + w;
        *out = PyLong_FromLongLong(sv);
        break;
    }
    case K_UINT: {
        int w = (int)c->a;
        NEED(w);
        *pp = p + w;
        *out = PyLong_FromUnsignedLongLong(le(p, w));
        break;
    }
    case K_FLOAT: {
        float f;
        NEED(4);
        memcpy(&f, p, 4);
        *pp = p + 4;
        *out = PyFloat_FromDouble((double)f);
        break;
    }
    case K_DOUBLE: {
        double d;
        NEED(8);
        memcpy(&d, p, 8);
        *pp = p + 8;
        *out = PyFloat_FromDouble(d);
        break;
    }
    case K_YEAR:
        NEED(1);
        *pp = p + 1;
        *out = PyLong_FromLong(p[0] == 0 ? 0 : 1900 + p[0]);
        break;
    case K_DECIMAL:
        return decimal(pp, end, c->a, c->b, out);
    case K_DATE: {
        NEED(3);
        uint64_t t = le(p, 3);
        long y = (long)((t >> 9) & 0x7FFF), m = (long)((t >> 5) & 15), d = (long)(t & 31);
        if (y == 0 || m == 0 || d == 0) { *pp = p + 3; Py_INCREF(Py_None); *out = Py_None; break; }
        if (!valid_date(y, m, d)) return FALLBACK;
        char buf[80];  /* "%04ld-%02ld-%02ld" */
        int k = zpad_l(buf, y, 4);
        buf[k++] = '-';
        k += zpad_l(buf + k, m, 2);
        buf[k++] = '-';
        k += zpad_l(buf + k, d, 2);
        *pp = p + 3;
        *out = ascii(buf, k);
        break;
    }
    case K_DATETIME: {
        NEED(8);
        uint64_t v = le(p, 8);
        if (v == 0) { *pp = p + 8; Py_INCREF(Py_None); *out = Py_None; break; }
        if (v >= 100000000000000ULL) return FALLBACK;
        uint64_t date = v / 1000000ULL, time = v % 1000000ULL;
        long y = (long)(date / 10000), m = (long)(date % 10000 / 100), d = (long)(date % 100);
        if (y == 0 || m == 0 || d == 0) { *pp = p + 8; Py_INCREF(Py_None); *out = Py_None; break; }
        long h = (long)(time / 10000), mi = (long)(time % 10000 / 100), sec = (long)(time % 100);
        if (!valid_date(y, m, d) || h > 23 || mi > 59 || sec > 59) return FALLBACK;
        *pp = p + 8;
        *out = iso_datetime(y, m, d, h, mi, sec, 0, 0);
        break;
    }
    case K_DATETIME2: {
        NEED(5);
        uint64_t v = be(p, 5);
        const unsigned char *q = p + 5;
        long ym = (long)((v >> 22) & 0x1FFFF);
        long y = ym / 13, m = ym % 13, d = (long)((v >> 17) & 31), h = (long)((v >> 12) & 31);
        long mi = (long)((v >> 6) & 63), sec = (long)(v & 63);
        long us = read_fsp(&q, end, c->a);
        if (us == -2) return FALLBACK;
        if (!valid_date(y, m, d) || h > 23 || mi > 59 || sec > 59) {  /* the library's ValueError: None */
            *pp = q;
            Py_INCREF(Py_None);
            *out = Py_None;
            break;
        }
        if (us < 0 || us >= 1000000) return FALLBACK;
        *pp = q;
        *out = iso_datetime(y, m, d, h, mi, sec, us, 0);
        break;
    }
    case K_TIMESTAMP:
    case K_TIMESTAMP2: {
        NEED(4);
        uint64_t secs;
        long us = 0;
        const unsigned char *q = p + 4;
        if (c->kind == K_TIMESTAMP) secs = le(p, 4);
        else {
            if (p[0] & 0x80) return FALLBACK;  /* before 1970: never written by a server */
            secs = be(p, 4);
            us = read_fsp(&q, end, c->a);
            if (us < 0 || us >= 1000000) return FALLBACK;
        }
        *pp = q;
        if (secs == 0 && us == 0) { Py_INCREF(Py_None); *out = Py_None; break; }  /* the zero TIMESTAMP */
        long y, m, d;
        civil((long long)(secs / 86400), &y, &m, &d);
        long r = (long)(secs % 86400);
        *out = iso_datetime(y, m, d, r / 3600, r % 3600 / 60, r % 60, us, 1);
        break;
    }
    case K_TIME: {
        NEED(3);
        long t = (long)le(p, 3);
        *pp = p + 3;
        *out = time_text((long long)((t / 10000) * 3600 + (t % 10000 / 100) * 60 + t % 100) * 1000000LL);
        break;
    }
    case K_TIME2: {
        int nf = FRAC_BYTES[c->a];
        NEED(3 + nf);
        long long v = (long long)be(p, 3 + nf) - ((long long)0x800000 << (8 * nf));
        long long a = v < 0 ? -v : v;
        long long hms = a >> (8 * nf), frac = a & ((1LL << (8 * nf)) - 1);
        long long us = (((hms >> 12) & 0x3FF) * 3600 + ((hms >> 6) & 0x3F) * 60 + (hms & 0x3F)) * 1000000LL
                       + frac * FRAC_UNIT_US[nf];
        *pp = p + 3 + nf;
        *out = time_text(v < 0 ? -us : us);
        break;
    }
    case K_UTF8:
        if ((rc = length_prefixed(pp, end, (int)c->a, &s, &n)) != OK) return rc;
        *out = PyUnicode_DecodeUTF8((const char *)s, n, NULL);
        if (*out == NULL) { PyErr_Clear(); *pp = p; return FALLBACK; }
        return OK;
    case K_CODEC:
        if ((rc = length_prefixed(pp, end, (int)c->a, &s, &n)) != OK) return rc;
        *out = PyUnicode_Decode((const char *)s, n, c->codec, "strict");
        if (*out == NULL) { PyErr_Clear(); *pp = p; return FALLBACK; }
        return OK;
    case K_B64:
    case K_BINARY:
        if ((rc = length_prefixed(pp, end, (int)c->a, &s, &n)) != OK) return rc;
        *out = base64(s, n, c->kind == K_BINARY ? (Py_ssize_t)c->b : 0);
        break;
    case K_ENUM: {
        int w = (int)c->a;
        NEED(w);
        uint64_t i = le(p, w);
        if (i >= (uint64_t)PyTuple_GET_SIZE(c->obj)) return FALLBACK;
        *pp = p + w;
        *out = PyTuple_GET_ITEM(c->obj, (Py_ssize_t)i);
        Py_INCREF(*out);
        break;
    }
    case K_SET: {
        int w = (int)c->a;
        NEED(w);
        uint64_t mask = le(p, w);
        Py_ssize_t labels = PyTuple_GET_SIZE(c->obj);
        *pp = p + w;
        PyObject *parts = PyList_New(0);
        if (parts == NULL) return ERR;
        for (Py_ssize_t i = 0; i < labels && i < 64; i++)
            if (mask >> i & 1 && PyList_Append(parts, PyTuple_GET_ITEM(c->obj, i)) < 0) {
                Py_DECREF(parts);
                return ERR;
            }
        static PyObject *comma = NULL;
        if (comma == NULL && (comma = PyUnicode_InternFromString(",")) == NULL) { Py_DECREF(parts); return ERR; }
        *out = PyUnicode_Join(comma, parts);
        Py_DECREF(parts);
        break;
    }
    case K_BIT: {
        int w = (int)c->a, endbits = (int)c->b;
        NEED(w);
        uint64_t v = (uint64_t)(p[0] & ((1u << endbits) - 1));
        for (int i = 1; i < w; i++) v = (v << 8) | p[i];
        *pp = p + w;
        *out = PyLong_FromUnsignedLongLong(v);
        break;
    }
    case K_CALL:
        if ((rc = length_prefixed(pp, end, (int)c->a, &s, &n)) != OK) return rc;
        {
            PyObject *raw = PyBytes_FromStringAndSize((const char *)s, n);
            if (raw == NULL) return ERR;
            *out = PyObject_CallOneArg(c->obj, raw);
            Py_DECREF(raw);
        }
        if (*out == NULL) { PyErr_Clear(); *pp = p; return FALLBACK; }
        return OK;
    default:
        return FALLBACK;
    }
    return *out ? OK : ERR;
}

/* -- shape: the masks over decoded rows ------------------------------------------------------------------ */

enum { S_KEEP = 1, S_DROP, S_HASH, S_TRUNCATE, S_KEEP_LAST, S_REPLACE, S_NULL, S_LAST };

typedef struct {
    PyObject *name;
    int action;
    Py_ssize_t length;          /* S_TRUNCATE, S_KEEP_LAST */
    PyObject *obj;              /* S_REPLACE: the replacement str */
    uint32_t inner[8], outer[8];  /* S_HASH: the keyed states */
} Mask;

/* masks.text_of: a str itself, a bool '1'/'0', an int's decimal digits; NULL (no error set) for any other type. */
static PyObject *mask_text(PyObject *v) {
    if (PyUnicode_Check(v)) { Py_INCREF(v); return v; }
    if (PyBool_Check(v)) return PyUnicode_FromString(v == Py_True ? "1" : "0");
    if (PyLong_Check(v)) return PyObject_Str(v);
    return NULL;
}

/* The masked value of a non-None ``v`` (new reference): OK, ERR, or FALLBACK (no mask text, text not UTF-8). */
static int mask_value(const Mask *m, PyObject *v, PyObject **out) {
    if (m->action == S_NULL) { Py_INCREF(Py_None); *out = Py_None; return OK; }
    if (m->action == S_REPLACE) { Py_INCREF(m->obj); *out = m->obj; return OK; }
    PyObject *text = mask_text(v);
    if (text == NULL) { if (PyErr_Occurred()) return ERR; return FALLBACK; }
    if (m->action == S_HASH) {
        Py_ssize_t n;
        const char *s = PyUnicode_AsUTF8AndSize(text, &n);  /* what str.encode() gives */
        if (s == NULL) { Py_DECREF(text); PyErr_Clear(); return FALLBACK; }
        *out = PyUnicode_New(64, 127);
        if (*out != NULL) hmac_hex(m->inner, m->outer, (const unsigned char *)s, (size_t)n,
                                  (char *)PyUnicode_1BYTE_DATA(*out));
    } else if (m->action == S_TRUNCATE) {  /* text[:length] */
        *out = PyUnicode_Substring(text, 0, m->length);
    } else {  /* S_KEEP_LAST: "*" * hidden + text[hidden:] */
        Py_ssize_t len = PyUnicode_GET_LENGTH(text), hidden = len > m->length ? len - m->length : 0;
        *out = NULL;
        PyObject *stars = PyUnicode_New(hidden, 127);
        if (stars != NULL) {
            memset(PyUnicode_1BYTE_DATA(stars), '*', (size_t)hidden);
            PyObject *rest = PyUnicode_Substring(text, hidden, len);
            if (rest != NULL) { *out = PyUnicode_Concat(stars, rest); Py_DECREF(rest); }
            Py_DECREF(stars);
        }
    }
    Py_DECREF(text);
    return *out ? OK : ERR;
}

static int shape_image(const Mask *masks, Py_ssize_t n, PyObject *image, PyTypeObject *out_type, PyObject *empty,
                       PyObject **out) {
    PyObject *values = out_type->tp_new(out_type, empty, NULL);
    if (values == NULL) return ERR;
    int atomic = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        const Mask *m = &masks[i];
        if (m->action == S_DROP) continue;
        PyObject *v = PyDict_GetItemWithError(image, m->name);  /* borrowed; absent: None, as values.get */
        if (v == NULL && PyErr_Occurred()) { Py_DECREF(values); return ERR; }
        if (v == NULL) v = Py_None;
        Py_INCREF(v);
        if (m->action != S_KEEP && v != Py_None) {
            PyObject *masked = NULL;
            int rc = mask_value(m, v, &masked);
            Py_DECREF(v);
            if (rc != OK) { Py_DECREF(values); return rc; }
            v = masked;
        }
        if (PyObject_IS_GC(v)) atomic = 0;
        int bad = PyDict_SetItem(values, m->name, v);
        Py_DECREF(v);
        if (bad < 0) { Py_DECREF(values); return ERR; }
    }
    if (atomic) PyObject_GC_UnTrack(values);  /* as image() does: see there */
    *out = values;
    return OK;
}

static int parse_masks(PyObject *plan, Mask *masks) {
    Py_ssize_t n = PyTuple_GET_SIZE(plan);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = PyTuple_GET_ITEM(plan, i);
        Mask *m = &masks[i];
        if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 3 || !PyUnicode_Check(PyTuple_GET_ITEM(t, 0))) {
            PyErr_SetString(PyExc_TypeError, "mask plan entries are (name, action, arg)");
            return -1;
        }
        m->name = PyTuple_GET_ITEM(t, 0);
        m->action = (int)PyLong_AsLong(PyTuple_GET_ITEM(t, 1));
        m->obj = PyTuple_GET_ITEM(t, 2);
        m->length = 0;
        if (PyErr_Occurred()) return -1;
        if (m->action <= 0 || m->action >= S_LAST) {
            PyErr_Format(PyExc_ValueError, "unknown mask action %d", m->action);
            return -1;
        }
        if (m->action == S_HASH) {
            if (!PyBytes_Check(m->obj) || PyBytes_GET_SIZE(m->obj) != 64) {
                PyErr_SetString(PyExc_TypeError, "a hash mask carries the 64 bytes hmac_key() made");
                return -1;
            }
            memcpy(m->inner, PyBytes_AS_STRING(m->obj), 32);
            memcpy(m->outer, PyBytes_AS_STRING(m->obj) + 32, 32);
        }
        if (m->action == S_TRUNCATE || m->action == S_KEEP_LAST) {
            m->length = PyLong_AsSsize_t(m->obj);
            if (m->length < 0) {
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a mask length below 0");
                return -1;
            }
        }
        if (m->action == S_REPLACE && !PyUnicode_CheckExact(m->obj)) {
            PyErr_SetString(PyExc_TypeError, "a replace mask carries a str");
            return -1;
        }
    }
    return 0;
}

static int popcount(const unsigned char *b, Py_ssize_t n) {
    int c = 0;
    for (Py_ssize_t i = 0; i < n; i++) c += __builtin_popcount(b[i]);
    return c;
}

/* One row image: returns OK with *out a new row_type instance, ERR, or FALLBACK. */
static int image(const Col *cols, const Mask *masks, Py_ssize_t ncols, PyObject *bitmap, PyTypeObject *row_type,
                 PyObject *empty, const unsigned char **pp, const unsigned char *end, PyObject **out) {
    const unsigned char *p = *pp;
    const unsigned char *bm = (const unsigned char *)PyBytes_AS_STRING(bitmap);
    Py_ssize_t bmlen = PyBytes_GET_SIZE(bitmap);
    if (bmlen * 8 < ncols) return FALLBACK;
    Py_ssize_t nnull = (popcount(bm, bmlen) + 7) / 8;
    NEED(nnull);
    const unsigned char *nulls = p;
    p += nnull;
    PyObject *values = row_type->tp_new(row_type, empty, NULL);
    if (values == NULL) return ERR;
    Py_ssize_t idx = 0;
    int atomic = 1;  /* every value str, int, float or None: nothing a reference cycle could run through */
    for (Py_ssize_t i = 0; i < ncols; i++) {
        PyObject *v = NULL;
        if (!(bm[i >> 3] >> (i & 7) & 1)) {
            v = Py_None;
            Py_INCREF(v);
        } else {
            if (nulls[idx >> 3] >> (idx & 7) & 1) {
                v = Py_None;
                Py_INCREF(v);
            } else {
                int rc = value(&cols[i], &p, end, &v);
                if (rc != OK) { Py_DECREF(values); return rc; }
            }
            idx++;
        }
        if (masks != NULL && masks[i].action != S_KEEP) {  /* the table's shape (decode(..., masks)) */
            if (masks[i].action == S_DROP) { Py_DECREF(v); continue; }
            if (v != Py_None) {
                PyObject *masked = NULL;
                int rc = mask_value(&masks[i], v, &masked);
                Py_DECREF(v);
                if (rc != OK) { Py_DECREF(values); return rc; }
                v = masked;
            }
        }
        if (PyObject_IS_GC(v)) atomic = 0;
        int bad = PyDict_SetItem(values, cols[i].name, v);
        Py_DECREF(v);
        if (bad < 0) { Py_DECREF(values); return ERR; }
    }
    /* A row image of atomic values cannot be part of a cycle: keep it out of the cyclic collector's lists,
       as CPython does for such plain dicts (a dict tracks itself again when a container is put in it).
       Tracked, the images of a big transaction made every collection walk them (~0.5 us per row, measured).
       The {key: image} dict around it stays tracked: the library's events are reference cycles (packet <->
       event) that only the collector frees, and with no tracked object per row it ran its full collections
       so rarely that dead events and their rows piled up (reader peak RSS 75 -> 89 MB over 1,000,000 rows;
       80 MB with the outer dict tracked). */
    if (atomic) PyObject_GC_UnTrack(values);
    *pp = p;
    *out = values;
    return OK;
}

static int parse_plan(PyObject *plan, Col *cols) {
    Py_ssize_t n = PyTuple_GET_SIZE(plan);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = PyTuple_GET_ITEM(plan, i);
        Col *c = &cols[i];
        if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 5) {
            PyErr_SetString(PyExc_TypeError, "plan entries are (name, kind, a, b, obj)");
            return -1;
        }
        c->name = PyTuple_GET_ITEM(t, 0);
        c->kind = (int)PyLong_AsLong(PyTuple_GET_ITEM(t, 1));
        c->a = PyLong_AsLong(PyTuple_GET_ITEM(t, 2));
        c->b = PyLong_AsLong(PyTuple_GET_ITEM(t, 3));
        c->obj = PyTuple_GET_ITEM(t, 4);
        c->codec = NULL;
        if (PyErr_Occurred()) return -1;
        if (c->kind <= 0 || c->kind >= K_LAST) {
            PyErr_Format(PyExc_ValueError, "unknown plan kind %d", c->kind);
            return -1;
        }
        if ((c->kind == K_ENUM || c->kind == K_SET) && !PyTuple_Check(c->obj)) {
            PyErr_SetString(PyExc_TypeError, "ENUM/SET plan entries carry a tuple of labels");
            return -1;
        }
        if ((c->kind == K_DATETIME2 || c->kind == K_TIMESTAMP2 || c->kind == K_TIME2) && (c->a < 0 || c->a > 6)) {
            PyErr_SetString(PyExc_ValueError, "fractional precision outside 0..6");
            return -1;
        }
        if ((c->kind == K_INT || c->kind == K_UINT) && c->a != 1 && c->a != 2 && c->a != 3 && c->a != 4 && c->a != 8) {
            PyErr_SetString(PyExc_ValueError, "integer plan entry of 1, 2, 3, 4 or 8 bytes");
            return -1;
        }
        if ((c->kind == K_ENUM || c->kind == K_SET) && (c->a < 1 || c->a > 8)) {
            PyErr_SetString(PyExc_ValueError, "ENUM/SET plan entry outside 1..8 bytes");
            return -1;
        }
        if (c->kind == K_BINARY && (c->b < 0 || c->b > 65535)) {
            PyErr_SetString(PyExc_ValueError, "BINARY width outside 0..65535");
            return -1;
        }
        if (c->kind == K_CODEC && (c->codec = PyUnicode_AsUTF8(c->obj)) == NULL) return -1;
        if (c->kind == K_BIT && (c->a < 1 || c->a > 8 || c->b < 1 || c->b > 8)) {
            PyErr_SetString(PyExc_ValueError, "BIT plan entry outside 1..8 bytes");
            return -1;
        }
        if (c->kind == K_CALL && !PyCallable_Check(c->obj)) {
            PyErr_SetString(PyExc_TypeError, "a callback plan entry carries a callable");
            return -1;
        }
    }
    return 0;
}

static PyObject *decode(PyObject *self, PyObject *args) {
    Py_buffer buf;
    Py_ssize_t start, stop;
    PyObject *plan, *bitmaps, *keys, *mask_plan = Py_None;
    PyTypeObject *row_type;
    if (!PyArg_ParseTuple(args, "y*nnO!O!O!O!|O", &buf, &start, &stop, &PyTuple_Type, &plan, &PyTuple_Type, &bitmaps,
                          &PyType_Type, &row_type, &PyTuple_Type, &keys, &mask_plan))
        return NULL;
    PyObject *result = NULL, *rows = NULL, *empty = NULL;
    Py_ssize_t ncols = PyTuple_GET_SIZE(plan), nimg = PyTuple_GET_SIZE(bitmaps);
    Col *cols = PyMem_Calloc(ncols ? ncols : 1, sizeof(Col));
    Mask *masks = NULL;
    if (cols == NULL) { PyErr_NoMemory(); goto done; }
    if (mask_plan != Py_None) {  /* one (name, action, arg) per plan column, the same names in the same order */
        if (!PyTuple_Check(mask_plan) || PyTuple_GET_SIZE(mask_plan) != ncols) {
            PyErr_SetString(PyExc_ValueError, "a mask plan has one entry per plan column");
            goto done;
        }
        if ((masks = PyMem_Calloc(ncols ? ncols : 1, sizeof(Mask))) == NULL) { PyErr_NoMemory(); goto done; }
        if (parse_masks(mask_plan, masks) < 0) goto done;
    }
    if (!PyType_IsSubtype(row_type, &PyDict_Type)) {
        PyErr_SetString(PyExc_TypeError, "row_type must be a dict subclass");
        goto done;
    }
    if (nimg < 1 || nimg > 2 || PyTuple_GET_SIZE(keys) != nimg) {
        PyErr_SetString(PyExc_ValueError, "one or two images, one key each");
        goto done;
    }
    for (Py_ssize_t k = 0; k < nimg; k++)
        if (!PyBytes_Check(PyTuple_GET_ITEM(bitmaps, k))) {
            PyErr_SetString(PyExc_TypeError, "bitmaps are bytes");
            goto done;
        }
    if (start < 0 || stop < start || stop > buf.len) {
        PyErr_SetString(PyExc_ValueError, "start/end outside the buffer");
        goto done;
    }
    if (parse_plan(plan, cols) < 0) goto done;
    for (Py_ssize_t i = 0; masks != NULL && i < ncols; i++) {
        int same = PyUnicode_Compare(masks[i].name, cols[i].name);
        if (same != 0) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a mask plan names the plan's columns in order");
            goto done;
        }
    }
    if ((empty = PyTuple_New(0)) == NULL || (rows = PyList_New(0)) == NULL) goto done;
    const unsigned char *p = (const unsigned char *)buf.buf + start, *end = (const unsigned char *)buf.buf + stop;
    while (p < end) {
        PyObject *row = PyDict_New();
        if (row == NULL) goto done;
        for (Py_ssize_t k = 0; k < nimg; k++) {
            PyObject *values = NULL;
            int rc = image(cols, masks, ncols, PyTuple_GET_ITEM(bitmaps, k), row_type, empty, &p, end, &values);
            if (rc == FALLBACK) {
                Py_DECREF(row);
                Py_INCREF(Py_None);
                result = Py_None;
                goto done;
            }
            if (rc != OK || PyDict_SetItem(row, PyTuple_GET_ITEM(keys, k), values) < 0) {
                Py_XDECREF(values);
                Py_DECREF(row);
                goto done;
            }
            Py_DECREF(values);
        }
        int bad = PyList_Append(rows, row);
        Py_DECREF(row);
        if (bad < 0) goto done;
    }
    result = rows;
    rows = NULL;
done:
    Py_XDECREF(rows);
    Py_XDECREF(empty);
    PyMem_Free(masks);
    PyMem_Free(cols);
    PyBuffer_Release(&buf);
    return result;
}


static PyObject *shape(PyObject *self, PyObject *args) {
    PyObject *rows, *keys, *plan;
    PyTypeObject *clear_type, *out_type;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!", &PyList_Type, &rows, &PyTuple_Type, &keys, &PyTuple_Type, &plan,
                          &PyType_Type, &clear_type, &PyType_Type, &out_type))
        return NULL;
    if (!PyType_IsSubtype(out_type, &PyDict_Type)) {
        PyErr_SetString(PyExc_TypeError, "out_type must be a dict subclass");
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(plan), nimg = PyTuple_GET_SIZE(keys), nrows = PyList_GET_SIZE(rows);
    PyObject *result = NULL, *out = NULL, *empty = NULL;
    Mask *masks = PyMem_Calloc(n ? n : 1, sizeof(Mask));
    if (masks == NULL) { PyErr_NoMemory(); return NULL; }
    if (parse_masks(plan, masks) < 0) goto done;
    if ((empty = PyTuple_New(0)) == NULL || (out = PyList_New(nrows)) == NULL) goto done;
    for (Py_ssize_t r = 0; r < nrows; r++) {
        PyObject *row = PyList_GET_ITEM(rows, r);
        if (!PyDict_CheckExact(row)) goto fallback;
        PyObject *shaped = PyDict_New();
        if (shaped == NULL) goto done;
        PyList_SET_ITEM(out, r, shaped);
        int atomic = 1;  /* images of atomic values only: this dict cannot be in a cycle either (see image()) */
        for (Py_ssize_t k = 0; k < nimg; k++) {
            PyObject *key = PyTuple_GET_ITEM(keys, k);
            PyObject *image = PyDict_GetItemWithError(row, key);
            if (image == NULL) { if (PyErr_Occurred()) goto done; goto fallback; }
            if (Py_TYPE(image) != clear_type) goto fallback;  /* only the native pass's images: nothing to convert */
            PyObject *values = NULL;
            int rc = shape_image(masks, n, image, out_type, empty, &values);
            if (rc == FALLBACK) goto fallback;
            if (rc != OK) goto done;
            if (PyObject_GC_IsTracked(values)) atomic = 0;
            int bad = PyDict_SetItem(shaped, key, values);
            Py_DECREF(values);
            if (bad < 0) goto done;
        }
        if (atomic) PyObject_GC_UnTrack(shaped);  /* the clear rows keep the collector's pace, as before */
    }
    result = out;
    out = NULL;
    goto done;
fallback:
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(out);
    Py_XDECREF(empty);
    PyMem_Free(masks);
    return result;
}

static PyObject *hmac_key(PyObject *self, PyObject *arg) {
    if (!PyBytes_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "the key is bytes");
        return NULL;
    }
    uint32_t st[16];
    hmac_states((const unsigned char *)PyBytes_AS_STRING(arg), (size_t)PyBytes_GET_SIZE(arg), st, st + 8);
    return PyBytes_FromStringAndSize((const char *)st, sizeof st);
}

static PyObject *hmac_sha256_hex(PyObject *self, PyObject *args) {
    Py_buffer key, msg;
    if (!PyArg_ParseTuple(args, "y*y*", &key, &msg)) return NULL;
    PyObject *out = NULL;
    if (key.len != 64) PyErr_SetString(PyExc_ValueError, "the 64 bytes hmac_key() made");
    else if ((out = PyUnicode_New(64, 127)) != NULL) {
        uint32_t st[16];
        memcpy(st, key.buf, sizeof st);
        hmac_hex(st, st + 8, (const unsigned char *)msg.buf, (size_t)msg.len, (char *)PyUnicode_1BYTE_DATA(out));
    }
    PyBuffer_Release(&key);
    PyBuffer_Release(&msg);
    return out;
}

static PyObject *use_sha_ni(PyObject *self, PyObject *arg) {
    int allow = PyObject_IsTrue(arg);
    if (allow < 0) return NULL;
    return PyBool_FromLong(sha256_select(allow));
}

static PyMethodDef methods[] = {
    {"decode", decode, METH_VARARGS,
     "decode(data, start, end, plan, bitmaps, row_type, keys[, masks]) -> list of row dicts (shaped by ``masks``, "
     "a shape() plan), or None: the Python path decides"},
    {"shape", shape, METH_VARARGS,
     "shape(rows, keys, plan, clear_type, out_type) -> the rows with every image shaped, or None: Python shapes"},
    {"hmac_key", hmac_key, METH_O, "hmac_key(key) -> the 64 bytes of the keyed states shape()'s hash mask takes"},
    {"hmac_sha256_hex", hmac_sha256_hex, METH_VARARGS, "hmac_sha256_hex(hmac_key(key), msg) -> hex digest"},
    {"use_sha_ni", use_sha_ni, METH_O, "use_sha_ni(allow) -> whether the SHA extensions compress from now on"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_rows_native", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__rows_native(void) {
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
#define KIND(name) if (PyModule_AddIntConstant(m, #name, name) < 0) { Py_DECREF(m); return NULL; }
    KIND(K_INT) KIND(K_UINT) KIND(K_FLOAT) KIND(K_DOUBLE) KIND(K_YEAR) KIND(K_DECIMAL) KIND(K_DATE)
    KIND(K_DATETIME) KIND(K_DATETIME2) KIND(K_TIMESTAMP) KIND(K_TIMESTAMP2) KIND(K_TIME) KIND(K_TIME2)
    KIND(K_UTF8) KIND(K_CODEC) KIND(K_B64) KIND(K_BINARY) KIND(K_ENUM) KIND(K_SET) KIND(K_BIT) KIND(K_CALL)
    KIND(S_KEEP) KIND(S_DROP) KIND(S_HASH) KIND(S_TRUNCATE) KIND(S_KEEP_LAST) KIND(S_REPLACE) KIND(S_NULL)
#undef KIND
    if (PyModule_AddIntConstant(m, "SHA_NI", sha256_select(1)) < 0) { Py_DECREF(m); return NULL; }
    return m;
}
