/* FastStream.fetchone's decoding step in C: the same event objects from the same packet bytes.

   event(stream, data) takes one binlog packet (the OK byte, the 19-byte event header, the body, the CRC32 when
   the stream reads checksums) that readers/mysql/binlog/fastevents.py's FastStream has read, and returns what
   fastevents.py's Python path returns for it when that path decodes it below the library:

   - a FastGtid, FastXid or FastBegin (fastevents.decode),
   - a FastTableMap for a TABLE_MAP whose bytes the stream's cache holds (the Table put back in the stream's table
     map),
   - the library's rows event class with its rows decoded by _rows_native.decode (fastevents.fast_rows),

   with the stream's ``log_pos`` moved as fetchone moves it. Anything else returns None with nothing changed:
   fetchone then takes the packet on its Python path, which decides as it always did (the library, a TABLE_MAP
   not cached yet, a table whose native plan is not made yet, any flag or length that path does not take). The
   rules are fastevents.py's, condition for condition; tests/unit/readers/mysql/binlog/test_events_native.py holds
   the two equal over generated packets, valid and damaged.

   setup(names) hands over the Python objects the results are made of, once, before the first event(). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* the decimal digits of v at o (as %llu prints them); returns the end */
static char *put_dec(char *o, unsigned long long v) {
    char tmp[24];
    int k = 0;
    do { tmp[k++] = (char)('0' + v % 10); v /= 10; } while (v);
    while (k) *o++ = tmp[--k];
    return o;
}

enum { QUERY_EVENT = 0x02, XID_EVENT = 0x10, TABLE_MAP_EVENT = 0x13, GTID_LOG_EVENT = 0x21,
       MARIADB_GTID_EVENT = 0xA2, MARIADB_XA = 0x40 | 0x80 };

static PyObject *FastGtid, *FastXid, *FastBegin, *FastTableMap, *FastPacket, *Rows, *Decode, *ConvertedRow,
    *ShapedRow, *RowsEvent, *FetchRows, *TableMapEvent, *CachedInit, *Inflated;
static PyObject *s_use_checksum, *s_is_mariadb, *s_lengths, *s_only_tables, *s_ignored_tables, *s_only_schemas,
    *s_ignored_schemas, *s_ignore_errors, *s_table_map, *s_table_maps, *s_shapes, *s_log_pos, *s_fetch_rows,
    *s_init, *s_dict, *s_native_plan, *s_schema, *s_table, *s_columns;
static PyObject *s_gtid, *s_timestamp, *s_flags, *s_thread, *s_table_id, *s_null_bitmask, *s_server_id,
    *s_event_type, *s_event_size, *s_packet, *s_number_of_columns, *s_bitmap, *s_bitmap2, *s_complete,
    *s_processed, *s_partial_json, *s_rows;
static PyObject *s_unread, *s_inflater, *s_current_timeout, *s_read_timeout, *s_pending, *s_rfile, *s_next_seq_id,
    *s_peek, *s_read;

static uint64_t le(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

/* a new instance of the Python class ``cls`` (its __new__, not its __init__) with ``n`` attributes set */
static PyObject *make(PyObject *cls, int n, PyObject **names, PyObject **values) {
    PyObject *empty = PyTuple_New(0);
    if (empty == NULL) return NULL;
    PyObject *obj = ((PyTypeObject *)cls)->tp_new((PyTypeObject *)cls, empty, NULL);
    Py_DECREF(empty);
    if (obj == NULL) return NULL;
    for (int i = 0; i < n; i++) {
        if (values[i] == NULL || PyObject_SetAttr(obj, names[i], values[i]) < 0) {
            Py_DECREF(obj);
            return NULL;
        }
    }
    return obj;
}

/* make() that takes (steals) the references in ``values`` */
static PyObject *make_stealing(PyObject *cls, int n, PyObject **names, PyObject **values) {
    PyObject *obj = NULL;
    int complete = 1;
    for (int i = 0; i < n; i++) complete &= values[i] != NULL;
    if (complete) obj = make(cls, n, names, values);
    for (int i = 0; i < n; i++) Py_XDECREF(values[i]);
    return obj;
}

/* 1: the attribute is None; 0: it is not; -1: error */
static int attr_is_none(PyObject *obj, PyObject *name) {
    PyObject *v = PyObject_GetAttr(obj, name);
    if (v == NULL) return -1;
    int r = v == Py_None;
    Py_DECREF(v);
    return r;
}

static int truthy_attr(PyObject *obj, PyObject *name) {
    PyObject *v = PyObject_GetAttr(obj, name);
    if (v == NULL) return -1;
    int r = PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

static int set_log_pos(PyObject *stream, uint64_t log_pos) {
    if (!log_pos) return 0;
    PyObject *v = PyLong_FromUnsignedLongLong(log_pos);
    if (v == NULL) return -1;
    int r = PyObject_SetAttr(stream, s_log_pos, v);
    Py_DECREF(v);
    return r;
}

/* fastevents.decode for a GTID, XID or BEGIN packet; Py_None when it does not take it */
static PyObject *small(const unsigned char *d, Py_ssize_t n, int checksum, int mariadb, long qph) {
    int code = d[5];
    Py_ssize_t end = checksum ? n - 4 : n;
    uint32_t ts = (uint32_t)le(d + 1, 4);
    uint64_t log_pos = le(d + 14, 4);
    if (code == XID_EVENT) {
        if (end - 20 != 8) Py_RETURN_NONE;
        PyObject *names[] = {s_timestamp, s_log_pos};
        PyObject *values[] = {PyLong_FromUnsignedLong(ts), PyLong_FromUnsignedLongLong(log_pos)};
        return make_stealing(FastXid, 2, names, values);
    }
    if (code == MARIADB_GTID_EVENT) {
        if (!mariadb || end - 20 < 13 || d[32] & MARIADB_XA) Py_RETURN_NONE;
        unsigned long long seq = le(d + 20, 8);
        unsigned long domain = (unsigned long)le(d + 28, 4), server_id = (unsigned long)le(d + 6, 4);
        PyObject *names[] = {s_gtid, s_timestamp, s_flags, s_log_pos};
        char text[72], *o = put_dec(text, domain); /* "%lu-%lu-%llu", without PyUnicode_FromFormat's parsing */
        *o++ = '-';
        o = put_dec(o, server_id);
        *o++ = '-';
        o = put_dec(o, seq);
        PyObject *values[] = {PyUnicode_FromKindAndData(PyUnicode_1BYTE_KIND, text, o - text),
                              PyLong_FromUnsignedLong(ts), PyLong_FromLong(d[32]),
                              PyLong_FromUnsignedLongLong(log_pos)};
        return make_stealing(FastGtid, 4, names, values);
    }
    if (code == GTID_LOG_EVENT) {
        if (mariadb || end - 20 < 42) Py_RETURN_NONE;
        static const char hex[] = "0123456789abcdef";
        char text[64];
        int k = 0;
        for (int i = 0; i < 16; i++) {
            if (i == 4 || i == 6 || i == 8 || i == 10) text[k++] = '-';
            text[k++] = hex[d[21 + i] >> 4];
            text[k++] = hex[d[21 + i] & 15];
        }
        text[k++] = ':'; /* "%s:%llu" */
        char *o = put_dec(text + k, (unsigned long long)le(d + 37, 8));
        PyObject *names[] = {s_gtid, s_timestamp, s_flags, s_log_pos};
        PyObject *values[] = {PyUnicode_FromKindAndData(PyUnicode_1BYTE_KIND, text, o - text),
                              PyLong_FromUnsignedLong(ts), PyLong_FromLong(1), PyLong_FromUnsignedLongLong(log_pos)};
        return make_stealing(FastGtid, 4, names, values);
    }
    if (code == QUERY_EVENT) {
        if (mariadb || qph != 13 || end - 20 < 13 + 6) Py_RETURN_NONE;
        Py_ssize_t schema_len = d[28], status_len = (Py_ssize_t)le(d + 31, 2);
        if (d[29] != 0 || d[30] != 0) Py_RETURN_NONE;
        Py_ssize_t q = 33 + status_len + schema_len;
        if (q >= end || d[q] != 0 || end - (q + 1) != 5 || memcmp(d + q + 1, "BEGIN", 5) != 0) Py_RETURN_NONE;
        PyObject *names[] = {s_thread, s_timestamp, s_log_pos};
        PyObject *values[] = {PyLong_FromUnsignedLong((unsigned long)le(d + 20, 4)), PyLong_FromUnsignedLong(ts),
                              PyLong_FromUnsignedLongLong(log_pos)};
        return make_stealing(FastBegin, 3, names, values);
    }
    Py_RETURN_NONE;
}

/* the TABLE_MAP fast path of fetchone when its bytes are cached; Py_None otherwise */
static PyObject *table_map(PyObject *stream, const unsigned char *d, Py_ssize_t n, int checksum) {
    PyObject *init = PyObject_GetAttr(TableMapEvent, s_init);
    if (init == NULL) return NULL;
    int cached = init == CachedInit;
    Py_DECREF(init);
    if (!cached) Py_RETURN_NONE;
    PyObject *maps = PyObject_GetAttr(stream, s_table_maps);
    if (maps == NULL) return NULL;
    if (!PyDict_Check(maps)) {
        Py_DECREF(maps);
        Py_RETURN_NONE;
    }
    Py_ssize_t end = checksum ? n - 4 : n;
    PyObject *key = PyBytes_FromStringAndSize((const char *)d + 20, end > 20 ? end - 20 : 0);
    if (key == NULL) {
        Py_DECREF(maps);
        return NULL;
    }
    PyObject *known = PyDict_GetItemWithError(maps, key);  /* borrowed */
    Py_DECREF(key);
    if (known == NULL) {
        Py_DECREF(maps);
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NONE;
    }
    Py_INCREF(known);
    Py_DECREF(maps);
    if (!PyTuple_Check(known) || PyTuple_GET_SIZE(known) != 3) {
        Py_DECREF(known);
        Py_RETURN_NONE;
    }
    uint64_t log_pos = le(d + 14, 4);
    PyObject *tmap = PyObject_GetAttr(stream, s_table_map);
    PyObject *result = NULL;
    if (tmap != NULL && set_log_pos(stream, log_pos) == 0
        && PyObject_SetItem(tmap, PyTuple_GET_ITEM(known, 0), PyTuple_GET_ITEM(known, 1)) == 0) {
        PyObject *names[] = {s_table_id, s_null_bitmask, s_log_pos};
        PyObject *values[] = {PyTuple_GET_ITEM(known, 0), PyTuple_GET_ITEM(known, 2), NULL};
        values[2] = PyLong_FromUnsignedLongLong(log_pos);
        if (values[2] != NULL) {
            result = make(FastTableMap, 3, names, values);
            Py_DECREF(values[2]);
        }
    }
    Py_XDECREF(tmap);
    Py_DECREF(known);
    return result;
}

/* fetchone's condition for rows events: the native pass installed and no table or schema filter on the stream */
static int rows_ok(PyObject *stream) {
    PyObject *fetch = PyObject_GetAttr(RowsEvent, s_fetch_rows);
    if (fetch == NULL) return -1;
    int ok = fetch == FetchRows;
    Py_DECREF(fetch);
    PyObject *none_names[] = {s_only_tables, s_ignored_tables, s_only_schemas, s_ignored_schemas};
    for (int i = 0; ok == 1 && i < 4; i++) ok = attr_is_none(stream, none_names[i]);
    if (ok == 1) {
        int ignore = truthy_attr(stream, s_ignore_errors);
        ok = ignore < 0 ? -1 : !ignore;
    }
    return ok;
}

/* the post-header length the stream's format description declares for ``code`` (-1: none declared; -2: error) */
static long declared(PyObject *lengths, int code) {
    if (lengths == Py_None) return -1;
    Py_ssize_t size = PyObject_Length(lengths);
    if (size < 0) return -2;
    if (size == 0 || size < code) return -1;
    PyObject *v = PySequence_GetItem(lengths, code - 1);
    if (v == NULL) return -2;
    long r = PyLong_AsLong(v);
    Py_DECREF(v);
    if (r == -1 && PyErr_Occurred()) return -2;
    return r;
}

/* fastevents.fast_rows: the rows event as the library's event object, rows decoded natively; Py_None otherwise */
static PyObject *rows(PyObject *stream, PyObject *data, const unsigned char *d, Py_ssize_t n, int checksum,
                      PyObject *lengths) {
    int code = d[5];
    PyObject *key = PyLong_FromLong(code);
    if (key == NULL) return NULL;
    PyObject *spec = PyDict_GetItemWithError(Rows, key);  /* borrowed: (cls, post_header, keys) */
    Py_DECREF(key);
    if (spec == NULL) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NONE;
    }
    PyObject *cls = PyTuple_GET_ITEM(spec, 0), *keys = PyTuple_GET_ITEM(spec, 2);
    long post_header = PyLong_AsLong(PyTuple_GET_ITEM(spec, 1));
    long want = declared(lengths, code);
    if (want == -2) return NULL;
    if (want >= 0 && want != post_header) Py_RETURN_NONE;
    Py_ssize_t end = checksum ? n - 4 : n, p = 20 + post_header;
    if (p >= end) Py_RETURN_NONE;
    if (post_header == 10 && (d[28] != 2 || d[29] != 0)) Py_RETURN_NONE;
    unsigned long long table_id = le(d + 20, 6);
    int columns = d[p];
    PyObject *tmap = PyObject_GetAttr(stream, s_table_map);
    if (tmap == NULL) return NULL;
    PyObject *tid = PyLong_FromUnsignedLongLong(table_id);
    if (tid == NULL) {
        Py_DECREF(tmap);
        return NULL;
    }
    PyObject *result = NULL, *table = NULL, *plan = NULL, *bitmaps = NULL, *decoded = NULL, *shapes = NULL;
    table = PyDict_Check(tmap) ? PyDict_GetItemWithError(tmap, tid) : NULL;  /* borrowed */
    if (table == NULL) {
        if (PyErr_Occurred()) goto done;
        result = Py_NewRef(Py_None);
        goto done;
    }
    Py_INCREF(table);
    if (columns >= 251) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    PyObject *tdict = PyObject_GetAttr(table, s_dict);
    if (tdict == NULL) goto done;
    plan = PyDict_Check(tdict) ? PyDict_GetItemWithError(tdict, s_native_plan) : NULL;  /* borrowed */
    Py_XINCREF(plan);
    Py_DECREF(tdict);
    if (plan == NULL) {  /* no plan made for this Table yet (or an error): the Python path makes it */
        if (PyErr_Occurred()) goto done;
        result = Py_NewRef(Py_None);
        goto done;
    }
    if (plan == Py_None || PyObject_Length(plan) != columns) {
        if (PyErr_Occurred()) goto done;
        result = Py_NewRef(Py_None);
        goto done;
    }
    Py_ssize_t width = (columns + 7) / 8, two = PyTuple_GET_SIZE(keys) == 2;
    p += 1;
    if (p + width * (1 + two) > end) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    PyObject *bitmap = PyBytes_FromStringAndSize((const char *)d + p, width);
    if (bitmap == NULL) goto done;
    p += width;
    if (two) {
        PyObject *bitmap2 = PyBytes_FromStringAndSize((const char *)d + p, width);
        if (bitmap2 == NULL) {
            Py_DECREF(bitmap);
            goto done;
        }
        p += width;
        bitmaps = PyTuple_Pack(2, bitmap, bitmap2);
        Py_DECREF(bitmap2);
    } else {
        bitmaps = PyTuple_Pack(1, bitmap);
    }
    Py_DECREF(bitmap);
    if (bitmaps == NULL) goto done;
    shapes = PyObject_GetAttr(stream, s_shapes);
    if (shapes == NULL) goto done;
    PyObject *shape = NULL;
    if (PyDict_Check(shapes) && PyDict_GET_SIZE(shapes)) {
        shape = PyDict_GetItemWithError(shapes, tid);  /* borrowed */
        if (shape == NULL && PyErr_Occurred()) goto done;
    } else if (!PyDict_Check(shapes) && PyObject_IsTrue(shapes)) {  /* not the dict fetchone keeps: Python */
        result = Py_NewRef(Py_None);
        goto done;
    }
    PyObject *start = PyLong_FromSsize_t(p), *stop = PyLong_FromSsize_t(end);
    if (start != NULL && stop != NULL) {
        if (shape != NULL && PyTuple_Check(shape) && PyTuple_GET_SIZE(shape) >= 2 && PyTuple_GET_ITEM(shape, 0) == table) {
            PyObject *args[] = {data, start, stop, plan, bitmaps, ShapedRow, keys, PyTuple_GET_ITEM(shape, 1)};
            decoded = PyObject_Vectorcall(Decode, args, 8, NULL);
        } else {
            PyObject *args[] = {data, start, stop, plan, bitmaps, ConvertedRow, keys};
            decoded = PyObject_Vectorcall(Decode, args, 7, NULL);
        }
    }
    Py_XDECREF(start);
    Py_XDECREF(stop);
    if (decoded == NULL) goto done;
    if (decoded == Py_None) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    {
        uint64_t log_pos = le(d + 14, 4);
        PyObject *pnames[] = {s_log_pos, s_server_id};
        PyObject *pvalues[] = {PyLong_FromUnsignedLongLong(log_pos), PyLong_FromUnsignedLong((unsigned long)le(d + 6, 4))};
        PyObject *packet = make_stealing(FastPacket, 2, pnames, pvalues);
        if (packet == NULL) goto done;
        PyObject *schema = PyObject_GetAttr(table, s_schema), *tname = PyObject_GetAttr(table, s_table),
                 *cols = PyObject_GetAttr(table, s_columns);
        PyObject *names[] = {s_event_type, s_timestamp, s_event_size, s_packet, s_table_map, s_table_id, s_schema,
                             s_table, s_columns, s_number_of_columns, s_flags, s_bitmap, s_bitmap2, s_complete,
                             s_processed, s_partial_json, s_rows};
        PyObject *values[] = {PyLong_FromLong(code), PyLong_FromUnsignedLong((unsigned long)le(d + 1, 4)),
                              PyLong_FromSsize_t(end - 20), Py_NewRef(packet), Py_NewRef(tmap), Py_NewRef(tid),
                              schema, tname, cols, PyLong_FromLong(columns),
                              PyLong_FromUnsignedLong((unsigned long)le(d + 26, 2)),
                              Py_NewRef(PyTuple_GET_ITEM(bitmaps, 0)),
                              two ? Py_NewRef(PyTuple_GET_ITEM(bitmaps, 1)) : NULL,
                              Py_NewRef(Py_True), Py_NewRef(Py_True), Py_NewRef(Py_False), Py_NewRef(decoded)};
        if (!two) {  /* no second bitmap: set everything but it */
            memmove(names + 12, names + 13, 4 * sizeof(PyObject *));
            memmove(values + 12, values + 13, 4 * sizeof(PyObject *));
        }
        PyObject *ev = make_stealing(cls, two ? 17 : 16, names, values);
        Py_DECREF(packet);
        if (ev == NULL) goto done;
        if (set_log_pos(stream, log_pos) < 0) {
            Py_DECREF(ev);
            goto done;
        }
        result = ev;
    }
done:
    Py_XDECREF(decoded);
    Py_XDECREF(shapes);
    Py_XDECREF(bitmaps);
    Py_XDECREF(plan);
    Py_XDECREF(table);
    Py_DECREF(tid);
    Py_DECREF(tmap);
    return result;
}

static PyObject *event(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "event(stream, data)");
        return NULL;
    }
    if (!PyBytes_Check(args[1])) Py_RETURN_NONE;  /* an inflated part as another buffer type: Python decides */
    if (FastGtid == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_events_native.setup() was not called");
        return NULL;
    }
    PyObject *stream = args[0], *data = args[1];
    const unsigned char *d = (const unsigned char *)PyBytes_AS_STRING(data);
    Py_ssize_t n = PyBytes_GET_SIZE(data);
    if (n <= 20 || d[0] != 0 || le(d + 10, 4) != (uint64_t)(n - 1)) Py_RETURN_NONE;
    int code = d[5];
    int checksum = truthy_attr(stream, s_use_checksum);
    if (checksum < 0) return NULL;
    if (code == TABLE_MAP_EVENT) return table_map(stream, d, n, checksum);
    if ((code >= 0x17 && code <= 0x19) || (code >= 0x1E && code <= 0x20)) {
        int ok = rows_ok(stream);
        if (ok < 0) return NULL;
        if (!ok) Py_RETURN_NONE;
        PyObject *lengths = PyObject_GetAttr(stream, s_lengths);
        if (lengths == NULL) return NULL;
        PyObject *r = rows(stream, data, d, n, checksum, lengths);
        Py_DECREF(lengths);
        return r;
    }
    if (code != QUERY_EVENT && code != XID_EVENT && code != GTID_LOG_EVENT && code != MARIADB_GTID_EVENT)
        Py_RETURN_NONE;
    int mariadb = truthy_attr(stream, s_is_mariadb);
    if (mariadb < 0) return NULL;
    long qph = 13;
    if (code == QUERY_EVENT) {
        PyObject *lengths = PyObject_GetAttr(stream, s_lengths);
        if (lengths == NULL) return NULL;
        long q = declared(lengths, QUERY_EVENT);
        Py_DECREF(lengths);
        if (q == -2) return NULL;
        if (q >= 0) qph = q;
    }
    PyObject *ev = small(d, n, checksum, mariadb, qph);
    if (ev == NULL || ev == Py_None) return ev;
    PyObject *pos = PyObject_GetAttr(ev, s_log_pos);
    if (pos == NULL) {
        Py_DECREF(ev);
        return NULL;
    }
    int moved = PyObject_IsTrue(pos);
    int failed = moved < 0 || (moved && PyObject_SetAttr(stream, s_log_pos, pos) < 0);
    Py_DECREF(pos);
    if (failed) {
        Py_DECREF(ev);
        return NULL;
    }
    return ev;
}

/* next(stream, conn): the guarded connection's next_data and event() in one step, for a packet its socket buffer
   already holds whole. Reads nothing and returns None unless next_data would read it plainly from the socket: no
   packet handed back, a dump started, the read timeout set, nothing inflated pending, and the buffer holding the
   whole packet (peek: at most one read of the socket, as next_data's own read) with the expected sequence number,
   under 16 MiB, not an error packet, not a compressed event or a format description. Then the packet is taken
   from the buffer (the sequence number moves as next_data moves it) and what event() makes of it is returned, or
   its bytes when event() declines. A socket error raises as the buffer's read raises it. */
static PyObject *next(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "next(stream, conn)");
        return NULL;
    }
    PyObject *stream = args[0], *conn = args[1];
    int plain = attr_is_none(conn, s_unread);
    if (plain != 1) return plain < 0 ? NULL : Py_NewRef(Py_None);
    int no_dump = attr_is_none(conn, s_inflater);
    if (no_dump != 0) return no_dump < 0 ? NULL : Py_NewRef(Py_None);
    PyObject *current = PyObject_GetAttr(conn, s_current_timeout), *timeout = PyObject_GetAttr(conn, s_read_timeout);
    int same = current != NULL && timeout != NULL ? PyObject_RichCompareBool(current, timeout, Py_EQ) : -1;
    Py_XDECREF(current);
    Py_XDECREF(timeout);
    if (same != 1) return same < 0 ? NULL : Py_NewRef(Py_None);
    int pending = truthy_attr(conn, s_pending);
    if (pending != 0) return pending < 0 ? NULL : Py_NewRef(Py_None);
    PyObject *seq_obj = PyObject_GetAttr(conn, s_next_seq_id);
    if (seq_obj == NULL) return NULL;
    long seq = PyLong_AsLong(seq_obj);
    Py_DECREF(seq_obj);
    if (seq == -1 && PyErr_Occurred()) return NULL;
    PyObject *rfile = PyObject_GetAttr(conn, s_rfile);
    if (rfile == NULL) return NULL;
    PyObject *four = PyLong_FromLong(4);
    PyObject *buf = four != NULL ? PyObject_CallMethodOneArg(rfile, s_peek, four) : NULL;
    Py_XDECREF(four);
    if (buf == NULL) {
        Py_DECREF(rfile);
        return NULL;
    }
    PyObject *result = NULL;
    if (!PyBytes_Check(buf) || PyBytes_GET_SIZE(buf) < 4) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    const unsigned char *h = (const unsigned char *)PyBytes_AS_STRING(buf);
    Py_ssize_t n = h[0] | h[1] << 8 | h[2] << 16;
    if (h[3] != seq || n >= 0xFFFFFF || n < 6 || PyBytes_GET_SIZE(buf) < 4 + n || h[4] == 0xFF) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    if (h[4] == 0) {
        PyObject *code = PyLong_FromLong(h[9]);
        int inflated = code != NULL ? PySet_Contains(Inflated, code) : -1;
        Py_XDECREF(code);
        if (inflated != 0) {
            result = inflated < 0 ? NULL : Py_NewRef(Py_None);
            goto done;
        }
    }
    PyObject *data = PyBytes_FromStringAndSize((const char *)h + 4, n);
    if (data == NULL) goto done;
    PyObject *size = PyLong_FromSsize_t(4 + n);
    PyObject *taken = size != NULL ? PyObject_CallMethodOneArg(rfile, s_read, size) : NULL;
    Py_XDECREF(size);
    if (taken == NULL || !PyBytes_Check(taken) || PyBytes_GET_SIZE(taken) != 4 + n) {
        if (taken != NULL) PyErr_SetString(PyExc_RuntimeError, "_events_native.next: the buffer lost a packet it held");
        Py_XDECREF(taken);
        Py_DECREF(data);
        goto done;
    }
    Py_DECREF(taken);
    PyObject *next_seq = PyLong_FromLong((seq + 1) % 256);
    if (next_seq == NULL || PyObject_SetAttr(conn, s_next_seq_id, next_seq) < 0) {
        Py_XDECREF(next_seq);
        Py_DECREF(data);
        goto done;
    }
    Py_DECREF(next_seq);
    PyObject *pair[] = {stream, data};
    PyObject *ev = event(NULL, pair, 2);
    if (ev == NULL || ev != Py_None) {
        Py_DECREF(data);
        result = ev;
        goto done;
    }
    Py_DECREF(ev);
    result = data;  /* read; event() declines it: the caller decides */
done:
    Py_DECREF(buf);
    Py_DECREF(rfile);
    return result;
}

static PyObject *setup(PyObject *self, PyObject *names) {
    (void)self;
    if (!PyDict_Check(names)) {
        PyErr_SetString(PyExc_TypeError, "setup(names: dict)");
        return NULL;
    }
    struct { const char *key; PyObject **slot; } want[] = {
        {"FastGtid", &FastGtid}, {"FastXid", &FastXid}, {"FastBegin", &FastBegin}, {"FastTableMap", &FastTableMap},
        {"FastPacket", &FastPacket}, {"rows", &Rows}, {"decode", &Decode}, {"ConvertedRow", &ConvertedRow},
        {"ShapedRow", &ShapedRow}, {"RowsEvent", &RowsEvent}, {"fetch_rows", &FetchRows},
        {"TableMapEvent", &TableMapEvent}, {"cached_init", &CachedInit}, {"inflated", &Inflated}};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        PyObject *v = PyDict_GetItemString(names, want[i].key);
        if (v == NULL) {
            PyErr_Format(PyExc_KeyError, "setup(): %s missing", want[i].key);
            return NULL;
        }
        Py_XSETREF(*want[i].slot, Py_NewRef(v));
    }
    if (!PyDict_Check(Rows) || !PyAnySet_Check(Inflated)) {
        PyErr_SetString(PyExc_TypeError, "setup(): rows must be a dict, inflated a set");
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"event", (PyCFunction)(void (*)(void))event, METH_FASTCALL,
     "event(stream, data) -> the event fastevents.py's Python path decodes from this packet, or None: Python decides"},
    {"next", (PyCFunction)(void (*)(void))next, METH_FASTCALL,
     "next(stream, conn) -> the next packet's event, its bytes, or None (nothing read: conn.next_data() decides)"},
    {"setup", setup, METH_O, "setup(names) -> None: the classes and functions event() makes its results with"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_events_native", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__events_native(void) {
    struct { PyObject **slot; const char *text; } strs[] = {
        {&s_use_checksum, "_BinLogStreamReader__use_checksum"}, {&s_is_mariadb, "is_mariadb"},
        {&s_lengths, "_BinLogStreamReader__post_header_lengths"},
        {&s_only_tables, "_BinLogStreamReader__only_tables"}, {&s_ignored_tables, "_BinLogStreamReader__ignored_tables"},
        {&s_only_schemas, "_BinLogStreamReader__only_schemas"},
        {&s_ignored_schemas, "_BinLogStreamReader__ignored_schemas"},
        {&s_ignore_errors, "_BinLogStreamReader__ignore_decode_errors"}, {&s_table_map, "table_map"},
        {&s_table_maps, "_table_maps"}, {&s_shapes, "shapes"}, {&s_log_pos, "log_pos"}, {&s_fetch_rows, "_fetch_rows"},
        {&s_init, "__init__"}, {&s_dict, "__dict__"}, {&s_native_plan, "_cdc_native"}, {&s_schema, "schema"},
        {&s_table, "table"}, {&s_columns, "columns"}, {&s_gtid, "gtid"}, {&s_timestamp, "timestamp"},
        {&s_flags, "flags"}, {&s_thread, "thread"}, {&s_table_id, "table_id"}, {&s_null_bitmask, "null_bitmask"},
        {&s_server_id, "server_id"}, {&s_event_type, "event_type"}, {&s_event_size, "event_size"},
        {&s_packet, "packet"}, {&s_number_of_columns, "number_of_columns"}, {&s_bitmap, "columns_present_bitmap"},
        {&s_bitmap2, "columns_present_bitmap2"}, {&s_complete, "complete"}, {&s_processed, "_processed"},
        {&s_partial_json, "is_partial_json_update"}, {&s_rows, "_RowsEvent__rows"}, {&s_unread, "_unread"},
        {&s_inflater, "_inflater"}, {&s_current_timeout, "_current_timeout"}, {&s_read_timeout, "_read_timeout"},
        {&s_pending, "_pending"}, {&s_rfile, "_rfile"}, {&s_next_seq_id, "_next_seq_id"}, {&s_peek, "peek"},
        {&s_read, "read"}};
    for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
        *strs[i].slot = PyUnicode_InternFromString(strs[i].text);
        if (*strs[i].slot == NULL) return NULL;
    }
    return PyModule_Create(&module);
}
