/*
 * fuzz_render_perfetto.c - libFuzzer target: any bytes as an archive, rendered as
 * Perfetto's protobuf trace (nt_render_perfetto) in both orders, to /dev/null. Its corpus
 * began as fuzz_render_chrome's (the same viewers read the same events), merged by what
 * this renderer reaches.
 */
#include "fuzz_reader_common.h"

static void render(nt_reader *r, FILE *out)
{
	static const fuzz_renderer viewers[] = { nt_render_perfetto };
	fuzz_render_both_orders(r, out, viewers, 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_render_input(data, size, render);
}
