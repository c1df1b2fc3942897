/*
 * nt_provider.c - the provider lifecycle of fuchsia.tracing.provider: initialize, start
 * (with a buffer disposition), stop, terminate; several start/stop runs in one buffer.
 *
 * The session tag is (generation << 17) | enabled | run epoch. Call-site caches hold the
 * generation, threads hold the whole tag:
 *   CLEAR_ENTIRE       new generation: every site and thread registers again, since the
 *                      durable data their caches point to is gone.
 *   CLEAR_NONDURABLE   same generation, new epoch: sites keep their indices; threads keep
 *                      their Thread records but drop their chunks and restart ordinals.
 *   RETAIN             same generation, new epoch: chunks left open by the previous run are
 *                      closed (so circular mode can reuse them) and ordinals continue.
 * Additional categories change which sites are enabled, so they also start a generation.
 *
 * These are the steps without the manager-mode guard of the public functions: the program's
 * calls reach them through nt_lifecycle.c, the trace manager's through its provider thread
 * (nt_registry.c). Below both; above the session (nt_session.c) and its exit handlers
 * (nt_crash.c), which a session initialized here gets.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nt_internal.h"

static char *base_categories; /* the configured set; nt_S.categories adds a run's extras */

static void new_generation(void)
{
	nt_S.generation = nt_S.generation % NT_TAG_GEN_MAX + 1;
	if (nt_S.generation == 1) {
		/* Wrapped: a site untouched for NT_TAG_GEN_MAX generations would otherwise look
		 * current again. Forget every registration. */
		for (nt_callsite *s = nt_S.sites, *next; s != NULL; s = next) {
			next = s->next_registered;
			s->next_registered = NULL;
			nt_store_32(&s->state, 0);
		}
		nt_S.sites = NULL;
	}
}

/* nt_S.categories = base + extra; returns 1 if the set changed. */
static int set_categories(const char *extra, int *oom)
{
	char *next = NULL;
	if (extra != NULL && extra[0] != '\0' && base_categories != NULL) {
		size_t n = strlen(base_categories) + strlen(extra) + 2;
		next = malloc(n);
		if (next != NULL)
			snprintf(next, n, "%s,%s", base_categories, extra);
	} else if (base_categories != NULL && (extra == NULL || extra[0] == '\0')) {
		next = strdup(base_categories);
	} /* else: no base list means every category is on already */
	if ((base_categories != NULL && next == NULL)) {
		*oom = 1;
		return 0;
	}
	int changed = (next == NULL) != (nt_S.categories == NULL) ||
		      (next != NULL && strcmp(next, nt_S.categories) != 0);
	free(nt_S.categories);
	nt_S.categories = next;
	return changed;
}

/* The trace manager's FIFO when it saves this session's stream (streaming mode), else -1. */
static int remote_fifo = -1;

static nt_result initialize(const nt_config *cfg, int memfd)
{
	nt_result rc = memfd < 0 ? nt_session_initialize(cfg) : nt_session_initialize_fd(cfg, memfd);
	if (rc != NT_OK)
		return rc;
	nt_exit_handlers_install(cfg->handle_signals);
	free(base_categories);
	base_categories = nt_S.categories ? strdup(nt_S.categories) : NULL;
	if (nt_S.categories != NULL && base_categories == NULL) {
		nt_set_error("nt_start: out of memory copying the category list");
		return NT_ERR_NO_MEMORY;
	}
	new_generation();
	nt_S.ran = 0;
	return NT_OK;
}

nt_result nt_provider_setup(const nt_config *cfg, int memfd, int fifo)
{
	nt_result rc = initialize(cfg, memfd);
	remote_fifo = rc == NT_OK ? fifo : -1;
	return rc;
}

int nt_provider_remote_streaming(void)
{
	return remote_fifo >= 0 && nt_S.mode == NT_MODE_STREAMING;
}

nt_result nt_provider_run_start(nt_buffer_disposition disposition,
				 const char *additional_categories)
{
	if (nt_S.started == SESSION_RECORDING)
		return NT_OK; /* already started: ignored, as the protocol requires */
	if (nt_S.started != SESSION_READY) {
		nt_set_error("nt_provider_start: not initialized");
		return NT_ERR_STATE;
	}
	if ((unsigned)disposition > NT_BUFFER_RETAIN) {
		nt_set_error("nt_provider_start: disposition %d is not an nt_buffer_disposition",
			     (int)disposition);
		return NT_ERR_INVALID_ARGUMENT;
	}
	if (nt_category_patterns_check("nt_provider_start", additional_categories) != NT_OK)
		return NT_ERR_INVALID_ARGUMENT;
	int oom = 0;
	pthread_mutex_lock(&nt_S.intern_lock);
	int categories_changed = set_categories(additional_categories, &oom);
	pthread_mutex_unlock(&nt_S.intern_lock);
	if (oom) {
		nt_set_error("nt_provider_start: out of memory for the category list");
		return NT_ERR_NO_MEMORY;
	}
	/* The first run after initialize finds a fresh arena: nothing to clear. Clearing it
	 * anyway would dirty every page of a file-backed arena. */
	int first_run = !nt_S.ran;
	if (first_run) {
		disposition = NT_BUFFER_RETAIN;
	} else if (nt_S.mode == NT_MODE_STREAMING && disposition != NT_BUFFER_RETAIN) {
		/* Saved data is already in the file; cleared indices would be redefined under
		 * it. */
		nt_set_error("nt_provider_start: streaming mode keeps what it saved: only "
			     "NT_BUFFER_RETAIN can start a later run");
		return NT_ERR_UNSUPPORTED;
	}
	nt_S.ran = 1;
	switch (disposition) {
	case NT_BUFFER_CLEAR_ENTIRE:
		nt_arena_clear(1);
		if (nt_intern_init() != NT_OK)
			return NT_ERR_NO_MEMORY;
		nt_S.next_thread = 0;
		nt_S.final_state = NT_FINAL_RECORDING;
		*nt_header_u8(NT_HDR_FINAL_STATE) = NT_FINAL_RECORDING;
		nt_store_64(nt_S.durable_dropped, 0);
		nt_session_reset_counters();
		nt_S.rolling_clears++;
		new_generation();
		break;
	case NT_BUFFER_CLEAR_NONDURABLE:
		nt_arena_clear(0);
		nt_session_reset_counters();
		nt_S.rolling_clears++;
		if (categories_changed)
			new_generation();
		break;
	case NT_BUFFER_RETAIN:
		nt_arena_close_all_chunks();
		if (categories_changed)
			new_generation();
		break;
	}
	*nt_header_u8(NT_HDR_ENDED_BY) = NT_END_UNKNOWN;
	if (nt_S.mode == NT_MODE_STREAMING) {
		nt_result rc = remote_fifo >= 0 ? nt_stream_start_remote(first_run, remote_fifo)
						 : nt_stream_start(first_run);
		if (rc != NT_OK)
			return rc;
	}
	nt_S.epoch = (nt_S.epoch + 1) & NT_TAG_EPOCH_MASK;
	nt_S.started = SESSION_RECORDING;
	nt_store_release_32(&nt_session_tag_, (nt_S.generation << NT_TAG_GEN_SHIFT) | NT_SITE_ENABLED |
						     nt_S.epoch);
	/* A cleared durable region lost the records layers wrote there: they write them again.
	 * So does a manager's fresh buffer, which a layer initialized before (Trace2's
	 * ProcessRecord) has never written to. */
	void (*rewrite)(void) = __atomic_load_n(&nt_hooks.on_durable_cleared, __ATOMIC_ACQUIRE);
	if ((disposition == NT_BUFFER_CLEAR_ENTIRE || (first_run && remote_fifo >= 0)) &&
	    rewrite != NULL)
		rewrite();
	return NT_OK;
}

nt_result nt_provider_run_stop(void)
{
	if (nt_S.started == SESSION_READY)
		return NT_OK; /* already stopped: ignored */
	if (nt_S.started != SESSION_RECORDING) {
		nt_set_error("nt_provider_stop: not initialized");
		return NT_ERR_STATE;
	}
	nt_thread_release();
	nt_session_record_end(NT_END_UNKNOWN, 0); /* end time of this run, still in progress */
	if (nt_S.mode == NT_MODE_STREAMING)
		nt_stream_stop(); /* saves what the run left in the arena */
	return NT_OK;
}
