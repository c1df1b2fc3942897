/*
 * nt_mgr_control.c - the controller protocol (fuchsia.tracing.controller): CTL_LIST,
 * CTL_SELECT, CTL_START (the bundle file attached), CTL_STOP; the trace it starts runs in
 * nt_mgr_trace.c, which tells it CTL_PROGRESS and CTL_STOPPED (nt_mgr_control_tell).
 *
 * One trace at a time: a second CTL_START is answered CTL_END with the reason. A controller
 * that leaves mid-trace stops it (the bundle is still completed in its file). One that only
 * stops reading for a while keeps its trace: progress it cannot take is skipped, answers
 * that matter wait for its socket to drain (nt_mgr_ctl_out).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nt_mgr_internal.h"

/* The controller cannot be served any more: a real error, or an answer that matters
 * could not even be kept. Its trace stops (nt_mgr_control_gone). */
static void ctl_drop(nt_manager *m, nt_mgr_conn *c, const char *why)
{
	nt_mgr_log(m, "controller pid %d dropped: %s", (int)c->pid, why);
	nt_mgr_control_gone(m, c);
	nt_mgr_conn_close(m, c);
}

static nt_mgr_ctl_out *ctl_out(nt_mgr_conn *c)
{
	if (c->out == NULL)
		c->out = calloc(1, sizeof(*c->out));
	return c->out;
}

int nt_mgr_control_busy(const nt_mgr_conn *c)
{
	return c->out != NULL && (c->out->nowed > 0 || c->out->list != NULL);
}

void nt_mgr_control_free(nt_mgr_conn *c)
{
	if (c->out != NULL)
		free(c->out->list);
	free(c->out);
	c->out = NULL;
}

/* One message now: 1 sent, 0 the socket is full (the controller does not read now: not an
 * error), -1 a real error (the controller is dropped). */
static int try_send(nt_manager *m, nt_mgr_conn *c, const nt_wire_msg *msg)
{
	int err = nt_mgr_send(c->fd, msg, NULL, 0);
	if (err == 0)
		return 1;
	if (err == -EAGAIN || err == -EWOULDBLOCK)
		return 0;
	char why[160];
	snprintf(why, sizeof(why), "sending %s: %s", nt_wire_type_name(msg->type),
		 strerror(-err));
	ctl_drop(m, c, why);
	return -1;
}

/* An answer that matters (CTL_STARTED, CTL_END, CTL_STOPPED): sent now, or kept in order
 * until the socket drains. Only a controller owing more than NT_MGR_CTL_OWED is dropped
 * (it cannot get there by itself: its requests are not read while it owes). */
static void ctl_send(nt_manager *m, nt_mgr_conn *c, const nt_wire_msg *msg)
{
	if (c->closing)
		return;
	if (!nt_mgr_control_busy(c) && try_send(m, c, msg) != 0)
		return; /* sent, or dropped for a real error */
	nt_mgr_ctl_out *o = ctl_out(c);
	if (o == NULL || o->nowed == NT_MGR_CTL_OWED) {
		ctl_drop(m, c, "it does not read its answers");
		return;
	}
	o->owed[o->nowed++] = *msg;
}

static void ctl_end(nt_manager *m, nt_mgr_conn *c, int result, const char *text)
{
	nt_wire_msg msg;
	nt_wire_init(&msg, NT_WIRE_CTL_END);
	msg.a = (uint64_t)(int64_t)result;
	nt_wire_set_text(&msg, text);
	ctl_send(m, c, &msg);
}

/* Owed answers first, then the rest of a list and its CTL_END, as far as the socket takes
 * them. A list of any length is sent whole, at the pace the controller reads it. */
void nt_mgr_control_flush(nt_manager *m, nt_mgr_conn *c)
{
	nt_mgr_ctl_out *o = c->out;
	if (o == NULL)
		return;
	while (o->nowed > 0 && !c->closing) {
		if (try_send(m, c, &o->owed[0]) <= 0)
			return;
		o->nowed--;
		memmove(o->owed, o->owed + 1, (size_t)o->nowed * sizeof(o->owed[0]));
	}
	while (o->list != NULL && o->list_next < o->nlist && !c->closing) {
		const nt_mgr_list_entry *e = &o->list[o->list_next];
		nt_wire_msg msg;
		nt_wire_init(&msg, NT_WIRE_CTL_PROVIDER);
		msg.pid = e->pid;
		msg.a = (uint64_t)e->state;
		nt_wire_set_name(&msg, e->name);
		if (try_send(m, c, &msg) <= 0)
			return;
		o->list_next++;
	}
	if (o->list != NULL && !c->closing) {
		free(o->list);
		o->list = NULL;
		ctl_end(m, c, NT_MGR_RESULT_OK, "");
	}
}

/* The providers as they are now, sent as the controller's socket drains. */
static void ctl_list(nt_manager *m, nt_mgr_conn *c)
{
	nt_mgr_ctl_out *o = ctl_out(c);
	nt_mgr_list_entry *l = calloc((size_t)m->nconns + 1, sizeof(*l));
	if (o == NULL || l == NULL) {
		free(l);
		ctl_end(m, c, NT_MGR_RESULT_IO, "out of memory");
		return;
	}
	int n = 0;
	for (int i = 0; i < m->nconns; i++) {
		nt_mgr_provider *p = m->conns[i].prov;
		if (p == NULL || m->conns[i].closing)
			continue;
		l[n].pid = (uint32_t)p->pid;
		l[n].state = p->state;
		snprintf(l[n].name, sizeof(l[n].name), "%s", p->name);
		n++;
	}
	free(o->list);
	o->list = l;
	o->nlist = n;
	o->list_next = 0;
	nt_mgr_control_flush(m, c);
}

static void ctl_select(nt_manager *m, nt_mgr_conn *c, const nt_wire_msg *msg)
{
	if (m->pending_select_fd != c->fd) {
		m->pending_select_fd = c->fd;
		m->npending_select = 0;
	}
	if (m->npending_select == NT_MGR_MAX_SELECT) {
		ctl_end(m, c, NT_MGR_RESULT_INVALID, "more than 64 provider names selected");
		return;
	}
	nt_wire_str(msg->name, msg->name_len, m->pending_select[m->npending_select++]);
}

/* Checks CTL_START's numbers and file; NULL, or why it is refused. */
static const char *start_problem(nt_manager *m, const nt_wire_msg *msg, int fd, char *why,
				 size_t whylen)
{
	struct stat st;
	nt_arena_layout l;
	uint64_t size = msg->b ? msg->b : nt_default_buffer_bytes((int)msg->a);
	if (m->trace.active)
		return "a trace is already recording (one trace at a time)";
	if (fd < 0)
		return "CTL_START without the output file attached";
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		return "the output attached to CTL_START is not a regular file";
	if (nt_wire_start_disposition(msg->d) > 2) {
		snprintf(why, whylen, "unknown buffer disposition %u",
			 nt_wire_start_disposition(msg->d));
		return why;
	}
	int32_t level = nt_wire_start_compression(msg->d);
	if (level != NT_WIRE_NO_COMPRESSION && !nt_zchunk_level_ok(level)) {
		snprintf(why, whylen, "compression level %d is not one from %d to %d", (int)level,
			 NT_ZCHUNK_LEVEL_MIN, NT_ZCHUNK_LEVEL_MAX);
		return why;
	}
	if (msg->a > NT_MODE_STREAMING) {
		snprintf(why, whylen, "unknown buffering mode %llu", (unsigned long long)msg->a);
		return why;
	}
	if (nt_arena_layout_compute(size, msg->c, &l) != NT_LAYOUT_OK) {
		snprintf(why, whylen, "buffer size %llu with chunk size %llu is not a valid arena "
			 "(64 KiB to 4 GiB; chunks a power of two from 4 to 64 KiB, 2 per half at least)",
			 (unsigned long long)size, (unsigned long long)msg->c);
		return why;
	}
	return NULL;
}

/* The directory of the file behind `fd` (streams are saved beside it), or "". */
static void output_dir(int fd, char *dir, size_t cap)
{
	char link[64];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, dir, cap - 1);
	dir[n > 0 ? n : 0] = '\0';
	char *slash = strrchr(dir, '/');
	if (n <= 0 || dir[0] != '/' || slash == NULL)
		dir[0] = '\0';
	else
		slash[slash == dir ? 1 : 0] = '\0';
}

static void ctl_start(nt_manager *m, nt_mgr_conn *c, const nt_wire_msg *msg, int fd)
{
	char why[256];
	const char *bad = start_problem(m, msg, fd, why, sizeof(why));
	if (bad != NULL) {
		if (fd >= 0)
			close(fd);
		nt_mgr_log(m, "refused CTL_START from pid %d: %s", (int)c->pid, bad);
		ctl_end(m, c, m->trace.active ? NT_MGR_RESULT_STATE : NT_MGR_RESULT_INVALID, bad);
		return;
	}
	nt_mgr_trace *t = &m->trace;
	memset(t, 0, sizeof(*t));
	t->out_fd = fd;
	t->ctl_fd = c->fd;
	t->mode = (int)msg->a;
	t->disposition = (int)nt_wire_start_disposition(msg->d);
	int32_t level = nt_wire_start_compression(msg->d);
	t->compression_level = level == NT_WIRE_NO_COMPRESSION ? 0
			       : level == 0		    ? NT_ZCHUNK_LEVEL_DEFAULT
							    : level;
	t->buffer_size = msg->b ? msg->b : nt_default_buffer_bytes(t->mode);
	t->chunk_size = msg->c;
	nt_wire_str(msg->text, msg->text_len, t->categories);
	if (m->pending_select_fd == c->fd) {
		memcpy(t->select, m->pending_select, sizeof(t->select));
		t->nselect = m->npending_select;
	}
	m->pending_select_fd = -1;
	output_dir(fd, t->out_dir, sizeof(t->out_dir));
	if (nt_mgr_bundle_preamble(m) != 0) {
		close(fd);
		t->out_fd = -1;
		ctl_end(m, c, NT_MGR_RESULT_IO, "cannot write the output file");
		return;
	}
	t->active = 1;
	nt_mgr_log(m, "trace started by pid %d: mode %d, buffer %llu bytes, categories '%s'",
		   (int)c->pid, t->mode, (unsigned long long)t->buffer_size, t->categories);
	for (int i = 0; i < m->nconns; i++) {
		nt_mgr_conn *pc = &m->conns[i];
		if (pc->prov != NULL && !pc->closing && !pc->prov->in_trace &&
		    nt_mgr_provider_selected(m, pc->prov->name))
			nt_mgr_provider_begin(m, pc);
	}
	nt_wire_msg ans;
	nt_wire_init(&ans, NT_WIRE_CTL_STARTED);
	ans.a = t->started;
	t->next_progress_ms = nt_mgr_now_ms() + NT_MGR_PROGRESS_MS;
	ctl_send(m, c, &ans);
}

void nt_mgr_control_message(nt_manager *m, nt_mgr_conn *c, const nt_wire_msg *msg, int fd)
{
	switch (msg->type) {
	case NT_WIRE_CTL_LIST:
		ctl_list(m, c);
		return;
	case NT_WIRE_CTL_SELECT:
		ctl_select(m, c, msg);
		return;
	case NT_WIRE_CTL_START:
		ctl_start(m, c, msg, fd);
		return;
	case NT_WIRE_CTL_STOP:
		if (m->trace.active && m->trace.ctl_fd == c->fd)
			nt_mgr_trace_begin_stop(m);
		else
			ctl_end(m, c, NT_MGR_RESULT_STATE, "no trace of this controller is recording");
		return;
	}
	if (fd >= 0)
		close(fd);
	nt_mgr_log(m, "controller pid %d dropped: it sent %s", (int)c->pid,
		   nt_wire_type_name(msg->type));
	nt_mgr_control_gone(m, c);
	nt_mgr_conn_close(m, c);
}

void nt_mgr_control_gone(nt_manager *m, nt_mgr_conn *c)
{
	if (m->pending_select_fd == c->fd)
		m->pending_select_fd = -1;
	if (!m->trace.active || m->trace.ctl_fd != c->fd)
		return;
	m->trace.ctl_fd = -1;
	if (!m->trace.stopping) {
		nt_mgr_log(m, "the controller left: stopping its trace");
		nt_mgr_trace_begin_stop(m);
	}
}

void nt_mgr_control_tell(nt_manager *m, const nt_wire_msg *msg, int may_skip)
{
	for (int i = 0; i < m->nconns; i++) {
		nt_mgr_conn *c = &m->conns[i];
		if (c->fd != m->trace.ctl_fd || c->closing)
			continue;
		if (!may_skip)
			ctl_send(m, c, msg);
		else if (!nt_mgr_control_busy(c))
			try_send(m, c, msg);
	}
}
