/*
 * nt_mgr_trace.c - the trace session (Fuchsia's trace_session): the one trace a manager
 * runs, from the providers' STOP to the bundle's END frame. Progress while it records,
 * stopping (asked, its controller gone, the manager stopping), finishing once no provider
 * is left in it, aborting. It speaks to its controller only through m->tell_controller
 * (nt_mgr_control.c, which starts traces, sits above it) and to providers through
 * nt_mgr_provider.c (below it).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "nt_mgr_internal.h"

void nt_mgr_trace_begin_stop(nt_manager *m)
{
	if (m->trace.stopping)
		return;
	m->trace.stopping = 1;
	nt_mgr_log(m, "stopping the trace");
	for (int i = 0; i < m->nconns; i++)
		if (m->conns[i].prov != NULL && !m->conns[i].closing)
			nt_mgr_provider_send_stop(m, &m->conns[i]);
}

static void send_progress(nt_manager *m)
{
	uint64_t events = 0, drops = 0, providers = 0;
	for (int i = 0; i < m->nconns; i++) {
		nt_mgr_provider *p = m->conns[i].prov;
		if (p == NULL || !p->in_trace)
			continue;
		uint64_t e, d;
		nt_mgr_provider_counts(p, &e, &d);
		events += e;
		drops += d;
		providers++;
	}
	nt_wire_msg msg;
	nt_wire_init(&msg, NT_WIRE_CTL_PROGRESS);
	msg.a = providers + m->trace.sections;
	msg.b = events + m->trace.events;
	msg.c = m->trace.out_off;
	msg.d = drops + m->trace.drops;
	/* Never kept when the socket is full: the next one says more. */
	m->tell_controller(m, &msg, 1);
}

static int providers_in_trace(const nt_manager *m)
{
	int n = 0;
	for (int i = 0; i < m->nconns; i++)
		n += m->conns[i].prov != NULL && m->conns[i].prov->in_trace;
	return n;
}

static void finish(nt_manager *m)
{
	nt_mgr_trace *t = &m->trace;
	nt_mgr_bundle_end(m, NT_SECTION_FINISHED, "");
	nt_mgr_log(m, "trace written: %u sections, %llu events, %llu bytes, %llu dropped",
		   t->sections, (unsigned long long)t->events, (unsigned long long)t->out_off,
		   (unsigned long long)t->drops);
	nt_wire_msg msg;
	nt_wire_init(&msg, NT_WIRE_CTL_STOPPED);
	msg.a = t->sections;
	msg.b = t->events;
	msg.c = t->out_off;
	msg.d = t->drops;
	nt_wire_set_text(&msg, t->problems);
	if (t->out_error != 0) {
		nt_wire_init(&msg, NT_WIRE_CTL_END);
		msg.a = (uint64_t)(int64_t)NT_MGR_RESULT_IO;
		nt_wire_set_text(&msg, t->problems);
	}
	m->tell_controller(m, &msg, 0);
	close(t->out_fd);
	memset(t, 0, sizeof(*t));
	t->out_fd = -1;
	t->ctl_fd = -1;
}

void nt_mgr_trace_tick(nt_manager *m, int64_t now)
{
	nt_mgr_trace *t = &m->trace;
	if (!t->active)
		return;
	/* Stopping too: the progress is the controller's heartbeat, which tells a manager
	 * still writing sections from one that is stuck or gone. */
	if (t->ctl_fd >= 0 && now >= t->next_progress_ms) {
		t->next_progress_ms = now + NT_MGR_PROGRESS_MS;
		send_progress(m);
	}
	if (t->stopping && providers_in_trace(m) == 0)
		finish(m);
}

void nt_mgr_trace_abort(nt_manager *m, const char *why)
{
	nt_mgr_trace_begin_stop(m);
	for (int i = 0; i < m->nconns; i++)
		if (m->conns[i].prov != NULL && m->conns[i].prov->in_trace)
			nt_mgr_provider_end(m, &m->conns[i], NT_SECTION_TIMED_OUT, why, 1);
	finish(m);
}

/* The manager was asked to stop while recording: STOP every provider and let the loop run
 * until each answered or timed out. */
void nt_mgr_trace_stop_gracefully(nt_manager *m)
{
	nt_mgr_trace_begin_stop(m);
}
