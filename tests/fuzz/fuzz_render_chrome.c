/*
 * fuzz_render_chrome.c - libFuzzer target: any bytes as an archive, rendered for trace
 * viewers in both orders, to /dev/null: Chrome JSON (nt_render_chrome) and Perfetto's
 * protobuf (nt_render_perfetto), which read the same events for the same viewers.
 */
#include "fuzz_reader_common.h"

static void render(nt_reader *r, FILE *out)
{
	nt_render_options opt;
	nt_render_options_init(&opt);
	for (int order = 0; order < 2; order++) {
		opt.order = order ? NT_ORDER_TIME : NT_ORDER_STREAM;
		nt_render_chrome(r, out, &opt);
		nt_render_perfetto(r, out, &opt);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_render_input(data, size, render);
}
