/*
 * nt_mgr_provider.c - one provider connection: REGISTER, then INITIALIZE/START when a trace
 * wants it, its FIFO (STARTED, SAVE_BUFFER, STOPPED), STOP with a deadline, and how its
 * recording ends.
 *
 * Every packet and message is judged against the provider's state; anything out of place
 * drops the provider (its section DAMAGED, naming what it sent). How a recording ends:
 *   STOPPED after our STOP                -> FINISHED, section written at once
 *   STOPPED without STOP, then it leaves  -> EXITED   (the process stopped itself)
 *   connection or FIFO closed otherwise   -> how the process ended (nt_mgr_ending.c):
 *                                            KILLED by a signal, EXITED_UNSTOPPED (_exit),
 *                                            EXECED, or ENDED_UNKNOWN; its buffer still
 *                                            holds its events
 *   no STOPPED within the stop timeout    -> TIMED_OUT, saved as it is
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "format/nt_archive_header_decode.h"
#include "nt_mgr_internal.h"
#include "runtime/nt_term_escape.h"
#include "runtime/nt_sock.h"

static void set_state(nt_manager *m, nt_mgr_provider *p, int state)
{
	p->state = state;
	if (m->cfg.verbose && state != NT_PROVIDER_STATE_STARTED) /* logged always, with more */
		nt_mgr_log(m, "provider %u (%s, pid %d): %s", p->id, p->name, (int)p->pid,
			   nt_provider_state_name(state));
}

int nt_mgr_provider_selected(const nt_manager *m, const char *name)
{
	if (m->trace.nselect == 0)
		return 1;
	for (int i = 0; i < m->trace.nselect; i++)
		if (strcmp(m->trace.select[i], name) == 0)
			return 1;
	return 0;
}

/* Sends to a provider; on failure the provider is dropped: DAMAGED when it does not read
 * (its socket is full), gone (KILLED or EXITED, after what its FIFO still holds) when it
 * closed. Returns 0, or -1 when it was dropped. */
static int send_or_drop(nt_manager *m, nt_mgr_conn *c, const nt_wire_msg *msg, const int *fds,
			int nfds)
{
	int err = nt_mgr_send(c->fd, msg, fds, nfds);
	if (err == 0)
		return 0;
	if (err == -EAGAIN || err == -EWOULDBLOCK) {
		char what[96];
		snprintf(what, sizeof(what), "does not read its messages (%s)",
			 nt_wire_type_name(msg->type));
		nt_mgr_provider_damaged(m, c, what);
	} else {
		nt_mgr_provider_gone(m, c);
	}
	return -1;
}

static void do_register(nt_manager *m, nt_mgr_conn *c, const nt_wire_msg *msg)
{
	nt_mgr_provider *p = calloc(1, sizeof(*p));
	if (p == NULL) {
		nt_mgr_log(m, "closed provider pid %d: out of memory", (int)c->pid);
		nt_mgr_conn_close(m, c);
		return;
	}
	p->id = m->next_id++;
	p->pid = c->pid;
	p->fifo = -1;
	p->memfd = -1;
	nt_mgr_ending_watch(p, c->fd);
	nt_wire_str(msg->name, msg->name_len, p->name);
	/* It goes into logs, the list and the section's name: one line that drives no terminal. */
	nt_term_escape(p->name, sizeof(p->name), p->name, strlen(p->name));
	if (p->name[0] == '\0')
		snprintf(p->name, sizeof(p->name), "pid-%d", (int)p->pid);
	p->sync = (msg->a & NT_WIRE_SYNC) != 0;
	c->prov = p;
	nt_mgr_log(m, "provider %u registered: pid %d, name %s%s", p->id, (int)p->pid, p->name,
		   p->sync ? " (synchronous)" : "");
	int started = 0;
	if (m->trace.active && !m->trace.stopping && nt_mgr_provider_selected(m, p->name))
		started = nt_mgr_provider_begin(m, c) == 0;
	if (p->sync && !c->closing) {
		nt_wire_msg ans;
		nt_wire_init(&ans, NT_WIRE_REGISTERED);
		ans.a = (uint64_t)started;
		send_or_drop(m, c, &ans, NULL, 0);
	}
}

void nt_mgr_provider_message(nt_manager *m, nt_mgr_conn *c, const nt_wire_msg *msg)
{
	if (c->prov == NULL && msg->type == NT_WIRE_REGISTER) {
		do_register(m, c, msg);
		return;
	}
	char what[128];
	snprintf(what, sizeof(what), "sent %s %s", nt_wire_type_name(msg->type),
		 msg->type == NT_WIRE_REGISTER ? "twice" : "on a provider connection");
	nt_mgr_provider_damaged(m, c, what);
}

/* Tells the programs (nt_manager_config.on_recording) that p records into its buffer, or
 * (memfd -1) that its recording is final. */
static void tell_recording(nt_manager *m, const nt_mgr_provider *p, int memfd)
{
	if (m->cfg.on_recording != NULL)
		m->cfg.on_recording(m->cfg.recording_ctx, p->id, memfd, p->name);
}

static int send_init_start(nt_manager *m, nt_mgr_conn *c, int their_fifo)
{
	nt_mgr_provider *p = c->prov;
	nt_wire_msg msg;
	nt_wire_init(&msg, NT_WIRE_INITIALIZE);
	msg.a = (uint64_t)p->mode;
	msg.b = p->layout.buffer_size;
	msg.c = p->layout.chunk_size;
	msg.d = p->layout.map_size;
	nt_wire_set_text(&msg, m->trace.categories);
	int fds[2] = { p->memfd, their_fifo };
	if (send_or_drop(m, c, &msg, fds, 2) != 0)
		return -1;
	nt_wire_init(&msg, NT_WIRE_START);
	msg.a = 0; /* NT_BUFFER_CLEAR_ENTIRE: every trace hands out a fresh buffer */
	return send_or_drop(m, c, &msg, NULL, 0);
}

/* A kept buffer the current trace can start again as it is. */
static int can_restart(const nt_manager *m, const nt_mgr_provider *p)
{
	const nt_mgr_trace *t = &m->trace;
	nt_arena_layout l;
	return p->kept && t->disposition != 0 && t->mode == p->mode &&
	       p->mode != NT_MODE_STREAMING &&
	       nt_arena_layout_compute(t->buffer_size, t->chunk_size, &l) == NT_LAYOUT_OK &&
	       l.map_size == p->layout.map_size && l.chunk_size == p->layout.chunk_size &&
	       strcmp(t->categories, p->categories) == 0;
}

static int restart(nt_manager *m, nt_mgr_conn *c)
{
	nt_mgr_provider *p = c->prov;
	nt_wire_msg msg;
	nt_wire_init(&msg, NT_WIRE_START);
	msg.a = (uint64_t)m->trace.disposition;
	p->kept = 0;
	p->in_trace = 1;
	p->started_seen = p->stop_sent = p->self_stopped = 0;
	m->trace.started++;
	if (send_or_drop(m, c, &msg, NULL, 0) != 0)
		return -1;
	set_state(m, p, NT_PROVIDER_STATE_INITIALIZED);
	return 0;
}

/* Lets go of a kept buffer, and tells the provider to (TERMINATE). 0, or -1 if dropped. */
static int terminate_kept(nt_manager *m, nt_mgr_conn *c)
{
	nt_mgr_provider *p = c->prov;
	if (!p->kept)
		return 0;
	nt_mgr_buffer_release(p);
	p->kept = 0;
	set_state(m, p, NT_PROVIDER_STATE_REGISTERED);
	nt_wire_msg msg;
	nt_wire_init(&msg, NT_WIRE_TERMINATE);
	return send_or_drop(m, c, &msg, NULL, 0);
}

int nt_mgr_provider_begin(nt_manager *m, nt_mgr_conn *c)
{
	nt_mgr_provider *p = c->prov;
	if (can_restart(m, p))
		return restart(m, c);
	if (terminate_kept(m, c) != 0)
		return -1;
	char why[256];
	int pair[2] = { -1, -1 };
	if (nt_mgr_buffer_create(p, m->trace.buffer_size, m->trace.chunk_size, m->trace.mode, why,
				 sizeof(why)) != 0)
		goto fail;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
		snprintf(why, sizeof(why), "socketpair: %s", strerror(errno));
		goto fail;
	}
	p->fifo = pair[0];
	snprintf(p->categories, sizeof(p->categories), "%s", m->trace.categories);
	if (p->mode == NT_MODE_STREAMING &&
	    nt_mgr_saver_start(p, m->trace.out_dir, m->trace.compression_level, &m->cfg,
			       ++m->next_stream, why, sizeof(why)) != 0)
		goto fail;
	p->in_trace = 1;
	p->started_seen = p->stop_sent = p->self_stopped = 0;
	int sent = send_init_start(m, c, pair[1]);
	close(pair[1]);
	m->trace.started++;
	if (sent != 0)
		return -1; /* dropped, its section written */
	set_state(m, p, NT_PROVIDER_STATE_INITIALIZED);
	return 0;
fail:
	nt_mgr_log(m, "provider %u (%s, pid %d) not started: %s", p->id, p->name, (int)p->pid, why);
	nt_mgr_trace_problem(m, "provider %u (%s, pid %d) not started: %s", p->id, p->name,
			     (int)p->pid, why);
	if (pair[1] >= 0)
		close(pair[1]);
	nt_mgr_buffer_release(p);
	return -1;
}

void nt_mgr_provider_end(nt_manager *m, nt_mgr_conn *c, int end_state, const char *message,
			 int terminate)
{
	nt_mgr_provider *p = c->prov;
	if (p == NULL || !p->in_trace)
		return;
	if (p->stream != NULL)
		nt_mgr_saver_finish(p->stream);
	nt_mgr_bundle_section(m, p, end_state, message);
	p->in_trace = 0;
	tell_recording(m, p, -1);
	if (end_state == NT_SECTION_FINISHED && terminate && !c->closing && p->stream == NULL) {
		/* Stopped with its buffer, as a Fuchsia provider between Stop and Terminate: the
		 * next trace starts it again (retain, clear-nondurable) or terminates it. */
		p->kept = 1;
		set_state(m, p, NT_PROVIDER_STATE_STOPPED);
		return;
	}
	nt_mgr_buffer_release(p);
	if (terminate && !c->closing) {
		nt_wire_msg msg;
		nt_wire_init(&msg, NT_WIRE_TERMINATE);
		set_state(m, p, NT_PROVIDER_STATE_REGISTERED);
		send_or_drop(m, c, &msg, NULL, 0); /* the section is written: only the link goes */
	} else {
		set_state(m, p, c->closing ? NT_PROVIDER_STATE_GONE : NT_PROVIDER_STATE_REGISTERED);
	}
}

void nt_mgr_provider_damaged(nt_manager *m, nt_mgr_conn *c, const char *what)
{
	nt_mgr_provider *p = c->prov;
	if (p == NULL) {
		nt_mgr_log(m, "closed provider connection from pid %d: it %s", (int)c->pid, what);
		nt_mgr_conn_close(m, c);
		return;
	}
	char msg[NT_BUNDLE_MAX_MESSAGE];
	snprintf(msg, sizeof(msg), "provider %s", what);
	nt_mgr_log(m, "provider %u (%s, pid %d) dropped: it %s", p->id, p->name, (int)p->pid, what);
	nt_mgr_conn_close(m, c);
	if (p->in_trace)
		nt_mgr_provider_end(m, c, NT_SECTION_DAMAGED, msg, 0);
}

static void fifo_started(nt_manager *m, nt_mgr_conn *c, const nt_fifo_packet *pkt)
{
	nt_mgr_provider *p = c->prov;
	if (p->started_seen) {
		nt_mgr_provider_damaged(m, c, "sent STARTED twice on its FIFO");
		return;
	}
	if (pkt->data32 != NT_FIFO_PROTOCOL_VERSION) {
		char what[96];
		snprintf(what, sizeof(what), "sent STARTED with FIFO protocol version %u, not %u",
			 pkt->data32, NT_FIFO_PROTOCOL_VERSION);
		nt_mgr_provider_damaged(m, c, what);
		return;
	}
	p->started_seen = 1;
	if (!p->stop_sent)
		set_state(m, p, NT_PROVIDER_STATE_STARTED);
	nt_mgr_log(m, "provider %u (%s, pid %d) started", p->id, p->name, (int)p->pid);
	tell_recording(m, p, p->memfd); /* its header is in the buffer now */
}

static void fifo_stopped(nt_manager *m, nt_mgr_conn *c)
{
	nt_mgr_provider *p = c->prov;
	if (!p->started_seen || p->self_stopped) {
		nt_mgr_provider_damaged(m, c, p->self_stopped ? "sent STOPPED twice on its FIFO"
							    : "sent STOPPED before STARTED on its FIFO");
		return;
	}
	if (p->stop_sent) {
		nt_mgr_provider_end(m, c, NT_SECTION_FINISHED, "", 1);
		return;
	}
	p->self_stopped = 1;
	set_state(m, p, NT_PROVIDER_STATE_STOPPED);
}

/* One FIFO packet; returns 0 to read on. */
static int fifo_packet(nt_manager *m, nt_mgr_conn *c, const nt_fifo_packet *pkt)
{
	nt_mgr_provider *p = c->prov;
	char what[96];
	switch (pkt->request) {
	case NT_FIFO_STARTED:
		fifo_started(m, c, pkt);
		break;
	case NT_FIFO_STOPPED:
		fifo_stopped(m, c);
		break;
	case NT_FIFO_SAVE_BUFFER:
		if (p->stream == NULL || !p->started_seen || p->self_stopped) {
			nt_mgr_provider_damaged(m, c, p->stream == NULL
				? "sent SAVE_BUFFER outside streaming mode"
				: "sent SAVE_BUFFER before STARTED or after STOPPED");
		} else if (nt_mgr_saver_request(p->stream, pkt) != 0) {
			nt_mgr_provider_damaged(m, c, "sent SAVE_BUFFER while one was in flight");
		}
		break;
	default:
		snprintf(what, sizeof(what), "sent an unknown FIFO packet (request 0x%x)",
			 pkt->request);
		nt_mgr_provider_damaged(m, c, what);
	}
	return c->closing || p->fifo < 0 ? -1 : 0;
}

/* Reads up to `max` packets: 1 = the FIFO closed, 0 = nothing more now, -1 = dropped. */
static int read_fifo(nt_manager *m, nt_mgr_conn *c, int max)
{
	for (int i = 0; i < max; i++) {
		nt_fifo_packet pkt;
		ssize_t n = nt_sock_fifo_recv(c->prov->fifo, &pkt, 1);
		if (n < 0)
			return n == -EAGAIN ? 0 : 1;
		if (n == 0)
			return 1;
		if (n != (ssize_t)sizeof(pkt)) {
			nt_mgr_provider_damaged(m, c, "sent a FIFO packet of the wrong size");
			return -1;
		}
		if (fifo_packet(m, c, &pkt) != 0)
			return -1;
	}
	return 0;
}

void nt_mgr_provider_fifo(nt_manager *m, nt_mgr_conn *c)
{
	nt_mgr_provider *p = c->prov;
	if (read_fifo(m, c, NT_MGR_MSGS_PER_TURN) != 1)
		return;
	if (p->kept && !p->in_trace) {
		/* It let go of a kept buffer by itself: so does the manager; still registered. */
		nt_mgr_buffer_release(p);
		p->kept = 0;
		set_state(m, p, NT_PROVIDER_STATE_REGISTERED);
		return;
	}
	nt_mgr_provider_gone(m, c);
	nt_mgr_conn_close(m, c);
}

void nt_mgr_provider_gone(nt_manager *m, nt_mgr_conn *c)
{
	nt_mgr_provider *p = c->prov;
	if (p == NULL)
		return;
	/* What it said last may still be in the FIFO (STOPPED, then exit). */
	if (p->fifo >= 0 && p->in_trace && read_fifo(m, c, 64) < 0)
		return;
	nt_mgr_conn_close(m, c);
	if (p->in_trace && p->self_stopped) {
		nt_mgr_log(m, "provider %u (%s, pid %d) exited", p->id, p->name, (int)p->pid);
		nt_mgr_provider_end(m, c, NT_SECTION_EXITED, "", 0);
	} else if (p->in_trace) {
		char how[NT_BUNDLE_MAX_MESSAGE / 2];
		int state = nt_mgr_ending_of(p, how, sizeof(how));
		nt_mgr_log(m, "provider %u (%s, pid %d) closed its connection without STOPPED: %s: %s",
			   p->id, p->name, (int)p->pid, nt_section_state_name((unsigned)state), how);
		nt_mgr_provider_end(m, c, state, how, 0);
	} else if (m->cfg.verbose) {
		nt_mgr_log(m, "provider %u (%s, pid %d) left", p->id, p->name, (int)p->pid);
	}
	p->state = NT_PROVIDER_STATE_GONE;
}

/* Reads what the provider has already said on its FIFO. Returns 1 when that settled it (it
 * left, or its recording ended), so the caller has nothing more to do. */
static int take_waiting_answers(nt_manager *m, nt_mgr_conn *c)
{
	nt_mgr_provider *p = c->prov;
	int r = p->fifo >= 0 ? read_fifo(m, c, 64) : 0;
	if (r == 1)
		nt_mgr_provider_gone(m, c);
	return r != 0 || !p->in_trace;
}

void nt_mgr_provider_send_stop(nt_manager *m, nt_mgr_conn *c)
{
	nt_mgr_provider *p = c->prov;
	if (p == NULL || !p->in_trace || p->stop_sent)
		return;
	/* A STOPPED already waiting in the FIFO means the process stopped by itself first. */
	if (take_waiting_answers(m, c))
		return;
	if (p->self_stopped) {
		nt_mgr_provider_end(m, c, NT_SECTION_EXITED, "", 1);
		return;
	}
	nt_wire_msg msg;
	nt_wire_init(&msg, NT_WIRE_STOP);
	p->stop_sent = 1;
	p->stop_deadline_ms = nt_mgr_now_ms() + m->cfg.stop_timeout_ms;
	set_state(m, p, NT_PROVIDER_STATE_STOPPING);
	send_or_drop(m, c, &msg, NULL, 0);
}

void nt_mgr_provider_timers(nt_manager *m, nt_mgr_conn *c, int64_t now)
{
	nt_mgr_provider *p = c->prov;
	if (p == NULL || !p->in_trace || !p->stop_sent || now < p->stop_deadline_ms)
		return;
	/* The loop may have been busy (writing sections): an answer already waiting counts. */
	if (take_waiting_answers(m, c))
		return;
	char msg[128];
	snprintf(msg, sizeof(msg), "the provider did not answer STOP within %u ms",
		 m->cfg.stop_timeout_ms);
	nt_mgr_log(m, "provider %u (%s, pid %d) dropped: %s", p->id, p->name, (int)p->pid, msg);
	nt_mgr_conn_close(m, c);
	nt_mgr_provider_end(m, c, NT_SECTION_TIMED_OUT, msg, 0);
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
