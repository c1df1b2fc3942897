/*
 * _nanotrace_info.h - what a Reader says about its archive besides its events: the header
 * (every field of format/nt_archive_header.h's X-macro, by its member name, so a field the
 * format gains appears here with no change), the open-time counts, sections, threads, and
 * one counting visit (what trace-dump --stats counts). Included once, by _nanotrace.c.
 */

/* A header member as a Python value: strings are NUL-terminated arrays. */
#define INFO_VALUE(x)                                                                      \
	_Generic((x), char *: info_str, const char *: info_str, int32_t: info_i64,          \
		 default: info_u64)(x)

static PyObject *info_str(const char *s)
{
	return archive_str(s, strlen(s));
}

static PyObject *info_i64(int64_t v)
{
	return PyLong_FromLongLong(v);
}

static PyObject *info_u64(uint64_t v)
{
	return PyLong_FromUnsignedLongLong(v);
}

static int dict_put(PyObject *d, const char *key, PyObject *value)
{
	if (value == NULL)
		return -1;
	int rc = PyDict_SetItemString(d, key, value);
	Py_DECREF(value);
	return rc;
}

/* Reader.info(): the decoded header (a many-process reader's summary header: see
 * nanotrace_reader.h's MANY PROCESSES). */
static PyObject *reader_info(reader_obj *ro, PyObject *unused)
{
	(void)unused;
	if (reader_check(ro) < 0)
		return NULL;
	const nt_archive_info *in = nt_reader_info(ro->r);
	PyObject *d = PyDict_New();
	if (d == NULL)
		return NULL;
#define INFO_PUT_(id, member, width)                                                       \
	if (dict_put(d, #member, INFO_VALUE(in->member)) < 0)                              \
		goto fail;
	NT_HDR_FIELDS(INFO_PUT_)
#undef INFO_PUT_
	return d;
fail:
	Py_DECREF(d);
	return NULL;
}

static int summary_put(PyObject *d, const nt_reader_summary *s)
{
	return dict_put(d, "file_bytes", info_u64(s->file_bytes)) < 0 ||
	       dict_put(d, "header_bytes", info_u64(s->header_bytes)) < 0 ||
	       dict_put(d, "durable_bytes", info_u64(s->durable_bytes)) < 0 ||
	       dict_put(d, "chunk_bytes", info_u64(s->chunk_bytes)) < 0 ||
	       dict_put(d, "chunks", info_u64(s->chunks)) < 0 ||
	       dict_put(d, "strings", info_u64(s->strings)) < 0 ||
	       dict_put(d, "threads", info_u64(s->threads)) < 0 ||
	       dict_put(d, "callsites", info_u64(s->callsites)) < 0 ||
	       dict_put(d, "open_errors", info_u64(s->open_errors)) < 0 ? -1 : 0;
}

/* Reader.summary_counts(): nt_reader_get_summary and nt_reader_get_compression. */
static PyObject *reader_summary(reader_obj *ro, PyObject *unused)
{
	(void)unused;
	if (reader_check(ro) < 0)
		return NULL;
	nt_reader_summary s;
	uint64_t zchunks, plain;
	nt_reader_get_summary(ro->r, &s);
	nt_reader_get_compression(ro->r, &zchunks, &plain);
	PyObject *d = PyDict_New();
	if (d == NULL || summary_put(d, &s) < 0 ||
	    dict_put(d, "compressed_chunks", info_u64(zchunks)) < 0 ||
	    dict_put(d, "chunk_bytes_uncompressed", info_u64(plain)) < 0 ||
	    dict_put(d, "name", info_str(nt_reader_name(ro->r))) < 0) {
		Py_XDECREF(d);
		return NULL;
	}
	return d;
}

/* "opened": the section could be read (a closed section of a big bundle was read at open,
 * and a visit opens it again; nt_reader_section_peek keeps it closed here). */
static PyObject *section_dict(const nt_reader_section *s)
{
	PyObject *d = PyDict_New();
	if (d == NULL || dict_put(d, "index", info_u64(s->index)) < 0 ||
	    dict_put(d, "pid", info_u64(s->pid)) < 0 ||
	    dict_put(d, "provider_id", info_u64(s->provider_id)) < 0 ||
	    dict_put(d, "end_state", info_str(s->end_text)) < 0 ||
	    dict_put(d, "mode", info_u64(s->mode)) < 0 ||
	    dict_put(d, "name", info_str(s->name)) < 0 ||
	    dict_put(d, "message", info_str(s->message)) < 0 ||
	    dict_put(d, "source", info_str(s->source)) < 0 ||
	    dict_put(d, "offset", info_u64(s->offset)) < 0 ||
	    dict_put(d, "size", info_u64(s->size)) < 0 ||
	    dict_put(d, "error", info_str(s->error)) < 0 ||
	    dict_put(d, "error_offset", info_u64(s->error_offset)) < 0 ||
	    dict_put(d, "opened", PyBool_FromLong(s->error[0] == '\0')) < 0 ||
	    summary_put(d, &s->summary) < 0) {
		Py_XDECREF(d);
		return NULL;
	}
	return d;
}

/* Reader.sections(): one dict per process (one for a plain archive). */
static PyObject *reader_sections(reader_obj *ro, PyObject *unused)
{
	(void)unused;
	if (reader_check(ro) < 0)
		return NULL;
	uint32_t n = nt_reader_section_count(ro->r);
	PyObject *l = PyList_New(n);
	for (uint32_t i = 0; l != NULL && i < n; i++) {
		PyObject *d = section_dict(nt_reader_section_peek(ro->r, i));
		if (d == NULL)
			Py_CLEAR(l);
		else
			PyList_SET_ITEM(l, i, d);
	}
	return l;
}

/* Reader.threads(): index, pid, tid, name, section of each thread, in index order. */
static PyObject *reader_threads(reader_obj *ro, PyObject *unused)
{
	(void)unused;
	if (reader_check(ro) < 0)
		return NULL;
	uint32_t n = nt_reader_thread_count(ro->r);
	PyObject *l = PyList_New(n);
	for (uint32_t i = 0; l != NULL && i < n; i++) {
		const nt_reader_thread *t = nt_reader_thread_at(ro->r, i);
		PyObject *d = Py_BuildValue("{sIsIsIsNsI}", "index", t->index, "pid", t->pid,
					    "tid", t->tid, "name", info_str(t->name), "section",
					    t->section);
		if (d == NULL)
			Py_CLEAR(l);
		else
			PyList_SET_ITEM(l, i, d);
	}
	return l;
}

/* ---- counting: one visit without Python on the way ------------------------------------- */

#define COUNT_DAMAGE_KEPT 64

typedef struct count_ctx {
	uint64_t by_kind[256];
	uint64_t *by_thread; /* by global thread index */
	uint32_t nthreads;
	uint64_t events, gaps, gap_events, errors;
	uint64_t first_error_offset;
	char first_error[768];
	/* The first COUNT_DAMAGE_KEPT damaged places, for stats()'s 'damage' (the visit runs
	 * without the GIL: no Python object can be made during it). */
	uint64_t damage_offset[COUNT_DAMAGE_KEPT];
	char damage[COUNT_DAMAGE_KEPT][512];
} count_ctx;

static int count_event(void *ctx, const nt_reader_event *ev)
{
	count_ctx *c = ctx;
	c->events++;
	c->by_kind[ev->kind]++;
	if (ev->thread != NULL && ev->thread->index < c->nthreads)
		c->by_thread[ev->thread->index]++;
	return 0;
}

static void count_error(void *ctx, uint64_t offset, const char *message)
{
	count_ctx *c = ctx;
	if (c->errors < COUNT_DAMAGE_KEPT) {
		c->damage_offset[c->errors] = offset;
		snprintf(c->damage[c->errors], sizeof(c->damage[0]), "%s", message);
	}
	if (c->errors++ == 0) {
		c->first_error_offset = offset;
		snprintf(c->first_error, sizeof(c->first_error), "%s", message);
	}
}

/* [(offset, message)] of the damage kept. */
static PyObject *count_damage_list(const count_ctx *c)
{
	uint64_t n = c->errors < COUNT_DAMAGE_KEPT ? c->errors : COUNT_DAMAGE_KEPT;
	PyObject *l = PyList_New((Py_ssize_t)n);
	for (uint64_t i = 0; l != NULL && i < n; i++) {
		PyObject *m = archive_str(c->damage[i], strlen(c->damage[i]));
		PyObject *item = m ? Py_BuildValue("(KN)", (unsigned long long)c->damage_offset[i], m)
				   : NULL;
		if (item == NULL)
			Py_CLEAR(l);
		else
			PyList_SET_ITEM(l, (Py_ssize_t)i, item);
	}
	return l;
}

static void count_gap(void *ctx, const nt_reader_gap *gap)
{
	count_ctx *c = ctx;
	c->gaps++;
	c->gap_events += gap->events;
}

static PyObject *counts_by_kind(const uint64_t *counts)
{
	PyObject *d = PyDict_New();
	for (unsigned k = 0; d != NULL && k < 256; k++) {
		if (counts[k] == 0)
			continue;
		const char *n = kind_name(k);
		char other[16];
		if (n == NULL) {
			snprintf(other, sizeof(other), "kind%u", k);
			n = other;
		}
		if (dict_put(d, n, info_u64(counts[k])) < 0)
			Py_CLEAR(d);
	}
	return d;
}

/* {thread index: {waits, ended_in_drop, ns}} of the threads that waited for a streaming saver
 * (nt_reader_count_blocked), from `b` (n entries). */
static PyObject *blocked_by_thread(const nt_reader_blocked *b, uint32_t n)
{
	PyObject *d = PyDict_New();
	for (uint32_t i = 0; d != NULL && b != NULL && i < n; i++) {
		if (b[i].waits == 0)
			continue;
		PyObject *k = PyLong_FromUnsignedLong(i);
		PyObject *v = Py_BuildValue("{sKsKsK}", "waits", (unsigned long long)b[i].waits,
					    "ended_in_drop", (unsigned long long)b[i].timeouts,
					    "ns", (unsigned long long)b[i].ns);
		if (k == NULL || v == NULL || PyDict_SetItem(d, k, v) < 0)
			Py_CLEAR(d);
		Py_XDECREF(k);
		Py_XDECREF(v);
	}
	return d;
}

/* Reader.counts(): events by kind and by thread index, records that are not events by kind
 * (nt_reader_count_records), each thread's waits for a streaming saver
 * (nt_reader_count_blocked), gaps; one stream-order visit under the reader's policy, the
 * GIL released. Damage: strict readers raise Error at the first; others count it. */
static PyObject *reader_counts(reader_obj *ro, PyObject *unused)
{
	(void)unused;
	if (reader_check(ro) < 0)
		return NULL;
	count_ctx *c = PyMem_Calloc(1, sizeof(*c));
	uint64_t *records = PyMem_Calloc(256, sizeof(uint64_t));
	PyObject *d = NULL, *threads = NULL;
	nt_reader_blocked *blocked = PyMem_Calloc(ro->nthreads ? ro->nthreads : 1, sizeof(*blocked));
	if (c == NULL || records == NULL || blocked == NULL ||
	    (c->by_thread = PyMem_Calloc(ro->nthreads ? ro->nthreads : 1, sizeof(uint64_t))) == NULL) {
		PyErr_NoMemory();
		goto out;
	}
	c->nthreads = ro->nthreads;
	nt_reader_callbacks cb = { .on_event = count_event, .on_error = count_error,
				   .on_gap = count_gap };
	int rc;
	ro->counting++;
	Py_BEGIN_ALLOW_THREADS
	rc = nt_reader_visit(ro->r, &cb, c, NT_ORDER_STREAM, ro->policy);
	nt_reader_count_records(ro->r, records);
	nt_reader_count_blocked(ro->r, blocked, ro->nthreads);
	Py_END_ALLOW_THREADS
	ro->counting--;
	if (rc < 0) {
		if (c->errors)
			raise_damage(damage_prefix(ro), c->first_error, c->first_error_offset, 1);
		else
			PyErr_NoMemory();
		goto out;
	}
	threads = PyDict_New();
	for (uint32_t i = 0; threads != NULL && i < ro->nthreads; i++) {
		if (c->by_thread[i] == 0)
			continue;
		PyObject *k = PyLong_FromUnsignedLong(i), *v = info_u64(c->by_thread[i]);
		if (k == NULL || v == NULL || PyDict_SetItem(threads, k, v) < 0)
			Py_CLEAR(threads);
		Py_XDECREF(k);
		Py_XDECREF(v);
	}
	if (threads == NULL)
		goto out;
	d = Py_BuildValue("{sKsOsNsNsNsKsKsKsN}", "events", (unsigned long long)c->events,
			  "events_by_thread", threads,
			  "blocked_by_thread", blocked_by_thread(blocked, ro->nthreads),
			  "events_by_kind", counts_by_kind(c->by_kind),
			  "records_by_kind", counts_by_kind(records),
			  "gaps", (unsigned long long)c->gaps,
			  "gap_events", (unsigned long long)c->gap_events,
			  "errors", (unsigned long long)c->errors,
			  "damage", count_damage_list(c));
out:
	Py_XDECREF(threads);
	if (c != NULL)
		PyMem_Free(c->by_thread);
	PyMem_Free(c);
	PyMem_Free(records);
	PyMem_Free(blocked);
	return d;
}
