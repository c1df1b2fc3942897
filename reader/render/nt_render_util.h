/* nt_render_util.h - output helpers shared by the renderers (not installed). */
#ifndef NT_RENDER_UTIL_H
#define NT_RENDER_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <nanotrace/nanotrace_reader.h>

#include "reader/common/nt_out.h"

/* a - b, saturated: times come from untrusted archives. */
static inline int64_t nt_sat_sub(int64_t a, int64_t b)
{
	int64_t r;
	if (__builtin_sub_overflow(a, b, &r))
		return b < 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/* The caller's options (NULL: the defaults) copied into *out by their struct_size (see
 * nanotrace_reader.h, GROWING STRUCTS); -1, after one line on stderr naming `who`, when
 * struct_size is not an nt_render_options'. */
int nt_render_options_in(const nt_render_options *in, nt_render_options *out, const char *who);

/* Forward damage to the caller's nt_render_options.on_error, if set. */
static inline void nt_render_forward_error(const nt_render_options *opt, uint64_t off,
					   const char *msg)
{
	if (opt->on_error)
		opt->on_error(opt->error_ctx, off, msg);
}

/* "567ns", "1.234us", "12.345ms", "1.234s" (the decimals as "%.3f" of the double prints
 * them); NUL-terminated; returns the length (0, writing nothing, when cap < 32). */
size_t nt_format_duration(char *buf, size_t cap, uint64_t ns);
/* Nanoseconds as microseconds with three decimals, exactly ("12.345", "-0.001"); returns
 * the length (0, writing nothing, when cap < 32). No NUL is written. */
size_t nt_format_offset_us(char *buf, size_t cap, int64_t ns);
/* Chrome phase letter of an event kind (Trace2 regions are B/E, other messages i; async
 * b/n/e, flows s/t/f, whatever their id's scope). */
const char *nt_kind_phase(uint8_t kind);
/* Name and category to show for an event: a Trace2 message without a label or key is
 * named after its message type, in category "trace2". */
const char *nt_event_display_name(const nt_reader_event *e);
const char *nt_event_display_category(const nt_reader_event *e);
/* Does the event open / close a duration (Begin, Trace2 region_enter / End, region_leave)? */
int nt_event_opens(const nt_reader_event *e);
int nt_event_closes(const nt_reader_event *e);
/* Which Ends the archive can pair with a Begin. On each thread a Begin (or Trace2
 * region_enter) opens and an End (region_leave) closes the innermost open one, as trace
 * viewers pair them. An End with nothing open on its thread is unmatched: its Begin was
 * overwritten (circular mode) or lost, or the program ended what it never began. A viewer
 * given that E either rejects it or ends some other slice with it, so the chrome rendering
 * leaves it out; --stats counts it by this same rule. */
typedef struct nt_balance {
	uint64_t *open; /* Begins still open, by thread index */
	uint32_t nthreads;
	uint64_t unmatched_ends;
	uint64_t unended; /* the sum of open[]: a hostile archive's index limit is near 2^20 */
} nt_balance;
/* Sized by nt_reader_thread_index_limit(); 0 when memory runs out. */
int nt_balance_init(nt_balance *b, const nt_reader *r);
/* Feed every event in its thread's order; 0 for an unmatched End (counted), else 1. */
int nt_balance_admit(nt_balance *b, const nt_reader_event *e);
/* Begins never ended (the trace stops inside them), over all threads. O(1). */
uint64_t nt_balance_unended(const nt_balance *b);
void nt_balance_free(nt_balance *b);

/* A string list argument as a JSON array of strings. */
void nt_json_write_list(nt_out *out, const nt_reader_arg *a);

/* Per-thread stack of open Begin times, so an End can show its duration. Nesting deeper
 * than the stack still balances; only those durations are unknown. A zeroed one is empty
 * and holds no memory: its room grows with the nesting (a bundle has thousands of threads,
 * most of them shallow). */
#define NT_DURATION_STACK_MAX 256
typedef struct nt_duration_stack {
	uint32_t depth;
	uint32_t cap;      /* entries of begin_ns, at most NT_DURATION_STACK_MAX */
	int64_t *begin_ns;
} nt_duration_stack;
/* 0 when memory ran out for the room (that Begin's duration is then unknown). */
int nt_duration_stack_push(nt_duration_stack *s, int64_t ns);
void nt_duration_stack_free(nt_duration_stack *s);
/* 1 and *dur when the matching Begin is known. */
int nt_duration_stack_pop(nt_duration_stack *s, int64_t end_ns, uint64_t *dur);

#endif /* NT_RENDER_UTIL_H */
