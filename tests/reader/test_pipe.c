/*
 * test_pipe.c - the helper that does a sequence of jobs ahead of the thread that needs
 * their results in order (reader/decode/nt_reader_pipe.c; linked from the static library,
 * it is not exported): every job's result reaches the consumer exactly once, computed by
 * the helper or by the consumer itself; every result the helper made and the consumer did
 * not take is dropped exactly once; nothing outlives nt_pipe_stop. Under fast jobs, jobs
 * slow enough that the consumer gives up waiting for them, a consumer that skips jobs, a
 * slow consumer (the helper naps on a full window until a slot is free, its naps growing
 * while the consumer pauses), a stop in the middle
 * with results ready and taken, a helper held to the consumer's one CPU (stopped: it runs
 * instead of the consumer, not beside it), and bad arguments. TSan (the suite's tsan build) checks
 * the protocol's atomics; ASan that no result leaks.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/support/nt_cmocka.h"
#include "reader/decode/nt_reader_pipe.h"

typedef struct job_result {
	uint32_t job;
	uint64_t value;
	uint64_t *resource; /* allocated by the job, freed by the one who uses or drops it */
	char *buffer;       /* the slot's, reused from job to job, freed by free_slot */
} job_result;

typedef struct jobs {
	uint32_t n;
	uint32_t slow_every;     /* 0: none; else every such job sleeps slow_us */
	unsigned slow_us;
	uint64_t burn_ns;        /* every job (the helper's or the consumer's) runs this long */
	uint32_t *helper_runs;   /* per job, atomically */
	uint32_t *drops;         /* per job, atomically */
	uint32_t slots_freed;
	uint32_t bad;            /* the helper found a slot's last result still in it */
} jobs;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A job's work, on a CPU: a loop, not a sleep. */
static void burn(uint64_t ns)
{
	for (uint64_t end = now_ns() + ns; now_ns() < end;)
		;
}

static uint64_t value_of(uint32_t i)
{
	return (uint64_t)i * 0x9e3779b97f4a7c15u ^ 0x5bd1e995u;
}

static void run(void *ctx, uint32_t i, void *slot)
{
	jobs *j = ctx;
	job_result *r = slot;
	/* (on the helper thread: a failure is counted, cmocka's asserts are the main's) */
	if (r->resource != NULL) /* dropped or taken before the slot's next job */
		__atomic_add_fetch(&j->bad, 1, __ATOMIC_RELAXED);
	if (r->buffer == NULL && (r->buffer = malloc(64)) == NULL)
		abort();
	snprintf(r->buffer, 64, "job %u", i);
	if (j->slow_every != 0 && i % j->slow_every == 0)
		usleep(j->slow_us);
	burn(j->burn_ns);
	r->job = i;
	r->value = value_of(i);
	if ((r->resource = malloc(sizeof(*r->resource))) == NULL)
		abort();
	*r->resource = value_of(i);
	__atomic_add_fetch(&j->helper_runs[i], 1, __ATOMIC_RELAXED);
}

static void drop(void *ctx, void *slot)
{
	jobs *j = ctx;
	job_result *r = slot;
	if (r->resource == NULL)
		return; /* the consumer took it */
	__atomic_add_fetch(&j->drops[r->job], 1, __ATOMIC_RELAXED);
	free(r->resource);
	r->resource = NULL;
}

static void free_slot(void *ctx, void *slot)
{
	jobs *j = ctx;
	job_result *r = slot;
	assert_null(r->resource);
	free(r->buffer);
	j->slots_freed++;
}

static const nt_pipe_ops ops = { run, drop, free_slot };

static jobs *jobs_new(uint32_t n)
{
	jobs *j = calloc(1, sizeof(*j));
	j->n = n;
	j->helper_runs = calloc(n, sizeof(uint32_t));
	j->drops = calloc(n, sizeof(uint32_t));
	assert_true(j->helper_runs != NULL && j->drops != NULL);
	return j;
}

static void jobs_free(jobs *j)
{
	free(j->helper_runs);
	free(j->drops);
	free(j);
}

typedef struct outcome {
	uint32_t taken, own;
} outcome;

/* The consumer: asks for the jobs i % ask_every == 0 in order (sleeping `consumer_us`
 * after each); checks each result, takes its resource; counts. `stop_after`: stops the
 * pipe after that many jobs asked, the last one taken and not given back. */
static outcome consume(nt_pipe *p, jobs *j, uint32_t ask_every, unsigned consumer_us,
		       uint32_t stop_after, uint8_t *taken)
{
	outcome o = { 0, 0 };
	uint32_t asked = 0;
	for (uint32_t i = 0; i < j->n; i += ask_every) {
		job_result *r = nt_pipe_take(p, i);
		if (r != NULL) {
			assert_int_equal(r->job, i);
			assert_true(r->value == value_of(i));
			assert_non_null(r->resource);
			assert_true(*r->resource == value_of(i));
			char want[64];
			snprintf(want, sizeof(want), "job %u", i);
			assert_string_equal(r->buffer, want);
			free(r->resource);
			r->resource = NULL;
			taken[i] = 1;
			o.taken++;
		} else {
			o.own++; /* the consumer's own value_of(i) */
			burn(j->burn_ns);
		}
		if (++asked == stop_after)
			return o; /* not given back: the stop drops what is left */
		if (r != NULL)
			nt_pipe_done(p, i);
		if (consumer_us != 0)
			usleep(consumer_us);
	}
	return o;
}

/* Each job the helper ran was taken or dropped, exactly once; none ran twice. */
static void check_accounting(const jobs *j, const uint8_t *taken, uint32_t window)
{
	for (uint32_t i = 0; i < j->n; i++) {
		assert_msg(j->helper_runs[i] <= 1, "job %u ran %u times", i, j->helper_runs[i]);
		assert_msg(j->helper_runs[i] == (uint32_t)taken[i] + j->drops[i],
			   "job %u: ran %u, taken %u, dropped %u", i, j->helper_runs[i], taken[i],
			   j->drops[i]);
	}
	assert_int_equal(j->slots_freed, window);
	assert_int_equal(j->bad, 0);
}

static void run_case(uint32_t n, uint32_t window, uint32_t slow_every, unsigned slow_us,
		     uint32_t ask_every, unsigned consumer_us, uint32_t stop_after,
		     outcome *out)
{
	jobs *j = jobs_new(n);
	j->slow_every = slow_every;
	j->slow_us = slow_us;
	uint8_t *taken = calloc(n, 1);
	nt_pipe *p = nt_pipe_start(&ops, j, n, window, sizeof(job_result));
	assert_non_null(p);
	outcome o = consume(p, j, ask_every, consumer_us, stop_after, taken);
	nt_pipe_stop(p);
	check_accounting(j, taken, window);
	uint32_t asked = stop_after ? stop_after : (n + ask_every - 1) / ask_every;
	assert_int_equal(o.taken + o.own, asked);
	if (out != NULL)
		*out = o;
	free(taken);
	jobs_free(j);
}

static void test_fast_jobs(void **state)
{
	(void)state;
	run_case(200000, 64, 0, 0, 1, 0, 0, NULL);
	run_case(50000, 2, 0, 0, 1, 0, 0, NULL); /* the smallest window */
}

/* Jobs that take 1 ms: the consumer gives up after 100 us, does them itself, and the
 * helper drops what it made of them; after 32 such, more than it took, it is stopped. */
static void test_slow_jobs_are_given_up(void **state)
{
	(void)state;
	outcome o;
	run_case(400, 16, 1, 1000, 1, 0, 0, &o);
	assert_true(o.own > 0);
	run_case(3000, 16, 50, 1000, 1, 0, 0, NULL); /* now and then */
}

static void test_skipped_results_are_dropped(void **state)
{
	(void)state;
	run_case(30000, 32, 0, 0, 3, 0, 0, NULL);
	run_case(30000, 8, 0, 0, 100, 0, 0, NULL); /* jumps past a whole window */
}

/* A consumer slower than the helper: the window fills, the helper naps until a slot is
 * free again, and every result still arrives; one that pauses 3 ms a job lets the helper's
 * naps grow to their longest, and it still goes on (the consumer never wakes it). */
static void test_slow_consumer_leaves_the_helper_napping(void **state)
{
	(void)state;
	outcome o;
	run_case(2000, 16, 0, 0, 1, 50, 0, &o);
	if (sysconf(_SC_NPROCESSORS_ONLN) > 1)
		assert_true(o.taken > 0);
	run_case(60, 8, 0, 0, 1, 3000, 0, &o);
	if (sysconf(_SC_NPROCESSORS_ONLN) > 1)
		assert_true(o.taken > 0);
}

/* Stopped with results ready, and one taken and not given back: all dropped, all freed. */
static void test_stop_in_the_middle(void **state)
{
	(void)state;
	for (uint32_t stop_after = 1; stop_after < 400; stop_after += 37)
		run_case(100000, 64, 0, 0, 1, 0, stop_after, NULL);
	run_case(1000, 8, 5, 300, 1, 0, 20, NULL); /* while the helper is in a job */
}

/* The helper held to the consumer's CPU runs instead of it, not beside it: it is stopped
 * (reader/decode/nt_reader_beside.h: two intervals of 2 ms) and the consumer does the rest
 * of the jobs itself, every result still exactly once. Without the check the helper did
 * nearly every job, each of its wake-ups taking the CPU from the consumer. */
static void test_helper_on_the_consumers_cpu_is_stopped(void **state)
{
	(void)state;
	cpu_set_t all, one;
	assert_int_equal(sched_getaffinity(0, sizeof(all), &all), 0);
	int cpu = sched_getcpu();
	assert_true(cpu >= 0);
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0); /* the helper inherits it */
	const uint32_t n = 40000;
	jobs *j = jobs_new(n);
	j->burn_ns = 2000;
	uint8_t *taken = calloc(n, 1);
	nt_pipe *p = nt_pipe_start(&ops, j, n, 64, sizeof(job_result));
	assert_non_null(p);
	outcome o = consume(p, j, 1, 0, 0, taken);
	nt_pipe_stop(p);
	assert_int_equal(sched_setaffinity(0, sizeof(all), &all), 0);
	check_accounting(j, taken, 64);
	assert_int_equal(o.taken + o.own, n);
	uint32_t ran = 0;
	for (uint32_t i = 0; i < n; i++)
		ran += j->helper_runs[i];
	assert_msg(ran < n / 4, "the helper ran %u of %u jobs on the consumer's CPU", ran, n);
	free(taken);
	jobs_free(j);
}

static void test_refused(void **state)
{
	(void)state;
	jobs *j = jobs_new(4);
	assert_null(nt_pipe_start(&ops, j, 0, 8, sizeof(job_result)));
	assert_null(nt_pipe_start(&ops, j, 4, 1, sizeof(job_result)));
	assert_null(nt_pipe_start(&ops, j, 4, 257, sizeof(job_result)));
	assert_null(nt_pipe_start(&ops, j, 4, 8, 0));
	assert_null(nt_pipe_take(NULL, 0));
	nt_pipe_done(NULL, 0);
	nt_pipe_stop(NULL);
	jobs_free(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fast_jobs),
		cmocka_unit_test(test_slow_jobs_are_given_up),
		cmocka_unit_test(test_skipped_results_are_dropped),
		cmocka_unit_test(test_slow_consumer_leaves_the_helper_napping),
		cmocka_unit_test(test_stop_in_the_middle),
		cmocka_unit_test(test_helper_on_the_consumers_cpu_is_stopped),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
