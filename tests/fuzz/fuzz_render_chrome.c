/*
 * fuzz_render_chrome.c - libFuzzer target: any bytes as an archive, rendered as Chrome
 * JSON (nt_render_chrome) in both orders, to /dev/null. Perfetto's protobuf and OTLP, which
 * read the same events for other viewers, have their own targets (fuzz_render_perfetto.c,
 * fuzz_render_otlp.c), so each execution here renders one format.
 */
#include "fuzz_reader_common.h"

static void render(nt_reader *r, FILE *out)
{
	static const fuzz_renderer viewers[] = { nt_render_chrome };
	fuzz_render_both_orders(r, out, viewers, 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_render_input(data, size, render);
}
