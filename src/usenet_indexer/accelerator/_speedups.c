/* Optional native accelerator: the hot loops of the indexer, the segment blob and the NNTP reader; see
accelerator/__init__.py for how it is picked (once, for every caller).

Everything here has a pure-Python twin that stays the reference: tests compare the two on generated,
golden, damaged and garbage input (tests/unit/indexing/test_speedups.py, test_indexer.py,
test_wire_batch.py; tests/unit/nntp/test_protocol.py). The rule that keeps them equal is that this code
only ever does the plain case and hands anything unusual back to the Python code that already handles it.
The limits both sides use (MAX_SUBJECT, MAX_DIGITS, the blob's magic and FileFragment's fields) are
checked against their Python twins by tests/unit/indexing/test_shared_limits.py.

* scan() is indexer.py's fast loop (RangeIndexer._fast) over a whole chunk, without making a Python
  object per field. A line whose file is not known, or whose part counter or size is not plain digits,
  goes to the Python slow line (as one list of fields, exactly as line.split(b"\t") makes it), which
  names its file and segment for the scan to append (RangeIndexer._line_file); a line
  that is not plainly well formed (missing fields, an odd number, out of order) stops the scan, and the
  caller hands the rest of the chunk to the careful loop, as _fast does. chunk_is_clean() is
  overview.chunk_is_clean, the test that picks the fast loop.
* columns() is RangeIndexer._file_fragment for a file whose every segment is valid: its columns sorted
  by part (the lowest article kept for a part seen twice), message-ids without angle brackets. It
  returns None for a file holding any value the Python code would count as malformed, and the Python
  code walks that file.
* segment_blob() and segment_files() are merge.py's pack_segments and parse_segments (with
  fragment.check_file) for the segment blob a worker posts and the coordinator stores: the same bytes
  written, the same files or the same refusal read. segment_summary() makes the same checks and
  returns what fragment.summarize reads of the files instead of building them (a batch's new releases,
  issue 17); segment_has_id() searches a checked blob's ids (wire/batch.py's probe candidates).
  column_range() is min() and max() of an int64 column without an int per value (check_authority).
* subject_reading() is rules._reading (with naming.py's file_kind, release_base, looks_obfuscated,
  clean_name and normalise) for a rule's match on a subject of printable ASCII; default_match() is
  RuleSet.match of the built-in rules, their regexes too, for the shapes posters send most. Both return
  False for anything else, and the Python reads it (tests/unit/indexing/test_subject_reading.py).
* line_scan() counts the LFs of a block of a multi-line NNTP reply and finds its first "LF ." (the
  terminator's candidate) for nntp/_readers.py.
* parse_date() is overview.parse_date for the usual form of a valid date; False for the rest, which the
  Python reads (tests/unit/indexing/test_overview.py).

Numbers are read only when they are 1 to 18 ASCII digits (they then fit an int64); Python's int() also
takes signs, blanks and underscores, and those lines take the Python path, which reads them the same way
it always has.
*/

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define MAX_SUBJECT (8 * 1024) /* overview.MAX_SUBJECT: a line no longer cannot hold a longer subject */
#define MAX_DIGITS 18          /* up to 18 digits always fit an int64 */
#define MAX_FIELDS 64          /* a LIST OVERVIEW.FMT needing more fields is read by the Python loop */
#define CACHE_SIZE 32          /* files a scan keeps pending between two calls into Python */

static PyObject *s_segs, *s_mids, *s_ts, *s_poster, *s_last, *s_last_date;
static PyObject *array_type;  /* array.array */
static PyObject *array_one;   /* array.array("q", [0]): new_int_array repeats it */
/* FileFragment's fields, in its order (fragment.py) */
#define FILE_FIELDS 8
static PyObject *file_fields[FILE_FIELDS];
static const char *const file_field_names[FILE_FIELDS] = {"name",     "index",       "parts_total", "parts",
                                                          "sizes",    "articles",    "message_ids", "subject"};

/* ---- small readers ------------------------------------------------------------------------------ */

/* 1 to 18 ASCII digits, nothing else: the value, or -1. */
static inline int64_t
digits(const char *p, const char *e)
{
    Py_ssize_t n = e - p;
    if (n < 1 || n > MAX_DIGITS)
        return -1;
    int64_t v = 0;
    for (; p < e; p++) {
        unsigned d = (unsigned char)*p - '0';
        if (d > 9)
            return -1;
        v = v * 10 + d;
    }
    return v;
}

/* Well-formed UTF-8 exactly as CPython's strict decoder takes it (Unicode table 3-7: no overlongs, no
   surrogates, nothing above U+10FFFF). */
static int
utf8_valid(const unsigned char *s, Py_ssize_t n)
{
    Py_ssize_t i = 0;
    while (i < n) {
        /* ASCII a word at a time */
        while (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (w & 0x8080808080808080ULL)
                break;
            i += 8;
        }
        if (i >= n)
            break;
        unsigned c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF) {
            if (i + 1 >= n || (s[i + 1] & 0xC0) != 0x80)
                return 0;
            i += 2;
        }
        else if (c >= 0xE0 && c <= 0xEF) {
            if (i + 2 >= n)
                return 0;
            unsigned c1 = s[i + 1];
            unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
            if (c1 < lo || c1 > hi || (s[i + 2] & 0xC0) != 0x80)
                return 0;
            i += 3;
        }
        else if (c >= 0xF0 && c <= 0xF4) {
            if (i + 3 >= n)
                return 0;
            unsigned c1 = s[i + 1];
            unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
            if (c1 < lo || c1 > hi || (s[i + 2] & 0xC0) != 0x80 || (s[i + 3] & 0xC0) != 0x80)
                return 0;
            i += 4;
        }
        else {
            return 0;
        }
    }
    return 1;
}

/* overview.split_lines(data) has this many lines: split on LF, a last empty piece dropped. */
static Py_ssize_t
count_lines(const char *data, Py_ssize_t len, Py_ssize_t *longest)
{
    const char *p = data, *end = data + len;
    Py_ssize_t n = 0, most = 0;
    while (p < end) {
        const char *eol = memchr(p, '\n', end - p);
        if (eol == NULL)
            eol = end;
        if (eol - p > most)
            most = eol - p;
        n++;
        p = eol + 1;
    }
    *longest = most;
    return n;
}

/* overview.chunk_is_clean: no NUL, valid UTF-8, no line longer than MAX_SUBJECT. */
static int
clean(const char *data, Py_ssize_t len, Py_ssize_t longest)
{
    if (memchr(data, 0, len) != NULL)
        return 0;
    if (!utf8_valid((const unsigned char *)data, len))
        return 0;
    return longest <= MAX_SUBJECT;
}

/* ---- scan: the fast loop ------------------------------------------------------------------------ */

/* The line that starts at p: returns its end (its LF, or the end of the chunk) and finds its first
   `need` fields, [fs[k], fe[k]) for k < *found; *found < need when the line has fewer. One pass for
   tabs and LF together, 16 bytes at a time: a memchr per field cost more than the rest of the loop. */
static const char *
split_line(const char *p, const char *end, int need, const char **fs, const char **fe, int *found)
{
    int k = 0;
    const char *q = p;
    fs[0] = p;
#ifdef __SSE2__
    const __m128i tab = _mm_set1_epi8('\t'), lf = _mm_set1_epi8('\n');
    for (; q + 16 <= end; q += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)q);
        unsigned mask = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, tab), _mm_cmpeq_epi8(v, lf)));
        for (; mask != 0; mask &= mask - 1) {
            const char *x = q + __builtin_ctz(mask);
            fe[k] = x;
            if (*x == '\n') {
                *found = k + 1;
                return x;
            }
            if (++k == need) {
                const char *eol = memchr(x + 1, '\n', (size_t)(end - x - 1));
                *found = need;
                return eol ? eol : end;
            }
            fs[k] = x + 1;
        }
    }
#endif
    for (; q < end; q++) {
        if (*q != '\t' && *q != '\n')
            continue;
        fe[k] = q;
        if (*q == '\n') {
            *found = k + 1;
            return q;
        }
        if (++k == need) {
            const char *eol = memchr(q + 1, '\n', (size_t)(end - q - 1));
            *found = need;
            return eol ? eol : end;
        }
        fs[k] = q + 1;
    }
    fe[k] = end;
    *found = k + 1;
    return end;
}

/* A file of the batch (a _FileAcc) met during one scan, with the segments read for it since the scan
   last called into Python. They are written to the _FileAcc (appended to its bytearrays segs and mids,
   last and last_date set) before any Python code runs: the slow line may append to the same file, and
   the order of its segments must be the order of its lines. */
typedef struct {
    PyObject *head;   /* the key in the accs dict (bytes) */
    PyObject *acc;    /* the _FileAcc */
    PyObject *ts;     /* acc.ts and acc.poster when looked up: nothing can change them until the */
    PyObject *poster; /* scan calls into Python, and the cache is emptied then */
    int64_t *segs;    /* pending (part, size, article) triples */
    Py_ssize_t nsegs, capsegs;
    char *ids; /* pending Message-ID fields, each followed by LF */
    Py_ssize_t nids, capids;
    Py_ssize_t count; /* pending segments */
    int owner;        /* the entry that holds the pending segments of this entry's file: itself, or the
                         first entry of the same file met under another head (two spellings of a
                         subject that read as one file), so that they are written in line order */
    int64_t last;
    const char *date; /* the Date field of the last pending line (points into the chunk) */
    Py_ssize_t date_len;
} Entry;

typedef struct {
    Entry e[CACHE_SIZE];
    int n;
} Cache;

static int
grow(void **buf, Py_ssize_t *cap, Py_ssize_t need, Py_ssize_t item)
{
    if (need <= *cap)
        return 0;
    Py_ssize_t cap2 = *cap ? *cap : 64;
    while (cap2 < need)
        cap2 *= 2;
    void *p = PyMem_Realloc(*buf, (size_t)(cap2 * item));
    if (p == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *buf = p;
    *cap = cap2;
    return 0;
}

/* bytearray += data[:len] */
static int
extend(PyObject *acc, PyObject *name, const char *data, Py_ssize_t len)
{
    PyObject *target = PyObject_GetAttr(acc, name);
    if (target == NULL)
        return -1;
    int rc = -1;
    if (!PyByteArray_Check(target)) {
        PyErr_Format(PyExc_TypeError, "scan: a file's %U must be a bytearray", name);
    }
    else {
        /* PyByteArray_Resize gives the exact size asked for whenever that is more than 1/8 above what is
           allocated, as appending a few lines' worth to a small file always is: one realloc, and copy,
           per flush. Grow by half instead; the shrink back is then a mere change of size. */
        Py_ssize_t size = PyByteArray_GET_SIZE(target), need = size + len;
        Py_ssize_t room = ((PyByteArrayObject *)target)->ob_alloc;
        if (need >= room && need < size + size / 2 && PyByteArray_Resize(target, size + size / 2) < 0)
            goto done;
        if (PyByteArray_Resize(target, need) == 0) {
            memcpy(PyByteArray_AS_STRING(target) + size, data, (size_t)len);
            rc = 0;
        }
    }
done:
    Py_DECREF(target);
    return rc;
}

/* Write an entry's pending segments to its _FileAcc. */
static int
flush(Entry *e)
{
    if (e->count == 0)
        return 0;
    int rc = -1;
    PyObject *last = NULL, *date = NULL;
    if (extend(e->acc, s_segs, (const char *)e->segs, e->nsegs * (Py_ssize_t)sizeof(int64_t)) < 0 ||
        extend(e->acc, s_mids, e->ids, e->nids) < 0)
        goto done;
    last = PyLong_FromLongLong(e->last);
    if (last == NULL || PyObject_SetAttr(e->acc, s_last, last) < 0)
        goto done;
    date = PyBytes_FromStringAndSize(e->date, e->date_len);
    if (date == NULL || PyObject_SetAttr(e->acc, s_last_date, date) < 0)
        goto done;
    rc = 0;
done:
    e->count = e->nsegs = e->nids = 0;
    Py_XDECREF(last);
    Py_XDECREF(date);
    return rc;
}

/* Flush every entry and forget the lookups (the Python code may change accs and the files). The
   entries' buffers are kept for reuse. */
static int
flush_all(Cache *c)
{
    int rc = 0;
    for (int i = 0; i < c->n; i++) {
        Entry *e = &c->e[i];
        if (flush(e) < 0)
            rc = -1;
        Py_CLEAR(e->head);
        Py_CLEAR(e->acc);
        Py_CLEAR(e->ts);
        Py_CLEAR(e->poster);
    }
    c->n = 0;
    return rc;
}

static void
free_cache(Cache *c)
{
    for (int i = 0; i < CACHE_SIZE; i++) {
        PyMem_Free(c->e[i].segs);
        PyMem_Free(c->e[i].ids);
    }
}

static inline int
same(PyObject *bytes, const char *p, Py_ssize_t n)
{
    return PyBytes_GET_SIZE(bytes) == n && memcmp(PyBytes_AS_STRING(bytes), p, (size_t)n) == 0;
}

/* The entry for a subject head: from the cache, else from accs (NULL with no error when the head is not
   there, or its file's ts/poster are not bytes: the slow line then decides). */
static Entry *
lookup(Cache *c, PyObject *accs, const char *head, Py_ssize_t head_len)
{
    /* newest first: the cache is no longer emptied at each new file (refresh), and the files in flight
       are the ones met last, after up to CACHE_SIZE finished ones */
    for (int i = c->n - 1; i >= 0; i--) {
        PyObject *h = c->e[i].head;
        if (PyBytes_GET_SIZE(h) == head_len &&
            (head_len == 0 || (PyBytes_AS_STRING(h)[head_len - 1] == head[head_len - 1] &&
                               memcmp(PyBytes_AS_STRING(h), head, (size_t)head_len) == 0)))
            return &c->e[i];
    }
    PyObject *key = PyBytes_FromStringAndSize(head, head_len);
    if (key == NULL)
        return NULL;
    PyObject *acc = PyDict_GetItemWithError(accs, key); /* borrowed */
    if (acc == NULL) {
        Py_DECREF(key);
        return NULL;
    }
    Py_INCREF(acc);
    PyObject *ts = PyObject_GetAttr(acc, s_ts);
    PyObject *poster = ts == NULL ? NULL : PyObject_GetAttr(acc, s_poster);
    if (poster == NULL || !PyBytes_Check(ts) || !PyBytes_Check(poster)) {
        Py_DECREF(key);
        Py_DECREF(acc);
        Py_XDECREF(ts);
        Py_XDECREF(poster);
        return NULL;
    }
    if (c->n == CACHE_SIZE && flush_all(c) < 0) {
        Py_DECREF(key);
        Py_DECREF(acc);
        Py_DECREF(ts);
        Py_DECREF(poster);
        return NULL;
    }
    int index = c->n++, owner = index;
    for (int i = 0; i < index; i++) {
        if (c->e[i].acc == acc) {
            owner = c->e[i].owner;
            break;
        }
    }
    Entry *e = &c->e[index];
    e->head = key;
    e->acc = acc;
    e->ts = ts;
    e->poster = poster;
    e->owner = owner;
    e->count = e->nsegs = e->nids = 0;
    return e;
}

/* One segment read for an entry's file, held until the next flush (the owner's: see Entry.owner). */
static int
pend(Entry *e, int64_t part, int64_t size, int64_t num, const char *mid, Py_ssize_t mid_len, const char *date,
     Py_ssize_t date_len)
{
    if (grow((void **)&e->segs, &e->capsegs, e->nsegs + 3, sizeof(int64_t)) < 0 ||
        grow((void **)&e->ids, &e->capids, e->nids + mid_len + 1, 1) < 0)
        return -1;
    e->segs[e->nsegs++] = part;
    e->segs[e->nsegs++] = size;
    e->segs[e->nsegs++] = num;
    memcpy(e->ids + e->nids, mid, (size_t)mid_len);
    e->nids += mid_len;
    e->ids[e->nids++] = '\n';
    e->count++;
    e->last = num;
    e->date = date;
    e->date_len = date_len;
    return 0;
}

/* After the slow line put a line in file `acc` (RangeIndexer._line_file): it may have pointed accs[head]
   (the line's own head, and no other) at `acc` and set acc.ts and acc.poster, and nothing else the
   cache holds. The cache is brought up to date with that instead of being emptied: the lookups of the
   files in flight stay, and their pending segments need not be written before each new file (issue 17:
   ~3 such writes and lookups a file on the e2e corpus). */
static int
refresh(Cache *c, PyObject *accs, PyObject *acc, const char *head, Py_ssize_t head_len)
{
    for (int i = 0; i < c->n; i++) {
        Entry *e = &c->e[i];
        if (e->acc == acc) {
            PyObject *ts = PyObject_GetAttr(acc, s_ts);
            PyObject *poster = ts == NULL ? NULL : PyObject_GetAttr(acc, s_poster);
            if (poster == NULL || !PyBytes_Check(ts) || !PyBytes_Check(poster)) {
                Py_XDECREF(ts);
                Py_XDECREF(poster);
                if (PyErr_Occurred())
                    return -1;
                return flush_all(c); /* not bytes: the slow line decides this file's lines */
            }
            Py_SETREF(e->ts, ts);
            Py_SETREF(e->poster, poster);
        }
        if (same(e->head, head, head_len)) {
            PyObject *now = PyDict_GetItemWithError(accs, e->head); /* borrowed; the key's hash is kept */
            if (now != e->acc)
                return PyErr_Occurred() ? -1 : flush_all(c); /* another file under this head now */
        }
    }
    return 0;
}

/* A segment for a file no entry holds: appended to the _FileAcc at once. Lines reach the scan in
   ascending order and after every line of an earlier chunk, so the line is the file's last. */
static int
write_one(PyObject *acc, int64_t part, int64_t size, int64_t num, const char *mid, Py_ssize_t mid_len,
          const char *date, Py_ssize_t date_len)
{
    Entry e = {.acc = acc};
    int rc = pend(&e, part, size, num, mid, mid_len, date, date_len);
    if (rc == 0)
        rc = flush(&e);
    PyMem_Free(e.segs);
    PyMem_Free(e.ids);
    return rc;
}

/* The whole line split on TAB, as line.split(b"\t") gives it. */
static PyObject *
split_fields(const char *p, const char *eol)
{
    PyObject *list = PyList_New(0);
    if (list == NULL)
        return NULL;
    for (;;) {
        const char *t = memchr(p, '\t', eol - p);
        const char *fe = t ? t : eol;
        PyObject *f = PyBytes_FromStringAndSize(p, fe - p);
        if (f == NULL || PyList_Append(list, f) < 0) {
            Py_XDECREF(f);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(f);
        if (t == NULL)
            return list;
        p = t + 1;
    }
}

PyDoc_STRVAR(scan_doc,
             "scan(chunk, accs, slow, lo, hi, fields, /) -> (handled, lines)\n\n"
             "RangeIndexer._fast over an inflated chunk: ``fields`` is (need, subject, poster, date, "
             "message_id, size) of the OverviewFormat. ``slow(fields, number)`` is called for a line "
             "the scan does not place (RangeIndexer._line_file) and returns None or (file, part, size): "
             "the scan appends that segment to the file. Returns the number of lines handled and the "
             "number of lines; when they differ, the caller hands lines[handled:] to the careful loop "
             "(a chunk that fails overview.chunk_is_clean is handed over at line 0).");

static PyObject *
scan(PyObject *module, PyObject *args)
{
    Py_buffer buf;
    PyObject *accs, *slow;
    long long lo, hi;
    int need, i_subj, i_from, i_date, i_mid, i_size;
    if (!PyArg_ParseTuple(args, "y*O!OLL(iiiiii):scan", &buf, &PyDict_Type, &accs, &slow, &lo, &hi, &need,
                          &i_subj, &i_from, &i_date, &i_mid, &i_size))
        return NULL;
    if (need < 1 || need > MAX_FIELDS || i_subj < 1 || i_from < 1 || i_date < 1 || i_mid < 1 || i_size < 1 ||
        i_subj >= need || i_from >= need || i_date >= need || i_mid >= need || i_size >= need) {
        PyBuffer_Release(&buf);
        PyErr_SetString(PyExc_ValueError, "scan: field positions must be in [1, need) and need <= 64");
        return NULL;
    }
    const char *data = buf.buf, *end = data + buf.len;
    Py_ssize_t longest, nlines = count_lines(data, buf.len, &longest);
    Py_ssize_t at = 0;
    Cache *c = NULL;
    int failed = 0;
    if (!clean(data, buf.len, longest))
        goto finish;
    c = PyMem_Calloc(1, sizeof(Cache));
    if (c == NULL) {
        PyErr_NoMemory();
        failed = 1;
        goto finish;
    }
    const char *fs[MAX_FIELDS], *fe[MAX_FIELDS];
    const char *p = data;
    int64_t prev = lo - 1;
    for (; at < nlines; at++) {
        /* the first `need` fields; fewer than need is a line for the careful loop */
        int found;
        const char *eol = split_line(p, end, need, fs, fe, &found);
        if (found < need)
            break;
        int64_t num = digits(fs[0], fe[0]);
        if (num < 0 || num <= prev || num > hi)
            break;
        /* head, _, tail = subject.rpartition(b"("); ps, _, ts = tail.partition(b"/") */
        const char *s = fs[i_subj], *se = fe[i_subj];
        const char *lp = s;
        Py_ssize_t head_len = 0;
        for (const char *x = se; x > s; x--) {
            if (x[-1] == '(') {
                head_len = x - 1 - s;
                lp = x;
                break;
            }
        }
        const char *slash = memchr(lp, '/', se - lp);
        const char *ps = lp, *pe = slash ? slash : se;
        const char *ts = slash ? slash + 1 : se;
        Entry *e = lookup(c, accs, s, head_len);
        if (e == NULL && PyErr_Occurred()) {
            failed = 1;
            break;
        }
        int64_t part = -1, size = -1;
        if (e != NULL && same(e->ts, ts, se - ts) && same(e->poster, fs[i_from], fe[i_from] - fs[i_from])) {
            part = digits(ps, pe);
            size = part < 0 ? -1 : digits(fs[i_size], fe[i_size]);
        }
        const char *mid = fs[i_mid], *date = fs[i_date];
        Py_ssize_t mid_len = fe[i_mid] - mid, date_len = fe[i_date] - date;
        if (size < 0) {
            /* a file not known in this batch, or a line the Python code reads: it names the line's
               file and the segment (None: the line is counted or kept elsewhere), and the segment is
               added here, after the file's pending ones */
            PyObject *fields = split_fields(p, eol);
            PyObject *n = fields ? PyLong_FromLongLong(num) : NULL;
            PyObject *r = n ? PyObject_CallFunctionObjArgs(slow, fields, n, NULL) : NULL;
            Py_XDECREF(fields);
            Py_XDECREF(n);
            if (r == NULL) {
                failed = 1;
                break;
            }
            if (r != Py_None) {
                PyObject *acc;
                long long got_part, got_size;
                int ok = PyTuple_Check(r);
                if (!ok)
                    PyErr_Format(PyExc_TypeError, "scan: the slow line returned %s, not None or (file, part, size)",
                                 Py_TYPE(r)->tp_name);
                ok = ok && PyArg_ParseTuple(r, "OLL:scan's slow line", &acc, &got_part, &got_size) &&
                     refresh(c, accs, acc, s, head_len) == 0;
                /* the file's entry under any head (its pending segments come first), else the
                   line's head's, which the slow line may just have pointed at it */
                Entry *into = NULL;
                for (int i = 0; ok && i < c->n && into == NULL; i++)
                    into = c->e[i].acc == acc ? &c->e[i] : NULL;
                if (ok && into == NULL && (into = lookup(c, accs, s, head_len)) == NULL && PyErr_Occurred())
                    ok = 0;
                if (ok && into != NULL && into->acc == acc)
                    ok = pend(&c->e[into->owner], got_part, got_size, num, mid, mid_len, date, date_len) == 0;
                else if (ok)
                    ok = write_one(acc, got_part, got_size, num, mid, mid_len, date, date_len) == 0;
                if (!ok) {
                    Py_DECREF(r);
                    failed = 1;
                    break;
                }
            }
            Py_DECREF(r);
        }
        else if (pend(&c->e[e->owner], part, size, num, mid, mid_len, date, date_len) < 0) {
            failed = 1;
            break;
        }
        prev = num;
        p = eol + 1;
    }
finish:
    if (c != NULL) {
        if (failed) {
            /* keep the exception already set; still write what was read, as the Python loop would have */
            PyObject *type, *value, *tb;
            PyErr_Fetch(&type, &value, &tb);
            flush_all(c);
            PyErr_Restore(type, value, tb);
        }
        else if (flush_all(c) < 0) {
            failed = 1;
        }
        free_cache(c);
        PyMem_Free(c);
    }
    PyBuffer_Release(&buf);
    if (failed)
        return NULL;
    return Py_BuildValue("nn", at, nlines);
}

PyDoc_STRVAR(chunk_is_clean_doc,
             "chunk_is_clean(chunk, /) -> bool\n\noverview.chunk_is_clean, on the chunk alone.");

static PyObject *
chunk_is_clean(PyObject *module, PyObject *arg)
{
    Py_buffer buf;
    if (PyObject_GetBuffer(arg, &buf, PyBUF_SIMPLE) < 0)
        return NULL;
    Py_ssize_t longest;
    count_lines(buf.buf, buf.len, &longest);
    int ok = clean(buf.buf, buf.len, longest);
    PyBuffer_Release(&buf);
    return PyBool_FromLong(ok);
}

/* ---- columns: a file's segments at take() ------------------------------------------------------- */

typedef struct {
    int64_t part, article;
    Py_ssize_t index;
} Order;

static int
order_cmp(const void *a, const void *b)
{
    const Order *x = a, *y = b;
    if (x->part != y->part)
        return x->part < y->part ? -1 : 1;
    if (x->article != y->article)
        return x->article < y->article ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Parts come nearly in order (a poster's connections finish them a little out of turn): an insertion
   sort, which is linear on that, unless it meets many more inversions than that, then qsort. */
static void
sort_order(Order *order, Py_ssize_t n)
{
    Py_ssize_t moves = 0, budget = 8 * n + 64;
    for (Py_ssize_t i = 1; i < n; i++) {
        Order x = order[i];
        Py_ssize_t j = i;
        while (j > 0 && order_cmp(&x, &order[j - 1]) < 0) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = x;
        moves += i - j;
        if (moves > budget) {
            qsort(order, (size_t)n, sizeof(Order), order_cmp);
            return;
        }
    }
}

/* A new array.array("q") of n items, its buffer in `view` (writable; release it once filled): the
   one-item array_one repeated n times (sq_repeat allocates the array directly). array("q", raw) parsed
   its arguments and copied a bytes object made for it: two thirds of take()'s file_fragment, and its
   argument tuples were a tenth of the allocations that set off a young collection in take() (issue 17). */
static PyObject *
new_int_array(Py_ssize_t n, Py_buffer *view)
{
    PyObject *array = PySequence_Repeat(array_one, n);
    if (array == NULL)
        return NULL;
    if (PyObject_GetBuffer(array, view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) {
        Py_DECREF(array);
        return NULL;
    }
    return array;
}

/* An array('q') holding n values taken from column[order[i] * 3] (or column[i * 3] without order). */
static PyObject *
int_column(const int64_t *column, Py_ssize_t n, const Py_ssize_t *order)
{
    Py_buffer view;
    PyObject *array = new_int_array(n, &view);
    if (array == NULL)
        return NULL;
    int64_t *out = view.buf;
    for (Py_ssize_t i = 0; i < n; i++)
        out[i] = column[(order ? order[i] : i) * 3];
    PyBuffer_Release(&view);
    return array;
}

/* Copies the LF-joined raw Message-ID fields to `out` without "<" and ">" and returns the length, or -1
   when one of them is empty after that or holds a blank (SP, CR, VT, FF), or when they are not `n`. With
   `starts`, starts[k] is where the k-th one begins in `out`, and starts[n] one past the end plus one. */
static Py_ssize_t
clean_ids(const char *raw, Py_ssize_t raw_len, char *out, Py_ssize_t *starts, Py_ssize_t n)
{
    Py_ssize_t i = 0, len = 0, id_start = 0, count = 0;
    if (starts)
        starts[0] = 0;
    while (i < raw_len) {
#ifdef __SSE2__
        /* 16 bytes at a time up to the next byte that is not copied as it is */
        while (i + 16 <= raw_len) {
            __m128i v = _mm_loadu_si128((const __m128i *)(raw + i));
            __m128i hit = _mm_or_si128(
                _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('<')), _mm_cmpeq_epi8(v, _mm_set1_epi8('>'))),
                             _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\n')), _mm_cmpeq_epi8(v, _mm_set1_epi8(' ')))),
                _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\r')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\x0b'))),
                             _mm_cmpeq_epi8(v, _mm_set1_epi8('\x0c'))));
            unsigned mask = (unsigned)_mm_movemask_epi8(hit);
            if (mask == 0) {
                _mm_storeu_si128((__m128i *)(out + len), v);
                len += 16;
                i += 16;
                continue;
            }
            int k = __builtin_ctz(mask);
            memcpy(out + len, raw + i, (size_t)k);
            len += k;
            i += k;
            break;
        }
        if (i >= raw_len)
            break;
#endif
        char ch = raw[i++];
        switch (ch) {
        case '<':
        case '>':
            break;
        case ' ':
        case '\r':
        case '\x0b':
        case '\x0c':
            return -1;
        case '\n':
            if (len == id_start || ++count >= n)
                return -1;
            out[len++] = ch;
            id_start = len;
            if (starts)
                starts[count] = len;
            break;
        default:
            out[len++] = ch;
        }
    }
    if (len == id_start || count + 1 != n)
        return -1;
    if (starts)
        starts[n] = len + 1;
    return len;
}

PyDoc_STRVAR(columns_doc,
             "columns(segs, mids, parts_total, /) -> (parts, sizes, articles, message_ids) | None\n\n"
             "RangeIndexer._file_fragment for a file whose every segment is valid: ``segs`` holds its "
             "(part, size, article) triples as native int64s, ``mids`` its raw Message-ID fields, each "
             "followed by LF (a _FileAcc's bytearrays, read in place). The columns come sorted by part, the lowest article kept for a part seen twice, the "
             "message-ids without angle brackets. None when any segment is not valid (a negative size, "
             "an empty or blank message-id, a part out of [1, parts_total]): the caller walks the file.");

static PyObject *
columns(PyObject *module, PyObject *args)
{
    PyObject *segs_obj;
    Py_buffer ids_buf;
    long long total;
    if (!PyArg_ParseTuple(args, "Oy*L:columns", &segs_obj, &ids_buf, &total))
        return NULL;
    Py_buffer segs_buf;
    if (PyObject_GetBuffer(segs_obj, &segs_buf, PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&ids_buf);
        return NULL;
    }
    PyObject *result = NULL, *parts = NULL, *sizes = NULL, *articles = NULL, *ids = NULL;
    Order *order = NULL;
    Py_ssize_t *picked = NULL, *starts = NULL;
    int64_t *aligned = NULL;
    const int64_t *seg = segs_buf.buf;
    Py_ssize_t n = segs_buf.len / (3 * (Py_ssize_t)sizeof(int64_t));
    if (segs_buf.len != n * 3 * (Py_ssize_t)sizeof(int64_t)) {
        PyErr_SetString(PyExc_ValueError, "columns: segs must hold whole (part, size, article) int64 triples");
        goto done;
    }
    if ((uintptr_t)seg % _Alignof(int64_t) != 0) {
        aligned = PyMem_Malloc((size_t)segs_buf.len + 1);
        if (aligned == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        memcpy(aligned, seg, (size_t)segs_buf.len);
        seg = aligned;
    }
    if (n == 0)
        goto invalid;
    /* every value valid, and whether the parts are already strictly ascending */
    int ascending = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t part = seg[i * 3], size = seg[i * 3 + 1];
        if (size < 0 || part < 1 || (total != 0 && part > total))
            goto invalid;
        if (i && part <= seg[i * 3 - 3])
            ascending = 0;
    }
    /* message-ids: every "<" and ">" dropped (overview.message_id_bytes), each one non-empty and blank-free */
    /* the LF after the last one is not part of the joined message-ids */
    const char *raw = ids_buf.buf;
    Py_ssize_t raw_len = ids_buf.len - 1;
    if (raw_len < 0 || raw[raw_len] != '\n')
        goto invalid;
    ids = PyBytes_FromStringAndSize(NULL, raw_len);
    if (ids == NULL)
        goto done;
    char *out = PyBytes_AS_STRING(ids);
    if (!ascending) {
        starts = PyMem_Malloc((size_t)(n + 1) * sizeof(Py_ssize_t));
        if (starts == NULL) {
            PyErr_NoMemory();
            goto done;
        }
    }
    Py_ssize_t len = clean_ids(raw, raw_len, out, starts, n);
    if (len < 0)
        goto invalid;
    if (ascending) {
        if (_PyBytes_Resize(&ids, len) < 0)
            goto done;
        parts = int_column(seg, n, NULL);
        sizes = parts ? int_column(seg + 1, n, NULL) : NULL;
        articles = sizes ? int_column(seg + 2, n, NULL) : NULL;
        if (articles == NULL)
            goto done;
        result = PyTuple_Pack(4, parts, sizes, articles, ids);
        goto done;
    }
    /* _in_part_order: by (part, article), the first of each part */
    order = PyMem_Malloc((size_t)n * sizeof(Order));
    picked = PyMem_Malloc((size_t)n * sizeof(Py_ssize_t));
    if (order == NULL || picked == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        order[i].part = seg[i * 3];
        order[i].article = seg[i * 3 + 2];
        order[i].index = i;
    }
    sort_order(order, n);
    Py_ssize_t kept = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (i == 0 || order[i].part != order[i - 1].part)
            picked[kept++] = order[i].index;
    /* the picked message-ids joined in their new order */
    PyObject *joined = PyBytes_FromStringAndSize(NULL, len);
    if (joined == NULL)
        goto done;
    char *j = PyBytes_AS_STRING(joined);
    Py_ssize_t jlen = 0;
    for (Py_ssize_t k = 0; k < kept; k++) {
        Py_ssize_t i = picked[k], size = starts[i + 1] - 1 - starts[i];
        if (k)
            j[jlen++] = '\n';
        memcpy(j + jlen, out + starts[i], (size_t)size);
        jlen += size;
    }
    Py_SETREF(ids, joined);
    if (_PyBytes_Resize(&ids, jlen) < 0)
        goto done;
    parts = int_column(seg, kept, picked);
    sizes = parts ? int_column(seg + 1, kept, picked) : NULL;
    articles = sizes ? int_column(seg + 2, kept, picked) : NULL;
    if (articles == NULL)
        goto done;
    result = PyTuple_Pack(4, parts, sizes, articles, ids);
    goto done;
invalid:
    result = Py_NewRef(Py_None);
done:
    PyMem_Free(order);
    PyMem_Free(picked);
    PyMem_Free(starts);
    PyMem_Free(aligned);
    Py_XDECREF(parts);
    Py_XDECREF(sizes);
    Py_XDECREF(articles);
    Py_XDECREF(ids);
    PyBuffer_Release(&segs_buf);
    PyBuffer_Release(&ids_buf);
    return result;
}

PyDoc_STRVAR(file_fragment_doc,
             "file_fragment(segs, mids, parts_total, name, index, subject, file_type, /) -> file_type(name, index, "
             "parts_total, parts, sizes, articles, message_ids, subject.decode('utf-8', 'replace')) or None\n\n"
             "columns() and the file built from them in one call: the indexer's take() for a file whose every "
             "segment is valid (None sends it through the Python). The dataclass's __init__ and the tuple "
             "between them cost as much as the columns.");

static PyObject *
file_fragment(PyObject *module, PyObject *args)
{
    PyObject *segs, *mids, *total, *name, *index, *subject;
    PyTypeObject *file_type;
    if (!PyArg_ParseTuple(args, "OOO!UO!SO!:file_fragment", &segs, &mids, &PyLong_Type, &total, &name,
                          &PyLong_Type, &index, &subject, &PyType_Type, &file_type))
        return NULL;
    PyObject *col_args = PyTuple_Pack(3, segs, mids, total);
    if (col_args == NULL)
        return NULL;
    PyObject *cols = columns(module, col_args);
    Py_DECREF(col_args);
    if (cols == NULL || cols == Py_None)
        return cols;
    PyObject *text = PyUnicode_DecodeUTF8(PyBytes_AS_STRING(subject), PyBytes_GET_SIZE(subject), "replace");
    if (text == NULL) {
        Py_DECREF(cols);
        return NULL;
    }
    PyObject *values[FILE_FIELDS] = {name,
                                     index,
                                     total,
                                     PyTuple_GET_ITEM(cols, 0),
                                     PyTuple_GET_ITEM(cols, 1),
                                     PyTuple_GET_ITEM(cols, 2),
                                     PyTuple_GET_ITEM(cols, 3),
                                     text};
    /* set as its dataclass __init__ would (object.__setattr__), as segment_files does */
    PyObject *file = file_type->tp_alloc(file_type, 0);
    for (int k = 0; k < FILE_FIELDS && file != NULL; k++) {
        if (PyObject_GenericSetAttr(file, file_fields[k], values[k]) < 0)
            Py_CLEAR(file);
    }
    Py_DECREF(text);
    Py_DECREF(cols);
    return file;
}

/* ---- the segment blob (merge.py) ---------------------------------------------------------------- */

PyDoc_STRVAR(segment_files_doc,
             "segment_files(data, max_text, max_id, file_type, /) -> [file_type(name, index, parts_total, parts, "
             "sizes, articles, message_ids, subject), ...]\n\n"
             "merge.parse_segments and fragment.check_file in one pass over an inflated segment blob (a "
             "little-endian host only): the files, or ValueError saying what is wrong. A batch's blobs come "
             "from other machines; checking their columns in Python was most of the coordinator's work.");

static int64_t
read_i64(const char *p)
{
    int64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* One pass over an inflated segment blob, shared by segment_files (which builds the files),
   segment_summary (which builds none) and segment_has_id: the layout is read, and each file checked as
   fragment.check_file checks it, in one place, so the three cannot disagree on what a blob holds or on
   what is refused. */
typedef struct {
    const char *p, *end;
    uint32_t count, at;
    int v1;
} BlobReader;

typedef struct {
    const char *name, *subject, *cols, *ids; /* cols: n parts, then n sizes, then n articles */
    Py_ssize_t name_len, subject_len, n, ids_len;
    int64_t index, parts_total;
} BlobFile;

#define NEED(k, what)                                                                                      \
    if (r->end - r->p < (Py_ssize_t)(k)) {                                                                  \
        PyErr_Format(PyExc_ValueError, "segment blob is truncated (in %s)", what);                          \
        return -1;                                                                                         \
    }

/* The blob's head; -1 with ValueError when it is not a segment blob. */
static int
blob_open(BlobReader *r, const char *data, Py_ssize_t len)
{
    r->p = data;
    r->end = data + len;
    r->at = 0;
    NEED(8, "its head");
    /* Version 2 (issue 16) adds each file's subject; version 1 (no subject) is read still: catalogs and
       windows written before hold it, and old workers post it (merge.py). */
    r->v1 = memcmp(r->p, "UIS1", 4) == 0;
    if (!r->v1 && memcmp(r->p, "UIS2", 4) != 0) {
        PyErr_SetString(PyExc_ValueError, "not a segment blob (bad magic)");
        return -1;
    }
    memcpy(&r->count, r->p + 4, 4);
    r->p += 8;
    return 0;
}

/* The next file (r->at < r->count), checked as fragment.check_file when ``check``; -1 with ValueError.
   Without ``check`` (a blob checked already) only the layout's bounds are. */
static int
blob_next(BlobReader *r, BlobFile *file, Py_ssize_t max_text, Py_ssize_t max_id, int check)
{
    uint32_t f = r->at++;
    NEED(r->v1 ? 22 : 24, "a file's head");
    uint16_t name_len, subject_len = 0;
    memcpy(&name_len, r->p, 2);
    file->index = read_i64(r->p + 2);
    file->parts_total = read_i64(r->p + 10);
    uint32_t n32;
    memcpy(&n32, r->p + 18, 4);
    Py_ssize_t n = file->n = n32;
    if (!r->v1)
        memcpy(&subject_len, r->p + 22, 2);
    r->p += r->v1 ? 22 : 24;
    NEED(name_len, "a file name");
    file->name = r->p;
    file->name_len = name_len;
    r->p += name_len;
    NEED(subject_len, "a subject");
    file->subject = r->p;
    file->subject_len = subject_len;
    r->p += subject_len;
    if (r->end - r->p < 24 * n) {
        PyErr_SetString(PyExc_ValueError, "segment blob is truncated (in a file's columns)");
        return -1;
    }
    const char *cols = file->cols = r->p;
    r->p += 24 * n;
    NEED(4, "a file's message-ids");
    uint32_t ids_len32;
    memcpy(&ids_len32, r->p, 4);
    Py_ssize_t ids_len = file->ids_len = ids_len32;
    r->p += 4;
    NEED(ids_len, "a file's message-ids");
    const char *ids = file->ids = r->p;
    r->p += ids_len;
    if (!check)
        return 0;
    /* fragment.check_file */
    const char *name = file->name, *subject = file->subject;
    if (!utf8_valid((const unsigned char *)name, name_len)) {
        PyErr_Format(PyExc_ValueError, "file %u: the name is not UTF-8", f);
        return -1;
    }
    Py_ssize_t chars = 0;
    for (Py_ssize_t i = 0; i < name_len; i++)
        chars += ((unsigned char)name[i] & 0xC0) != 0x80;
    if (chars < 1 || chars > max_text) {
        PyErr_Format(PyExc_ValueError, "file %u: the name must be 1 to %zd characters", f, max_text);
        return -1;
    }
    if (!utf8_valid((const unsigned char *)subject, subject_len)) {
        PyErr_Format(PyExc_ValueError, "file %u: the subject is not UTF-8", f);
        return -1;
    }
    chars = 0;
    for (Py_ssize_t i = 0; i < subject_len; i++)
        chars += ((unsigned char)subject[i] & 0xC0) != 0x80;
    if (chars > max_text) {
        PyErr_Format(PyExc_ValueError, "file %u: the subject must be at most %zd characters", f, max_text);
        return -1;
    }
    if (file->index < 0 || file->parts_total < 0) {
        PyErr_Format(PyExc_ValueError, "file %u: index or parts_total out of range (negative)", f);
        return -1;
    }
    int64_t previous = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t part = read_i64(cols + 8 * i);
        if (part <= previous) {
            PyErr_Format(PyExc_ValueError, "file %u: part numbers must be >= 1 and strictly ascending", f);
            return -1;
        }
        previous = part;
        if (read_i64(cols + 8 * (n + i)) < 0 || read_i64(cols + 8 * (2 * n + i)) < 0) {
            PyErr_Format(PyExc_ValueError, "file %u: a size or article out of range (negative)", f);
            return -1;
        }
    }
    if (ids_len > max_id * (n > 1 ? n : 1)) {
        PyErr_Format(PyExc_ValueError, "file %u: message-ids longer than %zd bytes a part", f, max_id);
        return -1;
    }
    Py_ssize_t id_count = ids_len ? 1 : 0;
    for (const char *at = ids; (at = memchr(at, '\n', (size_t)(ids + ids_len - at))) != NULL; at++) {
        if (at == ids || at[-1] == '\n' || at == ids + ids_len - 1) {
            PyErr_Format(PyExc_ValueError, "file %u: an empty message-id", f);
            return -1;
        }
        id_count++;
    }
    if (id_count != n) {
        PyErr_Format(PyExc_ValueError, "file %u has %zd parts but other message-ids (%zd)", f, n, id_count);
        return -1;
    }
    if (!utf8_valid((const unsigned char *)ids, ids_len)) {
        PyErr_Format(PyExc_ValueError, "file %u: message-ids are not UTF-8", f);
        return -1;
    }
    return 0;
}
#undef NEED

/* 0 when every byte of the blob was read; -1 with ValueError for bytes after its last file. */
static int
blob_close(const BlobReader *r)
{
    if (r->p != r->end) {
        PyErr_Format(PyExc_ValueError, "segment blob has %zd bytes after its last file", (Py_ssize_t)(r->end - r->p));
        return -1;
    }
    return 0;
}

static PyObject *
segment_files(PyObject *module, PyObject *args)
{
    Py_buffer buf;
    Py_ssize_t max_text, max_id;
    PyTypeObject *file_type;
    if (!PyArg_ParseTuple(args, "y*nnO!:segment_files", &buf, &max_text, &max_id, &PyType_Type, &file_type))
        return NULL;
    BlobReader r;
    BlobFile bf;
    PyObject *files = PyList_New(0);
    if (files == NULL || blob_open(&r, buf.buf, buf.len) < 0)
        goto fail;
    while (r.at < r.count) {
        if (blob_next(&r, &bf, max_text, max_id, 1) < 0)
            goto fail;
        Py_ssize_t n = bf.n;
        PyObject *values[FILE_FIELDS] = {
            PyUnicode_DecodeUTF8(bf.name, bf.name_len, NULL), PyLong_FromLongLong(bf.index),
            PyLong_FromLongLong(bf.parts_total), NULL, NULL, NULL, PyBytes_FromStringAndSize(bf.ids, bf.ids_len),
            PyUnicode_DecodeUTF8(bf.subject, bf.subject_len, NULL)};
        for (int c = 0; c < 3; c++) {
            Py_buffer view;
            values[3 + c] = new_int_array(n, &view);
            if (values[3 + c] != NULL) {
                if (n)
                    memcpy(view.buf, bf.cols + 8 * n * c, (size_t)(8 * n));
                PyBuffer_Release(&view);
            }
        }
        /* The FileFragment itself, its slots set as its dataclass __init__ would (object.__setattr__):
           building it in Python from a tuple was as long as all of this function's checks. */
        PyObject *file = NULL;
        int ok = 1;
        for (int k = 0; k < FILE_FIELDS; k++)
            ok &= values[k] != NULL;
        if (ok)
            file = file_type->tp_alloc(file_type, 0);
        for (int k = 0; k < FILE_FIELDS && file != NULL; k++) {
            if (PyObject_GenericSetAttr(file, file_fields[k], values[k]) < 0)
                Py_CLEAR(file);
        }
        for (int k = 0; k < FILE_FIELDS; k++)
            Py_XDECREF(values[k]);
        if (file == NULL || PyList_Append(files, file) < 0) {
            Py_XDECREF(file);
            goto fail;
        }
        Py_DECREF(file);
    }
    if (blob_close(&r) < 0)
        goto fail;
    PyBuffer_Release(&buf);
    return files;
fail:
    Py_XDECREF(files);
    PyBuffer_Release(&buf);
    return NULL;
}

/* ``*total += value`` exactly: a sum past int64 is carried into ``*spill``, a Python int (made only
   then: a real release never needs it, a hostile blob's sizes may). -1 on a Python error. */
static int
add_exact(int64_t *total, PyObject **spill, int64_t value)
{
    int64_t sum64;
    if (!__builtin_add_overflow(*total, value, &sum64)) {
        *total = sum64;
        return 0;
    }
    PyObject *held = PyLong_FromLongLong(*total), *sum;
    if (held == NULL)
        return -1;
    sum = *spill == NULL ? held : PyNumber_Add(*spill, held);
    if (sum != held)
        Py_DECREF(held);
    if (sum == NULL)
        return -1;
    Py_XSETREF(*spill, sum);
    *total = value;
    return 0;
}

/* ``total`` plus what ``add_exact`` carried, as a Python int (the spill consumed). */
static PyObject *
exact_sum(int64_t total, PyObject *spill)
{
    PyObject *low = PyLong_FromLongLong(total);
    if (spill == NULL || low == NULL) {
        Py_XDECREF(spill);
        return low;
    }
    PyObject *sum = PyNumber_Add(spill, low);
    Py_DECREF(spill);
    Py_DECREF(low);
    return sum;
}

PyDoc_STRVAR(segment_summary_doc,
             "segment_summary(data, max_text, max_id, /) -> (files, parts_seen, parts_known, size, articles, "
             "in_order)\n\n"
             "segment_files' checks of an inflated segment blob without building its files: what the coordinator "
             "reads of a release new to the catalog (fragment.summarize, its Python twin). articles is (lowest, "
             "highest) of every file's articles or None; in_order whether the files are sorted by (name, "
             "parts_total) without repeats (UTF-8's byte order is its code points' order). ValueError as "
             "segment_files refuses.");

static PyObject *
segment_summary(PyObject *module, PyObject *args)
{
    Py_buffer buf;
    Py_ssize_t max_text, max_id;
    if (!PyArg_ParseTuple(args, "y*nn:segment_summary", &buf, &max_text, &max_id))
        return NULL;
    BlobReader r;
    BlobFile bf, previous = {0};
    int64_t parts_seen = 0, known = 0, size = 0, low = INT64_MAX, high = -1;
    PyObject *known_spill = NULL, *size_spill = NULL, *out = NULL;
    int in_order = 1;
    if (blob_open(&r, buf.buf, buf.len) < 0)
        goto done;
    while (r.at < r.count) {
        if (blob_next(&r, &bf, max_text, max_id, 1) < 0)
            goto done;
        Py_ssize_t n = bf.n;
        parts_seen += n; /* n < 2**32 a file and files < 2**32: no overflow */
        if (add_exact(&known, &known_spill, bf.parts_total ? bf.parts_total : n) < 0)
            goto done;
        for (Py_ssize_t i = 0; i < n; i++) {
            int64_t article = read_i64(bf.cols + 8 * (2 * n + i));
            low = article < low ? article : low;
            high = article > high ? article : high;
            if (add_exact(&size, &size_spill, read_i64(bf.cols + 8 * (n + i))) < 0)
                goto done;
        }
        if (r.at > 1 && in_order) {
            Py_ssize_t common = previous.name_len < bf.name_len ? previous.name_len : bf.name_len;
            int order = memcmp(previous.name, bf.name, (size_t)common);
            if (order == 0)
                order = previous.name_len < bf.name_len ? -1 : previous.name_len > bf.name_len;
            if (order == 0)
                order = previous.parts_total < bf.parts_total ? -1 : previous.parts_total > bf.parts_total;
            in_order = order < 0;
        }
        previous = bf;
    }
    if (blob_close(&r) < 0)
        goto done;
    PyObject *known_obj = exact_sum(known, known_spill), *size_obj = exact_sum(size, size_spill);
    known_spill = size_spill = NULL;
    if (known_obj != NULL && size_obj != NULL) {
        if (high < 0)
            out = Py_BuildValue("(InNNOO)", r.count, (Py_ssize_t)parts_seen, known_obj, size_obj, Py_None,
                                in_order ? Py_True : Py_False);
        else
            out = Py_BuildValue("(InNN(LL)O)", r.count, (Py_ssize_t)parts_seen, known_obj, size_obj,
                                (long long)low, (long long)high, in_order ? Py_True : Py_False);
        known_obj = size_obj = NULL; /* N: the tuple took them, or released them when it failed */
    }
    Py_XDECREF(known_obj);
    Py_XDECREF(size_obj);
done:
    Py_XDECREF(known_spill);
    Py_XDECREF(size_spill);
    PyBuffer_Release(&buf);
    return out;
}

PyDoc_STRVAR(segment_has_id_doc,
             "segment_has_id(data, message_id, /) -> bool\n\n"
             "Whether message_id (bytes, not empty, no LF) is one of the segments' ids of an inflated segment "
             "blob checked already (segment_summary): a whole LF-bounded id of some file. A probe candidate's ids "
             "are tested so (wire/batch.py) without the files being built.");

static PyObject *
segment_has_id(PyObject *module, PyObject *args)
{
    Py_buffer buf, needle;
    if (!PyArg_ParseTuple(args, "y*y*:segment_has_id", &buf, &needle))
        return NULL;
    BlobReader r;
    BlobFile bf;
    PyObject *out = NULL;
    const char *want = needle.buf;
    Py_ssize_t want_len = needle.len;
    if (want_len == 0 || memchr(want, '\n', (size_t)want_len) != NULL) {
        PyErr_SetString(PyExc_ValueError, "segment_has_id: a message-id is not empty and holds no LF");
        goto done;
    }
    if (blob_open(&r, buf.buf, buf.len) < 0)
        goto done;
    int found = 0;
    while (!found && r.at < r.count) {
        if (blob_next(&r, &bf, 0, 0, 0) < 0)
            goto done;
        const char *ids = bf.ids, *ids_end = bf.ids + bf.ids_len;
        for (const char *at = ids; !found && ids_end - at >= want_len;) {
            const char *hit = memmem(at, (size_t)(ids_end - at), want, (size_t)want_len);
            if (hit == NULL)
                break;
            const char *after = hit + want_len;
            found = (hit == ids || hit[-1] == '\n') && (after == ids_end || *after == '\n');
            at = hit + 1;
        }
    }
    out = found ? Py_True : Py_False;
    Py_INCREF(out);
done:
    PyBuffer_Release(&needle);
    PyBuffer_Release(&buf);
    return out;
}

PyDoc_STRVAR(column_range_doc,
             "column_range(column, /) -> (min, max)\n\n"
             "The smallest and largest value of an int64 column (array('q')); ValueError when it is empty. "
             "min() and max() make an int of every value: for a batch's articles that was half of "
             "check_authority (wire/batch.py).");

static PyObject *
column_range(PyObject *module, PyObject *arg)
{
    Py_buffer buf;
    if (PyObject_GetBuffer(arg, &buf, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    if (buf.itemsize != 8 || buf.format == NULL || strcmp(buf.format, "q") != 0) {
        PyBuffer_Release(&buf);
        PyErr_SetString(PyExc_TypeError, "column_range needs an array('q')");
        return NULL;
    }
    Py_ssize_t n = buf.len / 8;
    if (n == 0) {
        PyBuffer_Release(&buf);
        PyErr_SetString(PyExc_ValueError, "column_range of an empty column");
        return NULL;
    }
    const int64_t *v = buf.buf;
    int64_t low = v[0], high = v[0];
    for (Py_ssize_t i = 1; i < n; i++) {
        low = v[i] < low ? v[i] : low;
        high = v[i] > high ? v[i] : high;
    }
    PyBuffer_Release(&buf);
    return Py_BuildValue("(LL)", (long long)low, (long long)high);
}

PyDoc_STRVAR(segment_blob_doc,
             "segment_blob(files, /) -> bytes\n\n"
             "merge.pack_segments before its compression (a little-endian host only): the files' heads, "
             "names, subjects, columns and message-ids in the blob's layout. In Python the per-file struct packing "
             "and column copies were as long as compressing the result (bench/stream.py's worker).");

typedef struct {
    char *data;
    Py_ssize_t len, cap;
} Out;

static int
out_put(Out *out, const void *src, Py_ssize_t n)
{
    if (out->len + n > out->cap) {
        Py_ssize_t cap = out->cap ? out->cap : 4096;
        while (cap < out->len + n)
            cap *= 2;
        char *grown = PyMem_Realloc(out->data, (size_t)cap);
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        out->data = grown;
        out->cap = cap;
    }
    memcpy(out->data + out->len, src, (size_t)n);
    out->len += n;
    return 0;
}

/* A column of int64 (array 'q', or 'l' where long is 8 bytes) appended as it is in memory. */
static int
out_column(Out *out, PyObject *column)
{
    Py_buffer view;
    if (PyObject_GetBuffer(column, &view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    int ok = view.itemsize == 8 && view.format != NULL &&
             (strcmp(view.format, "q") == 0 || strcmp(view.format, "l") == 0);
    int result = -1;
    if (!ok)
        PyErr_SetString(PyExc_TypeError, "segment_blob: a column is not an array of int64");
    else
        result = out_put(out, view.buf, view.len);
    PyBuffer_Release(&view);
    return result;
}

static PyObject *
segment_blob(PyObject *module, PyObject *arg)
{
    PyObject *seq = PySequence_Fast(arg, "segment_blob: files must be a sequence");
    if (seq == NULL)
        return NULL;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
    Out out = {NULL, 0, 0};
    PyObject *result = NULL;
    if (count > (Py_ssize_t)UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "segment_blob: too many files");
        goto done;
    }
    uint32_t count32 = (uint32_t)count;
    if (out_put(&out, "UIS2", 4) < 0 || out_put(&out, &count32, 4) < 0)
        goto done;
    for (Py_ssize_t f = 0; f < count; f++) {
        PyObject *file = PySequence_Fast_GET_ITEM(seq, f), *v[FILE_FIELDS] = {NULL};
        int failed = 0;
        for (int k = 0; k < FILE_FIELDS && !failed; k++)
            failed = (v[k] = PyObject_GetAttr(file, file_fields[k])) == NULL;
        Py_ssize_t name_len = 0, subject_len = 0, n = 0;
        const char *name = failed ? NULL : PyUnicode_AsUTF8AndSize(v[0], &name_len);
        const char *subject = name == NULL ? NULL : PyUnicode_AsUTF8AndSize(v[7], &subject_len);
        long long index = 0, parts_total = 0;
        Py_buffer ids = {0};
        int have_ids = 0;
        if (name == NULL || subject == NULL)
            failed = 1;
        else if (name_len > 0xFFFF) {
            PyErr_Format(PyExc_ValueError, "file name of %zd bytes cannot be packed (limit 65535)", name_len);
            failed = 1;
        } else if (subject_len > 0xFFFF) {
            PyErr_Format(PyExc_ValueError, "subject of %zd bytes cannot be packed (limit 65535)", subject_len);
            failed = 1;
        }
        if (!failed) {
            index = PyLong_AsLongLong(v[1]);
            parts_total = PyLong_AsLongLong(v[2]);
            n = PyObject_Length(v[3]);
            failed = PyErr_Occurred() != NULL || n < 0;
        }
        if (!failed && n > (Py_ssize_t)UINT32_MAX) {
            PyErr_SetString(PyExc_ValueError, "segment_blob: too many parts in a file");
            failed = 1;
        }
        if (!failed) {
            have_ids = PyObject_GetBuffer(v[6], &ids, PyBUF_SIMPLE) == 0;
            failed = !have_ids || ids.len > (Py_ssize_t)UINT32_MAX;
            if (have_ids && failed)
                PyErr_SetString(PyExc_ValueError, "segment_blob: message-ids too long");
        }
        if (!failed) {
            uint16_t name16 = (uint16_t)name_len, subject16 = (uint16_t)subject_len;
            int64_t index64 = index, total64 = parts_total;
            uint32_t n32 = (uint32_t)n, ids32 = (uint32_t)ids.len;
            failed = out_put(&out, &name16, 2) < 0 || out_put(&out, &index64, 8) < 0 ||
                     out_put(&out, &total64, 8) < 0 || out_put(&out, &n32, 4) < 0 ||
                     out_put(&out, &subject16, 2) < 0 || out_put(&out, name, name_len) < 0 ||
                     out_put(&out, subject, subject_len) < 0 || out_column(&out, v[3]) < 0 ||
                     out_column(&out, v[4]) < 0 || out_column(&out, v[5]) < 0 || out_put(&out, &ids32, 4) < 0 ||
                     out_put(&out, ids.buf, ids.len) < 0;
        }
        if (have_ids)
            PyBuffer_Release(&ids);
        for (int k = 0; k < FILE_FIELDS; k++)
            Py_XDECREF(v[k]);
        if (failed)
            goto done;
    }
    result = PyBytes_FromStringAndSize(out.data, out.len);
done:
    PyMem_Free(out.data);
    Py_DECREF(seq);
    return result;
}

/* ---- a date's Unix seconds (overview.parse_date) ------------------------------------------------ */

PyDoc_STRVAR(parse_date_doc,
             "parse_date(raw, /) -> int | False\n\n"
             "overview.parse_date for the form posters' clients write, \"Sat, 30 Nov 2024 14:22:01 +0000\" (the "
             "weekday and the seconds optional, spaces as the blanks, anything after the zone ignored, as its "
             "regex reads it), when the date is valid and in 1970-2100: its Unix seconds. False for anything "
             "else (other blanks, another form, a date out of range): the Python reads it. The worker parses "
             "two a release at take, ~3 µs each in Python (issue 17).");

static int
two_digits(const char *p)
{
    return (p[0] >= '0' && p[0] <= '9' && p[1] >= '0' && p[1] <= '9') ? (p[0] - '0') * 10 + (p[1] - '0') : -1;
}

static int
is_alpha(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

static PyObject *
parse_date(PyObject *module, PyObject *arg)
{
    static const char months[] = "janfebmaraprmayjunjulaugsepoctnovdec";
    static const int lengths[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (!PyBytes_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "parse_date: bytes expected");
        return NULL;
    }
    const char *p = PyBytes_AS_STRING(arg), *end = p + PyBytes_GET_SIZE(arg);
    /* every read below is bounded by `end`: the bytes object's NUL past it stops none of them early */
    while (p < end && *p == ' ')
        p++;
    if (end - p >= 4 && is_alpha(p[0]) && is_alpha(p[1]) && is_alpha(p[2]) && p[3] == ',') {
        p += 4;
        while (p < end && *p == ' ')
            p++;
    }
    int day = 0, digits = 0;
    while (p < end && *p >= '0' && *p <= '9' && digits < 2) {
        day = day * 10 + (*p++ - '0');
        digits++;
    }
    if (digits == 0 || p >= end || *p != ' ')
        Py_RETURN_FALSE;
    while (p < end && *p == ' ')
        p++;
    if (end - p < 4 || !is_alpha(p[0]) || !is_alpha(p[1]) || !is_alpha(p[2]) || p[3] != ' ')
        Py_RETURN_FALSE;
    int month = 0;
    for (int m = 0; m < 12; m++) {
        if ((p[0] | 0x20) == months[3 * m] && (p[1] | 0x20) == months[3 * m + 1] && (p[2] | 0x20) == months[3 * m + 2]) {
            month = m + 1;
            break;
        }
    }
    if (month == 0)
        Py_RETURN_FALSE;
    p += 3;
    while (p < end && *p == ' ')
        p++;
    if (end - p < 5)
        Py_RETURN_FALSE;
    int y1 = two_digits(p), y2 = two_digits(p + 2);
    if (y1 < 0 || y2 < 0 || p[4] != ' ')
        Py_RETURN_FALSE;
    int year = y1 * 100 + y2;
    p += 4;
    while (p < end && *p == ' ')
        p++;
    if (end - p < 5 || p[2] != ':')
        Py_RETURN_FALSE;
    int hh = two_digits(p), mm = two_digits(p + 3), ss = 0;
    if (hh < 0 || mm < 0)
        Py_RETURN_FALSE;
    p += 5;
    if (end - p >= 3 && p[0] == ':') {
        ss = two_digits(p + 1);
        if (ss < 0)
            Py_RETURN_FALSE;
        p += 3;
    }
    if (p >= end || *p != ' ')
        Py_RETURN_FALSE;
    while (p < end && *p == ' ')
        p++;
    if (end - p < 5 || (p[0] != '+' && p[0] != '-'))
        Py_RETURN_FALSE;
    int zh = two_digits(p + 1), zm = two_digits(p + 3);
    if (zh < 0 || zm < 0)
        Py_RETURN_FALSE;
    long long offset = (zh * 3600LL + zm * 60LL) * (p[0] == '+' ? 1 : -1);
    /* overview._unix: a valid date and time of 1970-2100, then within [0, 2100-01-01] */
    if (!(year >= 1970 && year <= 2100 && hh < 24 && mm < 60 && ss <= 60))
        Py_RETURN_FALSE;
    int leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    int length = lengths[month - 1] + (month == 2 && leap);
    if (day < 1 || day > length)
        Py_RETURN_FALSE;
    /* days from 1970-01-01 (proleptic Gregorian, as calendar.timegm) */
    long long y = year - (month <= 2), era = y / 400, yoe = y - era * 400;
    long long doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
    long long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    long long days = era * 146097 + doe - 719468;
    long long value = days * 86400 + hh * 3600LL + mm * 60LL + ss - offset;
    if (value < 0 || value > 4102444800LL)
        Py_RETURN_FALSE;
    return PyLong_FromLongLong(value);
}

/* ---- NNTP replies (nntp/_readers.py) ------------------------------------------------------------ */

PyDoc_STRVAR(line_scan_doc,
             "line_scan(data, /) -> (newlines, first_line_dot)\n\n"
             "The number of LF bytes in data, and where the first LF followed by '.' is (-1 when none): what "
             "the NNTP reader asks of every block of a multi-line reply. bytes.count(b'\\n') and a regex for "
             "b'\\n.' took 0.25 µs an overview line between them, a third of the client's CPU (bench/fetch.py).");

static PyObject *
line_scan(PyObject *module, PyObject *arg)
{
    Py_buffer buf;
    if (PyObject_GetBuffer(arg, &buf, PyBUF_SIMPLE) < 0)
        return NULL;
    const char *data = buf.buf, *end = data + buf.len, *p = data;
    Py_ssize_t newlines = 0, dot = -1;
    Py_BEGIN_ALLOW_THREADS
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (eol == NULL)
            break;
        newlines++;
        if (dot < 0 && eol + 1 < end && eol[1] == '.')
            dot = eol - data;
        p = eol + 1;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&buf);
    return Py_BuildValue("(nn)", newlines, dot);
}

/* ---- a subject's reading (rules.py's _reading) -------------------------------------------------- */

/* rules._reading and the naming.py helpers it calls, for a subject of printable ASCII only (0x20 to
   0x7E): there the regexes' Unicode-wide \s, \d and re.I, str.strip() and str.lower() all reduce to
   the ASCII rules written here, and a blank is only " ". Anything else (another character, a counter
   that is not plain digits, a title read as something not ASCII) returns False and the Python reads
   it. The rule's regex stays in Python: this is given its match. The tables (extensions, tags,
   separators, the title cache) are the Python's own objects, handed over once by rules.py
   (subject_tables), so each rule has one home. */

static struct {
    PyObject *extensions;        /* naming._EXTENSIONS: extension -> FileKind */
    PyObject *member_extensions; /* naming._MEMBER_EXTENSIONS */
    PyObject *set_members;       /* naming.SET_MEMBERS */
    PyObject *kinds;             /* FileKind OTHER, PAR2, PAR2_VOLUME, SEVEN_ZIP, SPLIT, ZIP, RAR */
    PyObject *titles;            /* rules._TITLES: the title read from a text, cached */
    PyObject *cached_title;      /* rules._cached_title(text): reads and caches a title */
    PyObject *names;             /* the built-in rules' names, in their order (default_match) */
    PyObject *groups, *start;    /* "groups", "start" */
    char trailer[128];           /* rules._TRAILER's ASCII characters */
    char edges[128];             /* naming._EDGES' ASCII characters */
    Py_ssize_t tail;             /* naming._TAIL */
} rd;

enum { K_OTHER, K_PAR2, K_PAR2_VOLUME, K_SEVEN_ZIP, K_SPLIT, K_ZIP, K_RAR, K_COUNT };

typedef struct {
    const char *s;
    Py_ssize_t n;
} Span;

static inline int
lower_c(int c)
{
    return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

static inline int
is_digit_c(int c)
{
    return c >= '0' && c <= '9';
}

static inline int
is_alnum_c(int c)
{
    return is_digit_c(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* All of the text is printable ASCII: the only input read here. */
static int
printable_ascii(PyObject *text)
{
    if (!PyUnicode_IS_ASCII(text))
        return 0;
    const unsigned char *s = PyUnicode_1BYTE_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    for (Py_ssize_t k = 0; k < n; k++) {
        if (s[k] < 0x20 || s[k] > 0x7E)
            return 0;
    }
    return 1;
}

static inline Span
span_of(PyObject *text)
{
    Span out = {(const char *)PyUnicode_1BYTE_DATA(text), PyUnicode_GET_LENGTH(text)};
    return out;
}

/* str.strip() of printable ASCII */
static Span
stripped(Span t)
{
    while (t.n > 0 && t.s[0] == ' ') {
        t.s++;
        t.n--;
    }
    while (t.n > 0 && t.s[t.n - 1] == ' ')
        t.n--;
    return t;
}

static Span
rstripped_of(Span t, const char *chars)
{
    while (t.n > 0 && strchr(chars, t.s[t.n - 1]) != NULL && t.s[t.n - 1] != '\0')
        t.n--;
    return t;
}

/* rules._trimmed */
static Span
trimmed(Span t)
{
    t = rstripped_of(t, rd.trailer);
    if (t.n >= 4 && lower_c(t.s[t.n - 4]) == 'y' && lower_c(t.s[t.n - 3]) == 'e' && lower_c(t.s[t.n - 2]) == 'n' &&
        lower_c(t.s[t.n - 1]) == 'c') {
        t.n -= 4;
        t = rstripped_of(t, rd.trailer);
    }
    return stripped(t);
}

/* The length of a match of naming._PAR2_VOLUME (\.vol\d+[+-]\d+$, re.I) or, with part set,
   _PART_VOLUME (\.part\d+$, re.I) searched in the last rd.tail characters of t; 0 for none. Read from
   the end: the pattern can match in one place only. */
static Py_ssize_t
volume_suffix(Span t, int part)
{
    Py_ssize_t j = t.n, d;
    for (d = 0; j > 0 && is_digit_c(t.s[j - 1]); j--, d++)
        ;
    if (d == 0)
        return 0;
    const char *word = "part";
    if (!part) {
        if (j == 0 || (t.s[j - 1] != '+' && t.s[j - 1] != '-'))
            return 0;
        j--;
        for (d = 0; j > 0 && is_digit_c(t.s[j - 1]); j--, d++)
            ;
        if (d == 0)
            return 0;
        word = "vol";
    }
    Py_ssize_t w = (Py_ssize_t)strlen(word);
    if (j < w + 1 || t.s[j - w - 1] != '.')
        return 0;
    for (Py_ssize_t k = 0; k < w; k++) {
        if (lower_c(t.s[j - w + k]) != word[k])
            return 0;
    }
    Py_ssize_t length = t.n - (j - w - 1);
    return length <= rd.tail ? length : 0;
}

/* The lower case of t as a new str */
static PyObject *
lower_str(Span t)
{
    PyObject *out = PyUnicode_New(t.n, 127);
    if (out == NULL)
        return NULL;
    char *o = (char *)PyUnicode_1BYTE_DATA(out);
    for (Py_ssize_t k = 0; k < t.n; k++)
        o[k] = (char)lower_c(t.s[k]);
    return out;
}

/* naming._NUMBERED.fullmatch of a lower-case extension: the kind (K_ZIP, K_RAR), or -1 */
static int
numbered(Span ext)
{
    if (ext.n < 3 || ext.n > 4 || (ext.s[0] != 'r' && ext.s[0] != 's' && ext.s[0] != 'z'))
        return -1;
    for (Py_ssize_t k = 1; k < ext.n; k++) {
        if (!is_digit_c(ext.s[k]))
            return -1;
    }
    return ext.s[0] == 'z' ? K_ZIP : K_RAR;
}

static int
all_digits(Span t)
{
    for (Py_ssize_t k = 0; k < t.n; k++) {
        if (!is_digit_c(t.s[k]))
            return 0;
    }
    return 1;
}

/* naming.file_kind: a new reference to the kind, or NULL */
static PyObject *
file_kind_of(Span name)
{
    char low[256];
    Py_ssize_t n = name.n < rd.tail ? name.n : rd.tail;
    if (n > (Py_ssize_t)sizeof low)
        n = sizeof low; /* rd.tail is checked against it in subject_tables */
    for (Py_ssize_t k = 0; k < n; k++)
        low[k] = (char)lower_c(name.s[name.n - n + k]);
    Py_ssize_t dot = n - 1;
    while (dot >= 0 && low[dot] != '.')
        dot--;
    int kind = K_OTHER;
    if (dot >= 0) {
        Span head = {low, dot}, ext = {low + dot + 1, n - dot - 1};
        PyObject *key = PyUnicode_FromStringAndSize(ext.s, ext.n);
        if (key == NULL)
            return NULL;
        PyObject *found = PyDict_GetItemWithError(rd.extensions, key);
        Py_DECREF(key);
        if (found != NULL)
            return Py_NewRef(found);
        if (PyErr_Occurred())
            return NULL;
        if (ext.n == 4 && memcmp(ext.s, "par2", 4) == 0)
            kind = volume_suffix(head, 0) ? K_PAR2_VOLUME : K_PAR2;
        else if (ext.n == 3 && all_digits(ext))
            kind = head.n >= 3 && memcmp(head.s + head.n - 3, ".7z", 3) == 0 ? K_SEVEN_ZIP : K_SPLIT;
        else if ((kind = numbered(ext)) < 0)
            kind = K_OTHER;
    }
    return Py_NewRef(PyTuple_GET_ITEM(rd.kinds, kind));
}

/* naming.release_base of a stripped name: the length of its prefix that is the base, or -1 (error) */
static Py_ssize_t
release_base_of(Span name)
{
    Py_ssize_t dot = name.n - 1;
    while (dot >= 0 && name.s[dot] != '.')
        dot--;
    if (dot <= 0)
        return name.n;
    Span head = {name.s, dot}, ext = {name.s + dot + 1, name.n - dot - 1};
    char low[8];
    if (ext.n <= 4) {
        for (Py_ssize_t k = 0; k < ext.n; k++)
            low[k] = (char)lower_c(ext.s[k]);
        Span lower = {low, ext.n};
        if ((ext.n == 4 && memcmp(low, "par2", 4) == 0) || (ext.n == 3 && memcmp(low, "rar", 3) == 0)) {
            Py_ssize_t cut = volume_suffix(head, ext.n == 3);
            return head.n - cut > 0 ? head.n - cut : name.n;
        }
        if (ext.n == 3 && all_digits(lower)) {
            int seven = head.n > 3 && head.s[head.n - 3] == '.' && lower_c(head.s[head.n - 2]) == '7' &&
                        lower_c(head.s[head.n - 1]) == 'z';
            return seven ? head.n - 3 : head.n;
        }
        if (numbered(lower) >= 0)
            return head.n;
    }
    PyObject *key = lower_str(ext);
    if (key == NULL)
        return -1;
    int member = PySet_Contains(rd.member_extensions, key);
    Py_DECREF(key);
    if (member < 0)
        return -1;
    return member ? head.n : name.n;
}

/* naming.looks_obfuscated */
static int
obfuscated_name(Span t)
{
    t = stripped(t);
    if (t.n == 0)
        return 0;
    Py_ssize_t hex = 0, digit = 0, upper = 0, lower = 0, runs = 0, single = 0, run = 0;
    for (Py_ssize_t k = 0; k < t.n; k++) {
        int c = (unsigned char)t.s[k];
        int is_lower = c >= 'a' && c <= 'z';
        hex += is_digit_c(c) || (lower_c(c) >= 'a' && lower_c(c) <= 'f');
        digit += is_digit_c(c);
        upper += c >= 'A' && c <= 'Z';
        lower += is_lower;
        if (is_lower)
            run++;
        if ((!is_lower || k == t.n - 1) && run > 0) {
            runs++;
            single += run == 1;
            run = 0;
        }
    }
    if (hex == t.n && t.n >= 16)
        return 1;
    if (digit + upper + lower != t.n || t.n < 12)
        return 0;
    if (digit >= 2 && upper + lower >= 2)
        return 1;
    return t.n >= 16 && upper >= 4 && runs >= 4 && single * 2 >= runs;
}

/* naming.normalise of printable ASCII into out (t.n bytes at most): its length */
static Py_ssize_t
normalised(Span t, char *out)
{
    Py_ssize_t n = 0;
    for (Py_ssize_t k = 0; k < t.n; k++) {
        int c = lower_c(t.s[k]);
        if (is_digit_c(c) || (c >= 'a' && c <= 'z'))
            out[n++] = (char)c;
        else if (n == 0 || out[n - 1] != ' ')
            out[n++] = ' ';
    }
    Py_ssize_t from = 0;
    while (from < n && out[from] == ' ')
        from++;
    while (n > from && out[n - 1] == ' ')
        n--;
    memmove(out, out + from, n - from);
    return n - from;
}

static int
contains(const char *hay, Py_ssize_t hn, const char *needle, Py_ssize_t nn)
{
    if (nn == 0)
        return 1;
    for (Py_ssize_t k = 0; k + nn <= hn; k++) {
        if (hay[k] == needle[0] && memcmp(hay + k, needle, nn) == 0)
            return 1;
    }
    return 0;
}

/* rules._without, on lower-case copies (ASCII: the same length as the text): text is replaced in place,
   its length returned */
static Py_ssize_t
without(char *text, Py_ssize_t n, Span part, char *scratch)
{
    if (part.n == 0)
        return n;
    char wanted[MAX_SUBJECT];
    for (Py_ssize_t k = 0; k < part.n; k++)
        wanted[k] = (char)lower_c(part.s[k]);
    Py_ssize_t o = 0, at = 0;
    int found = 0;
    while (at + part.n <= n) {
        Py_ssize_t k = at;
        for (; k + part.n <= n; k++) {
            if (lower_c(text[k]) == wanted[0]) {
                Py_ssize_t q = 1;
                while (q < part.n && lower_c(text[k + q]) == wanted[q])
                    q++;
                if (q == part.n)
                    break;
            }
        }
        if (k + part.n > n)
            break;
        found = 1;
        memcpy(scratch + o, text + at, k - at);
        o += k - at;
        scratch[o++] = ' ';
        at = k + part.n;
    }
    if (!found)
        return n;
    memcpy(scratch + o, text + at, n - at);
    o += n - at;
    memcpy(text, scratch, o);
    return o;
}

/* rules._title: a new reference to the title (a str or None), or NULL */
static PyObject *
title_of(Span title, Span file, Span base, int hashed)
{
    char text[MAX_SUBJECT], scratch[MAX_SUBJECT];
    if (title.n > MAX_SUBJECT)
        return Py_NewRef(Py_False);
    memcpy(text, title.s, title.n);
    /* each replacement makes the text no longer (a blank for a non-empty part) */
    Py_ssize_t n = without(text, title.n, file, scratch);
    if (hashed)
        n = without(text, n, base, scratch);
    PyObject *key = PyUnicode_FromStringAndSize(text, n);
    if (key == NULL)
        return NULL;
    PyObject *found = PyDict_GetItemWithError(rd.titles, key);
    if (found != NULL) {
        Py_DECREF(key);
        return Py_NewRef(found);
    }
    if (PyErr_Occurred()) {
        Py_DECREF(key);
        return NULL;
    }
    found = PyObject_CallOneArg(rd.cached_title, key);
    Py_DECREF(key);
    return found;
}

/* naming._BRACKET_TAGS' content (full|repost|re-?up|#?[\w.]+@\w+|#a\.b\.[\w.]+, re.I) in full */
static inline int
is_word_c(int c)
{
    return is_alnum_c(c) || c == '_';
}

static int
bracket_tag(Span t)
{
    char low[8];
    if (t.n <= 6) {
        for (Py_ssize_t k = 0; k < t.n; k++)
            low[k] = (char)lower_c(t.s[k]);
        if ((t.n == 4 && memcmp(low, "full", 4) == 0) || (t.n == 6 && memcmp(low, "repost", 6) == 0) ||
            (t.n == 4 && memcmp(low, "reup", 4) == 0) || (t.n == 5 && memcmp(low, "re-up", 5) == 0))
            return 1;
    }
    Py_ssize_t k = t.n > 0 && t.s[0] == '#';
    if (t.n - k >= 5 && t.s[0] == '#' && lower_c(t.s[1]) == 'a' && t.s[2] == '.' && lower_c(t.s[3]) == 'b' &&
        t.s[4] == '.') {
        Py_ssize_t q = 5;
        while (q < t.n && (is_word_c(t.s[q]) || t.s[q] == '.'))
            q++;
        if (q == t.n && t.n > 5)
            return 1;
    }
    Py_ssize_t before = 0;
    while (k < t.n && (is_word_c(t.s[k]) || t.s[k] == '.')) {
        k++;
        before++;
    }
    if (before == 0 || k >= t.n || t.s[k] != '@')
        return 0;
    Py_ssize_t after = 0;
    for (k++; k < t.n && is_word_c(t.s[k]); k++)
        after++;
    return after > 0 && k == t.n;
}

/* naming.clean_name of printable ASCII: a new str, or NULL */
static PyObject *
clean_name_of(PyObject *collection)
{
    Span c = span_of(collection);
    if (c.n > 0 && memchr(c.s, '[', c.n) == NULL && !contains(c.s, c.n, "  ", 2) && strchr(rd.edges, c.s[0]) == NULL &&
        strchr(rd.edges, c.s[c.n - 1]) == NULL)
        return Py_NewRef(collection); /* nothing to clean: the common case */
    char out[MAX_SUBJECT];
    if (c.n > MAX_SUBJECT)
        return Py_NewRef(Py_False);
    /* _REQUEST_TAG: ^\s*\[\s*\d{3,}\s*\]\s*[-–]?\s* */
    Py_ssize_t k = 0, from = 0;
    while (k < c.n && c.s[k] == ' ')
        k++;
    if (k < c.n && c.s[k] == '[') {
        Py_ssize_t q = k + 1, d = 0;
        while (q < c.n && c.s[q] == ' ')
            q++;
        for (; q < c.n && is_digit_c(c.s[q]); q++)
            d++;
        while (q < c.n && c.s[q] == ' ')
            q++;
        if (d >= 3 && q < c.n && c.s[q] == ']') {
            for (q++; q < c.n && c.s[q] == ' '; q++)
                ;
            if (q < c.n && c.s[q] == '-')
                q++;
            while (q < c.n && c.s[q] == ' ')
                q++;
            from = q;
        }
    }
    /* _BRACKET_TAGS: each "[ tag ]" a blank */
    Py_ssize_t n = 0;
    for (k = from; k < c.n;) {
        if (c.s[k] == '[') {
            Py_ssize_t q = k + 1;
            while (q < c.n && c.s[q] == ' ')
                q++;
            Py_ssize_t word = q;
            while (q < c.n && c.s[q] != ' ' && c.s[q] != ']')
                q++;
            Span tag = {c.s + word, q - word};
            while (q < c.n && c.s[q] == ' ')
                q++;
            if (q < c.n && c.s[q] == ']' && bracket_tag(tag)) {
                out[n++] = ' ';
                k = q + 1;
                continue;
            }
        }
        out[n++] = c.s[k++];
    }
    /* _EDGE_JUNK: the edges' characters at either end; _SPACES: each run of blanks one blank */
    Span name = {out, n};
    while (name.n > 0 && strchr(rd.edges, name.s[0]) != NULL) {
        name.s++;
        name.n--;
    }
    while (name.n > 0 && strchr(rd.edges, name.s[name.n - 1]) != NULL)
        name.n--;
    char *o = out;
    for (k = 0; k < name.n; k++) {
        if (name.s[k] == ' ' && k + 1 < name.n && name.s[k + 1] == ' ')
            continue;
        *o++ = name.s[k];
    }
    Span cleaned = stripped((Span){out, o - out});
    if (cleaned.n == 0)
        cleaned = stripped(c);
    return PyUnicode_FromStringAndSize(cleaned.s, cleaned.n);
}

/* A counter's group: 1 on a value (or none, when it has more than MAX_DIGITS digits), 0 for a group that
   is not plain ASCII digits (the Python reads it) */
static int
counter(PyObject *group, int64_t *value, int *present)
{
    *present = 0;
    if (group == Py_None)
        return 1;
    Span t = span_of(group);
    if (t.n == 0 || !all_digits(t))
        return 0;
    if (t.n > MAX_DIGITS)
        return 1;
    *value = digits(t.s, t.s + t.n);
    *present = 1;
    return 1;
}

PyDoc_STRVAR(subject_tables_doc,
             "subject_tables(extensions, member_extensions, set_members, kinds, titles, cached_title, "
             "trailer, edges, tail, names, /) -> None\n\n"
             "The Python's tables for subject_reading, handed over once (rules.py): naming._EXTENSIONS, "
             "_MEMBER_EXTENSIONS, SET_MEMBERS, the FileKinds OTHER, PAR2, PAR2_VOLUME, SEVEN_ZIP, SPLIT, ZIP and "
             "RAR, rules._TITLES and _cached_title, rules._TRAILER, naming._EDGES, "
             "naming._TAIL and the names of rules._DEFAULT_RULES in their order.");

static PyObject *
subject_tables(PyObject *module, PyObject *args)
{
    PyObject *extensions, *member_extensions, *set_members, *kinds, *titles, *cached_title, *names;
    PyObject *trailer, *edges;
    Py_ssize_t tail;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!OUUnO!:subject_tables", &PyDict_Type, &extensions, &PyFrozenSet_Type,
                          &member_extensions, &PyFrozenSet_Type, &set_members, &PyTuple_Type, &kinds,
                          &PyDict_Type, &titles, &cached_title, &trailer, &edges, &tail, &PyTuple_Type, &names))
        return NULL;
    if (PyTuple_GET_SIZE(kinds) != K_COUNT || tail < 1 || tail > 256 || PyTuple_GET_SIZE(names) < 6) {
        PyErr_SetString(PyExc_ValueError,
                        "subject_tables: 7 kinds, a tail of 1 to 256 characters and the built-in rules' names");
        return NULL;
    }
    PyObject *chars[2] = {trailer, edges};
    char *into[2] = {rd.trailer, rd.edges};
    for (int k = 0; k < 2; k++) {
        Py_ssize_t o = 0;
        for (Py_ssize_t q = 0; q < PyUnicode_GET_LENGTH(chars[k]) && o < 127; q++) {
            Py_UCS4 c = PyUnicode_READ_CHAR(chars[k], q);
            if (c > 0 && c < 128)
                into[k][o++] = (char)c;
        }
        into[k][o] = '\0';
    }
    PyObject **slots[] = {&rd.extensions, &rd.member_extensions, &rd.set_members, &rd.kinds,
                          &rd.titles,     &rd.cached_title,      &rd.names};
    PyObject *values[] = {extensions, member_extensions, set_members, kinds, titles, cached_title, names};
    for (int k = 0; k < 7; k++)
        Py_XSETREF(*slots[k], Py_NewRef(values[k]));
    rd.tail = tail;
    if (rd.groups == NULL && (rd.groups = PyUnicode_InternFromString("groups")) == NULL)
        return NULL;
    if (rd.start == NULL && (rd.start = PyUnicode_InternFromString("start")) == NULL)
        return NULL;
    Py_RETURN_NONE;
}

/* The groups of a rule's match, in rules.GROUP_ORDER */
enum { G_NAME, G_FILE, G_TITLE, G_I, G_N, G_P, G_T, G_REQUEST, G_COUNT };

/* rules._reading of a printable-ASCII subject, from its rule's groups g (str or None) and where its
   part counter starts (p_start): a new reference to the SubjectMatch, None, or False (the Python reads
   it), or NULL */
static PyObject *
reading_of(PyObject *rule, PyObject *subject, PyObject *const *g, Py_ssize_t p_start, PyTypeObject *match_type)
{
    PyObject *result = NULL;
    static const Span none = {"", 0};
    Span raw_file = none, raw_name = none, title = none;
    if (g[G_FILE] != Py_None) {
        raw_file = stripped(span_of(g[G_FILE]));
        while (raw_file.n > 0 && raw_file.s[0] == '"') {
            raw_file.s++;
            raw_file.n--;
        }
        while (raw_file.n > 0 && raw_file.s[raw_file.n - 1] == '"')
            raw_file.n--;
        raw_file = stripped(raw_file);
    }
    if (g[G_NAME] != Py_None && PyUnicode_GET_LENGTH(g[G_NAME]) > 0)
        raw_name = trimmed(span_of(g[G_NAME]));
    if (g[G_TITLE] != Py_None)
        title = span_of(g[G_TITLE]);
    if (raw_file.n == 0 && raw_name.n == 0) {
        raw_name = trimmed(title);
        title = none;
        if (raw_name.n == 0) {
            result = Py_NewRef(Py_None);
            return result;
        }
    }
    Span file_name = raw_file.n ? raw_file : raw_name;
    int64_t part = 0, part_total = 0, index = 0, total = 0;
    int has_part, has_part_total, has_index, has_total;
    if (!counter(g[G_P], &part, &has_part) || !counter(g[G_T], &part_total, &has_part_total) ||
        !counter(g[G_I], &index, &has_index) || !counter(g[G_N], &total, &has_total)) {
        result = Py_NewRef(Py_False);
        return result;
    }
    if (g[G_P] != Py_None && (!has_part || !has_part_total)) {
        result = Py_NewRef(Py_None);
        return result;
    }
    if (!has_part || !has_part_total)
        part = part_total = 1; /* a post without a part counter is a single part */
    if (!has_index || !has_total)
        index = total = 0;
    PyObject *kind = NULL, *collection = NULL, *file_text = NULL, *request = NULL, *shown = NULL;
    PyObject *part_at = NULL;
    kind = file_kind_of(file_name);
    if (kind == NULL)
        goto fail;
    int hashed = -1; /* whether the base looks obfuscated, where that was asked */
    Span base = none;
    if (raw_name.n && raw_file.n) {
        collection = PyUnicode_FromStringAndSize(raw_name.s, raw_name.n);
    }
    else {
        Py_ssize_t length = release_base_of(file_name);
        if (length < 0)
            goto fail;
        base.s = file_name.s;
        base.n = length;
        collection = NULL;
        hashed = title.n && raw_file.n ? obfuscated_name(base) : -1;
        if (hashed >= 0 && (total > 1 || hashed)) {
            PyObject *found = title_of(title, raw_file, base, hashed);
            if (found == NULL)
                goto fail;
            if (found == Py_False || (found != Py_None && (!PyUnicode_Check(found) || !printable_ascii(found)))) {
                Py_DECREF(found);
                result = Py_NewRef(Py_False);
                goto release;
            }
            if (found != Py_None) {
                int member = PySet_Contains(rd.set_members, kind);
                if (member < 0) {
                    Py_DECREF(found);
                    goto fail;
                }
                Span f = span_of(found);
                int take = !member || hashed;
                if (!take) {
                    char lf[MAX_SUBJECT], lb[MAX_SUBJECT];
                    if (f.n > MAX_SUBJECT) {
                        Py_DECREF(found);
                        result = Py_NewRef(Py_False);
                        goto release;
                    }
                    for (Py_ssize_t k = 0; k < f.n; k++)
                        lf[k] = (char)lower_c(f.s[k]);
                    for (Py_ssize_t k = 0; k < base.n; k++)
                        lb[k] = (char)lower_c(base.s[k]);
                    take = contains(lf, f.n, lb, base.n);
                    if (!take) {
                        Py_ssize_t fn = normalised(f, lf), bn = normalised(base, lb);
                        take = contains(lf, fn, lb, bn);
                    }
                }
                if (take)
                    collection = Py_NewRef(found);
            }
            Py_DECREF(found);
        }
        if (collection == NULL)
            collection = PyUnicode_FromStringAndSize(base.s, base.n);
    }
    if (collection == NULL)
        goto fail;
    file_text = PyUnicode_FromStringAndSize(file_name.s, file_name.n);
    if (file_text == NULL)
        goto fail;
    request = g[G_REQUEST];
    if (request != Py_None) {
        Py_INCREF(request);
    }
    else {
        /* rules._REQUEST_PREFIX: ^\s*\[\s*(\d{3,})\s*\] */
        Span s = span_of(subject);
        Py_ssize_t k = 0, from;
        while (k < s.n && s.s[k] == ' ')
            k++;
        int ok = k < s.n && s.s[k] == '[';
        for (k++; ok && k < s.n && s.s[k] == ' '; k++)
            ;
        for (from = k; ok && k < s.n && is_digit_c(s.s[k]); k++)
            ;
        Py_ssize_t to = k;
        for (; ok && k < s.n && s.s[k] == ' '; k++)
            ;
        ok = ok && to - from >= 3 && k < s.n && s.s[k] == ']';
        request = ok ? PyUnicode_FromStringAndSize(s.s + from, to - from) : Py_NewRef(Py_None);
        if (request == NULL)
            goto fail;
    }
    if (!printable_ascii(collection)) {
        result = Py_NewRef(Py_False);
        goto release;
    }
    shown = clean_name_of(collection);
    if (shown == NULL)
        goto fail;
    if (shown == Py_False) {
        result = Py_NewRef(Py_False);
        goto release;
    }
    Span sh = span_of(shown);
    int obfuscated = hashed >= 0 && sh.n == base.n && memcmp(sh.s, base.s, base.n) == 0 ? hashed : obfuscated_name(sh);
    part_at = PyLong_FromSsize_t(g[G_P] != Py_None ? p_start : -1);
    if (part_at == NULL)
        goto fail;
    PyObject *items = PyTuple_New(12);
    if (items == NULL)
        goto fail;
    PyObject *values[12] = {Py_NewRef(rule),
                            Py_NewRef(shown),
                            Py_NewRef(collection),
                            Py_NewRef(file_text),
                            PyLong_FromLongLong(index),
                            PyLong_FromLongLong(total),
                            PyLong_FromLongLong(part),
                            PyLong_FromLongLong(part_total),
                            Py_NewRef(request),
                            PyBool_FromLong(obfuscated),
                            Py_NewRef(kind),
                            Py_NewRef(part_at)};
    int bad = 0;
    for (int k = 0; k < 12; k++) {
        bad |= values[k] == NULL;
        PyTuple_SET_ITEM(items, k, values[k]);
    }
    if (!bad) {
        /* tuple.__new__(match_type, items), as a NamedTuple's _make does */
        PyObject *call = PyTuple_Pack(1, items);
        if (call != NULL)
            result = PyTuple_Type.tp_new(match_type, call, NULL);
        Py_XDECREF(call);
    }
    Py_DECREF(items);
    goto release;
fail:
    result = NULL;
release:
    Py_XDECREF(kind);
    Py_XDECREF(collection);
    Py_XDECREF(file_text);
    Py_XDECREF(request);
    Py_XDECREF(shown);
    Py_XDECREF(part_at);
    return result;
}

PyDoc_STRVAR(subject_reading_doc,
             "subject_reading(rule, slots, subject, match, match_type, /) -> match_type(...) or None or False\n\n"
             "rules._reading(rule, subject, match) for a subject of printable ASCII: what the rule named rule "
             "(its group positions slots, Rule._slots) reads from its match, None when it reads nothing, and "
             "False when the Python is to read it (another subject, or subject_tables not called).");

static PyObject *
subject_reading(PyObject *module, PyObject *args)
{
    PyObject *rule, *slots, *subject, *match;
    PyTypeObject *match_type;
    if (!PyArg_ParseTuple(args, "UO!UOO!:subject_reading", &rule, &PyTuple_Type, &slots, &subject, &match,
                          &PyType_Type, &match_type))
        return NULL;
    if (rd.extensions == NULL || PyTuple_GET_SIZE(slots) != 8 || !printable_ascii(subject) ||
        PyUnicode_GET_LENGTH(subject) > MAX_SUBJECT)
        Py_RETURN_FALSE;
    PyObject *groups = PyObject_CallMethodNoArgs(match, rd.groups);
    if (groups == NULL)
        return NULL;
    PyObject *result = NULL, *g[G_COUNT];
    Py_ssize_t count = PyTuple_Check(groups) ? PyTuple_GET_SIZE(groups) : -1;
    for (int k = 0; k < 8; k++) {
        Py_ssize_t at = PyLong_AsSsize_t(PyTuple_GET_ITEM(slots, k));
        if (at == -1 && PyErr_Occurred())
            goto done;
        g[k] = at >= 0 && at < count ? PyTuple_GET_ITEM(groups, at) : Py_None;
        if (g[k] != Py_None && !PyUnicode_Check(g[k])) {
            result = Py_NewRef(Py_False);
            goto done;
        }
    }
    Py_ssize_t p_start = -1;
    if (g[G_P] != Py_None) {
        PyObject *at = PyObject_CallMethod(match, "start", "n", PyLong_AsSsize_t(PyTuple_GET_ITEM(slots, G_P)) + 1);
        if (at == NULL)
            goto done;
        p_start = PyLong_AsSsize_t(at);
        Py_DECREF(at);
        if (p_start == -1 && PyErr_Occurred())
            goto done;
    }
    result = reading_of(rule, subject, g, p_start, match_type);
done:
    Py_DECREF(groups);
    return result;
}

/* ---- the built-in rules' regexes (rules._DEFAULT_RULES) ------------------------------------------ */

/* re.search of the built-in rules' patterns on printable ASCII, each a function named after its rule,
   giving the same groups (start and end in sp->at and sp->to, -1 for a group that did not take part)
   or 0 for no match. Read by hand from each pattern: where a greedy or lazy part backs off, the loop
   that tries its lengths says in which order. tests/unit/indexing/test_subject_reading.py pins the
   patterns these were written for and compares matches on generated subjects. */

typedef struct {
    Py_ssize_t at[G_COUNT], to[G_COUNT];
} Spans;

static inline int
is_word_ascii(int c)
{
    return is_alnum_c(c) || c == '_';
}

static inline Py_ssize_t
blanks(const char *s, Py_ssize_t n, Py_ssize_t k)
{
    while (k < n && s[k] == ' ')
        k++;
    return k;
}

/* \s*[-–:]?\s* */
static inline Py_ssize_t
separator(const char *s, Py_ssize_t n, Py_ssize_t k)
{
    k = blanks(s, n, k);
    if (k < n && (s[k] == '-' || s[k] == ':'))
        k++;
    return blanks(s, n, k);
}

/* [-\s]* */
static inline Py_ssize_t
dashes(const char *s, Py_ssize_t n, Py_ssize_t k)
{
    while (k < n && (s[k] == ' ' || s[k] == '-'))
        k++;
    return k;
}

/* \d+ from k: its end, or -1 */
static inline Py_ssize_t
number_end(const char *s, Py_ssize_t n, Py_ssize_t k)
{
    Py_ssize_t from = k;
    while (k < n && is_digit_c(s[k]))
        k++;
    return k > from ? k : -1;
}

static inline void
set_group(Spans *sp, int group, Py_ssize_t at, Py_ssize_t to)
{
    sp->at[group] = at;
    sp->to[group] = to;
}

/* "(?P<file>[^"]*)" from k, then the part counter rules._PART, (?:.*\((?P<p>\d+)/(?P<t>\d+)\))?: the
   last "(p/t)" at or after the closing quote (.* backs off from the end). 1 on a match. */
static int
quoted_then_part(const char *s, Py_ssize_t n, Py_ssize_t k, Spans *sp)
{
    if (k >= n || s[k] != '"')
        return 0;
    const char *close = memchr(s + k + 1, '"', n - k - 1);
    if (close == NULL)
        return 0;
    Py_ssize_t z = close - s;
    set_group(sp, G_FILE, k + 1, z);
    for (Py_ssize_t x = n - 1; x > z; x--) {
        if (s[x] != '(')
            continue;
        Py_ssize_t a = number_end(s, n, x + 1);
        if (a < 0 || a >= n || s[a] != '/')
            continue;
        Py_ssize_t b = number_end(s, n, a + 1);
        if (b < 0 || b >= n || s[b] != ')')
            continue;
        set_group(sp, G_P, x + 1, a);
        set_group(sp, G_T, a + 1, b);
        break;
    }
    return 1;
}

// [\[(](?P<i>\d+)\s*/\s*(?P<n>\d+)[\])] from k (spaced) or \[(?P<i>\d+)/(?P<n>\d+)\] (not): its end or -1
static Py_ssize_t
file_counter(const char *s, Py_ssize_t n, Py_ssize_t k, int spaced, Spans *sp)
{
    if (k >= n || (s[k] != '[' && (!spaced || s[k] != '(')))
        return -1;
    Py_ssize_t a = number_end(s, n, k + 1);
    if (a < 0)
        return -1;
    Py_ssize_t slash = spaced ? blanks(s, n, a) : a;
    if (slash >= n || s[slash] != '/')
        return -1;
    Py_ssize_t from = spaced ? blanks(s, n, slash + 1) : slash + 1;
    Py_ssize_t b = number_end(s, n, from);
    if (b < 0 || b >= n || (s[b] != ']' && (!spaced || s[b] != ')')))
        return -1;
    set_group(sp, G_I, k + 1, a);
    set_group(sp, G_N, from, b);
    return b + 1;
}

/* ^\[(?P<request>\d{3,})\](?:[-\s]*\[[^\]]*\])*?[-\s]*\[\s*(?P<title>[^\]]+?)\s*\][-\s]*
   \[(?P<i>\d+)/(?P<n>\d+)\][-\s]*"(?P<file>[^"]*)" + _PART */
static int
request_tagged(const char *s, Py_ssize_t n, Spans *sp)
{
    if (n < 1 || s[0] != '[')
        return 0;
    Py_ssize_t k = number_end(s, n, 1);
    if (k < 4 || k >= n || s[k] != ']')
        return 0;
    set_group(sp, G_REQUEST, 1, k);
    /* the lazy skip: the title in the first bracket, else in the next, ... */
    for (Py_ssize_t at = k + 1;;) {
        Py_ssize_t open = dashes(s, n, at);
        if (open >= n || s[open] != '[')
            return 0;
        const char *end = memchr(s + open + 1, ']', n - open - 1);
        if (end == NULL)
            return 0;
        Py_ssize_t close = end - s;
        if (close > open + 1) {
            /* \s*(?P<title>[^\]]+?)\s*\]: the content without its outer blanks; all blanks, the last */
            Py_ssize_t a = blanks(s, close, open + 1), b = close;
            if (a == close)
                a = close - 1;
            else
                while (s[b - 1] == ' ')
                    b--;
            Py_ssize_t after = file_counter(s, n, dashes(s, n, close + 1), 0, sp);
            if (after >= 0 && quoted_then_part(s, n, dashes(s, n, after), sp)) {
                set_group(sp, G_TITLE, a, b);
                return 1;
            }
            sp->at[G_I] = sp->to[G_I] = sp->at[G_N] = sp->to[G_N] = -1;
            sp->at[G_FILE] = sp->to[G_FILE] = sp->at[G_P] = sp->to[G_P] = sp->at[G_T] = sp->to[G_T] = -1;
        }
        at = close + 1;
    }
}

// ^\s*[\[(](?P<i>\d+)\s*/\s*(?P<n>\d+)[\])]\s*[-–:]?\s*"(?P<file>[^"]*)" + _PART
static int
counter_file(const char *s, Py_ssize_t n, Spans *sp)
{
    Py_ssize_t k = file_counter(s, n, blanks(s, n, 0), 1, sp);
    return k >= 0 && quoted_then_part(s, n, separator(s, n, k), sp);
}

/* What follows the title of file_of, from k: (title's) \s*[-–:]?\s* when titled, then
   \bFile\s+(?P<i>\d+)\s+of\s+(?P<n>\d+)\s*[-–:]?\s*"(?P<file>[^"]*)" + _PART, (?i) */
static int
file_of_rest(const char *s, Py_ssize_t n, Py_ssize_t k, int titled, Spans *sp)
{
    if (titled)
        k = separator(s, n, k);
    if (k + 4 > n || (k > 0 && is_word_ascii(s[k - 1])) || lower_c(s[k]) != 'f' || lower_c(s[k + 1]) != 'i' ||
        lower_c(s[k + 2]) != 'l' || lower_c(s[k + 3]) != 'e')
        return 0;
    Py_ssize_t a = blanks(s, n, k + 4);
    if (a == k + 4)
        return 0;
    Py_ssize_t a_end = number_end(s, n, a);
    if (a_end < 0)
        return 0;
    Py_ssize_t of = blanks(s, n, a_end);
    if (of == a_end || of + 2 > n || lower_c(s[of]) != 'o' || lower_c(s[of + 1]) != 'f')
        return 0;
    Py_ssize_t b = blanks(s, n, of + 2);
    if (b == of + 2)
        return 0;
    Py_ssize_t b_end = number_end(s, n, b);
    if (b_end < 0 || !quoted_then_part(s, n, separator(s, n, b_end), sp))
        return 0;
    set_group(sp, G_I, a, a_end);
    set_group(sp, G_N, b, b_end);
    return 1;
}

// What follows the title of name_counter_file, from k:
// \s*[-–:]?\s*[\[(](?P<i>\d+)\s*/\s*(?P<n>\d+)[\])]\s*[-–:]?\s*"(?P<file>[^"]*)" + _PART
static int
counter_rest(const char *s, Py_ssize_t n, Py_ssize_t k, Spans *sp)
{
    Py_ssize_t after = file_counter(s, n, separator(s, n, k), 1, sp);
    return after >= 0 && quoted_then_part(s, n, separator(s, n, after), sp);
}

/* A title [^"]*\S then rest: the title as long as it can be (up to and with the first quote, which \S
   takes), backed off one character at a time. */
static int
titled(const char *s, Py_ssize_t n, int file_of, Spans *sp)
{
    const char *quote = memchr(s, '"', n);
    Py_ssize_t longest = quote == NULL ? n : quote - s + 1;
    for (Py_ssize_t e = longest; e >= 1; e--) {
        if (s[e - 1] == ' ')
            continue;
        if (file_of ? file_of_rest(s, n, e, 1, sp) : counter_rest(s, n, e, sp)) {
            set_group(sp, G_TITLE, 0, e);
            return 1;
        }
    }
    return 0;
}

/* (?i)^(?:(?P<title>[^"]*\S)\s*[-–:]?\s*)?\bFile\s+... : with a title if one fits, else without */
static int
file_of(const char *s, Py_ssize_t n, Spans *sp)
{
    return titled(s, n, 1, sp) || file_of_rest(s, n, 0, 0, sp);
}

/* ^(?P<title>[^"]*?)"(?P<file>[^"]+)" + _PART */
static int
quoted_file(const char *s, Py_ssize_t n, Spans *sp)
{
    const char *quote = memchr(s, '"', n);
    if (quote == NULL)
        return 0;
    Py_ssize_t q = quote - s;
    if (q + 1 < n && s[q + 1] == '"')
        return 0;
    if (!quoted_then_part(s, n, q, sp))
        return 0;
    set_group(sp, G_TITLE, 0, q);
    return 1;
}

static int
has_text(const char *s, Py_ssize_t n, const char *lower)
{
    Py_ssize_t w = (Py_ssize_t)strlen(lower);
    for (Py_ssize_t k = 0; k + w <= n; k++) {
        Py_ssize_t q = 0;
        while (q < w && lower_c(s[k + q]) == lower[q])
            q++;
        if (q == w)
            return 1;
    }
    return 0;
}

PyDoc_STRVAR(default_match_doc,
             "default_match(subject, match_type, /) -> match_type(...) or None or False\n\n"
             "RuleSet.match(subject) of the built-in rules (rules._DEFAULT_RULES, named as subject_tables was "
             "given them) for the subjects it knows: printable ASCII read by one of request_tagged, counter_file, "
             "file_of, name_counter_file or quoted_file. False for any other (the Python matches it).");

static PyObject *
default_match(PyObject *module, PyObject *args)
{
    PyObject *subject;
    PyTypeObject *match_type;
    if (!PyArg_ParseTuple(args, "UO!:default_match", &subject, &PyType_Type, &match_type))
        return NULL;
    if (rd.names == NULL || !printable_ascii(subject) || PyUnicode_GET_LENGTH(subject) > MAX_SUBJECT)
        Py_RETURN_FALSE;
    const char *s = (const char *)PyUnicode_1BYTE_DATA(subject);
    Py_ssize_t n = PyUnicode_GET_LENGTH(subject);
    enum { R_REQUEST_TAGGED, R_COUNTER_FILE, R_FILE_OF, R_BRACKETED_FILE, R_NAME_COUNTER_FILE, R_QUOTED_FILE };
    for (int rule = R_REQUEST_TAGGED; rule <= R_QUOTED_FILE; rule++) {
        Spans sp;
        for (int k = 0; k < G_COUNT; k++)
            sp.at[k] = sp.to[k] = -1;
        int matched = 0;
        switch (rule) {
        case R_REQUEST_TAGGED:
            matched = request_tagged(s, n, &sp);
            break;
        case R_COUNTER_FILE:
            matched = counter_file(s, n, &sp);
            break;
        case R_FILE_OF:
            matched = has_text(s, n, "file") && file_of(s, n, &sp);
            break;
        case R_BRACKETED_FILE:
            if (has_text(s, n, "\"\""))
                Py_RETURN_FALSE; /* its rule's subjects are rare: the Python matches them */
            break;
        case R_NAME_COUNTER_FILE:
            matched = titled(s, n, 0, &sp);
            break;
        case R_QUOTED_FILE:
            matched = quoted_file(s, n, &sp);
            break;
        }
        if (!matched)
            continue;
        PyObject *g[G_COUNT];
        int ok = 1;
        for (int k = 0; k < G_COUNT; k++) {
            g[k] = sp.at[k] < 0 ? Py_NewRef(Py_None) : PyUnicode_Substring(subject, sp.at[k], sp.to[k]);
            ok &= g[k] != NULL;
        }
        PyObject *found = ok ? reading_of(PyTuple_GET_ITEM(rd.names, rule), subject, g, sp.at[G_P], match_type)
                             : NULL;
        for (int k = 0; k < G_COUNT; k++)
            Py_XDECREF(g[k]);
        if (found != Py_None)
            return found; /* a reading, False, or an error */
        Py_DECREF(found);
    }
    Py_RETURN_FALSE; /* the rules after quoted_file: the Python's */
}

/* ---- the module --------------------------------------------------------------------------------- */

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS, scan_doc},
    {"chunk_is_clean", chunk_is_clean, METH_O, chunk_is_clean_doc},
    {"columns", columns, METH_VARARGS, columns_doc},
    {"file_fragment", file_fragment, METH_VARARGS, file_fragment_doc},
    {"segment_files", segment_files, METH_VARARGS, segment_files_doc},
    {"segment_summary", segment_summary, METH_VARARGS, segment_summary_doc},
    {"segment_has_id", segment_has_id, METH_VARARGS, segment_has_id_doc},
    {"column_range", column_range, METH_O, column_range_doc},
    {"line_scan", line_scan, METH_O, line_scan_doc},
    {"parse_date", parse_date, METH_O, parse_date_doc},
    {"segment_blob", segment_blob, METH_O, segment_blob_doc},
    {"subject_tables", subject_tables, METH_VARARGS, subject_tables_doc},
    {"subject_reading", subject_reading, METH_VARARGS, subject_reading_doc},
    {"default_match", default_match, METH_VARARGS, default_match_doc},
    {NULL, NULL, 0, NULL},
};

static int
exec_module(PyObject *module)
{
#define INTERN(var, text)                                                                                   \
    if ((var) == NULL && ((var) = PyUnicode_InternFromString(text)) == NULL)                                 \
        return -1;
    INTERN(s_segs, "segs");
    INTERN(s_mids, "mids");
    INTERN(s_ts, "ts");
    INTERN(s_poster, "poster");
    INTERN(s_last, "last");
    INTERN(s_last_date, "last_date");
    for (int k = 0; k < FILE_FIELDS; k++)
        INTERN(file_fields[k], file_field_names[k]);
#undef INTERN
    if (array_type == NULL) {
        PyObject *array = PyImport_ImportModule("array");
        if (array == NULL)
            return -1;
        array_type = PyObject_GetAttrString(array, "array");
        Py_DECREF(array);
        if (array_type == NULL)
            return -1;
    }
    if (array_one == NULL) {
        array_one = PyObject_CallFunction(array_type, "s[i]", "q", 0);
        if (array_one == NULL)
            return -1;
    }
    return PyModule_AddIntConstant(module, "MAX_FIELDS", MAX_FIELDS);
}

static PyModuleDef_Slot slots[] = {
    {Py_mod_exec, exec_module},
    {0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "usenet_indexer.accelerator._speedups",
    .m_doc = "Native twins of hot loops (the indexer, the segment blob, the NNTP reader); see usenet_indexer.accelerator.",
    .m_size = 0,
    .m_methods = methods,
    .m_slots = slots,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    return PyModuleDef_Init(&module_def);
}
