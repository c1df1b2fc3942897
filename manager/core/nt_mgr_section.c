/*
 * nt_mgr_section.c - the bundle (format/nt_bundle.h) the manager writes into the file a
 * controller passed: the preamble, one SECTION per provider as soon as its recording is
 * final, the END frame.
 *
 * A section's archive is made from the provider's arena as the manager holds it. The
 * provider's 4 KiB header is copied once, decoded and checked against the layout the manager
 * itself gave (a header that does not verify, or that disagrees, costs the section: DAMAGED,
 * no archive); every size written comes from the manager's layout, never from the provider.
 * Then, as compact as the way the recording ended allows:
 *   compact  a Stream-layout archive, exactly what nt_finish() would have written: the
 *            header (format/nt_archive_header_encode.h) and the shared saver's records
 *            (runtime/nt_arena_saver.h): for a streaming provider the stream it saved (its
 *            last save made after the provider ended), else one save of the arena into a
 *            scratch file. For every streaming and oneshot provider, and for a circular one
 *            that stopped (FINISHED, EXITED).
 *   arena    a circular provider killed or late: a claim it was making may be cut between
 *            counting a chunk overwritten and invalidating it, which only the per-slot
 *            counters of an Arena-layout archive account exactly. The header re-encoded with
 *            the manager's sizes, then the arena bytes after it with all-zero blocks left as
 *            holes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "format/nt_archive_header_decode.h"
#include "format/nt_archive_header_encode.h"
#include "nt_mgr_internal.h"
#include "format/nt_version.h"
#include "runtime/nt_write_all.h"

static int64_t wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Writes at the bundle's end; after one failure nothing more is written (logged once). */
static void out_write(nt_manager *m, const void *data, size_t len)
{
	nt_mgr_trace *t = &m->trace;
	if (t->out_error != 0)
		return;
	t->out_error = nt_write_all(t->out_fd, data, len, &t->out_off);
	if (t->out_error != 0) {
		nt_mgr_log(m, "writing the bundle at byte %llu: %s",
			   (unsigned long long)t->out_off, strerror(t->out_error));
		nt_mgr_trace_problem(m, "writing the bundle at byte %llu: %s",
				     (unsigned long long)t->out_off, strerror(t->out_error));
	}
}

static void out_pad8(nt_manager *m, uint64_t len)
{
	static const uint8_t zero[8];
	out_write(m, zero, NT_BUNDLE_PAD8(len) - len);
}

/* The file reaches out_off even when it ends in a hole, so a whole frame is whole on disk. */
static void out_extend(nt_manager *m)
{
	nt_mgr_trace *t = &m->trace;
	if (t->out_error == 0 && ftruncate(t->out_fd, (off_t)t->out_off) != 0) {
		t->out_error = errno;
		nt_mgr_log(m, "extending the bundle: %s", strerror(errno));
	}
}

int nt_mgr_bundle_preamble(nt_manager *m)
{
	nt_bundle_preamble pre;
	nt_bundle_preamble_init(&pre, wall_ns());
	m->trace.out_off = 0;
	m->trace.out_error = 0;
	out_write(m, &pre, sizeof(pre));
	return m->trace.out_error == 0 ? 0 : -1;
}

static void write_frame(nt_manager *m, nt_bundle_frame *f, const char *name,
			const char *message)
{
	f->magic = NT_BUNDLE_FRAME_MAGIC;
	_Static_assert(NT_WIRE_MAX_NAME <= NT_BUNDLE_MAX_NAME, "a provider's name fits a section's");
	f->name_len = (uint16_t)strnlen(name, NT_BUNDLE_MAX_NAME);
	f->message_len = (uint16_t)strnlen(message, NT_BUNDLE_MAX_MESSAGE);
	f->end_wall_ns = wall_ns();
	out_write(m, f, sizeof(*f));
	out_write(m, name, f->name_len);
	out_write(m, message, f->message_len);
	out_pad8(m, (uint64_t)f->name_len + f->message_len);
}

/* A byte loop is not vectorised (it exits early): 1.6 GB/s here, against 11.6 GB/s for
 * memcmp of the block with itself one byte on, which is zero exactly when every byte
 * equals the first (64 KiB blocks of 256 MiB, gcc -O2). Under the fuzzer the byte loop
 * was three quarters of fuzz_wire's time. */
static int all_zero(const uint8_t *p, size_t n)
{
	return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

/* The arena after its header; all-zero blocks (a buffer's unused part: the provider
 * pre-faults every page, so SEEK_HOLE finds none) stay holes in the bundle. */
static void copy_sparse(nt_manager *m, const nt_mgr_provider *p)
{
	enum { BLOCK = 64 * 1024 };
	uint64_t base = m->trace.out_off - NT_ARENA_HEADER_BYTES;
	uint64_t end = p->layout.map_size;
	for (uint64_t off = NT_ARENA_HEADER_BYTES; off < end && m->trace.out_error == 0;) {
		size_t n = end - off < BLOCK ? (size_t)(end - off) : BLOCK;
		if (!all_zero(p->map + off, n)) {
			m->trace.out_off = base + off;
			out_write(m, p->map + off, n);
		}
		off += n;
	}
	m->trace.out_off = base + end;
}

static void copy_file(nt_manager *m, int fd, uint64_t bytes)
{
	uint8_t buf[65536];
	for (uint64_t off = 0; off < bytes && m->trace.out_error == 0;) {
		size_t want = bytes - off < sizeof(buf) ? (size_t)(bytes - off) : sizeof(buf);
		ssize_t n = pread(fd, buf, want, (off_t)off);
		if (n <= 0) {
			nt_mgr_trace_problem(m, "reading a saved stream: %s",
					     n < 0 ? strerror(errno) : "short");
			m->trace.out_error = n < 0 ? errno : EIO;
			return;
		}
		out_write(m, buf, (size_t)n);
		off += (uint64_t)n;
	}
}

typedef struct scratch_out {
	int fd; /* -1: only count */
	uint64_t bytes;
} scratch_out;

static int scratch_append(void *ctx, const void *data, size_t len)
{
	scratch_out *o = ctx;
	const uint8_t *d = data;
	for (size_t done = 0; o->fd >= 0 && done < len;) {
		ssize_t n = write(o->fd, d + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? errno : EIO;
		done += (size_t)n;
	}
	o->bytes += len;
	return 0;
}

/* One save of a oneshot or circular arena by the shared saver, into `fd` (-1: counted
 * only); its bytes and events, or -1 with errno. On a private copy-on-write mapping: a
 * save marks chunks saved in the arena it reads, and the provider's buffer (which a later
 * trace may start again) must not change. */
static int save_private(nt_mgr_provider *p, int fd, int level, uint64_t *bytes,
			uint64_t *events)
{
	*bytes = *events = 0;
	uint8_t *priv = mmap(NULL, p->layout.map_size, PROT_READ | PROT_WRITE, MAP_PRIVATE,
			     p->memfd, 0);
	if (priv == MAP_FAILED)
		return -1;
	nt_arena_saver *s = nt_arena_saver_new(priv, &p->layout, 0);
	if (s != NULL && nt_arena_saver_set_compression(s, level, 0) != 0)
		level = 0; /* out of memory: stored uncompressed */
	scratch_out o = { fd, 0 };
	nt_saver_output out = { .append = scratch_append, .commit = NULL, .ctx = &o };
	int err = s == NULL ? ENOMEM : nt_arena_saver_save(s, &out, events);
	nt_arena_saver_free(s);
	munmap(priv, p->layout.map_size);
	*bytes = o.bytes;
	if (err != 0) {
		errno = err;
		return -1;
	}
	return 0;
}

/* Events in the arena's closed chunks, counted as a reader of an Arena-layout archive counts
 * them against the header's events_written (reader/decode, check_truncation): a chunk still
 * open when the provider stopped is in no count, and one whose slot counter says
 * NT_SLOT_CHUNK_COUNTED is counted as overwritten already. */
static uint64_t closed_chunk_events(const nt_mgr_provider *p)
{
	const nt_arena_layout *l = &p->layout;
	uint64_t total = 0;
	for (uint64_t i = 0; i < l->nslots; i++) {
		nt_chunk_header h;
		uint64_t counted;
		memcpy(&h, p->map + l->rolling_offset + i * l->chunk_size, sizeof(h));
		memcpy(&counted, p->map + l->slot_overwritten_offset + i * sizeof(counted),
		       sizeof(counted));
		if (h.kind != NT_KIND_CHUNK || h.size_bytes > l->chunk_size || h.claim < 2 ||
		    (counted & NT_SLOT_CHUNK_COUNTED))
			continue;
		if (nt_chunk_closed(h.claim, h.slot_wrap, l->nslots))
			total += h.event_count;
	}
	return total;
}

/* Whether the section can be a compact Stream-layout archive (see the top of the file). */
static int compactable(const nt_mgr_provider *p, int end_state)
{
	return p->stream != NULL || p->mode == NT_MODE_ONESHOT ||
	       end_state == NT_SECTION_FINISHED || end_state == NT_SECTION_EXITED;
}

/* A section's archive, ready to write: its header, and where its records are. */
typedef struct section_body {
	int compact;        /* a Stream-layout archive; else the arena as it is */
	int scratch;        /* the records of a compact oneshot/circular section, or -1 */
	int records_fd;     /* compact: the file holding the records (stream or scratch) */
	uint64_t records;   /* compact: bytes of records */
	uint64_t events;    /* events the archive holds (the saver's count) */
	size_t header_len;  /* compact: the header's length; arena: the 4 KiB block */
	uint8_t block[NT_ARENA_HEADER_BYTES];
} section_body;

/* The header block of an Arena-layout section: the provider's fields, the manager's sizes. */
static size_t encode_arena_header(const nt_mgr_provider *p, nt_archive_info *info,
				  uint8_t *block)
{
	info->layout = NT_LAYOUT_ARENA;
	info->data_offset = NT_ARENA_HEADER_BYTES;
	info->arena_size = p->layout.map_size;
	info->stream_offset = 0;
	info->stream_end = 0;
	return nt_header_encode(info, block, NT_ARENA_HEADER_BYTES, NULL) ? NT_ARENA_HEADER_BYTES
									     : 0;
}

/* Prepares the body of a section whose provider header verified (in *info): 0, or -1 with
 * why (the section is then DAMAGED). */
static int prepare_body(nt_manager *m, nt_mgr_provider *p, int end_state, nt_archive_info *info,
			section_body *b, char *why, size_t whylen)
{
	uint64_t ignored;
	int level = m->trace.compression_level;
	b->compact = compactable(p, end_state);
	b->scratch = b->records_fd = -1;
	b->records = b->events = 0;
	if (p->stream != NULL) { /* its last save was made when it ended */
		nt_mgr_saver_totals(p->stream, &b->records, &b->events);
		b->records_fd = p->stream->stream_fd;
	} else if (b->compact) {
		b->scratch = b->records_fd = nt_mgr_scratch_file(m->trace.out_dir);
		if (b->scratch < 0 || save_private(p, b->scratch, level, &b->records, &b->events) != 0) {
			snprintf(why, whylen, "saving its arena: %s", strerror(errno));
			return -1;
		}
	} else if (save_private(p, -1, 0, &ignored, &b->events) != 0) {
		b->events = 0; /* only the progress figure; the reader counts for itself */
	}
	/* The archive's own count of what it holds (the provider's header says 0 under a
	 * manager): a compact archive's as a finished archive states it; an arena's as a live
	 * arena's writer keeps it, the events of closed chunks only (the saver's count takes in
	 * the open chunks too, which a reader of the arena does not count: a killed provider
	 * would read as truncated). */
	if (b->compact)
		info->events_written = b->events + (p->stream ? 0 : info->events_overwritten);
	else
		info->events_written = closed_chunk_events(p) + info->events_overwritten;
	/* The codec is the manager's, whatever the provider's header said: an arena section is
	 * the arena as it is (never compressed), a compact one what the manager's saver made. */
	nt_mgr_compact_fields(info, b->compact ? level : 0, p->pid);
	memset(b->block, 0, sizeof(b->block));
	b->header_len = b->compact ? nt_header_encode_stream(info, b->block, sizeof(b->block))
				   : encode_arena_header(p, info, b->block);
	if (b->header_len == 0) {
		snprintf(why, whylen, "its arena header does not fit %u bytes re-encoded",
			 NT_ARENA_HEADER_BYTES);
		return -1;
	}
	return 0;
}

/* The message of a section: the manager's, then what it found (why), into joined. */
static const char *join_message(const char *message, const char *why, char *joined, size_t cap,
				const char *sep)
{
	size_t n = strnlen(message, cap / 2);
	memmove(joined, message, n); /* message may be joined already */
	snprintf(joined + n, cap - n, "%s%s", n ? sep : "", why);
	return joined;
}

void nt_mgr_bundle_section(nt_manager *m, nt_mgr_provider *p, int end_state,
			   const char *message)
{
	nt_archive_info info;
	char why[512], joined[NT_BUNDLE_MAX_MESSAGE];
	section_body b = { .scratch = -1 };
	int have = nt_mgr_provider_header(p, &info, why, sizeof(why)) == 0 &&
		   prepare_body(m, p, end_state, &info, &b, why, sizeof(why)) == 0;
	int unstopped = nt_section_state_unstopped((unsigned)end_state);
	if (have && unstopped && b.events == 0 && info.events_dropped == 0)
		/* the saver's count: the header's chunk count is only written when a process
		 * finishes (a fork() child registers at once and may exec at once) */
		message = join_message(message, "before recording any event", joined,
				       sizeof(joined), "; ");
	if (have && unstopped && info.ended_by == NT_END_SIGNAL) {
		char sig[64];
		snprintf(sig, sizeof(sig), "its buffer says it ended by signal %u", info.end_signal);
		message = join_message(message, sig, joined, sizeof(joined), "; ");
	}
	if (!have) {
		if (unstopped && all_zero(p->map, NT_ARENA_HEADER_BYTES)) {
			snprintf(why, sizeof(why), "it ended before it wrote its arena header: nothing "
				 "was recorded");
		} else {
			nt_mgr_log(m, "provider %u (%s, pid %d): %s", p->id, p->name, (int)p->pid, why);
			end_state = NT_SECTION_DAMAGED;
		}
		message = join_message(message, why, joined, sizeof(joined), "; ");
	}
	nt_bundle_frame f;
	memset(&f, 0, sizeof(f));
	f.kind = NT_BUNDLE_SECTION;
	f.end_state = (uint8_t)end_state;
	f.mode = (uint8_t)p->mode;
	f.pid = (uint32_t)p->pid;
	f.provider_id = p->id;
	f.archive_size = !have ? 0 : b.compact ? b.header_len + b.records : p->layout.map_size;
	write_frame(m, &f, p->name, message);
	uint64_t archive_off = m->trace.out_off;
	if (have && b.compact) {
		out_write(m, b.block, b.header_len);
		copy_file(m, b.records_fd, b.records);
		out_pad8(m, f.archive_size);
	} else if (have) {
		out_write(m, b.block, sizeof(b.block));
		copy_sparse(m, p);
		out_extend(m);
	}
	if (b.scratch >= 0)
		close(b.scratch);
	int ok = have && m->trace.out_error == 0;
	if (p->stream != NULL && p->stream->header_ok && p->stream->on_stream != NULL)
		nt_mgr_saver_ended(p->stream, have ? &info : NULL, m->trace.out_fd, archive_off,
				   ok ? f.archive_size : 0);
	else if (ok && m->cfg.on_section != NULL)
		m->cfg.on_section(m->cfg.section_ctx, m->trace.out_fd, archive_off, f.archive_size,
				  p->name);
	m->trace.sections++;
	m->trace.events += b.events;
	m->trace.drops += have ? info.events_dropped : 0;
	if (end_state != NT_SECTION_FINISHED && end_state != NT_SECTION_EXITED)
		nt_mgr_trace_problem(m, "provider %u (%s, pid %d): %s%s%s", p->id, p->name,
				     (int)p->pid, nt_section_state_name((unsigned)end_state),
				     message[0] ? ": " : "", message);
}

void nt_mgr_bundle_end(nt_manager *m, int end_state, const char *message)
{
	nt_bundle_frame f;
	memset(&f, 0, sizeof(f));
	f.kind = NT_BUNDLE_END;
	f.end_state = (uint8_t)end_state;
	f.sections = m->trace.sections;
	write_frame(m, &f, "", message);
	if (m->trace.out_error == 0 && fdatasync(m->trace.out_fd) != 0 && errno != EINVAL)
		nt_mgr_log(m, "syncing the bundle: %s", strerror(errno));
}
