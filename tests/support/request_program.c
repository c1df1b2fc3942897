/* request_program.c - requests followed across threads, as a user would trace them.
 *
 *   request_program N [global|pipe|answer]
 *
 * Records as NANOTRACE* say (nt_start_from_env). Request ids 1..N: the "accept" thread
 * begins each one's async span "request" and a flow "handoff" inside its slice "accept" and
 * queues it; one of 4 "worker" threads takes it and, inside its slice "process", steps the
 * flow and marks the span (async instant); the "answer" thread ends both inside its slice
 * "answer". With "global" the span and the flow use global ids. With "pipe" they do too, and
 * the answering is another process, this program run as "request_program N answer"
 * (posix_spawn: a new image, no fork() of a threaded process), which reads each id from its
 * standard input, a pipe: one request crosses two processes (under trace-record, two
 * sections of one bundle). "serve" answers ids from standard input as "answer" does, inside
 * one slice "serve" open until it closes (exit 0 whatever it read): a test feeds it from a
 * FIFO it controls, to keep a process recording with a span open. Each slice
 * carries the request id as its argument "req", so a test can tell which slice served which
 * request. Exits 0 when every request was answered.
 */
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nanotrace/nanotrace.h>

#define WORKERS 4
#define QCAP 1024

typedef struct queue {
	pthread_mutex_t lock;
	pthread_cond_t nonempty, nonfull;
	uint64_t items[QCAP];
	unsigned head, count;
} queue;

static queue to_worker = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
			   PTHREAD_COND_INITIALIZER, { 0 }, 0, 0 };
static queue to_answer = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
			   PTHREAD_COND_INITIALIZER, { 0 }, 0, 0 };
static uint64_t requests;
static int global;
static int answer_fd = -1; /* "pipe": the write end, to the answering process */

static void put(queue *q, uint64_t v)
{
	pthread_mutex_lock(&q->lock);
	while (q->count == QCAP)
		pthread_cond_wait(&q->nonfull, &q->lock);
	q->items[(q->head + q->count++) % QCAP] = v;
	pthread_cond_signal(&q->nonempty);
	pthread_mutex_unlock(&q->lock);
}

static uint64_t take(queue *q)
{
	pthread_mutex_lock(&q->lock);
	while (q->count == 0)
		pthread_cond_wait(&q->nonempty, &q->lock);
	uint64_t v = q->items[q->head];
	q->head = (q->head + 1) % QCAP;
	q->count--;
	pthread_cond_signal(&q->nonfull);
	pthread_mutex_unlock(&q->lock);
	return v;
}

static void *accept_thread(void *arg)
{
	(void)arg;
	nt_thread_set_name("accept");
	for (uint64_t id = 1; id <= requests; id++) {
		NT_SCOPE("req", "accept", NT_U64("req", id));
		if (global) {
			NT_ASYNC_BEGIN_GLOBAL("req", "request", id);
			NT_FLOW_BEGIN_GLOBAL("req", "handoff", id);
		} else {
			NT_ASYNC_BEGIN("req", "request", id);
			NT_FLOW_BEGIN("req", "handoff", id);
		}
		put(&to_worker, id);
	}
	for (int i = 0; i < WORKERS; i++)
		put(&to_worker, 0); /* stop */
	return NULL;
}

static void *worker_thread(void *arg)
{
	(void)arg;
	nt_thread_set_name("worker");
	for (;;) {
		uint64_t id = take(&to_worker);
		if (id == 0)
			break;
		NT_SCOPE("req", "process", NT_U64("req", id));
		if (global) {
			NT_FLOW_STEP_GLOBAL("req", "handoff", id);
			NT_ASYNC_INSTANT_GLOBAL("req", "request", id);
		} else {
			NT_FLOW_STEP("req", "handoff", id);
			NT_ASYNC_INSTANT("req", "request", id);
		}
		if (answer_fd >= 0) {
			/* 8 bytes: one atomic write to a pipe (at most PIPE_BUF). */
			if (write(answer_fd, &id, sizeof(id)) != (ssize_t)sizeof(id))
				abort();
		} else {
			put(&to_answer, id);
		}
	}
	return NULL;
}

/* The answering process ("answer"): ids from `fd` until it closes. */
static uint64_t answer_from_pipe(int fd)
{
	uint64_t id, answered = 0;
	nt_thread_set_name("answer");
	while (read(fd, &id, sizeof(id)) == (ssize_t)sizeof(id)) {
		NT_SCOPE("req", "answer", NT_U64("req", id));
		NT_FLOW_END_GLOBAL("req", "handoff", id);
		NT_ASYNC_END_GLOBAL("req", "request", id);
		answered++;
	}
	return answered;
}

static void *answer_thread(void *arg)
{
	uint64_t *answered = arg;
	nt_thread_set_name("answer");
	while (*answered < requests) {
		uint64_t id = take(&to_answer);
		NT_SCOPE("req", "answer", NT_U64("req", id));
		if (global) {
			NT_FLOW_END_GLOBAL("req", "handoff", id);
			NT_ASYNC_END_GLOBAL("req", "request", id);
		} else {
			NT_FLOW_END("req", "handoff", id);
			NT_ASYNC_END("req", "request", id);
		}
		++*answered;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2 || (requests = strtoull(argv[1], NULL, 10)) == 0) {
		fprintf(stderr, "usage: request_program N [global]\n");
		return 2;
	}
	int piped = argc > 2 && strcmp(argv[2], "pipe") == 0;
	global = piped || (argc > 2 && strcmp(argv[2], "global") == 0);
	nt_result rc = nt_start_from_env();
	if (rc != NT_OK && rc != NT_DISABLED) {
		fprintf(stderr, "request_program: %s\n", nt_last_error());
		return 1;
	}
	if (argc > 2 && strcmp(argv[2], "answer") == 0)
		return answer_from_pipe(0) == requests ? 0 : 1;
	if (argc > 2 && strcmp(argv[2], "serve") == 0) {
		NT_SCOPE("req", "serve");
		answer_from_pipe(0);
		return 0;
	}
	pid_t child = -1;
	if (piped) {
		int fd[2];
		posix_spawn_file_actions_t fa;
		char *args[] = { argv[0], argv[1], (char *)"answer", NULL };
		if (pipe(fd) != 0 || posix_spawn_file_actions_init(&fa) != 0 ||
		    posix_spawn_file_actions_adddup2(&fa, fd[0], 0) != 0 ||
		    posix_spawn_file_actions_addclose(&fa, fd[1]) != 0 ||
		    posix_spawn(&child, "/proc/self/exe", &fa, NULL, args, environ) != 0) {
			perror("request_program");
			return 1;
		}
		posix_spawn_file_actions_destroy(&fa);
		close(fd[0]);
		answer_fd = fd[1];
	}
	pthread_t acc, ans, w[WORKERS];
	uint64_t answered = 0;
	if (!piped)
		pthread_create(&ans, NULL, answer_thread, &answered);
	for (int i = 0; i < WORKERS; i++)
		pthread_create(&w[i], NULL, worker_thread, NULL);
	pthread_create(&acc, NULL, accept_thread, NULL);
	pthread_join(acc, NULL);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(w[i], NULL);
	if (piped) {
		int status;
		close(answer_fd);
		return waitpid(child, &status, 0) == child && WIFEXITED(status) &&
				       WEXITSTATUS(status) == 0
			       ? 0
			       : 1;
	}
	pthread_join(ans, NULL);
	return answered == requests ? 0 : 1;
}
