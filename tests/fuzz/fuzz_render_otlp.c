/*
 * fuzz_render_otlp.c - libFuzzer target: any bytes as an archive, exported as OpenTelemetry's
 * OTLP (nt_render_otlp), protobuf and JSON, to /dev/null. Its corpus began as
 * fuzz_render_perfetto's (the same spans, the same events), merged by what this exporter
 * reaches.
 */
#include "fuzz_reader_common.h"

static int otlp_protobuf(nt_reader *r, FILE *out, const nt_render_options *opt)
{
	return nt_render_otlp(r, out, NT_OTLP_PROTOBUF, opt);
}

static int otlp_json(nt_reader *r, FILE *out, const nt_render_options *opt)
{
	return nt_render_otlp(r, out, NT_OTLP_JSON, opt);
}

/* Protobuf in both orders; JSON, a walk of the same protobuf whatever the order, in time
 * order only (the order changes what the exporter encodes, which the protobuf runs cover):
 * three exports an input instead of four. */
static void render(nt_reader *r, FILE *out)
{
	static const fuzz_renderer exports[] = { otlp_protobuf };
	fuzz_render_both_orders(r, out, exports, 1);
	nt_render_options opt;
	nt_render_options_init(&opt);
	opt.order = NT_ORDER_TIME;
	otlp_json(r, out, &opt);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_render_input(data, size, render);
}
