/*
 * fuzz_render_trace2.c - libFuzzer target: any bytes as an archive, rendered as Git's
 * Trace2 NORMAL, PERF and EVENT formats (nt_render_trace2), and NORMAL again in brief mode
 * (Git's brief takes other paths through the model), to /dev/null.
 */
#include "fuzz_reader_common.h"

static void render(nt_reader *r, FILE *out)
{
	nt_trace2_options t2;
	nt_trace2_options_init(&t2);
	for (int f = NT_TRACE2_NORMAL; f <= NT_TRACE2_EVENT; f++) {
		t2.format = (nt_trace2_format)f;
		nt_render_trace2(&r, 1, out, &t2);
	}
	t2.format = NT_TRACE2_NORMAL;
	t2.brief = 1;
	nt_render_trace2(&r, 1, out, &t2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_render_input(data, size, render);
}
