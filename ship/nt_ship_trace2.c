/*
 * nt_ship_trace2.c - nanotrace-manager's --trace2-event (nt_ship_trace2.h): a job queue the
 * manager's loop fills (start a provider's forwarder, end it) and one thread that works it
 * off in order, so that a connect to a full listen queue or a stalled listener's last poll
 * delays other providers' lines, never the manager. The forwarders are the reader's
 * (nt_trace2_forward_start / _stop), the same that NANOTRACE_EVENT runs in a program.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nt_ship_trace2.h"
#include "reader/include/nanotrace/nanotrace_reader.h"
#include "runtime/nt_sock.h"
#include "runtime/nt_term_escape.h"
#include "runtime/nt_trace2_forward.h"

typedef struct job {
	struct job *next;
	uint32_t id;
	int fd; /* a start: the buffer's duplicate; -1: an end */
	char name[256];
} job;

/* A provider's running forwarder, and the descriptor of the buffer it follows: each poll
 * opens /proc/self/fd/<fd> again, so fd stays open (and that number this buffer's) until
 * the forwarder has ended. */
typedef struct forwarding {
	struct forwarding *next;
	uint32_t id;
	int fd;
	nt_trace2_forwarder *fw;
} forwarding;

struct nt_ship_trace2 {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	job *head, *tail;
	int stopping;
	forwarding *running; /* the thread's alone */
	char *target;
};

static void end_forwarding(nt_ship_trace2 *t, uint32_t id)
{
	for (forwarding **p = &t->running; *p != NULL; p = &(*p)->next) {
		if ((*p)->id == id) {
			forwarding *f = *p;
			*p = f->next;
			nt_trace2_forward_stop(f->fw, NT_TRACE2_FORWARD_SEND_TIMEOUT_MS);
			close(f->fd);
			free(f);
			return;
		}
	}
}

/* Takes j->fd: it is closed here, or when the forwarder ends. */
static void start_forwarding(nt_ship_trace2 *t, const job *j)
{
	char path[64], who[400], shown[256];
	end_forwarding(t, j->id);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", j->fd);
	nt_term_escape(shown, sizeof(shown), j->name, strlen(j->name));
	snprintf(who, sizeof(who), "nanotrace-manager: --trace2-event '%s', provider %u (%s)",
		 t->target, j->id, shown);
	forwarding *f = malloc(sizeof(*f));
	nt_trace2_forwarder *fw = f ? nt_trace2_forward_start(path, t->target, who,
							       NT_TRACE2_FORWARD_INTERVAL_MS)
				    : NULL;
	if (fw == NULL) {
		free(f); /* nt_trace2_forward_start said why */
		close(j->fd);
		return;
	}
	f->id = j->id;
	f->fd = j->fd;
	f->fw = fw;
	f->next = t->running;
	t->running = f;
}

static void *worker(void *arg)
{
	nt_ship_trace2 *t = arg;
	pthread_mutex_lock(&t->lock);
	for (;;) {
		while (t->head == NULL && !t->stopping)
			pthread_cond_wait(&t->wake, &t->lock);
		job *j = t->head;
		if (j == NULL)
			break;
		t->head = j->next;
		if (t->head == NULL)
			t->tail = NULL;
		pthread_mutex_unlock(&t->lock);
		if (j->fd >= 0) {
			start_forwarding(t, j);
		} else {
			end_forwarding(t, j->id);
		}
		free(j);
		pthread_mutex_lock(&t->lock);
	}
	pthread_mutex_unlock(&t->lock);
	while (t->running != NULL)
		end_forwarding(t, t->running->id);
	return NULL;
}

nt_ship_trace2 *nt_ship_trace2_new(const char *target, char *why, size_t whylen)
{
	int type;
	const char *path, *bad = NULL;
	int rc = target ? nt_sock_target_parse(target, &type, &path, &bad) : -EINVAL;
	if (rc != 0) {
		snprintf(why, whylen, "'%s': %s", target ? target : "",
			 rc == -ENAMETOOLONG ? "the path is too long for a Unix socket"
			 : bad ? bad : "not af_unix:[stream:|dgram:]<absolute path>");
		return NULL;
	}
	nt_ship_trace2 *t = calloc(1, sizeof(*t));
	if (t == NULL || (t->target = strdup(target)) == NULL) {
		free(t);
		snprintf(why, whylen, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->wake, NULL);
	if ((rc = pthread_create(&t->thread, NULL, worker, t)) != 0) {
		snprintf(why, whylen, "starting its thread: %s", strerror(rc));
		pthread_cond_destroy(&t->wake);
		pthread_mutex_destroy(&t->lock);
		free(t->target);
		free(t);
		return NULL;
	}
	return t;
}

static void queue(nt_ship_trace2 *t, job *j)
{
	pthread_mutex_lock(&t->lock);
	if (t->tail)
		t->tail->next = j;
	else
		t->head = j;
	t->tail = j;
	pthread_cond_signal(&t->wake);
	pthread_mutex_unlock(&t->lock);
}

void nt_ship_trace2_start(nt_ship_trace2 *t, uint32_t id, int memfd, const char *name)
{
	if (t == NULL)
		return;
	job *j = calloc(1, sizeof(*j));
	int fd = j ? fcntl(memfd, F_DUPFD_CLOEXEC, 3) : -1;
	if (fd < 0) {
		fprintf(stderr, "nanotrace-manager: --trace2-event: provider %u not forwarded: %s\n",
			id, j ? strerror(errno) : "out of memory");
		free(j);
		return;
	}
	j->id = id;
	j->fd = fd;
	snprintf(j->name, sizeof(j->name), "%s", name ? name : "");
	queue(t, j);
}

void nt_ship_trace2_end(nt_ship_trace2 *t, uint32_t id)
{
	if (t == NULL)
		return;
	job *j = calloc(1, sizeof(*j));
	if (j == NULL) {
		/* its forwarder ends at nt_ship_trace2_free, or when the provider's process does */
		fprintf(stderr, "nanotrace-manager: --trace2-event: provider %u: out of memory\n", id);
		return;
	}
	j->id = id;
	j->fd = -1;
	queue(t, j);
}

void nt_ship_trace2_free(nt_ship_trace2 *t)
{
	if (t == NULL)
		return;
	pthread_mutex_lock(&t->lock);
	t->stopping = 1;
	pthread_cond_signal(&t->wake);
	pthread_mutex_unlock(&t->lock);
	pthread_join(t->thread, NULL);
	pthread_cond_destroy(&t->wake);
	pthread_mutex_destroy(&t->lock);
	free(t->target);
	free(t);
}
