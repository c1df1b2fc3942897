/* nt_record_progress.c - the progress line, on a terminal only. */
#include <stdio.h>

#include "nt_recorder.h"

void nt_record_progress(recorder *r, const nt_wire_msg *m)
{
	if (!r->tty)
		return;
	fprintf(stderr, "\rtrace-record: %llu providers, %llu events, %llu bytes, %llu dropped   ",
		(unsigned long long)m->a, (unsigned long long)m->b, (unsigned long long)m->c,
		(unsigned long long)m->d);
	fflush(stderr);
}

void nt_record_end_progress(recorder *r)
{
	if (r->tty)
		fputc('\n', stderr);
}
