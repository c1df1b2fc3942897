/*
 * fuzz_render_trace2.c - libFuzzer target: any bytes as an archive, rendered as Git's
 * Trace2 NORMAL, PERF and EVENT formats (nt_render_trace2), and NORMAL again in brief mode
 * (Git's brief takes other paths through the model), to /dev/null.
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
	nt_trace2_options t2;
	nt_trace2_options_init(&t2);
	for (int f = NT_TRACE2_NORMAL; f <= NT_TRACE2_EVENT; f++) {
		t2.format = (nt_trace2_format)f;
		nt_render_trace2(&r, 1, out, &t2);
	}
	t2.format = NT_TRACE2_NORMAL;
	t2.brief = 1;
	nt_render_trace2(&r, 1, out, &t2);
	nt_reader_close(r);
	return 0;
}
