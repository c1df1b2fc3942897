/*
 * fuzz_render_chrome.c - libFuzzer target: any bytes as an archive, rendered as Chrome JSON
 * (nt_render_chrome) in both orders, to /dev/null.
 */
#include "fuzz_reader_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	nt_reader_error err;
	nt_reader *r = nt_reader_open_memory(data, size, "fuzz", &err);
	FILE *out = fuzz_sink();
	if (r == NULL || out == NULL) {
		nt_reader_close(r);
		return 0;
	}
	nt_render_options opt;
	nt_render_options_init(&opt);
	for (int order = 0; order < 2; order++) {
		opt.order = order ? NT_ORDER_TIME : NT_ORDER_STREAM;
		nt_render_chrome(r, out, &opt);
	}
	nt_reader_close(r);
	return 0;
}
