/*
 * fuzz_render_chrome.c - libFuzzer target: any bytes as an archive, rendered for trace
 * viewers in both orders, to /dev/null: Chrome JSON (nt_render_chrome), Perfetto's
 * protobuf (nt_render_perfetto) and OpenTelemetry's OTLP in protobuf and JSON
 * (nt_render_otlp), which read the same events for the same viewers.
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

static void render(nt_reader *r, FILE *out)
{
	static const fuzz_renderer viewers[] = { nt_render_chrome, nt_render_perfetto,
						 otlp_protobuf, otlp_json };
	fuzz_render_both_orders(r, out, viewers, 4);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_render_input(data, size, render);
}
