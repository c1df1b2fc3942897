/* nt_session.c - the session lifecycle: configure, start, halt, finish, counters, errors. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nt_internal.h"

nt_session nt_S = { .intern_lock = PTHREAD_MUTEX_INITIALIZER };

enum { SESSION_IDLE = 0, SESSION_RECORDING = 1, SESSION_STOPPED = 2 };

static __thread char last_error[512];

const char *nt_last_error(void)
{
	return last_error;
}

void nt_set_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
}

void nt_config_init(nt_config *cfg)
{
	if (cfg == NULL)
		return;
	memset(cfg, 0, sizeof(*cfg));
	cfg->buffer_size = 4u << 20;
	cfg->chunk_size = 16u << 10;
	cfg->mode = NT_MODE_ONESHOT;
	cfg->clock = NT_CLOCK_AUTO;
}

nt_result nt_start(const nt_config *cfg)
{
	last_error[0] = '\0';
	if (cfg == NULL) {
		nt_set_error("nt_start: cfg is NULL");
		return NT_ERR_INVALID_ARGUMENT;
	}
	if (nt_S.started == SESSION_RECORDING) {
		nt_set_error("nt_start: already recording; call nt_finish() first");
		return NT_ERR_STATE;
	}
	if (cfg->mode == NT_MODE_STREAMING) {
		nt_set_error("nt_start: streaming mode is not available yet; use oneshot or circular");
		return NT_ERR_UNSUPPORTED;
	}
	if (cfg->mode != NT_MODE_ONESHOT && cfg->mode != NT_MODE_CIRCULAR) {
		nt_set_error("nt_start: mode %d is not one of NT_MODE_ONESHOT (0), NT_MODE_CIRCULAR (1)",
			     cfg->mode);
		return NT_ERR_INVALID_ARGUMENT;
	}
	if ((unsigned)cfg->clock > NT_CLOCK_USE_TSC) {
		nt_set_error("nt_start: clock %d is not an nt_clock_choice", (int)cfg->clock);
		return NT_ERR_INVALID_ARGUMENT;
	}
	uint64_t tps;
	if (nt_clock_setup((int)cfg->clock, &tps) != 0) {
		nt_set_error("nt_start: the TSC was requested but this CPU's TSC is not invariant");
		return NT_ERR_UNSUPPORTED;
	}
	int rc = nt_arena_map(cfg->buffer_size, cfg->chunk_size, cfg->mode);
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
	nt_S.generation = nt_S.generation % NT_TAG_GEN_MAX + 1;
	nt_clock_pair_now(&nt_S.start_pair);
	nt_S.started = SESSION_RECORDING;
	nt_store_release_32(&nt_session_tag_, (nt_S.generation << NT_TAG_GEN_SHIFT) | NT_SITE_ENABLED);
	return NT_OK;
}

void nt_session_halt(uint8_t final_state)
{
	if (nt_S.final_state == NT_FINAL_RECORDING)
		nt_S.final_state = final_state;
	nt_store_release_32(&nt_session_tag_, NT_TAG_HALTED);
}

int nt_is_recording(void)
{
	uint32_t tag = nt_load_32(&nt_session_tag_);
	return tag != 0 && tag != NT_TAG_HALTED;
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
	out->events_dropped = nt_load_64(&nt_S.events_dropped);
	out->events_overwritten = nt_load_64(&nt_S.events_overwritten);
	out->wraps = nt_load_64(&nt_S.wraps);
	out->durable_dropped = nt_load_64(&nt_S.durable_dropped);
	uint64_t claimed = nt_load_64(&nt_S.next_seq);
	out->chunks_claimed = nt_S.mode == NT_MODE_ONESHOT && claimed > nt_S.nslots ? nt_S.nslots
										      : claimed;
	pthread_mutex_lock(&nt_S.intern_lock);
	out->threads = nt_S.next_thread;
	out->callsites = nt_S.next_callsite;
	out->strings = nt_S.next_string;
	pthread_mutex_unlock(&nt_S.intern_lock);
}

nt_result nt_finish(const char *path)
{
	if (nt_S.started == SESSION_IDLE) {
		nt_set_error("nt_finish: no session was started");
		return NT_ERR_STATE;
	}
	if (nt_S.started == SESSION_RECORDING) {
		nt_thread_release(); /* the caller's own chunk: closed with its exact count */
		nt_store_release_32(&nt_session_tag_, 0);
		nt_fence_full();
		nt_S.started = SESSION_STOPPED;
	}
	if (path == NULL) {
		nt_set_error("nt_finish: path is NULL");
		return NT_ERR_INVALID_ARGUMENT;
	}

	nt_clock_pair fin;
	nt_clock_pair_now(&fin);
	nt_stats st;
	nt_get_stats(&st);

	nt_archive_info info;
	memset(&info, 0, sizeof(info));
	info.format_major = NT_FORMAT_MAJOR;
	info.format_minor = NT_FORMAT_MINOR;
	snprintf(info.producer, sizeof(info.producer), "nanotrace %s", NT_VERSION_STRING);
	info.clock_source = nt_clock_use_tsc_ ? NT_CLOCK_TSC : NT_CLOCK_MONOTONIC;
	info.ticks_per_second = nt_clock_refine_rate(&nt_S.start_pair, &fin, nt_S.ticks_per_second);
	info.start_ticks = nt_S.start_pair.ticks;
	info.start_monotonic_ns = nt_S.start_pair.monotonic_ns;
	info.start_realtime_ns = nt_S.start_pair.realtime_ns;
	info.finish_ticks = fin.ticks;
	info.finish_monotonic_ns = fin.monotonic_ns;
	info.finish_realtime_ns = fin.realtime_ns;
	info.pid = (uint32_t)getpid();
	memcpy(info.process_name, nt_S.process_name, sizeof(info.process_name));
	info.buffering_mode = (uint8_t)nt_S.mode;
	info.arena_size = nt_S.map_size;
	info.durable_size = nt_S.durable_size;
	info.chunk_size = nt_S.chunk_size;
	info.chunks_per_half = nt_S.chunks_per_half;
	info.final_state =
		nt_S.final_state == NT_FINAL_RECORDING ? NT_FINAL_FINISHED : nt_S.final_state;
	info.events_dropped = st.events_dropped;
	info.events_overwritten = st.events_overwritten;
	info.wraps = st.wraps;
	info.durable_dropped = st.durable_dropped;
	info.chunks_claimed = st.chunks_claimed;
	/* events_written is completed by nt_archive_write, which counts the chunks' events. */
	return nt_archive_write(path, &info);
}
