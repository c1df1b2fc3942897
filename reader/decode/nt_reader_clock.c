/*
 * nt_reader_clock.c - an archive's ticks as CLOCK_MONOTONIC and CLOCK_REALTIME nanoseconds:
 * the exact definitions (nt_reader_ticks_to_ns, nt_reader_ns_to_wall) and the ratio that
 * nt_reader_internal.h's per-event fast path takes from them, prepared once at open.
 */
#include "nt_reader_internal.h"

/* Archive values are untrusted: conversions saturate instead of overflowing. */
static int64_t saturate(__int128 v)
{
	return v > INT64_MAX ? INT64_MAX : v < INT64_MIN ? INT64_MIN : (int64_t)v;
}

int64_t nt_reader_ticks_to_ns(const nt_reader *r, uint64_t ticks)
{
	const nt_archive_info *in = &r->info;
	if (in->clock_source == NT_CLOCK_SOURCE_MONOTONIC)
		return (int64_t)ticks; /* the ticks are CLOCK_MONOTONIC nanoseconds */
	int64_t d = (int64_t)(ticks - in->start_ticks);
	__int128 ns;
	if (in->finish_ticks > in->start_ticks && in->finish_monotonic_ns > in->start_monotonic_ns)
		/* Interpolate between the pairs taken at start and finish: exact at both ends,
		 * whatever the calibration said. */
		ns = (__int128)d * (__int128)(in->finish_monotonic_ns - in->start_monotonic_ns) /
		     (__int128)(in->finish_ticks - in->start_ticks);
	else /* never finished: the calibrated rate */
		ns = (__int128)d * 1000000000 / (__int128)in->ticks_per_second;
	return saturate((__int128)in->start_monotonic_ns + ns);
}

void nt_reader_prepare_clock(nt_reader *r)
{
	const nt_archive_info *in = &r->info;
	nt_clock_conv *c = &r->clock;
	*c = (nt_clock_conv){ 0 };
	c->identity = in->clock_source == NT_CLOCK_SOURCE_MONOTONIC;
	c->start_ticks = in->start_ticks;
	if (in->start_monotonic_ns <= (uint64_t)INT64_MAX) {
		c->start_ns = (int64_t)in->start_monotonic_ns;
		/* The two branches of nt_reader_ticks_to_ns(), as a ratio. */
		if (in->finish_ticks > in->start_ticks &&
		    in->finish_monotonic_ns > in->start_monotonic_ns) {
			c->num = in->finish_monotonic_ns - in->start_monotonic_ns;
			c->den = in->finish_ticks - in->start_ticks;
		} else if (in->ticks_per_second != 0) {
			c->num = 1000000000u;
			c->den = in->ticks_per_second;
		}
	}
	c->wall_ok = in->start_realtime_ns <= (uint64_t)INT64_MAX &&
		     in->start_monotonic_ns <= (uint64_t)INT64_MAX;
	if (c->wall_ok)
		c->wall_offset = (int64_t)in->start_realtime_ns - (int64_t)in->start_monotonic_ns;
}

int64_t nt_reader_ns_to_wall(const nt_reader *r, int64_t monotonic_ns)
{
	return saturate((__int128)r->info.start_realtime_ns + monotonic_ns -
			(__int128)r->info.start_monotonic_ns);
}
