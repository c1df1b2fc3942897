/*
 * test_remote_stream.c - streaming with the saver at the other end of a FIFO
 * (nt_stream_start_remote), as the trace manager runs it: a thread here plays the manager
 * with the shared saver (runtime/nt_arena_saver.h) and format/nt_fifo.h packets.
 *
 *   answering_manager_saves_everything  STARTED first, every SAVE_BUFFER answered: the
 *       manager's saved records read back with decoded + dropped == made, each writer's
 *       events in order; the final SAVE_ALL and STOPPED come at stop; nt_finish() says the
 *       stream is the manager's.
 *   silent_manager_costs_at_most_the_stop_budget  a manager that never answers: writers drop
 *       and count, and the stop returns after the 2 s budget, not later.
 *   closed_manager_stops_at_once       a manager that goes away after one answer: no more
 *       requests, drops counted, the stop is immediate.
 *   manager_saving_unasked_frees_slots  a manager that saves as the writers go and answers
 *       no request until they are done: writers reuse each slot once it is saved, not a
 *       rolling half once a request is answered, so twenty times the arena is recorded
 *       with (almost) no drop (runtime/nt_saver_pace.h: why savers save unasked).
 *   blocking_on_an_answering_manager_loses_nothing  blocking on (nt_config.
 *       blocking_timeout_us, 10 s), a manager that answers and saves between requests as
 *       nanotrace-manager does: writers wait for it instead of dropping; every event is
 *       saved, in order, and no wait ended in a drop.
 *   blocking_on_a_silent_manager_waits_once_per_thread  a manager that never answers: each
 *       writer's first wait runs its whole timeout and drops; with no progress since, it
 *       never waits again (waits == timeouts <= writers, time >= waits x timeout).
 *   stop_ends_a_wait_at_once  a writer waiting (10 s timeout) on a silent manager is
 *       released by nt_provider_stop() within the stop's own budget, not the timeout.
 *   a_saver_behind_is_asked_before_a_half_fills  a manager that saves only when asked: once
 *       the writers are a sixteenth of the arena ahead of it, they wake the provider, which
 *       asks for a save of the half being filled (runtime/nt_saver_pace.h,
 *       NT_SAVER_NUDGE_DIV), not only once the half is full; no half counts as saved for it.
 *   signal_during_a_wait_small_event, _large_event  a signal handler's event on a thread
 *       waiting for a chunk is dropped and counted: every saved chunk's count agrees with
 *       its records, decoded + dropped == made.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tests/support/nt_cmocka.h"
#include <nanotrace/nanotrace.h>
#include "writer/core/nt_internal.h" /* nt_stream_start_remote, the session's arena */
#include "format/nt_fifo.h"
#include "tests/support/nt_saver_test.h"

/* ANSWER_AND_POLL: answers every request and, between them, saves every millisecond, as
 * nanotrace-manager's saver does (manager/core/nt_mgr_saver.c): a chunk a writer closed
 * after the request for its half was answered is saved then, not at the next request,
 * which writers waiting for that very slot would never make. */
enum { ANSWER, SILENT, CLOSE_AFTER_ONE, SAVE_UNASKED, ANSWER_AND_POLL };

typedef struct fake_manager {
	int fd;
	int behaviour;
	nt_arena_saver *saver;
	test_sink out;
	unsigned started, save_requests, save_all, stopped, out_of_order;
	int writers_done;
} fake_manager;

static void *manager_main(void *arg)
{
	fake_manager *m = arg;
	const nt_saver_output out = test_sink_output(&m->out);
	nt_fifo_packet pk;
	for (;;) {
		if (m->behaviour == ANSWER_AND_POLL) {
			struct pollfd p = { .fd = m->fd, .events = POLLIN };
			if (poll(&p, 1, 1) == 0) {
				if (nt_arena_saver_save(m->saver, &out, NULL) != 0)
					break;
				continue;
			}
		}
		if (recv(m->fd, &pk, sizeof(pk), 0) != (ssize_t)sizeof(pk))
			break;
		if (pk.request == NT_FIFO_STARTED) {
			m->out_of_order += m->started || m->save_requests;
			m->started += pk.data32 == NT_FIFO_PROTOCOL_VERSION;
			continue;
		}
		if (pk.request == NT_FIFO_STOPPED) {
			m->stopped++;
			break;
		}
		if (pk.request != NT_FIFO_SAVE_BUFFER) {
			m->out_of_order++;
			continue;
		}
		m->out_of_order += !m->started;
		__atomic_fetch_add(&m->save_requests, 1, __ATOMIC_RELEASE); /* read while it runs */
		m->save_all += pk.data32 == NT_FIFO_SAVE_ALL;
		if (m->behaviour == SILENT)
			continue;
		while (m->behaviour == SAVE_UNASKED && !__atomic_load_n(&m->writers_done, __ATOMIC_ACQUIRE))
			usleep(1000); /* answers only once the writers are done */
		if (nt_arena_saver_save(m->saver, &out, NULL) != 0)
			break;
		nt_fifo_packet answer = { NT_FIFO_BUFFER_SAVED, 0, pk.data32, pk.data64 };
		if (send(m->fd, &answer, sizeof(answer), MSG_NOSIGNAL) != (ssize_t)sizeof(answer))
			break;
		if (m->behaviour == CLOSE_AFTER_ONE)
			break;
	}
	close(m->fd);
	return NULL;
}

#define WRITERS 2

static uint64_t per_writer;
/* SAVE_UNASKED: the writers save for the manager (one at a time), every 32 events: a chunk
 * holds about 120 of these. */
static fake_manager *saving_manager;
static pthread_mutex_t save_lock = PTHREAD_MUTEX_INITIALIZER;

static void save_unasked(void)
{
	const nt_saver_output out = test_sink_output(&saving_manager->out);
	pthread_mutex_lock(&save_lock);
	int rc = nt_arena_saver_save(saving_manager->saver, &out, NULL);
	pthread_mutex_unlock(&save_lock);
	assert_int_equal(rc, 0);
}

static void *writer_main(void *arg)
{
	uint32_t t = (uint32_t)(uintptr_t)arg;
	for (uint64_t i = 0; i < per_writer; i++) {
		NT_INSTANT("remote", "ev", NT_U32("t", t), NT_U64("seq", i));
		if (saving_manager != NULL && i % 32 == 31)
			save_unasked();
		else if (saving_manager == NULL && i % 512 == 0)
			usleep(50); /* the manager keeps up with some of it */
	}
	return NULL;
}

static double seconds_since(const struct timespec *t0)
{
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

typedef struct run {
	char path[256];
	fake_manager m;
	pthread_t manager;
	double stop_seconds;
	nt_stats stats;
} run;

static long long blocking_us; /* nt_config.blocking_timeout_us of the next record() */
static size_t arena_bytes;    /* nt_config.buffer_size of the next record(): 0 = 64 KiB */

/* The session's blocked_* header totals. */
static void blocked_totals(uint64_t *waits, uint64_t *timeouts, uint64_t *ns)
{
	*waits = nt_load_64(nt_S.blocked_waits);
	*timeouts = nt_load_64(nt_S.blocked_timeouts);
	*ns = nt_load_64(nt_S.blocked_ns);
}

/* Starts a streaming session whose saves go to a fake manager behaving as `behaviour` at
 * the other end of sv[0]. */
static void record_start(run *r, int behaviour, const char *tag, int sv[2])
{
	memset(r, 0, sizeof(*r));
	test_tmp_path(r->path, sizeof(r->path), tag);
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.path = r->path;
	cfg.mode = NT_MODE_STREAMING;
	cfg.buffer_size = arena_bytes ? arena_bytes : 64u << 10;
	cfg.chunk_size = 4096;
	cfg.blocking_timeout_us = blocking_us ? blocking_us : NT_BLOCKING_OFF;
	assert_int_equal(nt_provider_initialize(&cfg), NT_OK);
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	r->m.fd = sv[1];
	r->m.behaviour = behaviour;
	r->m.out.keep = 1;
	r->m.saver = nt_arena_saver_new(nt_S.map, &nt_S.layout, 0);
	assert_non_null(r->m.saver);
	/* The remote stream first: nt_provider_start finds streaming running and keeps it. */
	assert_int_equal(nt_stream_start_remote(1, sv[0]), NT_OK);
	assert_int_equal(pthread_create(&r->manager, NULL, manager_main, &r->m), 0);
	assert_int_equal(nt_provider_start(NT_BUFFER_RETAIN, NULL), NT_OK);
}

/* A streaming session whose saves go to a fake manager behaving as `behaviour`; writers
 * write, then the run stops. The arena stays mapped (the session is only stopped). */
static void record(run *r, int behaviour, const char *tag)
{
	int sv[2];
	record_start(r, behaviour, tag, sv);
	saving_manager = behaviour == SAVE_UNASKED ? &r->m : NULL;
	pthread_t w[WRITERS];
	for (uintptr_t t = 0; t < WRITERS; t++)
		assert_int_equal(pthread_create(&w[t], NULL, writer_main, (void *)t), 0);
	for (int t = 0; t < WRITERS; t++)
		pthread_join(w[t], NULL);
	__atomic_store_n(&r->m.writers_done, 1, __ATOMIC_RELEASE);
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(nt_provider_stop(), NT_OK);
	r->stop_seconds = seconds_since(&t0);
	nt_get_stats(&r->stats);
	pthread_join(r->manager, NULL);
	close(sv[0]); /* the FIFO is the caller's: the stream code never closes it */
}

/* The session ends: its stream is the manager's, so nt_finish() writes nothing. */
static void end(run *r)
{
	assert_int_equal(nt_finish(NULL), NT_ERR_STATE);
	assert_non_null(strstr(nt_last_error(), "trace manager"));
	nt_arena_saver_free(r->m.saver);
	free(r->m.out.data);
	unlink(r->path);
}

/* The manager's records behind a header made from the arena's: decoded + dropped == made,
 * each writer's events in order. */
static nt_archive_info read_back_in_order(run *r, test_trace *tr)
{
	assert_int_equal(test_read_saved(nt_S.map, nt_arena_saver_events(r->m.saver), r->m.out.data,
					 r->m.out.len, NT_ORDER_STREAM, tr), 0);
	assert_msg(tr->errors == 0, "%s", tr->first_error);
	nt_archive_info info = tr->info;
	uint64_t made = WRITERS * per_writer;
	assert_msg(tr->n + info.events_dropped == made, "decoded %zu + dropped %llu != made %llu",
		   tr->n, (unsigned long long)info.events_dropped, (unsigned long long)made);
	int64_t last[WRITERS] = { -1, -1 };
	for (size_t i = 0; i < tr->n; i++) {
		uint64_t t = tr->ev[i].args[0].value.u64, seq = tr->ev[i].args[1].value.u64;
		assert_true(t < WRITERS);
		assert_msg((int64_t)seq > last[t], "writer %llu: seq %llu after %lld",
			   (unsigned long long)t, (unsigned long long)seq, (long long)last[t]);
		last[t] = (int64_t)seq;
	}
	return info;
}

static void answering_manager_saves_everything(void **state)
{
	(void)state;
	per_writer = 40000;
	run r;
	record(&r, ANSWER, "remote-answer");
	assert_int_equal(r.m.started, 1);
	assert_int_equal(r.m.out_of_order, 0);
	assert_int_equal(r.m.stopped, 1);
	assert_int_equal(r.m.save_all, 1);
	assert_true(r.m.save_requests > 2);
	assert_int_equal(*nt_S.buffers_saved, r.m.save_requests - 1);

	test_trace tr;
	nt_archive_info info = read_back_in_order(&r, &tr);
	print_message("%u saves, %zu events saved, %llu dropped, stop %.3f s\n",
		      r.m.save_requests, tr.n, (unsigned long long)info.events_dropped,
		      r.stop_seconds);
	test_trace_free(&tr);
	end(&r);
}

static void silent_manager_costs_at_most_the_stop_budget(void **state)
{
	(void)state;
	per_writer = 20000;
	run r;
	record(&r, SILENT, "remote-silent");
	assert_int_equal(r.m.save_requests, 1); /* one request in flight, never answered */
	assert_int_equal(r.m.stopped, 1);
	assert_true(r.stats.events_dropped > 0);
	assert_int_equal(r.stats.events_dropped, r.stats.dropped_rolling_full);
	assert_msg(r.stop_seconds >= 1.5 && r.stop_seconds < 4.0,
		   "the stop took %.3f s; the budget is 2 s", r.stop_seconds);
	end(&r);
}

static void closed_manager_stops_at_once(void **state)
{
	(void)state;
	per_writer = 20000;
	run r;
	record(&r, CLOSE_AFTER_ONE, "remote-closed");
	assert_int_equal(r.m.save_requests, 1);
	assert_int_equal(*nt_S.buffers_saved, 1);
	assert_true(r.stats.events_dropped > 0);
	assert_msg(r.stop_seconds < 1.0, "the stop took %.3f s", r.stop_seconds);
	end(&r);
}

static void manager_saving_unasked_frees_slots(void **state)
{
	(void)state;
	per_writer = 20000; /* 40,000 events of 32 bytes: about 20 times the 64 KiB arena */
	run r;
	record(&r, SAVE_UNASKED, "remote-unasked");
	assert_int_equal(r.m.out_of_order, 0);
	assert_int_equal(r.m.save_all, 1);
	/* Writers never wait, so one that comes round to a chunk its peer closed a moment ago,
	 * before the next save, drops (the peer was descheduled for a whole lap: seen under
	 * TSan). Gated by the rolling half's answer instead, 37,634 of the 40,000 dropped. */
	assert_msg(r.stats.events_dropped < WRITERS * per_writer / 100, "%llu dropped",
		   (unsigned long long)r.stats.events_dropped);
	test_trace tr;
	nt_archive_info info = read_back_in_order(&r, &tr); /* decoded + dropped == made */
	assert_int_equal(info.events_dropped, r.stats.events_dropped);
	print_message("%u requests answered after the writers; %zu events saved\n",
		      r.m.save_requests, tr.n);
	test_trace_free(&tr);
	saving_manager = NULL;
	end(&r);
}

static void blocking_on_an_answering_manager_loses_nothing(void **state)
{
	(void)state;
	per_writer = 40000;
	blocking_us = NT_BLOCKING_TIMEOUT_MAX_US;
	run r;
	record(&r, ANSWER_AND_POLL, "remote-blocking");
	blocking_us = 0;
	uint64_t waits, timeouts, ns;
	blocked_totals(&waits, &timeouts, &ns);
	assert_msg(r.stats.events_dropped == 0 && timeouts == 0,
		   "%llu dropped (rolling full %llu, durable %llu, stopped %llu); %llu waits, %llu "
		   "timed out, %.3f ms", (unsigned long long)r.stats.events_dropped,
		   (unsigned long long)r.stats.dropped_rolling_full,
		   (unsigned long long)r.stats.dropped_durable_full,
		   (unsigned long long)r.stats.dropped_stopped, (unsigned long long)waits,
		   (unsigned long long)timeouts, (double)ns / 1e6);
	test_trace tr;
	read_back_in_order(&r, &tr); /* decoded + dropped == made: all of them */
	assert_int_equal(tr.n, WRITERS * per_writer);
	print_message("%zu events saved; %llu waits, %.3f ms blocked\n", tr.n,
		      (unsigned long long)waits, (double)ns / 1e6);
	test_trace_free(&tr);
	end(&r);
}

static void blocking_on_a_silent_manager_waits_once_per_thread(void **state)
{
	(void)state;
	per_writer = 20000;
	blocking_us = 2000;
	run r;
	record(&r, SILENT, "remote-blocking-silent");
	blocking_us = 0;
	uint64_t waits, timeouts, ns;
	blocked_totals(&waits, &timeouts, &ns);
	print_message("%llu waits, %llu ended in a drop, %.3f ms; %llu dropped\n",
		      (unsigned long long)waits, (unsigned long long)timeouts, (double)ns / 1e6,
		      (unsigned long long)r.stats.events_dropped);
	assert_true(r.stats.events_dropped > 0);
	assert_int_equal(r.stats.events_dropped, r.stats.dropped_rolling_full);
	/* Nothing is ever saved, so no wait can end with a chunk, and none starts again. */
	assert_true(waits >= 1 && waits <= WRITERS);
	assert_int_equal(timeouts, waits);
	assert_msg(ns >= waits * 2000000u, "%llu ns for %llu waits of 2 ms each",
		   (unsigned long long)ns, (unsigned long long)waits);
	end(&r);
}

/* Writes until it has waited (and been released). */
static void a_saver_behind_is_asked_before_a_half_fills(void **state)
{
	(void)state;
	arena_bytes = 1u << 20; /* 4 KiB chunks: a sixteenth is a dozen of them */
	run r;
	int sv[2];
	record_start(&r, ANSWER, "remote-nudge", sv);
	arena_bytes = 0;
	const uint64_t cph = nt_S.chunks_per_half;
	assert_msg(nt_S.nslots >= 4 * 16, "%u slots", nt_S.nslots);
	per_writer = 0;
	while (nt_load_64(&nt_S.next_seq) < cph / 2) { /* a quarter of the arena, no half */
		NT_INSTANT("remote", "ev", NT_U32("t", 0), NT_U64("seq", per_writer));
		per_writer++;
	}
	unsigned asked = 0;
	for (int ms = 0; ms < 2000 && asked == 0; ms++) {
		asked = __atomic_load_n(&r.m.save_requests, __ATOMIC_ACQUIRE);
		usleep(1000);
	}
	assert_msg(asked > 0, "%llu chunks of a %llu-chunk half claimed, the saver not asked",
		   (unsigned long long)nt_load_64(&nt_S.next_seq), (unsigned long long)cph);
	uint64_t halves = *nt_S.buffers_saved;
	assert_int_equal(nt_provider_stop(), NT_OK);
	pthread_join(r.manager, NULL);
	close(sv[0]);
	assert_int_equal(halves, 0); /* an early save counts no half */
	assert_int_equal(r.m.out_of_order, 0);
	test_trace tr;
	assert_int_equal(test_read_saved(nt_S.map, nt_arena_saver_events(r.m.saver), r.m.out.data,
					 r.m.out.len, NT_ORDER_STREAM, &tr), 0);
	assert_msg(tr.errors == 0, "%s", tr.first_error);
	assert_msg(tr.n == per_writer && tr.info.events_dropped == 0,
		   "%zu of %llu events saved, %llu dropped", tr.n, (unsigned long long)per_writer,
		   (unsigned long long)tr.info.events_dropped);
	print_message("%u saves asked for %llu events\n", r.m.save_requests,
		      (unsigned long long)per_writer);
	test_trace_free(&tr);
	end(&r);
}

static void *waiting_writer(void *arg)
{
	(void)arg;
	for (uint64_t i = 0; i < 1000000 && nt_load_64(nt_S.blocked_waits) == 0; i++)
		NT_INSTANT("remote", "ev", NT_U32("t", 0), NT_U64("seq", i));
	return NULL;
}

static void stop_ends_a_wait_at_once(void **state)
{
	(void)state;
	blocking_us = NT_BLOCKING_TIMEOUT_MAX_US;
	run r;
	int sv[2];
	record_start(&r, SILENT, "remote-blocking-stop", sv);
	blocking_us = 0;
	pthread_t w;
	assert_int_equal(pthread_create(&w, NULL, waiting_writer, NULL), 0);
	/* Until the writer sleeps in its wait (it fills the 64 KiB arena first). */
	for (int ms = 0; ms < 60000 && __atomic_load_n(&nt_S.block_waiters, __ATOMIC_SEQ_CST) == 0;
	     ms++)
		usleep(1000);
	assert_true(__atomic_load_n(&nt_S.block_waiters, __ATOMIC_SEQ_CST) > 0);
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(nt_provider_stop(), NT_OK);
	pthread_join(w, NULL);
	double seconds = seconds_since(&t0);
	pthread_join(r.manager, NULL);
	close(sv[0]);
	uint64_t waits, timeouts, ns;
	blocked_totals(&waits, &timeouts, &ns);
	/* The stop waits up to 2 s for the silent manager; the wait's own timeout is 10 s. */
	assert_msg(seconds < 5.0, "the writer was released %.3f s after the stop", seconds);
	assert_int_equal(waits, 1);
	assert_int_equal(timeouts, 1); /* ended without a chunk: the event dropped */
	end(&r);
}

/* A signal handler on the waiting thread makes an event (as Trace2's fatal-signal hook
 * does): the thread's last chunk is closed and no new one is claimed yet, so the event is
 * dropped and counted, never written past the closed chunk's records (its count would then
 * lie) nor into a chunk of its own that the interrupted wait would orphan. `handler_bytes`:
 * the handler's string, small (it would fit the closed chunk's room) or too large for it. */
static volatile sig_atomic_t handler_ran; /* by the handler, on the waiting thread */
static int helper_done;                    /* by signal_the_waiter: atomic */
static size_t handler_bytes;

static void on_usr1(int sig)
{
	(void)sig;
	static char text[1201];
	memset(text, 'h', handler_bytes);
	text[handler_bytes] = '\0';
	NT_INSTANT("sig", "handler", NT_STR("h", text));
	handler_ran++;
}

typedef struct signaller {
	run *r;
	pthread_t waiter;
} signaller;

/* Signals the waiter once it sleeps in its wait, then saves what the silent manager holds,
 * which frees the slots and ends the wait. */
static void *signal_the_waiter(void *arg)
{
	signaller *g = arg;
	for (int ms = 0; ms < 60000 && __atomic_load_n(&nt_S.block_waiters, __ATOMIC_SEQ_CST) == 0;
	     ms++)
		usleep(1000);
	usleep(5000);
	pthread_kill(g->waiter, SIGUSR1);
	usleep(20000);
	const nt_saver_output out = test_sink_output(&g->r->m.out);
	assert_int_equal(nt_arena_saver_save(g->r->m.saver, &out, NULL), 0);
	__atomic_store_n(&helper_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void signal_during_a_wait(size_t bytes)
{
	handler_bytes = bytes;
	handler_ran = 0;
	__atomic_store_n(&helper_done, 0, __ATOMIC_RELAXED);
	blocking_us = 3000000;
	run r;
	int sv[2];
	record_start(&r, SILENT, "remote-signal", sv);
	blocking_us = 0;
	assert_int_equal(nt_arena_saver_set_compression(r.m.saver, 3, 1), 0);
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, &old);
	signaller g = { &r, pthread_self() };
	pthread_t h;
	assert_int_equal(pthread_create(&h, NULL, signal_the_waiter, &g), 0);
	char big[401];
	memset(big, 'x', 400);
	big[400] = '\0';
	uint64_t made = 0;
	for (int after = 0; after < 3; made++) {
		NT_INSTANT("remote", "big", NT_STR("s", big));
		after += __atomic_load_n(&helper_done, __ATOMIC_ACQUIRE) != 0;
	}
	pthread_join(h, NULL);
	assert_int_equal(nt_provider_stop(), NT_OK);
	pthread_join(r.manager, NULL);
	close(sv[0]);
	sigaction(SIGUSR1, &old, NULL);
	const nt_saver_output out = test_sink_output(&r.m.out);
	assert_int_equal(nt_arena_saver_save_all(r.m.saver, &out, NULL), 0);
	assert_int_equal(handler_ran, 1);
	made += handler_ran;
	test_trace tr;
	assert_int_equal(test_read_saved(nt_S.map, nt_arena_saver_events(r.m.saver), r.m.out.data,
					 r.m.out.len, NT_ORDER_STREAM, &tr), 0);
	assert_msg(tr.errors == 0, "%s", tr.first_error);
	assert_msg(tr.n + tr.info.events_dropped == made, "decoded %zu + dropped %llu, made %llu",
		   tr.n, (unsigned long long)tr.info.events_dropped, (unsigned long long)made);
	test_trace_free(&tr);
	end(&r);
}

static void signal_during_a_wait_small_event(void **state)
{
	(void)state;
	signal_during_a_wait(8);
}

static void signal_during_a_wait_large_event(void **state)
{
	(void)state;
	signal_during_a_wait(1200);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(answering_manager_saves_everything),
		cmocka_unit_test(silent_manager_costs_at_most_the_stop_budget),
		cmocka_unit_test(closed_manager_stops_at_once),
		cmocka_unit_test(manager_saving_unasked_frees_slots),
		cmocka_unit_test(blocking_on_an_answering_manager_loses_nothing),
		cmocka_unit_test(blocking_on_a_silent_manager_waits_once_per_thread),
		cmocka_unit_test(stop_ends_a_wait_at_once),
		cmocka_unit_test(a_saver_behind_is_asked_before_a_half_fills),
		cmocka_unit_test(signal_during_a_wait_small_event),
		cmocka_unit_test(signal_during_a_wait_large_event),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
