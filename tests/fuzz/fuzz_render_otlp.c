/*
 * fuzz_render_otlp.c - libFuzzer target: any bytes as an archive, exported as OpenTelemetry's
 * OTLP (nt_render_otlp) to /dev/null. Its corpus began as fuzz_render_perfetto's (the same
 * spans, the same events), merged by what this exporter reaches.
 *
 * One export an input, chosen by its size modulo 3: protobuf in stream order, protobuf in
 * time order (the order changes what the exporter encodes), or JSON (a walk of the same
 * protobuf, whatever the order). All three for every input made this target the slowest
 * (about 950 inputs per CPU-second on a loaded core, 2026-11-27); one of them, by a rule
 * that a mutation of the size changes, reaches the same code at three times the rate, and
 * the corpus replay still runs each form over a third of the inputs.
 */
#include "fuzz_reader_common.h"

static size_t input_size;

static void render(nt_reader *r, FILE *out)
{
	nt_render_options opt;
	nt_render_options_init(&opt);
	opt.order = input_size % 3 == 0 ? NT_ORDER_STREAM : NT_ORDER_TIME;
	nt_render_otlp(r, out, input_size % 3 == 2 ? NT_OTLP_JSON : NT_OTLP_PROTOBUF, &opt);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	input_size = size;
	return fuzz_render_input(data, size, render);
}
