/*
 * fuzz_render_text.c - libFuzzer target: any bytes as an archive, rendered by trace-dump's
 * text format in both orders and --stats (nt_render_text, nt_render_stats; --stats has no
 * order), to /dev/null.
 * A renderer must report damage as the visit does and never crash on what it decodes.
 */
#include "fuzz_reader_common.h"

static void render(nt_reader *r, FILE *out)
{
	static const fuzz_renderer text[] = { nt_render_text };
	fuzz_render_both_orders(r, out, text, 1);
	nt_render_stats(r, out, NULL); /* stream order, whatever an order option says */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_render_input(data, size, render);
}
