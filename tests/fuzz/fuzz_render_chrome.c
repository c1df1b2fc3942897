/*
 * fuzz_render_chrome.c - libFuzzer target: any bytes as an archive, rendered as Chrome JSON
 * (nt_render_chrome) in both orders, to /dev/null.
 */
#include "fuzz_reader_common.h"

static void render(nt_reader *r, FILE *out)
{
	nt_render_options opt;
	nt_render_options_init(&opt);
	for (int order = 0; order < 2; order++) {
		opt.order = order ? NT_ORDER_TIME : NT_ORDER_STREAM;
		nt_render_chrome(r, out, &opt);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_render_input(data, size, render);
}
