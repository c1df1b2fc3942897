/* canonical_dump - prints an archive through libnanotrace-reader in the exact text form
 * that conformance.py prints with flatc-generated Python, so the two can be compared. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <nanotrace/nanotrace_reader.h>

static int on_event(void *ctx, const nt_reader_event *e)
{
	FILE *out = ctx;
	uint64_t dur_ticks = 0;
	fprintf(out, "event thread=%" PRIu32 " tid=%" PRIu32 " kind=%u site=%s|%s|%s:%" PRIu32
		     " ticks=%" PRIu64,
		e->thread->index, e->thread->tid, e->kind, e->category, e->name, e->file, e->line,
		e->ticks);
	if (e->id_scope != NT_ID_NONE) /* an async or flow event's id */
		fprintf(out, " id=%" PRIu64, e->id);
	(void)dur_ticks;
	fputs(" args=[", out);
	for (uint32_t i = 0; i < e->arg_count; i++) {
		const nt_reader_arg *a = &e->args[i];
		fprintf(out, "%s%s:%u:", i ? "," : "", a->name, a->type);
		switch (a->type) {
		case NT_ARG_INT32:
		case NT_ARG_INT64: fprintf(out, "%" PRId64, a->value.i64); break;
		case NT_ARG_STRING:
		case NT_ARG_STRING_REF:
			for (uint32_t k = 0; k < a->value.str.len; k++)
				fprintf(out, "%02x", (unsigned char)a->value.str.ptr[k]);
			break;
		default: fprintf(out, "%" PRIu64, a->value.u64); break; /* doubles: bit pattern */
		}
	}
	fputs("]\n", out);
	return 0;
}

static void on_error(void *ctx, uint64_t off, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "canonical_dump: damaged at byte %" PRIu64 ": %s\n", off, msg);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: canonical_dump ARCHIVE\n");
		return 1;
	}
	nt_reader_error err;
	nt_reader *r = nt_reader_open(argv[1], &err);
	if (r == NULL) {
		fprintf(stderr, "canonical_dump: %s\n", err.message);
		return 2;
	}
	const nt_archive_info *h = nt_reader_info(r);
	printf("header pid=%" PRIu32 " process=%s tps=%" PRIu64 " start_ticks=%" PRIu64
	       " mode=%u final=%u written=%" PRIu64 " dropped=%" PRIu64 " overwritten=%" PRIu64 "\n",
	       h->pid, h->process_name, h->ticks_per_second, h->start_ticks, h->buffering_mode,
	       h->final_state, h->events_written, h->events_dropped, h->events_overwritten);
	nt_reader_callbacks cb = { .on_event = on_event, .on_error = on_error };
	int rc = nt_reader_visit(r, &cb, stdout, NT_ORDER_STREAM, NT_ON_CORRUPT_STOP);
	nt_reader_close(r);
	return rc == 0 ? 0 : 2;
}
