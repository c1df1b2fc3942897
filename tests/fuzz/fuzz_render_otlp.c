/*
 * fuzz_render_otlp.c - libFuzzer target: any bytes as an archive, exported as OpenTelemetry's
 * OTLP (nt_render_otlp) to /dev/null. Its corpus began as fuzz_render_perfetto's (the same
 * spans, the same events), merged by what this exporter reaches.
 *
 * One export an input, chosen by its size: of the eight values of (size ^ size >> 3) & 7
 * (archives are multiples of 8 bytes, so the size alone would pick one form for nearly every
 * seed), 0 exports JSON (a walk of the protobuf bytes, whatever the order), the odd ones
 * protobuf in stream order and the others protobuf in time order (the order changes what
 * the exporter encodes). All three for every input made this target the slowest (946
 * inputs per CPU-second beside a fuzzer on the other core, 2026-11-27); one of them, by a
 * rule that a mutation of the size changes, reaches the same code at twice the rate, JSON's
 * walker (its code covered by the first few inputs) for an eighth of them; the corpus
 * replay still runs each form over part of the inputs.
 */
#include "fuzz_reader_common.h"

static size_t input_size;

static void render(nt_reader *r, FILE *out)
{
	nt_render_options opt;
	nt_render_options_init(&opt);
	size_t form = (input_size ^ input_size >> 3) & 7;
	opt.order = form % 2 ? NT_ORDER_STREAM : NT_ORDER_TIME;
	nt_render_otlp(r, out, form == 0 ? NT_OTLP_JSON : NT_OTLP_PROTOBUF, &opt);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	input_size = size;
	return fuzz_render_input(data, size, render);
}
