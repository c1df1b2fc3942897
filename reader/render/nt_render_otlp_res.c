/*
 * nt_render_otlp_res.c - a section's OTLP Resource and the attribute encoders.
 *
 * The Resource follows OpenTelemetry's resource semantic conventions and its SDK
 * configuration: service.name is OTEL_SERVICE_NAME when set, else the section's name (the
 * provider's, or the archive's process name), else "unknown_service"; process.pid and
 * process.executable.name; telemetry.sdk.name "nanotrace", .language "c" and .version
 * the library's; then OTEL_RESOURCE_ATTRIBUTES (a W3C-baggage-like "k=v,k=v" list, values
 * percent-decoded, as the SDK specification reads it: a list with a malformed entry is
 * discarded whole and nanotrace.otel_resource_attributes_invalid says so). Those two
 * variables are the exporting program's (an SDK's exporter reads its own environment); the
 * archive does not keep the recorded process's environment. host.name is not written: the
 * archive does not say on which host it was recorded.
 * What the header says the writer lost is there too, only when not zero, so a backend's
 * resource view shows it: nanotrace.events_dropped and by reason
 * (nanotrace.events_dropped.rolling_full, .durable_full, .stopped, .not_saved),
 * nanotrace.events_overwritten, nanotrace.wraps, nanotrace.saving_stopped (the reason),
 * nanotrace.section_end (how a bundle's section ended, when not "finished") and
 * nanotrace.section_message, nanotrace.section_error (a section that could not be opened).
 */
#define _GNU_SOURCE /* secure_getenv */
#include <stdlib.h>
#include <string.h>

#include "format/nt_bundle.h"
#include "nt_render_otlp.h"

/* A KeyValue's key and the opening of its AnyValue; kv_end closes both. */
static void kv_begin(nt_pb *b, uint32_t field, const char *key, size_t at[2])
{
	at[0] = nt_pb_open(b, field);
	pf_string(b, OT_KV_KEY, key, strlen(key));
	at[1] = nt_pb_open(b, OT_KV_VALUE);
}

static void kv_end(nt_pb *b, const size_t at[2])
{
	nt_pb_close(b, at[1]);
	nt_pb_close(b, at[0]);
}

void ot_attr_str(nt_pb *b, uint32_t field, const char *key, const char *v, size_t n)
{
	size_t at[2];
	kv_begin(b, field, key, at);
	pf_string(b, OT_AV_STRING, v, n);
	kv_end(b, at);
}

void ot_attr_int(nt_pb *b, uint32_t field, const char *key, int64_t v)
{
	size_t at[2];
	kv_begin(b, field, key, at);
	nt_pb_varint(b, OT_AV_INT, (uint64_t)v);
	kv_end(b, at);
}

void ot_attr_bool(nt_pb *b, uint32_t field, const char *key, int v)
{
	size_t at[2];
	kv_begin(b, field, key, at);
	nt_pb_varint(b, OT_AV_BOOL, v != 0);
	kv_end(b, at);
}

void ot_attr_arg(nt_pb *b, uint32_t field, const nt_reader_arg *a)
{
	size_t at[2];
	kv_begin(b, field, a->name, at);
	switch (a->type) {
	case NT_ARG_INT32:
	case NT_ARG_INT64: nt_pb_varint(b, OT_AV_INT, (uint64_t)a->value.i64); break;
	case NT_ARG_UINT32:
	case NT_ARG_UINT64:
	case NT_ARG_POINTER: /* AnyValue has no unsigned type: the bits as int64 */
		nt_pb_varint(b, OT_AV_INT, a->value.u64);
		break;
	case NT_ARG_BOOL: nt_pb_varint(b, OT_AV_BOOL, a->value.u64 != 0); break;
	case NT_ARG_DOUBLE: {
		uint64_t bits;
		memcpy(&bits, &a->value.f64, 8);
		nt_pb_fixed64(b, OT_AV_DOUBLE, bits);
		break;
	}
	case NT_ARG_STRING_LIST: {
		size_t arr = nt_pb_open(b, OT_AV_ARRAY);
		uint32_t pos = 0, len;
		const char *s;
		while (nt_reader_list_next(a, &pos, &s, &len)) {
			size_t v = nt_pb_open(b, OT_ARR_VALUES);
			pf_string(b, OT_AV_STRING, s, len);
			nt_pb_close(b, v);
		}
		nt_pb_close(b, arr);
		break;
	}
	default: pf_string(b, OT_AV_STRING, a->value.str.ptr, a->value.str.len); break;
	}
	kv_end(b, at);
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* [s, e) without the spaces around it, percent-decoded into out (at least e - s bytes);
 * returns its length, or -1 for a bad escape. */
static long decoded(const char *s, const char *e, char *out)
{
	while (s < e && (*s == ' ' || *s == '\t'))
		s++;
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	long n = 0;
	for (; s < e; s++) {
		if (*s != '%') {
			out[n++] = *s;
			continue;
		}
		if (e - s < 3 || hexval(s[1]) < 0 || hexval(s[2]) < 0)
			return -1;
		out[n++] = (char)(hexval(s[1]) * 16 + hexval(s[2]));
		s += 2;
	}
	return n;
}

/* OTEL_RESOURCE_ATTRIBUTES: two passes, the first only checking, so a malformed list adds
 * nothing. */
static int resource_env(nt_pb *b, const char *v, int write)
{
	size_t len = strlen(v);
	char *key = malloc(len + 1), *val = malloc(len + 1);
	int ok = key && val;
	for (const char *p = v; ok && *p;) {
		const char *comma = strchr(p, ','), *end = comma ? comma : p + strlen(p);
		const char *eq = memchr(p, '=', (size_t)(end - p));
		long kn = eq ? decoded(p, eq, key) : -1, vn = eq ? decoded(eq + 1, end, val) : -1;
		if (kn <= 0 || vn < 0) {
			ok = 0;
			break;
		}
		key[kn] = '\0';
		if (write)
			ot_attr_str(b, OT_RES_ATTRS, key, val, (size_t)vn);
		p = comma ? comma + 1 : end;
	}
	free(key);
	free(val);
	return ok;
}

static void loss(nt_pb *b, const char *key, uint64_t n)
{
	if (n)
		ot_attr_int(b, OT_RES_ATTRS, key, (int64_t)n);
}

static void losses(nt_pb *b, const nt_reader_section *s, const nt_archive_info *in)
{
	if (in == NULL) {
		ot_attr_str(b, OT_RES_ATTRS, "nanotrace.section_error", s->error, strlen(s->error));
		return;
	}
	loss(b, "nanotrace.events_dropped", in->events_dropped);
	loss(b, "nanotrace.events_dropped.rolling_full", in->dropped_rolling_full);
	loss(b, "nanotrace.events_dropped.durable_full", in->dropped_durable_full);
	loss(b, "nanotrace.events_dropped.stopped", in->dropped_stopped);
	loss(b, "nanotrace.events_dropped.not_saved", in->dropped_unsaved);
	loss(b, "nanotrace.events_overwritten", in->events_overwritten);
	loss(b, "nanotrace.wraps", in->wraps);
	/* Not losses, but what the blocking disposition cost the writers (and how many waits
	 * ran out, whose events are in events_dropped.rolling_full). */
	loss(b, "nanotrace.blocked_waits", in->blocked_waits);
	loss(b, "nanotrace.blocked_timeouts", in->blocked_timeouts);
	loss(b, "nanotrace.blocked_ns", in->blocked_ns);
	char why[160];
	if (nt_render_save_stopped(in, why, sizeof(why)))
		ot_attr_str(b, OT_RES_ATTRS, "nanotrace.saving_stopped", why, strlen(why));
	if (s->end_state != 0 && s->end_state != NT_SECTION_FINISHED)
		ot_attr_str(b, OT_RES_ATTRS, "nanotrace.section_end", s->end_text,
			    strlen(s->end_text));
	if (s->message[0])
		ot_attr_str(b, OT_RES_ATTRS, "nanotrace.section_message", s->message,
			    strlen(s->message));
}

void ot_resource(nt_pb *b, const nt_reader *r, uint32_t section, uint32_t pid,
		 const nt_reader_process *t2)
{
	/* peek and header, not nt_reader_section_at: that would open a closed section of a
	 * bundle for the reader's life, and a big bundle's memory with it */
	const nt_reader_section *s = nt_reader_section_peek(r, section);
	nt_archive_info hdr;
	const nt_archive_info *in = nt_reader_section_header(r, section, &hdr) == 0 ? &hdr : NULL;
	const char *svc = secure_getenv("OTEL_SERVICE_NAME");
	if (svc == NULL || svc[0] == '\0')
		svc = s->name[0] ? s->name : "unknown_service";
	ot_attr_str(b, OT_RES_ATTRS, "service.name", svc, strlen(svc));
	if (pid || s->pid)
		ot_attr_int(b, OT_RES_ATTRS, "process.pid", pid ? pid : s->pid);
	if (s->name[0])
		ot_attr_str(b, OT_RES_ATTRS, "process.executable.name", s->name, strlen(s->name));
	if (t2 && t2->sid_len) {
		ot_attr_str(b, OT_RES_ATTRS, "service.instance.id", t2->sid, t2->sid_len);
		ot_attr_str(b, OT_RES_ATTRS, "trace2.cmd.sid", t2->sid, t2->sid_len);
	}
	ot_attr_str(b, OT_RES_ATTRS, "telemetry.sdk.name", "nanotrace", 9);
	ot_attr_str(b, OT_RES_ATTRS, "telemetry.sdk.language", "c", 1);
	const char *ver = nt_reader_version();
	ot_attr_str(b, OT_RES_ATTRS, "telemetry.sdk.version", ver, strlen(ver));
	const char *env = secure_getenv("OTEL_RESOURCE_ATTRIBUTES");
	if (env && env[0]) {
		if (resource_env(b, env, 0))
			resource_env(b, env, 1);
		else
			ot_attr_bool(b, OT_RES_ATTRS, "nanotrace.otel_resource_attributes_invalid",
				     1);
	}
	losses(b, s, in);
}
