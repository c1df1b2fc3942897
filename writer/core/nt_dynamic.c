/*
 * nt_dynamic.c - call sites for events whose category, name or argument names are known
 * only at run time (NT_INSTANT_DYN ...).
 *
 * An ordinary macro owns a static call site that keeps its literal strings. Here the site
 * is found by its strings instead: (file, line, category, name, argument names) hash to an
 * entry of one open-addressing table; a new combination gets a heap site holding copies of
 * its strings, so the caller's strings need not outlive the call. Sites are never freed:
 * the core keeps registered sites in a list across sessions (generation wraps), exactly as
 * it keeps static ones. The table's own mutex (not the intern lock, which the emit takes
 * when it registers the site) guards lookups; it is held across fork() so a child that
 * starts a session of its own finds it usable.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "nt_internal.h"

#define DYN_MAX_SITES 65536u /* the table's size: twice this, so it stays half empty */

typedef struct dyn_site {
	nt_callsite site;
	uint64_t hash;
	uint32_t nargs;
	const char **arg_names; /* copies, for comparing; the site interns them itself */
} dyn_site;

static pthread_mutex_t dyn_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t dyn_once = PTHREAD_ONCE_INIT;
static dyn_site **dyn_table; /* 2 * DYN_MAX_SITES slots, allocated on first use */
static uint32_t dyn_count;

static void dyn_before_fork(void)
{
	pthread_mutex_lock(&dyn_lock);
}

static void dyn_after_fork(void)
{
	pthread_mutex_unlock(&dyn_lock);
}

static void dyn_init(void)
{
	pthread_atfork(dyn_before_fork, dyn_after_fork, dyn_after_fork);
}

static const char *or_null(const char *s)
{
	return s != NULL ? s : "(null)";
}

static uint64_t hash_str(uint64_t h, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		h = (h ^ *p) * 0x100000001b3ull; /* FNV-1a */
	return (h ^ 0xffu) * 0x100000001b3ull; /* a separator no string contains */
}

static uint64_t hash_key(const char *file, uint32_t line, const char *cat, const char *name,
			 const nt_arg *args, uint32_t n)
{
	uint64_t h = 0xcbf29ce484222325ull ^ ((uint64_t)(uintptr_t)file * 31u + line);
	h = hash_str(hash_str(h, cat), name);
	for (uint32_t i = 0; i < n; i++)
		h = hash_str(h, or_null(args[i].name));
	return h;
}

static int same_key(const dyn_site *d, uint64_t h, const char *file, uint32_t line,
		    const char *cat, const char *name, const nt_arg *args, uint32_t n)
{
	if (d->hash != h || d->nargs != n || d->site.file != file || d->site.line != line ||
	    strcmp(d->site.category, cat) != 0 || strcmp(d->site.name, name) != 0)
		return 0;
	for (uint32_t i = 0; i < n; i++)
		if (strcmp(d->arg_names[i], or_null(args[i].name)) != 0)
			return 0;
	return 1;
}

static char *copy_str(char **pool, const char *s)
{
	size_t len = strlen(s) + 1;
	char *out = memcpy(*pool, s, len);
	*pool += len;
	return out;
}

/* One allocation: the site, its interned-name slots, the name pointers and the strings. */
static dyn_site *new_site(uint64_t h, const char *file, uint32_t line, const char *cat,
			  const char *name, const nt_arg *args, uint32_t n)
{
	size_t bytes = sizeof(dyn_site) + (n + 1) * sizeof(uint16_t) + n * sizeof(char *) +
		       strlen(cat) + strlen(name) + 2;
	for (uint32_t i = 0; i < n; i++)
		bytes += strlen(or_null(args[i].name)) + 1;
	dyn_site *d = calloc(1, bytes + sizeof(char *)); /* slack: the pointers' alignment */
	if (d == NULL)
		return NULL;
	uint16_t *ids = (uint16_t *)(void *)(d + 1);
	d->arg_names = (const char **)(void *)(((uintptr_t)(ids + n + 1) + sizeof(char *) - 1) &
					       ~(uintptr_t)(sizeof(char *) - 1));
	char *pool = (char *)(d->arg_names + n);
	d->hash = h;
	d->nargs = n;
	d->site.line = line;
	d->site.file = file;
	d->site.category = copy_str(&pool, cat);
	d->site.name = copy_str(&pool, name);
	d->site.arg_names = ids;
	d->site.arg_count = n;
	for (uint32_t i = 0; i < n; i++)
		d->arg_names[i] = copy_str(&pool, or_null(args[i].name));
	return d;
}

/* The site of this combination, created on its first use; NULL when the table is full or
 * memory ran out. Caller holds dyn_lock. */
static nt_callsite *find_site(const char *file, uint32_t line, const char *cat,
			      const char *name, const nt_arg *args, uint32_t n)
{
	const uint32_t mask = 2 * DYN_MAX_SITES - 1;
	if (dyn_table == NULL && (dyn_table = calloc(mask + 1, sizeof(*dyn_table))) == NULL)
		return NULL;
	uint64_t h = hash_key(file, line, cat, name, args, n);
	uint32_t i = (uint32_t)(h ^ (h >> 32)) & mask;
	for (; dyn_table[i] != NULL; i = (i + 1) & mask)
		if (same_key(dyn_table[i], h, file, line, cat, name, args, n))
			return &dyn_table[i]->site;
	if (dyn_count >= DYN_MAX_SITES)
		return NULL;
	dyn_site *d = new_site(h, file, line, cat, name, args, n);
	if (d == NULL)
		return NULL;
	dyn_table[i] = d;
	dyn_count++;
	return &d->site;
}

/* The site of a dynamic event, or NULL (the drop counted) when it has none. */
static nt_callsite *dynamic_site(const char *file, uint32_t line, const char *category,
				 const char *name, const nt_arg *args, uint32_t nargs)
{
	pthread_once(&dyn_once, dyn_init);
	pthread_mutex_lock(&dyn_lock);
	nt_callsite *site = find_site(file != NULL ? file : "(null)", line, or_null(category),
				      or_null(name), args, nargs);
	pthread_mutex_unlock(&dyn_lock);
	if (site == NULL && nt_S.durable_dropped != NULL)
		nt_add_64(nt_S.durable_dropped, 1);
	return site;
}

void nt_emit_dynamic_(const char *file, uint32_t line, unsigned kind, const char *category,
		      const char *name, const nt_arg *args, uint32_t nargs)
{
	if (!nt_kind_is_plain_event(kind) || kind == NT_KIND_COMPLETE || (nargs > 0 && args == NULL))
		return;
	nt_callsite *site = dynamic_site(file, line, category, name, args, nargs);
	if (site == NULL)
		return;
	if (nargs == 0)
		nt_emit_(site, kind);
	else
		nt_emit_args_(site, kind, args, nargs);
}

void nt_emit_dynamic_id_(const char *file, uint32_t line, unsigned kind, const char *category,
			 const char *name, uint64_t id, const nt_arg *args, uint32_t nargs)
{
	if (!nt_kind_has_id(kind) || (nargs > 0 && args == NULL))
		return;
	nt_callsite *site = dynamic_site(file, line, category, name, args, nargs);
	if (site != NULL)
		nt_emit_id_args_(site, kind, id, args, nargs);
}
