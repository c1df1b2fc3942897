/*
 * fuzz_render_text.c - libFuzzer target: any bytes as an archive, rendered by trace-dump's
 * text format in both orders and --stats (nt_render_text, nt_render_stats; --stats has no
 * order), to /dev/null.
 * A renderer must report damage as the visit does and never crash on what it decodes.
 */
#include "fuzz_reader_common.h"

static void render(nt_reader *r, FILE *out)
{
	nt_render_options opt;
	nt_render_options_init(&opt);
	for (int order = 0; order < 2; order++) {
		opt.order = order ? NT_ORDER_TIME : NT_ORDER_STREAM;
		nt_render_text(r, out, &opt);
	}
	nt_render_stats(r, out, &opt); /* reads in stream order whatever opt.order says */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_render_input(data, size, render);
}
