/*
 * fuzz_render_chrome.c - libFuzzer target: any bytes as an archive, rendered as Chrome
 * JSON (nt_render_chrome) in both orders, to /dev/null. Perfetto's protobuf, which reads the
 * same events for the same viewers, has its own target (fuzz_render_perfetto.c), so each
 * execution here renders one format.
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
