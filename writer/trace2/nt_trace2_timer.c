/*
 * nt_trace2_timer.c - Trace2 stopwatch timers and counters (git/git trace2/tr2_tmr.c,
 * tr2_ctr.c): per-thread accumulation in TLS without locks, merged into process totals
 * under a lock when a thread exits, and reported at exit.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>

#include "nt_trace2_internal.h"

#define MAX_TIMERS 64
#define MAX_COUNTERS 64

typedef struct timer_acc {
	uint64_t intervals, total_ns, min_ns, max_ns;
	uint64_t start_ns;
	uint32_t depth; /* nested starts count once */
} timer_acc;

typedef struct t2_tls_stats {
	timer_acc timers[MAX_TIMERS];
	uint64_t counters[MAX_COUNTERS];
	uint8_t counter_used[MAX_COUNTERS];
} t2_tls_stats;

static __thread t2_tls_stats tls_stats;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static nt_trace2_timer *timers[MAX_TIMERS + 1];     /* by id; [0] unused */
static nt_trace2_counter *counters[MAX_COUNTERS + 1];
static timer_acc timer_total[MAX_TIMERS + 1];
static uint64_t counter_total[MAX_COUNTERS + 1];
static uint8_t counter_total_used[MAX_COUNTERS + 1];
static uint32_t ntimers, ncounters;

/* Give a timer or counter its id on first use (0 when the table is full). */
static int register_id(int *id, void *obj, void **table, uint32_t *n, uint32_t max)
{
	int v = __atomic_load_n(id, __ATOMIC_ACQUIRE);
	if (v != 0)
		return v;
	pthread_mutex_lock(&lock);
	v = *id;
	if (v == 0 && *n < max) {
		v = (int)++*n;
		table[v] = obj;
		__atomic_store_n(id, v, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&lock);
	return v;
}

void nt_trace2_timer_start(nt_trace2_timer *t)
{
	if (t == NULL || !nt_trace2_is_enabled())
		return;
	int id = register_id(&t->id_, t, (void **)timers, &ntimers, MAX_TIMERS);
	if (id == 0)
		return;
	timer_acc *a = &tls_stats.timers[id - 1];
	if (a->depth++ == 0)
		a->start_ns = nt_clock_monotonic_ns();
}

void nt_trace2_timer_stop(nt_trace2_timer *t)
{
	if (t == NULL || t->id_ == 0)
		return;
	timer_acc *a = &tls_stats.timers[t->id_ - 1];
	if (a->depth == 0 || --a->depth != 0)
		return;
	uint64_t d = nt_clock_monotonic_ns() - a->start_ns;
	if (a->intervals == 0 || d < a->min_ns)
		a->min_ns = d;
	if (d > a->max_ns)
		a->max_ns = d;
	a->total_ns += d;
	a->intervals++;
}

void nt_trace2_counter_add(nt_trace2_counter *c, uint64_t value)
{
	if (c == NULL || !nt_trace2_is_enabled())
		return;
	int id = register_id(&c->id_, c, (void **)counters, &ncounters, MAX_COUNTERS);
	if (id == 0)
		return;
	tls_stats.counters[id - 1] += value;
	tls_stats.counter_used[id - 1] = 1;
}

/* The messages come from this file, as Git's come from its targets' own file:line. */
/* timer and th_timer have one list of fields (nt_t2_fields.h), counter and th_counter too. */
static void emit_timer(nt_callsite *site, unsigned kind, const timer_acc *a)
{
	nt_arg args[NT_T2_NARGS(TIMER)] = {
		T2_A(TIMER, intervals, nt_arg_u64, a->intervals), T2_A(TIMER, t_total, nt_arg_u64, a->total_ns),
		T2_A(TIMER, t_min, nt_arg_u64, a->min_ns), T2_A(TIMER, t_max, nt_arg_u64, a->max_ns) };
	nt_t2_emit_args_(site, kind, args, NT_T2_NARGS(TIMER));
}

static void emit_counter(nt_callsite *site, unsigned kind, uint64_t v)
{
	nt_arg a[NT_T2_NARGS(COUNTER)] = { T2_A(COUNTER, count, nt_arg_u64, v) };
	nt_t2_emit_args_(site, kind, a, NT_T2_NARGS(COUNTER));
}

/* Call sites per timer / counter and message kind, made on first report (under lock). */
static nt_callsite timer_sites[2][MAX_TIMERS + 1], counter_sites[2][MAX_COUNTERS + 1];
static uint16_t timer_names[2][MAX_TIMERS + 1][NT_T2_NARGS(TIMER) + 1];
static uint16_t counter_names[2][MAX_COUNTERS + 1][NT_T2_NARGS(COUNTER) + 1];

static nt_callsite *report_site(nt_callsite *s, uint16_t *names, const char *category,
				const char *name, uint32_t nargs)
{
	if (s->file == NULL)
		*s = (nt_callsite){ .line = __LINE__, .category = category, .name = name,
				    .file = NT_T2_SELF_FILE, .arg_names = names,
				    .arg_count = nargs, .always = 1 };
	return s;
}

static nt_callsite *timer_site(int final, uint32_t id)
{
	return report_site(&timer_sites[final][id], timer_names[final][id], timers[id]->category,
			   timers[id]->name, NT_T2_NARGS(TIMER));
}

static nt_callsite *counter_site(int final, uint32_t id)
{
	return report_site(&counter_sites[final][id], counter_names[final][id],
			   counters[id]->category, counters[id]->name, NT_T2_NARGS(COUNTER));
}

/* th_timer / th_counter of this thread for the per-thread ones, then merge; caller holds
 * the lock. */
static void report_and_merge_thread(void)
{
	t2_tls_stats *st = &tls_stats;
	for (uint32_t id = 1; id <= ntimers; id++) {
		timer_acc *a = &st->timers[id - 1];
		if (a->intervals == 0)
			continue;
		if (timers[id]->per_thread)
			emit_timer(timer_site(0, id), NT_KIND_T2_FIRST + NT_T2E_TH_TIMER, a);
		timer_acc *t = &timer_total[id];
		if (t->intervals == 0 || a->min_ns < t->min_ns)
			t->min_ns = a->min_ns;
		if (a->max_ns > t->max_ns)
			t->max_ns = a->max_ns;
		t->total_ns += a->total_ns;
		t->intervals += a->intervals;
	}
	for (uint32_t id = 1; id <= ncounters; id++) {
		if (!st->counter_used[id - 1])
			continue;
		if (counters[id]->per_thread)
			emit_counter(counter_site(0, id), NT_KIND_T2_FIRST + NT_T2E_TH_COUNTER,
				     st->counters[id - 1]);
		counter_total[id] += st->counters[id - 1];
		counter_total_used[id] = 1;
	}
	memset(st, 0, sizeof(*st));
}

void nt_t2_timers_thread_exit(void)
{
	pthread_mutex_lock(&lock);
	report_and_merge_thread();
	pthread_mutex_unlock(&lock);
}

void nt_t2_timers_atexit(void)
{
	pthread_mutex_lock(&lock);
	report_and_merge_thread(); /* the main thread's own */
	for (uint32_t id = 1; id <= ntimers; id++)
		if (timer_total[id].intervals != 0)
			emit_timer(timer_site(1, id), NT_KIND_T2_FIRST + NT_T2E_TIMER, &timer_total[id]);
	for (uint32_t id = 1; id <= ncounters; id++)
		if (counter_total_used[id])
			emit_counter(counter_site(1, id), NT_KIND_T2_FIRST + NT_T2E_COUNTER,
				     counter_total[id]);
	pthread_mutex_unlock(&lock);
}
