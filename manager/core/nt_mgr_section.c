/*
 * nt_mgr_section.c - the bundle (format/nt_bundle.h) the manager writes into the file a
 * controller passed: the preamble, one SECTION per provider as soon as its recording is
 * final, the END frame.
 *
 * A section's archive is the provider's arena as the manager holds it, made a complete
 * Arena-layout archive: the provider's 4 KiB header is copied once, decoded and checked
 * against the layout the manager itself gave (a header that does not verify, or that
 * disagrees, costs the section: DAMAGED, no archive), then re-encoded with the manager's own
 * sizes and offsets (streaming: stream_offset = map_size, stream_end = map_size + the bytes
 * the manager saved); then the arena bytes after the header, copied sparsely (SEEK_DATA:
 * the untouched pages of an idle buffer stay holes in the bundle); then the saved stream.
 * Every size written comes from the manager's layout, never from the provider.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "../../format/nt_archive_header_decode.h"
#include "../../format/nt_archive_header_encode.h"
#include "nt_mgr_internal.h"
#include "nt_version.h"

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
	const uint8_t *p = data;
	while (len > 0 && t->out_error == 0) {
		ssize_t n = pwrite(t->out_fd, p, len, (off_t)t->out_off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			t->out_error = n < 0 ? errno : EIO;
			nt_mgr_log(m, "writing the bundle at byte %llu: %s",
				   (unsigned long long)t->out_off, strerror(t->out_error));
			nt_mgr_trace_problem(m, "writing the bundle at byte %llu: %s",
					     (unsigned long long)t->out_off, strerror(t->out_error));
			return;
		}
		p += n;
		len -= (size_t)n;
		t->out_off += (uint64_t)n;
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
	memset(&pre, 0, sizeof(pre));
	memcpy(pre.magic, NT_BUNDLE_MAGIC, sizeof(pre.magic));
	pre.version = NT_BUNDLE_VERSION;
	pre.created_wall_ns = wall_ns();
	snprintf(pre.producer, sizeof(pre.producer), "nanotrace %s", NT_VERSION_STRING);
	m->trace.out_off = 0;
	m->trace.out_error = 0;
	out_write(m, &pre, sizeof(pre));
	return m->trace.out_error == 0 ? 0 : -1;
}

static void write_frame(nt_manager *m, nt_bundle_frame *f, const char *name,
			const char *message)
{
	f->magic = NT_BUNDLE_FRAME_MAGIC;
	f->name_len = (uint16_t)strnlen(name, NT_WIRE_MAX_NAME);
	f->message_len = (uint16_t)strnlen(message, NT_MGR_MAX_MESSAGE);
	f->end_wall_ns = wall_ns();
	out_write(m, f, sizeof(*f));
	out_write(m, name, f->name_len);
	out_write(m, message, f->message_len);
	out_pad8(m, (uint64_t)f->name_len + f->message_len);
}

/* Decodes the provider's header and checks it against the manager's layout: 0, or -1 with
 * what is wrong in why. */
static int provider_header(const nt_mgr_provider *p, nt_archive_info *info, char *why,
			   size_t whylen)
{
	uint8_t hdr[NT_ARENA_HEADER_BYTES];
	memcpy(hdr, p->map, sizeof(hdr)); /* once: the provider may still be writing */
	char reason[200];
	uint64_t where = 0;
	if (nt_header_decode(hdr, sizeof(hdr), info, reason, sizeof(reason), &where) == 0) {
		snprintf(why, whylen, "its arena header does not verify: %s (byte %llu)", reason,
			 (unsigned long long)where);
		return -1;
	}
	const nt_arena_layout *l = &p->layout;
#define NT_CHECK_FIELD(field, want)                                                              \
	if ((uint64_t)info->field != (uint64_t)(want)) {                                         \
		snprintf(why, whylen, "its arena header says " #field " = %llu, the manager gave %llu", \
			 (unsigned long long)info->field, (unsigned long long)(want));           \
		return -1;                                                                         \
	}
	NT_CHECK_FIELD(buffering_mode, p->mode)
	NT_CHECK_FIELD(chunk_size, l->chunk_size)
	NT_CHECK_FIELD(chunks_per_half, l->chunks_per_half)
	NT_CHECK_FIELD(durable_size, l->durable_size)
	NT_CHECK_FIELD(slot_overwritten_offset, l->slot_overwritten_offset)
#undef NT_CHECK_FIELD
	return 0;
}

static int all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != 0)
			return 0;
	return 1;
}

/* The arena after its header: data ranges copied, holes skipped. */
static void copy_sparse(nt_manager *m, const nt_mgr_provider *p)
{
	uint64_t base = m->trace.out_off - NT_ARENA_HEADER_BYTES;
	uint64_t end = p->layout.map_size, off = NT_ARENA_HEADER_BYTES;
	while (off < end && m->trace.out_error == 0) {
		off_t data = lseek(p->memfd, (off_t)off, SEEK_DATA);
		if (data < 0 || (uint64_t)data >= end)
			break; /* ENXIO: the rest is a hole */
		off_t hole = lseek(p->memfd, data, SEEK_HOLE);
		uint64_t stop = hole < 0 || (uint64_t)hole > end ? end : (uint64_t)hole;
		m->trace.out_off = base + (uint64_t)data;
		out_write(m, p->map + data, stop - (uint64_t)data);
		off = stop;
	}
	m->trace.out_off = base + end;
}

static void copy_stream(nt_manager *m, const nt_mgr_saver *s, uint64_t bytes)
{
	uint8_t buf[65536];
	for (uint64_t off = 0; off < bytes && m->trace.out_error == 0;) {
		size_t want = bytes - off < sizeof(buf) ? (size_t)(bytes - off) : sizeof(buf);
		ssize_t n = pread(s->stream_fd, buf, want, (off_t)off);
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

static int discard(void *ctx, const void *data, size_t len)
{
	(void)ctx;
	(void)data;
	(void)len;
	return 0;
}

static void no_commit(void *ctx, uint64_t end)
{
	(void)ctx;
	(void)end;
}

/* The events a oneshot or circular arena holds, counted by the shared saver with its output
 * thrown away (the header's events_written is only final when a process finishes itself).
 * On a private copy-on-write mapping: a save marks chunks saved in the arena it reads, and
 * the provider's buffer (which a later trace may start again) must not change. */
static uint64_t count_events(nt_mgr_provider *p)
{
	uint8_t *priv = mmap(NULL, p->layout.map_size, PROT_READ | PROT_WRITE, MAP_PRIVATE,
			     p->memfd, 0);
	if (priv == MAP_FAILED)
		return 0;
	nt_arena_saver *s = nt_arena_saver_new(priv, &p->layout, 0);
	nt_saver_output out = { .append = discard, .commit = no_commit, .ctx = NULL };
	uint64_t events = 0;
	if (s != NULL && nt_arena_saver_save(s, &out, &events) != 0)
		events = 0;
	nt_arena_saver_free(s);
	munmap(priv, p->layout.map_size);
	return events;
}

/* The re-encoded header block; 0, or -1 when the header does not fit. */
static int encode_header(const nt_mgr_provider *p, nt_archive_info *info, uint64_t stream_bytes,
			 uint8_t *block)
{
	const nt_arena_layout *l = &p->layout;
	info->layout = NT_LAYOUT_ARENA;
	info->data_offset = NT_ARENA_HEADER_BYTES;
	info->arena_size = l->map_size;
	info->pid = (uint32_t)p->pid;
	info->stream_offset = p->mode == NT_MODE_STREAMING ? l->map_size : 0;
	info->stream_end = info->stream_offset + stream_bytes;
	memset(block, 0, NT_ARENA_HEADER_BYTES);
	return nt_header_encode(info, block, NT_ARENA_HEADER_BYTES, NULL) == 0 ? -1 : 0;
}

void nt_mgr_bundle_section(nt_manager *m, nt_mgr_provider *p, int end_state,
			   const char *message)
{
	nt_archive_info info;
	char why[512], joined[NT_MGR_MAX_MESSAGE];
	uint8_t block[NT_ARENA_HEADER_BYTES];
	uint64_t stream_bytes = 0, saved_events = 0;
	if (p->stream != NULL)
		nt_mgr_saver_totals(p->stream, &stream_bytes, &saved_events);
	int have = provider_header(p, &info, why, sizeof(why)) == 0;
	/* The archive's own count of what it holds, as a finished archive states it (a
	 * provider's header says 0 until the process finishes itself). */
	uint64_t events = !have ? 0 : p->stream ? saved_events : count_events(p);
	if (have)
		info.events_written = events + (p->stream ? 0 : info.events_overwritten);
	if (have && encode_header(p, &info, stream_bytes, block) != 0) {
		snprintf(why, sizeof(why), "its arena header does not fit %u bytes re-encoded",
			 NT_ARENA_HEADER_BYTES);
		have = 0;
	}
	if (!have) {
		if (end_state == NT_SECTION_KILLED && all_zero(p->map, NT_ARENA_HEADER_BYTES)) {
			snprintf(why, sizeof(why), "killed before it wrote its arena header: nothing "
				 "was recorded");
		} else {
			nt_mgr_log(m, "provider %u (%s, pid %d): %s", p->id, p->name, (int)p->pid, why);
			end_state = NT_SECTION_DAMAGED;
		}
		size_t n = strnlen(message, sizeof(joined) / 2);
		memcpy(joined, message, n);
		snprintf(joined + n, sizeof(joined) - n, "%s%s", n ? "; " : "", why);
		message = joined;
	}
	nt_bundle_frame f;
	memset(&f, 0, sizeof(f));
	f.kind = NT_BUNDLE_SECTION;
	f.end_state = (uint8_t)end_state;
	f.mode = (uint8_t)p->mode;
	f.pid = (uint32_t)p->pid;
	f.provider_id = p->id;
	f.archive_size = have ? p->layout.map_size + stream_bytes : 0;
	write_frame(m, &f, p->name, message);
	if (have) {
		out_write(m, block, sizeof(block));
		copy_sparse(m, p);
		copy_stream(m, p->stream, stream_bytes);
		out_pad8(m, stream_bytes);
		out_extend(m);
	}
	m->trace.sections++;
	m->trace.events += events;
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

void nt_mgr_provider_counts(const nt_mgr_provider *p, uint64_t *events, uint64_t *drops)
{
	*events = *drops = 0;
	if (p->map == NULL)
		return;
	uint8_t hdr[NT_ARENA_HEADER_BYTES];
	memcpy(hdr, p->map, sizeof(hdr));
	nt_archive_info info;
	char why[64];
	uint64_t where;
	if (nt_header_decode(hdr, sizeof(hdr), &info, why, sizeof(why), &where) != 0) {
		*events = info.events_written;
		*drops = info.events_dropped;
	}
	if (p->stream != NULL) {
		uint64_t bytes;
		nt_mgr_saver_totals(p->stream, &bytes, events);
	}
}
