/*
 * _nanotrace.c - the CPython extension under the `nanotrace` package: archives read with
 * libnanotrace-reader's public API only (nanotrace_reader.h), so Python sees exactly what
 * trace-dump sees, decoded by the one decoder.
 *
 *   Reader(paths, strict)       an open archive (nt_reader_open_many: files, bundles,
 *                               directories); .close(), .info(), .summary_counts(),
 *                               .sections(), .threads(), .counts(), .events(order),
 *                               .errors, .gaps (_nanotrace_info.h holds the descriptions)
 *   Reader.events(order)        an iterator over Event objects, pulled from the reader's
 *                               cursor (nt_reader_cursor_next) one at a time: memory is
 *                               the reader's, never O(events)
 *   Event                       time_ns, kind, category, name, thread, process, args, ...
 *   Error                       damage: a ValueError whose message is the reader's (it
 *                               names the file and the byte offset), with .offset
 *
 * Speed: an Event is a C object with slots, built from Python objects cached per string
 * pointer (category, name, argument names: the archive's durable strings, stable while the
 * reader is open), per kind and per thread; only the time, the arguments' values and the
 * object itself are made per event.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <stdint.h>
#include <string.h>

#include <nanotrace/nanotrace_reader.h>

static PyObject *nt_py_error;   /* nanotrace.Error */
static PyObject *nt_py_pointer; /* nanotrace.Pointer, an int subclass the package sets */

/* ---- strings cached by address ------------------------------------------------------- */

/* Open addressing over the addresses of the archive's durable strings (category, name,
 * file and argument names): each is decoded to a str once per reader. */
typedef struct str_cache {
	const char **keys;
	PyObject **values;
	size_t cap, used;
} str_cache;

/* Bytes from an archive as str: UTF-8, undecodable bytes kept as surrogates (so nothing
 * is lost and nothing raises). */
static PyObject *archive_str(const char *s, size_t len)
{
	return PyUnicode_DecodeUTF8(s, (Py_ssize_t)len, "surrogateescape");
}

/* Raises nanotrace.Error with .offset, its message as trace-dump prints it:
 * "[<prefix>: ]<message>[ at byte <offset>]" (the offset always, or when not 0); the
 * message may hold any bytes (a path). */
static void raise_damage(const char *prefix, const char *message, uint64_t offset, int always)
{
	char text[1200];
	int n = snprintf(text, sizeof(text), "%s%s%s", prefix ? prefix : "", prefix ? ": " : "",
			 message);
	if ((always || offset != 0) && n >= 0 && (size_t)n < sizeof(text))
		snprintf(text + n, sizeof(text) - (size_t)n, " at byte %llu",
			 (unsigned long long)offset);
	PyObject *m = archive_str(text, strlen(text));
	PyObject *e = m ? PyObject_CallOneArg(nt_py_error, m) : NULL;
	PyObject *o = e ? PyLong_FromUnsignedLongLong(offset) : NULL;
	if (o != NULL && PyObject_SetAttrString(e, "offset", o) == 0)
		PyErr_SetObject(nt_py_error, e);
	Py_XDECREF(m);
	Py_XDECREF(e);
	Py_XDECREF(o);
}

static int cache_grow(str_cache *c)
{
	size_t cap = c->cap ? c->cap * 2 : 256;
	const char **keys = PyMem_Calloc(cap, sizeof(*keys));
	PyObject **values = PyMem_Calloc(cap, sizeof(*values));
	if (keys == NULL || values == NULL) {
		PyMem_Free(keys);
		PyMem_Free(values);
		PyErr_NoMemory();
		return -1;
	}
	for (size_t i = 0; i < c->cap; i++) {
		if (c->keys[i] == NULL)
			continue;
		size_t j = ((uintptr_t)c->keys[i] >> 3) & (cap - 1);
		while (keys[j] != NULL)
			j = (j + 1) & (cap - 1);
		keys[j] = c->keys[i];
		values[j] = c->values[i];
	}
	PyMem_Free(c->keys);
	PyMem_Free(c->values);
	c->keys = keys;
	c->values = values;
	c->cap = cap;
	return 0;
}

/* The str of the NUL-terminated durable string at `s` (a borrowed reference), or NULL
 * with an exception set. */
static PyObject *cache_get(str_cache *c, const char *s)
{
	if (c->used * 2 >= c->cap && cache_grow(c) < 0)
		return NULL;
	size_t j = ((uintptr_t)s >> 3) & (c->cap - 1);
	while (c->keys[j] != NULL) {
		if (c->keys[j] == s)
			return c->values[j];
		j = (j + 1) & (c->cap - 1);
	}
	PyObject *v = archive_str(s, strlen(s));
	if (v == NULL)
		return NULL;
	PyUnicode_InternInPlace(&v);
	c->keys[j] = s;
	c->values[j] = v;
	c->used++;
	return v;
}

static void cache_free(str_cache *c)
{
	for (size_t i = 0; i < c->cap; i++)
		if (c->keys[i] != NULL)
			Py_DECREF(c->values[i]);
	PyMem_Free(c->keys);
	PyMem_Free(c->values);
	memset(c, 0, sizeof(*c));
}

/* ---- Reader ---------------------------------------------------------------------------- */

typedef struct thread_objs { /* per global thread index: what its events share */
	PyObject *tid, *pid, *name, *process_name;
} thread_objs;

typedef struct cursor_obj cursor_obj;

typedef struct reader_obj {
	PyObject_HEAD
	nt_reader *r;
	nt_corrupt_policy policy;
	str_cache strings;
	thread_objs *threads; /* nt_reader_thread_index_limit() entries, filled at open */
	uint32_t nthreads;
	PyObject *kinds[256]; /* kind names, made on first use */
	PyObject *errors;     /* [(offset, message)] of the latest iteration or count */
	PyObject *gaps;       /* [(thread index, events, time_ns, offset)] likewise */
	cursor_obj *cursors;  /* open iterators, closed with the reader */
	int counting;         /* counts() visits without the GIL: close() must wait */
} reader_obj;

struct cursor_obj {
	PyObject_HEAD
	reader_obj *reader; /* a strong reference */
	nt_reader_cursor *c;
	cursor_obj *next, *prev;
	int failed;          /* a callback could not record (no memory): raise it */
	uint64_t err_offset; /* the last damage reported */
	char err_message[768];
	int has_error;
};

/* Git's name of each record kind that is an event, as the reader's kinds are named
 * elsewhere: the low-level ones as trace-dump --stats counts them, Trace2 messages by
 * nt_t2_event_names. */
static const char *kind_name(unsigned kind)
{
	switch (kind) {
	case NT_KIND_BEGIN: return "begin";
	case NT_KIND_END: return "end";
	case NT_KIND_INSTANT: return "instant";
	case NT_KIND_COMPLETE: return "complete";
	case NT_KIND_COUNTER: return "counter";
	case NT_KIND_TIMESTAMP: return "timestamp";
	case NT_KIND_CHUNK: return "chunk";
	case NT_KIND_ZCHUNK: return "compressed_chunk";
	case NT_KIND_STRING: return "string";
	case NT_KIND_THREAD: return "thread";
	case NT_KIND_CALLSITE: return "callsite";
	case NT_KIND_CALLSITE_ARGS: return "callsite_args";
	case NT_KIND_BLOCKED: return "blocked";
	case NT_KIND_PROCESS: return "process";
	case NT_KIND_PADDING: return "padding";
	default:
		switch (nt_kind_id_base(kind)) { /* process and global ids alike: see id_scope */
		case NT_KIND_ASYNC_BEGIN: return "async_begin";
		case NT_KIND_ASYNC_INSTANT: return "async_instant";
		case NT_KIND_ASYNC_END: return "async_end";
		case NT_KIND_FLOW_BEGIN: return "flow_begin";
		case NT_KIND_FLOW_STEP: return "flow_step";
		case NT_KIND_FLOW_END: return "flow_end";
		default: break;
		}
		if (nt_kind_is_t2(kind))
			return nt_t2_event_names[kind - NT_KIND_T2_FIRST];
		return NULL;
	}
}

static PyObject *kind_obj(reader_obj *ro, unsigned kind)
{
	if (ro->kinds[kind] != NULL)
		return ro->kinds[kind];
	const char *n = kind_name(kind);
	PyObject *v = n ? PyUnicode_InternFromString(n) : PyUnicode_FromFormat("kind%u", kind);
	ro->kinds[kind] = v;
	return v;
}

static int fill_threads(reader_obj *ro)
{
	ro->nthreads = nt_reader_thread_index_limit(ro->r);
	ro->threads = PyMem_Calloc(ro->nthreads ? ro->nthreads : 1, sizeof(*ro->threads));
	if (ro->threads == NULL) {
		PyErr_NoMemory();
		return -1;
	}
	for (uint32_t i = 0; i < nt_reader_thread_count(ro->r); i++) {
		const nt_reader_thread *t = nt_reader_thread_at(ro->r, i);
		const nt_reader_section *s = nt_reader_section_peek(ro->r, t->section);
		thread_objs *o = &ro->threads[t->index];
		o->tid = PyLong_FromUnsignedLong(t->tid);
		o->pid = PyLong_FromUnsignedLong(t->pid);
		o->name = archive_str(t->name, strlen(t->name));
		o->process_name = archive_str(s ? s->name : "", s ? strlen(s->name) : 0);
		if (!o->tid || !o->pid || !o->name || !o->process_name)
			return -1;
	}
	return 0;
}

static void reader_close_now(reader_obj *ro);

static void reader_dealloc(reader_obj *ro)
{
	reader_close_now(ro);
	Py_XDECREF(ro->errors);
	Py_XDECREF(ro->gaps);
	Py_TYPE(ro)->tp_free((PyObject *)ro);
}

/* Reader(paths: list of str, strict: bool) */
static int reader_init(reader_obj *ro, PyObject *args, PyObject *kw)
{
	static char *names[] = { "paths", "strict", NULL };
	PyObject *list;
	int strict = 1;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O!|p", names, &PyList_Type, &list, &strict))
		return -1;
	if (ro->r != NULL) {
		PyErr_SetString(PyExc_RuntimeError, "Reader is already open");
		return -1;
	}
	Py_ssize_t n = PyList_GET_SIZE(list);
	PyObject **bytes = PyMem_Calloc(n ? (size_t)n : 1, sizeof(*bytes));
	const char **paths = PyMem_Calloc(n ? (size_t)n : 1, sizeof(*paths));
	int rc = -1;
	if (bytes == NULL || paths == NULL) {
		PyErr_NoMemory();
		goto out;
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		if (!PyUnicode_FSConverter(PyList_GET_ITEM(list, i), &bytes[i]))
			goto out;
		paths[i] = PyBytes_AS_STRING(bytes[i]);
	}
	nt_reader_error err;
	memset(&err, 0, sizeof(err));
	Py_BEGIN_ALLOW_THREADS
	ro->r = nt_reader_open_many(paths, (size_t)n, &err);
	Py_END_ALLOW_THREADS
	if (ro->r == NULL) {
		raise_damage(NULL, err.message, err.offset, 0);
		goto out;
	}
	ro->policy = strict ? NT_ON_CORRUPT_STOP : NT_ON_CORRUPT_SKIP;
	ro->errors = PyList_New(0);
	ro->gaps = PyList_New(0);
	if (ro->errors == NULL || ro->gaps == NULL || fill_threads(ro) < 0)
		goto out;
	rc = 0;
out:
	for (Py_ssize_t i = 0; bytes != NULL && i < n; i++)
		Py_XDECREF(bytes[i]);
	PyMem_Free(bytes);
	PyMem_Free(paths);
	return rc;
}

static int reader_check(reader_obj *ro)
{
	if (ro->r != NULL)
		return 0;
	PyErr_SetString(PyExc_ValueError, "I/O operation on a closed trace");
	return -1;
}

/* ---- Event ----------------------------------------------------------------------------- */

typedef struct event_obj {
	PyObject_HEAD
	long long time_ns, wall_ns;
	unsigned long long duration_ns, offset, id;
	PyObject *id_scope;
	PyObject *kind, *category, *name, *file, *thread, *process, *thread_name, *process_name;
	PyObject *args; /* NULL: no arguments (an empty dict made when asked for) */
	unsigned int line;
} event_obj;

static PyTypeObject event_type;

static void event_dealloc(event_obj *e)
{
	Py_XDECREF(e->kind);
	Py_XDECREF(e->id_scope);
	Py_XDECREF(e->category);
	Py_XDECREF(e->name);
	Py_XDECREF(e->file);
	Py_XDECREF(e->thread);
	Py_XDECREF(e->process);
	Py_XDECREF(e->thread_name);
	Py_XDECREF(e->process_name);
	Py_XDECREF(e->args);
	Py_TYPE(e)->tp_free((PyObject *)e);
}

static PyObject *event_get_args(event_obj *e, void *unused)
{
	(void)unused;
	if (e->args == NULL && (e->args = PyDict_New()) == NULL)
		return NULL;
	Py_INCREF(e->args);
	return e->args;
}

static PyObject *event_repr(event_obj *e)
{
	PyObject *args = event_get_args(e, NULL);
	if (args == NULL)
		return NULL;
	PyObject *s = PyUnicode_FromFormat("Event(time_ns=%lld, kind=%R, category=%R, name=%R, "
					   "thread=%R, process=%R, args=%R)", e->time_ns, e->kind,
					   e->category, e->name, e->thread, e->process, args);
	Py_DECREF(args);
	return s;
}

#define EV_OBJ(field, doc) { #field, T_OBJECT, offsetof(event_obj, field), READONLY, doc }
static PyMemberDef event_members[] = {
	{ "time_ns", T_LONGLONG, offsetof(event_obj, time_ns), READONLY,
	  "CLOCK_MONOTONIC nanoseconds (for a complete event, its start)" },
	{ "wall_ns", T_LONGLONG, offsetof(event_obj, wall_ns), READONLY,
	  "CLOCK_REALTIME nanoseconds since the Unix epoch" },
	{ "duration_ns", T_ULONGLONG, offsetof(event_obj, duration_ns), READONLY,
	  "a complete event's duration (0 otherwise)" },
	{ "offset", T_ULONGLONG, offsetof(event_obj, offset), READONLY,
	  "byte offset of the record in its file" },
	{ "line", T_UINT, offsetof(event_obj, line), READONLY, "the call site's line" },
	{ "id", T_ULONGLONG, offsetof(event_obj, id), READONLY,
	  "an async or flow event's id (0 for the others)" },
	EV_OBJ(id_scope, "an async or flow event's id scope, 'process' or 'global'; None for "
			 "the others"),
	EV_OBJ(kind, "'begin', 'end', 'instant', 'complete', 'counter' or a Trace2 message"),
	EV_OBJ(category, "the call site's category"),
	EV_OBJ(name, "the call site's name"),
	EV_OBJ(file, "the call site's file"),
	EV_OBJ(thread, "the thread's id (tid)"),
	EV_OBJ(process, "the process id (pid)"),
	EV_OBJ(thread_name, "the thread's name"),
	EV_OBJ(process_name, "the process's name (its section's)"),
	{ NULL, 0, 0, 0, NULL },
};

static PyGetSetDef event_getset[] = {
	{ "args", (getter)event_get_args, NULL, "the arguments, a dict by name", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyTypeObject event_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "nanotrace.Event",
	.tp_basicsize = sizeof(event_obj),
	.tp_dealloc = (destructor)event_dealloc,
	.tp_repr = (reprfunc)event_repr,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "One event of an archive (read-only).",
	.tp_members = event_members,
	.tp_getset = event_getset,
};

/* A string list argument as a list of str. */
static PyObject *list_value(const nt_reader_arg *a)
{
	PyObject *l = PyList_New(0);
	uint32_t pos = 0, len;
	const char *s;
	while (l != NULL && nt_reader_list_next(a, &pos, &s, &len)) {
		PyObject *v = archive_str(s, len);
		if (v == NULL || PyList_Append(l, v) < 0) {
			Py_XDECREF(v);
			Py_CLEAR(l);
			break;
		}
		Py_DECREF(v);
	}
	return l;
}

static PyObject *pointer_value(uint64_t v)
{
	PyObject *n = PyLong_FromUnsignedLongLong(v);
	if (n == NULL || nt_py_pointer == NULL)
		return n;
	PyObject *p = PyObject_CallOneArg(nt_py_pointer, n);
	Py_DECREF(n);
	return p;
}

static PyObject *arg_value(const nt_reader_arg *a)
{
	switch (a->type) {
	case NT_ARG_INT32:
	case NT_ARG_INT64: return PyLong_FromLongLong(a->value.i64);
	case NT_ARG_UINT32:
	case NT_ARG_UINT64: return PyLong_FromUnsignedLongLong(a->value.u64);
	case NT_ARG_POINTER: return pointer_value(a->value.u64);
	case NT_ARG_BOOL: return PyBool_FromLong(a->value.u64 != 0);
	case NT_ARG_DOUBLE: return PyFloat_FromDouble(a->value.f64);
	case NT_ARG_STRING_LIST: return list_value(a);
	case NT_ARG_STRING:
	case NT_ARG_STRING_REF:
	case NT_ARG_JSON: return archive_str(a->value.str.ptr, a->value.str.len);
	default: Py_RETURN_NONE;
	}
}

static PyObject *args_dict(reader_obj *ro, const nt_reader_event *ev)
{
	PyObject *d = PyDict_New();
	for (uint32_t i = 0; d != NULL && i < ev->arg_count; i++) {
		PyObject *k = cache_get(&ro->strings, ev->args[i].name);
		PyObject *v = k ? arg_value(&ev->args[i]) : NULL;
		if (v == NULL || PyDict_SetItem(d, k, v) < 0)
			Py_CLEAR(d);
		Py_XDECREF(v);
	}
	return d;
}

#define SET_SHARED(dst, src)                                                               \
	do {                                                                               \
		if ((src) == NULL)                                                         \
			goto fail;                                                         \
		Py_INCREF(src);                                                            \
		(dst) = (src);                                                             \
	} while (0)

static PyObject *make_event(reader_obj *ro, const nt_reader_event *ev)
{
	event_obj *e = PyObject_New(event_obj, &event_type);
	if (e == NULL)
		return NULL;
	e->kind = e->category = e->name = e->file = e->thread = e->process = NULL;
	e->id = ev->id;
	e->id_scope = ev->id_scope == NT_ID_NONE ? Py_None
		      : PyUnicode_InternFromString(ev->id_scope == NT_ID_GLOBAL ? "global"
										  : "process");
	if (e->id_scope == Py_None)
		Py_INCREF(Py_None);
	e->thread_name = e->process_name = e->args = NULL;
	e->time_ns = ev->time_ns;
	e->wall_ns = ev->wall_ns;
	e->duration_ns = ev->duration_ns;
	e->offset = ev->offset;
	e->line = ev->line;
	SET_SHARED(e->kind, kind_obj(ro, ev->kind));
	SET_SHARED(e->category, cache_get(&ro->strings, ev->category));
	SET_SHARED(e->name, cache_get(&ro->strings, ev->name));
	SET_SHARED(e->file, cache_get(&ro->strings, ev->file));
	if (ev->thread == NULL || ev->thread->index >= ro->nthreads) {
		PyErr_SetString(PyExc_SystemError, "nanotrace: an event without a known thread");
		goto fail;
	}
	const thread_objs *t = &ro->threads[ev->thread->index];
	SET_SHARED(e->thread, t->tid);
	SET_SHARED(e->process, t->pid);
	SET_SHARED(e->thread_name, t->name);
	SET_SHARED(e->process_name, t->process_name);
	if (ev->arg_count != 0 && (e->args = args_dict(ro, ev)) == NULL)
		goto fail;
	return (PyObject *)e;
fail:
	Py_DECREF(e);
	return NULL;
}

/* ---- the iterator ---------------------------------------------------------------------- */

static PyTypeObject cursor_type;

/* Damage, reported during nt_reader_cursor_next: kept for the exception a stop raises,
 * and listed in reader.errors (the skip policy goes on). */
static void on_error(void *ctx, uint64_t offset, const char *message)
{
	cursor_obj *co = ctx;
	co->has_error = 1;
	co->err_offset = offset;
	snprintf(co->err_message, sizeof(co->err_message), "%s", message);
	PyObject *m = archive_str(message, strlen(message));
	PyObject *item = m ? Py_BuildValue("(KN)", (unsigned long long)offset, m) : NULL;
	if (item == NULL || PyList_Append(co->reader->errors, item) < 0)
		co->failed = 1;
	Py_XDECREF(item);
}

/* Who damage messages name, by trace-dump's rule: a plain archive is named here; a
 * many-process reader's messages name their file and section themselves. */
static const char *damage_prefix(const reader_obj *ro)
{
	const nt_reader_section *s = nt_reader_section_peek(ro->r, 0);
	return nt_reader_section_count(ro->r) == 1 && s != NULL && s->reader == ro->r
		       ? nt_reader_name(ro->r) : NULL;
}

static void on_gap(void *ctx, const nt_reader_gap *gap)
{
	cursor_obj *co = ctx;
	PyObject *item = Py_BuildValue("(IKLK)", gap->thread->index,
				       (unsigned long long)gap->events, (long long)gap->time_ns,
				       (unsigned long long)gap->offset);
	if (item == NULL || PyList_Append(co->reader->gaps, item) < 0)
		co->failed = 1;
	Py_XDECREF(item);
}

static void cursor_end(cursor_obj *co)
{
	if (co->c == NULL)
		return;
	nt_reader_cursor_close(co->c);
	co->c = NULL;
	reader_obj *ro = co->reader;
	if (co->prev)
		co->prev->next = co->next;
	else
		ro->cursors = co->next;
	if (co->next)
		co->next->prev = co->prev;
	co->next = co->prev = NULL;
}

static void reader_close_now(reader_obj *ro)
{
	while (ro->cursors != NULL)
		cursor_end(ro->cursors);
	if (ro->r == NULL)
		return;
	nt_reader_close(ro->r);
	ro->r = NULL;
	cache_free(&ro->strings);
	for (uint32_t i = 0; ro->threads != NULL && i < ro->nthreads; i++) {
		Py_XDECREF(ro->threads[i].tid);
		Py_XDECREF(ro->threads[i].pid);
		Py_XDECREF(ro->threads[i].name);
		Py_XDECREF(ro->threads[i].process_name);
	}
	PyMem_Free(ro->threads);
	ro->threads = NULL;
	for (int k = 0; k < 256; k++)
		Py_CLEAR(ro->kinds[k]);
}

static nt_order parse_order(const char *order)
{
	if (strcmp(order, "time") == 0)
		return NT_ORDER_TIME;
	if (strcmp(order, "stream") == 0)
		return NT_ORDER_STREAM;
	PyErr_Format(PyExc_ValueError, "order must be 'time' or 'stream', not '%s'", order);
	return (nt_order)-1;
}

/* Reader.events(order='time'): a new iteration; errors and gaps start empty. */
static PyObject *reader_events(reader_obj *ro, PyObject *args)
{
	const char *order_s = "time";
	if (!PyArg_ParseTuple(args, "|s", &order_s) || reader_check(ro) < 0)
		return NULL;
	nt_order order = parse_order(order_s);
	if ((int)order < 0)
		return NULL;
	if (PyList_SetSlice(ro->errors, 0, PY_SSIZE_T_MAX, NULL) < 0 ||
	    PyList_SetSlice(ro->gaps, 0, PY_SSIZE_T_MAX, NULL) < 0)
		return NULL;
	cursor_obj *co = PyObject_New(cursor_obj, &cursor_type);
	if (co == NULL)
		return NULL;
	Py_INCREF(ro);
	co->reader = ro;
	co->failed = co->has_error = 0;
	co->err_message[0] = '\0';
	co->prev = NULL;
	nt_reader_callbacks cb = { .on_error = on_error, .on_gap = on_gap };
	co->c = nt_reader_cursor_open(ro->r, &cb, co, order, ro->policy);
	co->next = NULL;
	if (co->c == NULL) {
		Py_DECREF(co);
		return PyErr_NoMemory();
	}
	co->next = ro->cursors;
	if (ro->cursors)
		ro->cursors->prev = co;
	ro->cursors = co;
	return (PyObject *)co;
}

static PyObject *cursor_iternext(cursor_obj *co)
{
	if (co->c == NULL) {
		if (co->reader->r == NULL)
			PyErr_SetString(PyExc_ValueError, "the trace was closed during iteration");
		return NULL;
	}
	const nt_reader_event *ev;
	int rc = nt_reader_cursor_next(co->c, &ev);
	if (co->failed) {
		cursor_end(co);
		if (!PyErr_Occurred())
			PyErr_NoMemory();
		return NULL;
	}
	if (rc > 0)
		return make_event(co->reader, ev);
	cursor_end(co);
	if (rc == 0)
		return NULL; /* StopIteration */
	if (!co->has_error)
		return PyErr_NoMemory();
	raise_damage(damage_prefix(co->reader), co->err_message, co->err_offset, 1);
	return NULL;
}

static void cursor_dealloc(cursor_obj *co)
{
	cursor_end(co);
	Py_XDECREF(co->reader);
	PyObject_Free(co);
}

static PyTypeObject cursor_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "nanotrace._EventIterator",
	.tp_basicsize = sizeof(cursor_obj),
	.tp_dealloc = (destructor)cursor_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "Events of a trace, one at a time (Reader.events).",
	.tp_iter = PyObject_SelfIter,
	.tp_iternext = (iternextfunc)cursor_iternext,
};

#include "_nanotrace_info.h"

static PyObject *reader_close(reader_obj *ro, PyObject *unused)
{
	(void)unused;
	if (ro->counting) {
		PyErr_SetString(PyExc_RuntimeError, "the trace is being read by stats() in another "
				"thread: close it after that returns");
		return NULL;
	}
	reader_close_now(ro);
	Py_RETURN_NONE;
}

static PyObject *reader_closed(reader_obj *ro, void *unused)
{
	(void)unused;
	return PyBool_FromLong(ro->r == NULL);
}

static PyMethodDef reader_methods[] = {
	{ "events", (PyCFunction)reader_events, METH_VARARGS,
	  "events(order='time'): an iterator over the events ('time' or 'stream' order)" },
	{ "close", (PyCFunction)reader_close, METH_NOARGS, "close the archive (and iterators)" },
	{ "info", (PyCFunction)reader_info, METH_NOARGS, "the archive header, a dict" },
	{ "summary_counts", (PyCFunction)reader_summary, METH_NOARGS,
	  "the open-time counts and compression, a dict" },
	{ "sections", (PyCFunction)reader_sections, METH_NOARGS, "the processes, a list of dicts" },
	{ "threads", (PyCFunction)reader_threads, METH_NOARGS, "the threads, a list of dicts" },
	{ "counts", (PyCFunction)reader_counts, METH_NOARGS,
	  "events by kind and thread, records by kind, gaps, damage: one visit" },
	{ NULL, NULL, 0, NULL },
};

static PyMemberDef reader_members[] = {
	{ "errors", T_OBJECT, offsetof(reader_obj, errors), READONLY,
	  "[(offset, message)]: damage the latest iteration or count met" },
	{ "gaps", T_OBJECT, offsetof(reader_obj, gaps), READONLY,
	  "[(thread index, events, time_ns, offset)]: events lost, likewise" },
	{ NULL, 0, 0, 0, NULL },
};

static PyGetSetDef reader_getset[] = {
	{ "closed", (getter)reader_closed, NULL, "whether close() was called", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyTypeObject reader_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "nanotrace._nanotrace.Reader",
	.tp_basicsize = sizeof(reader_obj),
	.tp_dealloc = (destructor)reader_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
	.tp_doc = "Reader(paths, strict=True): archives opened as one trace (libnanotrace-reader).",
	.tp_methods = reader_methods,
	.tp_members = reader_members,
	.tp_getset = reader_getset,
	.tp_init = (initproc)reader_init,
	.tp_new = PyType_GenericNew,
};

/* _set_pointer_type(cls): pointer arguments become cls(int) (nanotrace.Pointer). */
static PyObject *set_pointer_type(PyObject *self, PyObject *cls)
{
	(void)self;
	if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &PyLong_Type)) {
		PyErr_SetString(PyExc_TypeError, "_set_pointer_type needs a subclass of int");
		return NULL;
	}
	Py_INCREF(cls);
	Py_XSETREF(nt_py_pointer, cls);
	Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
	{ "_set_pointer_type", set_pointer_type, METH_O, "the type of pointer arguments" },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef module_def = {
	PyModuleDef_HEAD_INIT,
	.m_name = "nanotrace._nanotrace",
	.m_methods = module_methods,
	.m_doc = "libnanotrace-reader for Python; use the nanotrace package.",
	.m_size = -1,
};

PyMODINIT_FUNC PyInit__nanotrace(void)
{
	if (PyType_Ready(&event_type) < 0 || PyType_Ready(&cursor_type) < 0 ||
	    PyType_Ready(&reader_type) < 0)
		return NULL;
	PyObject *m = PyModule_Create(&module_def);
	if (m == NULL)
		return NULL;
	nt_py_error = PyErr_NewExceptionWithDoc(
		"nanotrace.Error",
		"A damaged or unreadable archive: the message names the file and the byte offset, "
		"as trace-dump says it; .offset holds the offset.",
		PyExc_ValueError, NULL);
	Py_INCREF(&reader_type);
	Py_INCREF(&event_type);
	if (nt_py_error == NULL || PyModule_AddObject(m, "Error", nt_py_error) < 0 ||
	    PyModule_AddObject(m, "Reader", (PyObject *)&reader_type) < 0 ||
	    PyModule_AddObject(m, "Event", (PyObject *)&event_type) < 0 ||
	    PyModule_AddStringConstant(m, "library_version", nt_reader_version()) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	Py_INCREF(nt_py_error);
	return m;
}
