/*
 * fuzz_render_chrome.c - libFuzzer target: any bytes as an archive, rendered for trace
 * viewers in both orders, to /dev/null: Chrome JSON (nt_render_chrome) and Perfetto's
 * protobuf (nt_render_perfetto), which read the same events for the same viewers.
 */
#include "fuzz_reader_common.h"

static void render(nt_reader *r, FILE *out)
{
	static const fuzz_renderer viewers[] = { nt_render_chrome, nt_render_perfetto };
	fuzz_render_both_orders(r, out, viewers, 2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_render_input(data, size, render);
}
