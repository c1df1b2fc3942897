/* nt_session.c - one session: configure, map and publish its arena, record its end, finish
 * it into an archive, its counters (the state it changes: nt_state.h; how it reports a
 * failure: nt_error.h). Below the lifecycle that orders its steps (nt_provider.c,
 * nt_lifecycle.c) and the exit handlers that end it (nt_crash.c); it calls neither. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nt_internal.h"
#include "format/nt_zchunk.h"
#include "runtime/nt_traceparent.h"

static uint64_t chunks_claimed(void)
{
	uint64_t claimed = nt_load_64(&nt_S.next_seq);
	return nt_S.mode == NT_MODE_ONESHOT && claimed > nt_S.nslots ? nt_S.nslots : claimed;
}

/* The W3C trace context the process was started with, as OpenTelemetry SDKs take it, when
 * valid: whole, or a newer version's first four fields when it does not fit. */
static void session_traceparent(nt_archive_info *info)
{
	nt_traceparent tp;
	const char *v = secure_getenv("TRACEPARENT"); /* as every variable the writer reads */
	if (!nt_traceparent_parse(v, &tp))
		return;
	size_t n = strlen(v) < sizeof(info->traceparent) ? strlen(v) : NT_TRACEPARENT_LEN;
	memcpy(info->traceparent, v, n);
	info->traceparent[n] = '\0';
}

/* What the header says at start; counters start at 0 and live in the mapped header. */
static void session_info(nt_archive_info *info)
{
	memset(info, 0, sizeof(*info));
	info->format_major = NT_FORMAT_MAJOR;
	info->format_minor = NT_FORMAT_MINOR;
	snprintf(info->producer, sizeof(info->producer), "nanotrace %s", NT_VERSION_STRING);
	info->clock_source = nt_clock_use_tsc_ ? NT_CLOCK_SOURCE_TSC : NT_CLOCK_SOURCE_MONOTONIC;
	info->ticks_per_second = nt_S.ticks_per_second;
	info->start_ticks = nt_S.start_pair.ticks;
	info->start_monotonic_ns = nt_S.start_pair.monotonic_ns;
	info->start_realtime_ns = nt_S.start_pair.realtime_ns;
	info->pid = (uint32_t)getpid();
	memcpy(info->process_name, nt_S.process_name, sizeof(info->process_name));
	info->buffering_mode = (uint8_t)nt_S.mode;
	info->arena_size = nt_S.map_size;
	info->durable_size = nt_S.durable_size;
	info->chunk_size = nt_S.chunk_size;
	info->chunks_per_half = nt_S.chunks_per_half;
	info->final_state = NT_FINAL_RECORDING;
	info->ended_by = NT_END_UNKNOWN;
	info->compression = nt_S.compression_level ? NT_ZCHUNK_CODEC : NT_CODEC_NONE;
	info->compression_level = nt_S.compression_level;
	info->forked_from = (uint32_t)nt_S.forked_from;
	session_traceparent(info);
	info->blocking_timeout_us = nt_S.block_timeout_ns / 1000u;
}

const char *nt_version(void)
{
	return NT_VERSION_STRING; /* this library's, compiled in here: not the caller's header */
}

/* The first nt_config had every field up to handle_signals; later fields go after it, so a
 * caller compiled against an older header passes a smaller struct_size and gets the
 * defaults for what it does not know. */
#define CONFIG_V1_SIZE (offsetof(nt_config, handle_signals) + sizeof(int))
#define STRUCT_SIZE_MAX 4096 /* larger is garbage, not a future version */

/* Copies the caller's config (of its struct_size) over the defaults. A newer caller's
 * fields this library does not know must be zero (their defaults), as the kernel's
 * copy_struct_from_user rule has it: otherwise the caller asked for something not done. */
static nt_result config_copy_in(const nt_config *in, nt_config *out)
{
	nt_config_init(out);
	size_t n = in->struct_size;
	if (n < CONFIG_V1_SIZE || n > STRUCT_SIZE_MAX) {
		nt_set_error("nt_start: cfg.struct_size %zu is not the size of an nt_config: "
			     "fill the config with nt_config_init() first", n);
		return NT_ERR_INVALID_ARGUMENT;
	}
	for (size_t i = sizeof(*out); i < n; i++) {
		if (((const unsigned char *)in)[i] != 0) {
			nt_set_error("nt_start: cfg sets a field this library (%s) does not know, "
				     "at byte %zu; link the nanotrace the program was built with",
				     NT_VERSION_STRING, i);
			return NT_ERR_UNSUPPORTED;
		}
	}
	memcpy(out, in, n < sizeof(*out) ? n : sizeof(*out));
	out->struct_size = sizeof(*out);
	return NT_OK;
}

static nt_result config_check(const nt_config *cfg, int memfd)
{
	if (cfg->mode != NT_MODE_ONESHOT && cfg->mode != NT_MODE_CIRCULAR &&
	    cfg->mode != NT_MODE_STREAMING) {
		nt_set_error("nt_start: mode %d is not NT_MODE_ONESHOT (0), NT_MODE_CIRCULAR (1) or "
			     "NT_MODE_STREAMING (2)", cfg->mode);
		return NT_ERR_INVALID_ARGUMENT;
	}
	if (cfg->mode == NT_MODE_STREAMING && cfg->path == NULL && memfd < 0) {
		nt_set_error("nt_start: streaming mode saves to a file: set cfg.path");
		return NT_ERR_INVALID_ARGUMENT;
	}
	if ((unsigned)cfg->clock > NT_CLOCK_USE_TSC) {
		nt_set_error("nt_start: clock %d is not an nt_clock_choice", (int)cfg->clock);
		return NT_ERR_INVALID_ARGUMENT;
	}
	int level = cfg->compression_level;
	if (level != 0 && level != NT_COMPRESSION_OFF && !nt_zchunk_level_ok(level)) {
		nt_set_error("nt_start: compression_level %d is not 0 (default), "
			     "NT_COMPRESSION_OFF or a level from %d to %d", level,
			     NT_ZCHUNK_LEVEL_MIN, NT_ZCHUNK_LEVEL_MAX);
		return NT_ERR_INVALID_ARGUMENT;
	}
	if (cfg->blocking_timeout_us != 0 && cfg->blocking_timeout_us != NT_BLOCKING_OFF &&
	    (cfg->blocking_timeout_us < 0 || cfg->blocking_timeout_us > NT_BLOCKING_TIMEOUT_MAX_US)) {
		nt_set_error("nt_start: blocking_timeout_us %lld is not 0 (default), "
			     "NT_BLOCKING_OFF or microseconds from 1 to %lld",
			     cfg->blocking_timeout_us, NT_BLOCKING_TIMEOUT_MAX_US);
		return NT_ERR_INVALID_ARGUMENT;
	}
	if (cfg->path != NULL && cfg->path[0] == '\0') {
		nt_set_error("nt_start: path is empty");
		return NT_ERR_INVALID_ARGUMENT;
	}
	return nt_category_patterns_check("nt_start", cfg->categories);
}

/* The clock of the trace manager's sessions, chosen once (NT_CLOCK_AUTO and
 * NANOTRACE_CLOCK) on the registering thread: the provider thread that initializes them then
 * never writes the clock choice that the program's threads read (Trace2 reads it outside
 * sessions). 0 until nt_session_prepare_manager_clock(). */
static uint64_t manager_clock_tps;

void nt_session_prepare_manager_clock(void)
{
	uint64_t tps;
	if (manager_clock_tps == 0 && nt_clock_setup(NT_CLOCK_AUTO, &tps) == 0)
		manager_clock_tps = tps;
}

/* The arena: the file at cfg->path, anonymous memory, or the manager's memfd. */
static nt_result session_map(const nt_config *cfg, int memfd)
{
	size_t bytes = cfg->buffer_size ? cfg->buffer_size : nt_default_buffer_bytes(cfg->mode);
	if (memfd < 0)
		return nt_arena_map(bytes, cfg->chunk_size, cfg->mode, cfg->path);
	return nt_arena_map_fd(memfd, bytes, cfg->chunk_size, cfg->mode);
}

static nt_result session_initialize(const nt_config *user_cfg, int memfd)
{
	nt_clear_error();
	if (user_cfg == NULL) {
		nt_set_error("nt_start: cfg is NULL");
		return NT_ERR_INVALID_ARGUMENT;
	}
	if (nt_S.started == SESSION_RECORDING || nt_S.started == SESSION_READY) {
		nt_set_error("nt_start: already initialized; call nt_finish() first");
		return NT_ERR_STATE;
	}
	nt_config full;
	const nt_config *cfg = &full;
	int rc = config_copy_in(user_cfg, &full);
	if (rc == NT_OK)
		rc = config_check(cfg, memfd);
	if (rc == NT_OK && memfd < 0)
		rc = nt_fork_remember_config(cfg);
	if (rc != NT_OK)
		return rc;
	uint64_t tps;
	if (memfd >= 0 && manager_clock_tps != 0) {
		tps = manager_clock_tps; /* decided before the provider thread existed */
	} else if (nt_clock_setup((int)cfg->clock, &tps) != 0) {
		nt_set_error("nt_start: the TSC was requested but this CPU's TSC is not invariant");
		return NT_ERR_UNSUPPORTED;
	}
	nt_S.file_mode = cfg->file_mode & 07777;
	nt_S.compression_level = nt_compression_level(cfg->compression_level);
	/* Read in every mode, so that garbage in the variable is said whatever the mode. */
	uint64_t block_ns = nt_blocking_timeout_ns(cfg->blocking_timeout_us);
	nt_S.block_timeout_ns = cfg->mode == NT_MODE_STREAMING ? block_ns : 0;
	rc = session_map(cfg, memfd);
	if (rc != NT_OK)
		return rc;
	rc = nt_intern_init();
	if (rc != NT_OK)
		return rc;

	free(nt_S.categories);
	nt_S.categories = NULL;
	if (cfg->categories != NULL && strcmp(cfg->categories, "*") != 0) {
		nt_S.categories = strdup(cfg->categories);
		if (nt_S.categories == NULL) {
			nt_set_error("nt_start: out of memory copying the category list");
			return NT_ERR_NO_MEMORY;
		}
	}
	const char *pname = cfg->process_name ? cfg->process_name : program_invocation_short_name;
	snprintf(nt_S.process_name, sizeof(nt_S.process_name), "%s", pname ? pname : "");

	nt_S.next_thread = 0;
	nt_S.final_state = NT_FINAL_RECORDING;
	nt_S.ticks_per_second = tps;
	nt_clock_pair_now(&nt_S.start_pair);

	nt_archive_info info;
	session_info(&info);
	rc = nt_arena_publish(&info);
	if (rc != NT_OK)
		return rc;
	nt_S.started = SESSION_READY;
	return NT_OK;
}

nt_result nt_session_initialize(const nt_config *cfg)
{
	return session_initialize(cfg, -1);
}

nt_result nt_session_initialize_fd(const nt_config *cfg, int memfd)
{
	if (cfg == NULL || cfg->path != NULL || memfd < 0) {
		nt_set_error("nt_session_initialize_fd: needs a memfd and no path");
		return NT_ERR_INVALID_ARGUMENT;
	}
	return session_initialize(cfg, memfd);
}

void nt_session_release_fd(void)
{
	if (!nt_S.manager_buffer)
		return;
	nt_store_release_32(&nt_session_tag_, 0);
	nt_fence_full();
	/* nt_arena_forget does not munmap: a writer that loaded the tag just before may still
	 * store into its chunk, and private zero pages at the same addresses take that store.
	 * The manager's memfd is no longer mapped or open here. */
	nt_arena_forget();
	nt_S.manager_buffer = 0;
	nt_S.file_backed = 0;
	nt_S.started = SESSION_IDLE;
}

void nt_session_reset_counters(void)
{
	nt_store_64(nt_S.events_dropped, 0);
	nt_store_64(nt_S.dropped_rolling_full, 0);
	nt_store_64(nt_S.dropped_durable_full, 0);
	nt_store_64(nt_S.dropped_stopped, 0);
	nt_store_64(nt_S.dropped_unsaved, 0);
	nt_store_32(nt_header_u32(NT_HDR_SAVE_ERRNO), 0);
	nt_store_64(nt_S.events_overwritten, 0);
	if (nt_S.events_closed != NULL)
		nt_store_64(nt_S.events_closed, 0);
	nt_store_64(nt_S.wraps, 0);
	nt_store_64(nt_S.values_truncated, 0);
	nt_store_64(nt_S.blocked_waits, 0);
	nt_store_64(nt_S.blocked_timeouts, 0);
	nt_store_64(nt_S.blocked_ns, 0);
}

int nt_category_enabled(const char *category)
{
	if (category == NULL || !nt_is_recording())
		return 0;
	pthread_mutex_lock(&nt_S.intern_lock);
	int on = nt_category_matches(category);
	pthread_mutex_unlock(&nt_S.intern_lock);
	return on;
}

void nt_get_stats(nt_stats *out)
{
	if (out == NULL)
		return;
	memset(out, 0, sizeof(*out));
	if (nt_S.events_dropped == NULL)
		return; /* never started */
	out->events_dropped = nt_load_64(nt_S.events_dropped);
	out->dropped_rolling_full = nt_load_64(nt_S.dropped_rolling_full);
	out->dropped_durable_full = nt_load_64(nt_S.dropped_durable_full);
	out->dropped_stopped = nt_load_64(nt_S.dropped_stopped);
	out->events_overwritten = nt_load_64(nt_S.events_overwritten);
	out->wraps = nt_load_64(nt_S.wraps);
	out->durable_dropped = nt_load_64(nt_S.durable_dropped);
	out->values_truncated = nt_load_64(nt_S.values_truncated);
	out->chunks_claimed = chunks_claimed();
	pthread_mutex_lock(&nt_S.intern_lock);
	out->threads = nt_S.next_thread;
	out->callsites = nt_S.next_callsite;
	out->strings = nt_S.next_string;
	pthread_mutex_unlock(&nt_S.intern_lock);
}

/* Async-signal-safe: only loads, stores and clock reads. Stops recording and records in the
 * mapped header how and when the session ended; returns 0 if it was not recording. */
int nt_session_record_end(uint8_t reason, int sig)
{
	if (nt_S.started != SESSION_RECORDING && nt_S.started != SESSION_READY)
		return 0;
	nt_store_release_32(&nt_session_tag_, 0);
	nt_fence_full();
	nt_S.started = SESSION_READY;
	nt_clock_pair fin;
	nt_clock_pair_now(&fin);
	*nt_header_u64(NT_HDR_FINISH_TICKS) = fin.ticks;
	*nt_header_u64(NT_HDR_FINISH_MONOTONIC_NS) = fin.monotonic_ns;
	*nt_header_u64(NT_HDR_FINISH_REALTIME_NS) = fin.realtime_ns;
	*nt_header_u64(NT_HDR_TICKS_PER_SECOND) =
		nt_clock_refine_rate(&nt_S.start_pair, &fin, nt_S.ticks_per_second);
	nt_store_64(nt_S.chunks_claimed, chunks_claimed());
	*nt_header_u8(NT_HDR_END_SIGNAL) = (uint8_t)sig;
	*nt_header_u8(NT_HDR_ENDED_BY) = reason;
	return 1;
}

nt_result nt_session_finish(const char *path, uint8_t reason)
{
	if (nt_S.started == SESSION_IDLE && nt_S.forked_from != 0) {
		nt_set_error("nt_finish: the session belongs to process %d, of which this process "
			     "is a fork() child; start one of its own with nt_start()",
			     nt_S.forked_from);
		return NT_ERR_STATE;
	}
	if (nt_S.started == SESSION_IDLE) {
		nt_set_error("nt_finish: no session was started");
		return NT_ERR_STATE;
	}
	if (nt_S.started == SESSION_DONE) {
		nt_set_error("nt_finish: the session was already finished and its archive written; "
			     "nt_start() begins a new one");
		return NT_ERR_STATE;
	}
	if (nt_S.started == SESSION_RECORDING)
		nt_thread_release(); /* the caller's own chunk: closed with its exact count */
	if (nt_S.started != SESSION_FINISHED)
		nt_session_record_end(reason, 0);
	if (path == NULL && nt_S.path == NULL) {
		nt_set_error("nt_finish: path is NULL and the arena is not file-backed");
		return NT_ERR_INVALID_ARGUMENT;
	}
	const char *target = path ? path : nt_S.path;
	if (nt_S.mode == NT_MODE_STREAMING) {
		/* Everything is already saved in the file: only the header changes. */
		nt_stream_stop();
		nt_S.final_state =
			nt_S.final_state == NT_FINAL_RECORDING ? NT_FINAL_FINISHED : nt_S.final_state;
		*nt_header_u8(NT_HDR_FINAL_STATE) = nt_S.final_state;
		int rc = nt_stream_finish();
		if (rc == NT_OK && strcmp(target, nt_S.path) != 0 &&
		    nt_file_publish(nt_S.path, target) != 0) {
			nt_set_error("nt_finish: cannot move the archive '%s' to '%s': %s", nt_S.path,
				     target, nt_file_strerror(errno));
			rc = NT_ERR_IO;
		}
		nt_S.started = rc == NT_OK ? SESSION_DONE : SESSION_FINISHED;
		return rc;
	}

	nt_archive_info info;
	session_info(&info);
	/* The header now says how the session ended; the compact copy keeps all of it. */
	info.ended_by = *nt_header_u8(NT_HDR_ENDED_BY);
	info.finish_ticks = *nt_header_u64(NT_HDR_FINISH_TICKS);
	info.finish_monotonic_ns = *nt_header_u64(NT_HDR_FINISH_MONOTONIC_NS);
	info.finish_realtime_ns = *nt_header_u64(NT_HDR_FINISH_REALTIME_NS);
	info.ticks_per_second = *nt_header_u64(NT_HDR_TICKS_PER_SECOND);
	info.final_state =
		nt_S.final_state == NT_FINAL_RECORDING ? NT_FINAL_FINISHED : nt_S.final_state;
	nt_stats st;
	nt_get_stats(&st);
	info.events_dropped = st.events_dropped;
	info.dropped_rolling_full = st.dropped_rolling_full;
	info.dropped_durable_full = st.dropped_durable_full;
	info.dropped_stopped = st.dropped_stopped;
	info.dropped_unsaved = nt_load_64(nt_S.dropped_unsaved);
	info.events_overwritten = st.events_overwritten;
	info.wraps = st.wraps;
	info.durable_dropped = st.durable_dropped;
	info.values_truncated = st.values_truncated;
	info.chunks_claimed = st.chunks_claimed;
	info.children_forked = nt_load_64(nt_header_u64(NT_HDR_CHILDREN_FORKED));
	/* events_written is completed by nt_archive_write, which counts the chunks' events. */
	int rc = nt_archive_write(target, &info);
	if (rc == NT_OK && nt_S.file_backed && strcmp(target, nt_S.path) != 0)
		unlink(nt_S.path); /* the archive moved to `path` */
	if (rc == NT_OK)
		nt_arena_discard();
	nt_S.started = rc == NT_OK ? SESSION_DONE : SESSION_FINISHED;
	return rc;
}
