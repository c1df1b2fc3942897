/*
 * nt_reader_many.c - one reader over many processes: a bundle's sections (format/nt_bundle.h),
 * a directory of archives, several files.
 *
 * Each process is a section, an archive opened on its own (a bundle's sections are slices
 * of its one mapping). The many-process reader then holds the sections' threads and Trace2
 * processes renumbered into one table each (thread_base, process_base), so every accessor
 * of a plain reader works on it unchanged; the visit (nt_reader_visit.c) walks the
 * sections. A bundle is untrusted like any archive: its frames are read up to the last
 * whole one that tells the truth, and what stopped the reading is kept as a problem that
 * every visit reports.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

#include "reader/common/nt_grow.h"
#include "format/nt_bundle.h"
#include "nt_reader_ahead.h"
#include "nt_reader_internal.h"
#include "nt_reader_spin.h"

int nt_is_bundle(const uint8_t *data, size_t size)
{
	return data != NULL && size >= 8 && memcmp(data, NT_BUNDLE_MAGIC, 8) == 0;
}

static nt_reader *many_new(const char *name, nt_reader_error *err)
{
	nt_reader *m = calloc(1, sizeof(*m));
	if (m != NULL && (m->many = calloc(1, sizeof(*m->many))) == NULL) {
		free(m);
		m = NULL;
	}
	if (m != NULL) {
		pthread_mutex_init(&m->many->pin_lock, NULL);
		m->many->sections_mode = nt_many_sections_mode();
	}
	if (m == NULL) {
		nt_reader_fail(err, name, 0, "%s", "out of memory");
		return NULL;
	}
	if ((m->name = strdup(name)) == NULL) {
		nt_reader_fail(err, name, 0, "%s", "out of memory");
		free(m->many);
		free(m);
		return NULL;
	}
	return m;
}

/* Remember a finding about an input as a whole; 0 when memory runs out. */
static int add_problem(reader_many *mm, const char *file, uint64_t off, const char *what)
{
	if (!nt_grow(&mm->problems, &mm->problems_cap, mm->nproblems + 1, sizeof(*mm->problems)))
		return 0;
	char *msg;
	if (asprintf(&msg, "%s: %s", file, what) < 0)
		return 0;
	mm->problems[mm->nproblems++] = (reader_problem){ off, msg };
	return 1;
}

static char *copy_bytes(const uint8_t *p, size_t n)
{
	char *s = malloc(n + 1);
	if (s != NULL) {
		memcpy(s, p, n);
		s[n] = '\0';
	}
	return s;
}

/* What a section's name, message and error are until set: shared, never freed. */
static const char nothing[] = "";

static void free_text(const char *p)
{
	if (p != nothing)
		free((char *)p);
}

/* The input file's name, kept once for all its sections (a bundle holds thousands); NULL
 * when memory runs out. */
static const char *add_source(reader_many *mm, const char *file)
{
	if (mm->nsources > 0 && strcmp(mm->sources[mm->nsources - 1], file) == 0)
		return mm->sources[mm->nsources - 1];
	char *copy = strdup(file);
	if (copy == NULL ||
	    !nt_grow(&mm->sources, &mm->sources_cap, mm->nsources + 1, sizeof(*mm->sources))) {
		free(copy);
		return NULL;
	}
	return mm->sources[mm->nsources++] = copy;
}

/* Section i of the table, zeroed but for its strings ("" until set). */
static nt_reader_section *init_section(reader_many *mm, size_t i, const char *source)
{
	nt_reader_section *s = &mm->sections[i];
	s->source = source;
	s->name = s->message = s->error = s->end_text = nothing;
	s->index = (uint32_t)i;
	return s;
}

/* A new section; NULL when memory runs out. */
static nt_reader_section *add_section(reader_many *mm, const char *file)
{
	const char *source = add_source(mm, file);
	if (source == NULL ||
	    !nt_grow(&mm->sections, &mm->sections_cap, mm->nsections + 1, sizeof(*mm->sections)))
		return NULL;
	return init_section(mm, mm->nsections++, source);
}

static void replace(const char **field, char *value)
{
	free_text(*field);
	*field = value;
}

/* Where an opened section's parts go: the reader's own slabs, spare reader and totals, or
 * those of a thread opening a range of a bundle's sections (open_range), which touches
 * nothing else of the reader's but its sections in that range. */
typedef struct section_opener {
	nt_reader *m;
	nt_reader_slab *slab;  /* readers packed (the sections kept open) */
	nt_reader_slab *kept;  /* what the closed sections keep */
	nt_reader **spare;     /* a section's reader recycled for the next */
	open_totals *totals;
} section_opener;

static section_opener own_opener(nt_reader *m)
{
	reader_many *mm = m->many;
	return (section_opener){ m, &mm->slab, &mm->kept, &mm->spare_section, &mm->totals };
}

/* A section just opened: its header into the totals, then closed until a visit needs it
 * where nt_reader_lazy.c's rule says so (its tables are merged at the end, from what it
 * kept). 0 when memory runs out. */
static int merge_section(const section_opener *o, nt_reader_section *s, size_t bundle_sections)
{
	nt_open_totals_add_section(o->totals, s, s->reader);
	return !nt_many_section_may_close(o->m, s->reader, bundle_sections) ||
	       nt_many_close_now(o->m, s->index, o->kept, o->spare) == 0;
}

/* Open a section's archive: a slice of a bundle or a whole mapped file, packed into the
 * slab. The reader is named after the section, so its own messages say which one. */
static int open_section(const section_opener *o, nt_reader_section *s, const uint8_t *data,
			size_t size, int mapped, size_t bundle_sections)
{
	nt_reader *m = o->m;
	char label[256];
	nt_many_section_label(s, label, sizeof(label));
	nt_reader_error err;
	if (size == 0) {
		snprintf(err.message, sizeof(err.message), "%s: no archive was saved for it", label);
		err.offset = 0;
		s->reader = NULL;
	} else {
		s->reader = mapped ? nt_reader_over(data, size, mapped, label, &err)
				   : nt_section_over(o->spare, data, size, label, &err);
	}
	if (s->reader == NULL) {
		s->error_offset = s->offset + err.offset;
		char *why = strdup(err.message);
		if (why == NULL)
			return 0;
		replace(&s->error, why);
		return 1;
	}
	if (!nt_many_section_may_close(m, s->reader, bundle_sections))
		s->reader = nt_reader_pack(s->reader, o->slab);
	s->reader->in_many = 1;
	s->reader->file_base = s->offset;
	s->reader->decoder_owner = m;
	s->info = nt_reader_info(s->reader);
	nt_reader_get_summary(s->reader, &s->summary);
	s->events_written = s->info->events_written;
	s->header_notes = nt_header_notes(s->info);
	if (s->end_state == 0) { /* a plain file: it describes itself */
		s->pid = s->info->pid;
		s->mode = s->info->buffering_mode;
		char *name = strdup(s->info->process_name);
		if (name == NULL)
			return 0;
		replace(&s->name, name);
	}
	return merge_section(o, s, bundle_sections);
}

/* One SECTION frame's description (name, message, numbers) into section s; NULL when
 * memory runs out. */
static nt_reader_section *frame_section(nt_reader_section *s, const nt_bundle_frame *f,
					const uint8_t *text, uint64_t archive_off)
{
	if (s == NULL)
		return NULL;
	char *name = copy_bytes(text, f->name_len);
	char *msg = f->message_len ? copy_bytes(text + f->name_len, f->message_len) : NULL;
	if (name == NULL || (f->message_len && msg == NULL)) {
		free(name);
		free(msg);
		return NULL;
	}
	replace(&s->name, name);
	if (msg != NULL)
		replace(&s->message, msg);
	s->pid = f->pid;
	s->provider_id = f->provider_id;
	s->end_state = f->end_state;
	s->end_text = nt_section_state_name(f->end_state);
	s->mode = f->mode;
	s->offset = archive_off;
	s->size = f->archive_size;
	s->end_wall_ns = f->end_wall_ns;
	return s;
}

/* The END frame: the count it gives, how the recording ended, and nothing after it. */
static int read_end(reader_many *mm, const char *file, const nt_bundle_frame *f,
		    const uint8_t *text, uint64_t off, uint64_t after, size_t size, uint32_t nsec)
{
	char what[1200];
	int ok = 1;
	if (f->sections != nsec) {
		snprintf(what, sizeof(what), "the END frame counts %u sections, the bundle holds %u",
			 f->sections, nsec);
		ok &= add_problem(mm, file, off, what);
	}
	if (f->end_state != NT_SECTION_FINISHED) {
		snprintf(what, sizeof(what), "the recording ended early (%s): %.*s",
			 nt_section_state_name(f->end_state), (int)f->message_len, (const char *)text);
		ok &= add_problem(mm, file, off, what);
	}
	if (after < size) {
		snprintf(what, sizeof(what), "%zu bytes after the END frame", size - (size_t)after);
		ok &= add_problem(mm, file, after, what);
	}
	return ok;
}

/* How many sections read_frames will find, up to `limit`: the same walk, counting. So that
 * the table of sections is allocated once (grown by doubling, its copies and their page
 * faults were a twentieth of --stats's time on 20,000 sections) and each section is opened
 * as its frame is read, while the bytes of both are in the cache, knowing how many its
 * bundle has. With `marks`, the offset of every RANGE_MARK-th frame is kept there (grown;
 * *marks_ok = 0 when memory runs out). */
#define RANGE_MARK 64

static size_t count_sections(const uint8_t *data, size_t size, size_t limit, uint64_t **marks,
			     size_t *marks_cap, int *marks_ok)
{
	size_t n = 0;
	for (uint64_t off = sizeof(nt_bundle_preamble), head, next;
	     n < limit && size - off >= sizeof(nt_bundle_frame); off = next) {
		nt_bundle_frame f;
		memcpy(&f, data + off, sizeof(f));
		if (nt_bundle_frame_problem(&f) != NULL || f.kind == NT_BUNDLE_END)
			break;
		nt_bundle_fit fit = nt_bundle_frame_fit(&f, off, size, &head, &next);
		if (fit == NT_BUNDLE_FIT_CUT_TEXT || fit == NT_BUNDLE_FIT_CUT_ARCHIVE)
			break;
		if (marks != NULL && n % RANGE_MARK == 0) {
			if (nt_grow(marks, marks_cap, n / RANGE_MARK + 1, sizeof(**marks)))
				(*marks)[n / RANGE_MARK] = off;
			else
				*marks_ok = 0;
		}
		n++;
		if (fit == NT_BUNDLE_FIT_CUT_PAD)
			break;
	}
	return n;
}

/* ---- a large bundle's sections opened on two threads ---------------------------------- */

/* From this many sections on (any number from 4 when NANOTRACE_READER_AHEAD forces
 * helpers), a bundle's open is shared with a second thread (when the process may use two
 * CPUs: nt_ahead_plan): a section's open is a function of its bytes, and on 20,000 short
 * processes it was most of `nt_reader_open`'s 11 ms. */
#define OPEN_RANGE_MIN 256
/* Fewer sections than this left when the count is known are not worth a hand-over. */
#define OPEN_RANGE_LEFT_MIN 128
/* The most sections the first frames' bytes may reserve the table for before the count:
 * 257 empty frames (64 bytes each) before one 64 MiB archive promised a million, 192 MB of
 * table for a 64 MB file. Past this the table grows once the count is known. */
#define OPEN_RANGE_GUESS_MAX 65536

/* The second thread first counts the bundle's frames (count_sections, keeping a mark every
 * RANGE_MARK frames) while the reader opens sections from the front: the count is a walk of
 * every frame, 1.2 ms of page faults and cache misses on 20,000 sections, which had to end
 * before either thread opened anything. When the reader, between two sections, finds the
 * count there (RANGE_COUNTED), it sizes the table for it and gives the second thread the
 * later half of what is left, [first, end) (RANGE_GO); or, with too little left, or the
 * reader's walk ended first, nothing (RANGE_CANCELLED). The thread opens those sections,
 * frames count_sections read whole (so no frame among them is a problem), each into its
 * place in the table, with its own slabs, spare reader and totals, which the reader adopts
 * when its walk reaches `first` (join_range): as if it had opened them itself. Until
 * RANGE_GO the thread touches nothing of the reader's, so the reader grows the table as it
 * pleases; from then on it does not. The last section is the reader's own, which is where
 * the walk meets the END frame, or the bundle's end, and says what it finds there. */
enum { RANGE_COUNTING, RANGE_COUNTED, RANGE_GO, RANGE_CANCELLED };

typedef struct open_range {
	section_opener o;
	nt_reader_slab slab, kept;
	nt_reader *spare;
	open_totals totals;
	const uint8_t *data;
	size_t size;
	const char *source;
	uint64_t *marks; /* the count's: frame k * RANGE_MARK's offset at marks[k] */
	size_t marks_cap;
	size_t counted;    /* the bundle's sections (written before RANGE_COUNTED) */
	size_t base;       /* the reader's sections before the bundle's */
	uint64_t off;      /* the frame after its last, once it has opened them */
	size_t first, end; /* in the reader's table of sections (set before RANGE_GO) */
	int state;         /* RANGE_*, atomic */
	int planned;       /* the reader's: it has answered the count */
	int forced;        /* NANOTRACE_READER_AHEAD forces helpers (the tests) */
	int ok, joined;
	pthread_t thread;
} open_range;

/* The offset of the frame `k` SECTION frames after the one at `off` (count_sections read
 * them whole). */
static uint64_t frames_after(const uint8_t *data, size_t size, uint64_t off, size_t k)
{
	for (uint64_t head, next; k > 0; k--, off = next) {
		nt_bundle_frame f;
		memcpy(&f, data + off, sizeof(f));
		(void)nt_bundle_frame_fit(&f, off, size, &head, &next);
	}
	return off;
}

/* The second thread, counted, waits for the reader's answer: RANGE_GO or RANGE_CANCELLED.
 * The reader looks between sections (a microsecond apart), so a short spin, then naps. */
static int wait_for_answer(open_range *g)
{
	long nap = 20000;
	for (unsigned turn = 0;; turn++) {
		int st = __atomic_load_n(&g->state, __ATOMIC_ACQUIRE);
		if (st != RANGE_COUNTED)
			return st == RANGE_GO;
		if (turn < 4096) {
			nt_spin_relax();
			continue;
		}
		struct timespec ts = { 0, nap };
		nanosleep(&ts, NULL);
		nap = nap * 2 < 1000000 ? nap * 2 : 1000000;
	}
}

static void *open_range_main(void *arg)
{
	open_range *g = arg;
	reader_many *mm = g->o.m->many;
	int marks_ok = 1, counting = RANGE_COUNTING;
	g->counted = count_sections(g->data, g->size, SIZE_MAX, &g->marks, &g->marks_cap,
				    &marks_ok);
	if (!__atomic_compare_exchange_n(&g->state, &counting,
					 marks_ok ? RANGE_COUNTED : RANGE_CANCELLED, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) ||
	    !marks_ok || !wait_for_answer(g))
		return NULL;
	size_t k = g->first - g->base;
	g->off = frames_after(g->data, g->size, g->marks[k / RANGE_MARK], k % RANGE_MARK);
	for (size_t i = g->first; i < g->end && g->ok; i++) {
		nt_bundle_frame f;
		uint64_t head, next;
		memcpy(&f, g->data + g->off, sizeof(f));
		(void)nt_bundle_frame_fit(&f, g->off, g->size, &head, &next);
		nt_reader_section *s = frame_section(init_section(mm, i, g->source), &f,
						     g->data + g->off + sizeof(f), g->off + head);
		g->ok = s != NULL &&
			open_section(&g->o, s, g->data + s->offset, s->size, 0, g->counted);
		g->off = next;
	}
	return NULL;
}

/* The second thread started on a bundle of at least OPEN_RANGE_MIN sections (its first
 * `*seen` counted here), the table reserved for as many as the first ones' bytes promise;
 * NULL (open them all here) when not worth it or it cannot be. */
static open_range *start_range(nt_reader *m, const char *file, const uint8_t *data,
			       size_t size, size_t *seen)
{
	reader_many *mm = m->many;
	int forced;
	if (nt_ahead_plan(m, &forced) == 0)
		return NULL;
	size_t want = forced ? 4 : OPEN_RANGE_MIN;
	uint64_t *marks = NULL;
	size_t cap = 0;
	int ok = 1;
	*seen = count_sections(data, size, want + 1, &marks, &cap, &ok);
	if (*seen < want || !ok) {
		free(marks);
		return NULL;
	}
	/* the frames so far, and their bytes: how many the bundle holds if the rest are alike
	 * (a table too large stays untouched pages, and is trimmed at the end) */
	uint64_t span = frames_after(data, size, marks[0], *seen) - marks[0];
	free(marks);
	size_t guess = (size_t)((size - sizeof(nt_bundle_preamble)) / (span / *seen + 1)) + 1;
	if (guess > OPEN_RANGE_GUESS_MAX)
		guess = OPEN_RANGE_GUESS_MAX;
	const char *source = add_source(mm, file);
	if (source == NULL ||
	    !nt_grow(&mm->sections, &mm->sections_cap, mm->nsections + guess, sizeof(*mm->sections)))
		return NULL;
	open_range *g = calloc(1, sizeof(*g));
	if (g == NULL)
		return NULL;
	g->o = (section_opener){ m, &g->slab, &g->kept, &g->spare, &g->totals };
	g->data = data;
	g->size = size;
	g->source = source;
	g->base = mm->nsections;
	g->first = SIZE_MAX;
	g->forced = forced;
	g->ok = 1;
	if (pthread_create(&g->thread, NULL, open_range_main, g) != 0) {
		free(g);
		return NULL;
	}
	/* forced (the tests): the split waits for the count, so it is the same every run
	 * (yielding: forced on one CPU, the count needs this one) */
	while (forced && __atomic_load_n(&g->state, __ATOMIC_ACQUIRE) == RANGE_COUNTING)
		sched_yield();
	return g;
}

/* The reader's answer to the count, between two of its sections: the table and the lazy
 * table sized for the bundle, and the later half of what is left given to the second
 * thread (RANGE_GO), or nothing (RANGE_CANCELLED) when too little is left or the tables
 * cannot be had at once: the reader then opens the rest itself, growing them as it goes.
 * The lazy table as large as the table: nt_many_close_now, on either thread, grows it to
 * that, which after RANGE_GO must move nothing. */
static void plan_range(nt_reader *m, open_range *g)
{
	reader_many *mm = m->many;
	g->planned = 1;
	size_t n = g->counted, done = mm->nsections - g->base;
	size_t left_min = g->forced ? 2 : OPEN_RANGE_LEFT_MIN;
	if (n < done + 1 + left_min ||
	    !nt_grow(&mm->sections, &mm->sections_cap, g->base + n, sizeof(*mm->sections)) ||
	    (mm->sections_mode != NT_SECTIONS_OPEN &&
	     !nt_grow(&mm->lazy, &mm->lazy_cap, mm->sections_cap, sizeof(*mm->lazy)))) {
		__atomic_store_n(&g->state, RANGE_CANCELLED, __ATOMIC_RELEASE);
		return;
	}
	size_t left = n - 1 - done; /* but the last, the reader's own */
	g->first = mm->nsections + left / 2;
	g->end = g->base + n - 1;
	__atomic_store_n(&g->state, RANGE_GO, __ATOMIC_RELEASE);
}

/* The second thread's sections made the reader's (once the reader opened those before
 * them, or when the open ends early: then the table counts them too, so that they are
 * freed). 0 when memory ran out there. A thread not given a range is told so first. */
static int join_range(nt_reader *m, open_range *g)
{
	reader_many *mm = m->many;
	if (g->joined)
		return g->ok;
	int going = __atomic_load_n(&g->state, __ATOMIC_ACQUIRE) == RANGE_GO;
	if (!going)
		__atomic_store_n(&g->state, RANGE_CANCELLED, __ATOMIC_RELEASE);
	pthread_join(g->thread, NULL);
	g->joined = 1;
	free(g->marks);
	g->marks = NULL;
	nt_reader_slab_adopt(&mm->slab, &g->slab);
	nt_reader_slab_adopt(&mm->kept, &g->kept);
	nt_single_close(g->spare);
	nt_open_totals_add(&mm->totals, &g->totals);
	if (going && mm->nsections < g->end)
		mm->nsections = g->end;
	return g->ok;
}

/* Walk a bundle's frames, opening each section as it is read (`nsections` of them, as
 * count_sections found), but those of the second thread's range `g` (when not NULL), which
 * it takes over when it reaches them. 0: out of memory. */
static int read_frames(nt_reader *m, const char *file, const uint8_t *data, size_t size,
		       size_t nsections, open_range *g)
{
	reader_many *mm = m->many;
	section_opener own = own_opener(m);
	uint64_t off = sizeof(nt_bundle_preamble);
	uint32_t nsec = 0;
	char what[256];
	for (;;) {
		if (g != NULL && !g->planned &&
		    __atomic_load_n(&g->state, __ATOMIC_ACQUIRE) == RANGE_COUNTED) {
			plan_range(m, g);
			nsections = g->counted;
		}
		if (g != NULL && mm->nsections == g->first) {
			if (!join_range(m, g))
				return 0;
			nsec += (uint32_t)(g->end - g->first);
			off = g->off;
		}
		if (size - off < sizeof(nt_bundle_frame)) {
			snprintf(what, sizeof(what), "cut short after %u sections (%s)", nsec,
				 off == size ? "no END frame" : "inside a frame header");
			return add_problem(mm, file, off, what);
		}
		nt_bundle_frame f;
		memcpy(&f, data + off, sizeof(f));
		const char *bad = nt_bundle_frame_problem(&f);
		if (bad != NULL) {
			snprintf(what, sizeof(what), "%s in the frame here: read up to the last whole "
				 "frame (%u sections)", bad, nsec);
			return add_problem(mm, file, off, what);
		}
		uint64_t head, next;
		nt_bundle_fit fit = nt_bundle_frame_fit(&f, off, size, &head, &next);
		if (fit == NT_BUNDLE_FIT_CUT_TEXT) {
			snprintf(what, sizeof(what), "cut short after %u sections (inside a frame)", nsec);
			return add_problem(mm, file, off, what);
		}
		if (fit == NT_BUNDLE_FIT_CUT_ARCHIVE) {
			snprintf(what, sizeof(what), "cut short after %u sections (the next section's "
				 "archive of %llu bytes runs past the end of the file)", nsec,
				 (unsigned long long)f.archive_size);
			return add_problem(mm, file, off, what);
		}
		const uint8_t *text = data + off + sizeof(f);
		if (f.kind == NT_BUNDLE_END)
			return read_end(mm, file, &f, text + f.name_len, off, next, size, nsec);
		nt_reader_section *s = frame_section(add_section(mm, file), &f, text, off + head);
		if (s == NULL || !open_section(&own, s, data + s->offset, s->size, 0, nsections))
			return 0;
		nsec++;
		if (fit == NT_BUNDLE_FIT_CUT_PAD) { /* the archive is whole: the file ends */
			snprintf(what, sizeof(what), "cut short after %u sections (no END frame)", nsec);
			return add_problem(mm, file, size, what);
		}
		off = next;
	}
}

static int add_bundle(nt_reader *m, const char *file, const uint8_t *data, size_t size,
		      int mapped, nt_reader_error *err)
{
	reader_many *mm = m->many;
	nt_bundle_preamble pre;
	if (size < sizeof(pre)) {
		nt_reader_fail(err, file, 0, "%s", "bundle preamble cut short");
		goto fail;
	}
	memcpy(&pre, data, sizeof(pre));
	if (pre.version != NT_BUNDLE_VERSION) {
		nt_reader_fail(err, file, 8, "%s", "unsupported bundle version (this reader reads version 1)");
		goto fail;
	}
	if (mapped) {
		if (!nt_grow(&mm->maps, &mm->maps_cap, mm->nmaps + 1, sizeof(*mm->maps)))
			goto oom;
		mm->maps[mm->nmaps++] = (struct reader_map){ data, size };
	}
	size_t nsections = 0;
	open_range *g = start_range(m, file, data, size, &nsections);
	if (g == NULL) {
		nsections = count_sections(data, size, SIZE_MAX, NULL, NULL, NULL);
		if (!nt_grow(&mm->sections, &mm->sections_cap, mm->nsections + nsections,
			     sizeof(*mm->sections)))
			goto oom;
	}
	int ok = read_frames(m, file, data, size, nsections, g);
	if (g != NULL) {
		ok &= join_range(m, g); /* (the open may have ended before it) */
		free(g);
	}
	if (!ok)
		goto oom;
	return 1;
oom:
	nt_reader_fail(err, file, 0, "%s", "out of memory while reading the bundle");
	return 0;
fail:
	if (mapped)
		munmap((void *)(uintptr_t)data, size);
	return 0;
}

/* One file: a bundle's sections, or one section. 0 and *err when it cannot be read. */
static int add_file(nt_reader *m, const char *path, nt_reader_error *err)
{
	const uint8_t *data;
	size_t size;
	if (!nt_map_path(path, &data, &size, err))
		return 0;
	if (nt_is_bundle(data, size))
		return add_bundle(m, path, data, size, 1, err);
	reader_many *mm = m->many;
	nt_reader_section *s = add_section(mm, path);
	if (s == NULL) {
		munmap((void *)(uintptr_t)data, size);
		nt_reader_fail(err, path, 0, "%s", "out of memory");
		return 0;
	}
	s->size = size;
	section_opener own = own_opener(m);
	if (!open_section(&own, s, data, size, 1, 0)) {
		nt_reader_fail(err, path, 0, "%s", "out of memory");
		return 0;
	}
	return 1;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A directory's non-empty regular files, by name; *n = how many. NULL and *err on failure. */
static char **list_dir(const char *path, size_t *n, nt_reader_error *err)
{
	DIR *d = opendir(path);
	if (d == NULL) {
		char what[128];
		snprintf(what, sizeof(what), "cannot read the directory: %s", strerror(errno));
		nt_reader_fail(err, path, 0, "%s", what);
		return NULL;
	}
	char **names = NULL;
	size_t cap = 0, k = 0;
	struct dirent *de;
	int ok = 1;
	while (ok && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		char *full;
		struct stat st;
		if (asprintf(&full, "%s/%s", path, de->d_name) < 0) {
			ok = 0;
			break;
		}
		if (stat(full, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0 ||
		    !(ok = nt_grow(&names, &cap, k + 1, sizeof(*names)))) {
			free(full); /* empty files are what other tools leave; not archives */
			continue;
		}
		names[k++] = full;
	}
	closedir(d);
	if (ok && k == 0)
		nt_reader_fail(err, path, 0, "%s", "no archives in this directory");
	if (!ok)
		nt_reader_fail(err, path, 0, "%s", "out of memory while listing the directory");
	if (!ok || k == 0) {
		for (size_t i = 0; i < k; i++)
			free(names[i]);
		free(names);
		return NULL;
	}
	qsort(names, k, sizeof(*names), by_name);
	*n = k;
	return names;
}

static int add_path(nt_reader *m, const char *path, nt_reader_error *err)
{
	struct stat st;
	if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
		return add_file(m, path, err);
	size_t n = 0;
	char **names = list_dir(path, &n, err);
	if (names == NULL)
		return 0;
	int ok = 1;
	for (size_t i = 0; i < n; i++) {
		ok = ok && add_file(m, names[i], err);
		free(names[i]);
	}
	free(names);
	return ok;
}

/* Every input read: the reader's tables merged (nt_reader_merge.c); NULL and *err, the
 * reader closed, when memory runs out. */
static nt_reader *finish(nt_reader *m, nt_reader_error *err)
{
	if (nt_many_finish(m, err))
		return m;
	nt_many_close(m);
	return NULL;
}

nt_reader *nt_many_open_bundle(const uint8_t *data, size_t size, int mapped, const char *name,
			       nt_reader_error *err)
{
	nt_reader *m = many_new(name, err);
	if (m == NULL) {
		if (mapped)
			munmap((void *)(uintptr_t)data, size);
		return NULL;
	}
	m->size = size;
	if (!add_bundle(m, name, data, size, mapped, err)) {
		nt_many_close(m);
		return NULL;
	}
	return finish(m, err);
}

nt_reader *nt_many_open_paths(const char *const *paths, size_t n, nt_reader_error *err)
{
	nt_reader *m = many_new(n == 1 && paths[0] ? paths[0] : "(several archives)", err);
	if (m == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (paths[i] == NULL) {
			nt_reader_fail(err, "(null)", 0, "%s", "no archive path given");
			nt_many_close(m);
			return NULL;
		}
		if (!add_path(m, paths[i], err)) {
			nt_many_close(m);
			return NULL;
		}
	}
	for (size_t i = 0; i < m->many->nsections; i++)
		m->size += m->many->sections[i].size;
	return finish(m, err);
}

void nt_many_close(nt_reader *m)
{
	reader_many *mm = m->many;
	for (size_t i = 0; i < mm->nsections; i++) {
		nt_reader_section *s = &mm->sections[i];
		nt_single_close(s->reader); /* open for life: from the start, or pinned since */
		free_text(s->name);
		free_text(s->message);
		free_text(s->error);
	}
	for (size_t i = 0; i < mm->nsources; i++)
		free(mm->sources[i]);
	free(mm->sources);
	for (size_t i = 0; i < mm->nproblems; i++)
		free(mm->problems[i].message);
	for (size_t i = 0; i < mm->nmaps; i++)
		munmap((void *)(uintptr_t)mm->maps[i].data, mm->maps[i].size);
	nt_single_close(mm->spare_section);
	nt_reader_slab_free(&mm->slab);
	nt_reader_slab_free(&mm->kept);
	free(mm->lazy);
	pthread_mutex_destroy(&mm->pin_lock);
	free(mm->sections);
	free(mm->problems);
	free(mm->maps);
	free(mm);
	free(m->threads);
	free(m->thread_order);
	free(m->processes); /* their SIDs are the sections' */
	nt_reader_decoder_free(m);
	free(m->counted);
	free(m->name);
	free(m);
}
