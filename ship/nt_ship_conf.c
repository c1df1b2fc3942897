/*
 * nt_ship_conf.c - the shipper's configuration: the caller's fields, else the standard
 * OTEL_EXPORTER_OTLP_* variables as the OpenTelemetry SDKs document them ("OTLP Exporter
 * Configuration"): a signal's own variable wins over the generic one; the generic
 * endpoint is a base URL to which /v1/traces and /v1/metrics are appended, a signal's is
 * used as it is; headers are "key=value" pairs separated by commas, values percent-decoded
 * (W3C Baggage's rule); compression gzip or none; the timeout in milliseconds (10 s by
 * default); the protocol http/protobuf (OTEL_EXPORTER_OTLP_PROTOCOL, when set, must say so). Read with secure_getenv, as every variable nanotrace reads. Header values are
 * secrets: no message here or elsewhere quotes one.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nt_ship_internal.h"
#include "runtime/nt_term_escape.h"

#define DEFAULT_ENDPOINT "http://localhost:4318"
#define DEFAULT_TIMEOUT_MS 10000u
#define DEFAULT_CAP ((uint64_t)64 << 20)

static const char *const signal_name[NT_SHIP_SIGNALS] = { "TRACES", "METRICS" };
static const char *const signal_path[NT_SHIP_SIGNALS] = { "/v1/traces", "/v1/metrics" };

void nt_ship_log(nt_ship *s, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* a line may quote a section's name, a path, a receiver's words: never an escape */
	nt_term_escape(line, sizeof(line), line, strlen(line));
	if (s->conf.log != NULL)
		s->conf.log(s->conf.log_ctx, line);
	else
		fprintf(stderr, "nanotrace: otlp: %s\n", line);
}

/* OTEL_EXPORTER_OTLP_<SIGNAL>_<what>, else OTEL_EXPORTER_OTLP_<what>; NULL when neither is
 * set and non-empty. *which gets the name read (for messages). */
static const char *env2(int sig, const char *what, char *which, size_t cap)
{
	snprintf(which, cap, "OTEL_EXPORTER_OTLP_%s_%s", signal_name[sig], what);
	const char *v = secure_getenv(which);
	if (v == NULL || v[0] == '\0') {
		snprintf(which, cap, "OTEL_EXPORTER_OTLP_%s", what);
		v = secure_getenv(which);
	}
	return v != NULL && v[0] != '\0' ? v : NULL;
}

static int hexval(int c)
{
	return isdigit(c) ? c - '0' : isxdigit(c) ? (tolower(c) - 'a' + 10) : -1;
}

/* Percent-decodes src[0..n) into a new string; NULL when out of memory. */
static char *pct_decode(const char *src, size_t n)
{
	char *out = malloc(n + 1), *o = out;
	if (out == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (src[i] == '%' && i + 2 < n && hexval((unsigned char)src[i + 1]) >= 0 &&
		    hexval((unsigned char)src[i + 2]) >= 0) {
			*o++ = (char)(hexval((unsigned char)src[i + 1]) * 16 +
				      hexval((unsigned char)src[i + 2]));
			i += 2;
		} else {
			*o++ = src[i];
		}
	}
	*o = '\0';
	return out;
}

static void trim(const char **p, const char **end)
{
	while (*p < *end && isspace((unsigned char)**p))
		(*p)++;
	while (*end > *p && isspace((unsigned char)(*end)[-1]))
		(*end)--;
}

/* Adds "Key: value" for each pair of `list` to *lines (n of them); a key already there is
 * replaced (the signal's list is read last). 0, or -1 with why (never quoting a value). */
static int parse_headers(const char *list, const char *var, char ***lines, size_t *n,
			 char *why, size_t whylen)
{
	for (const char *p = list; *p != '\0';) {
		const char *comma = strchr(p, ',');
		const char *end = comma ? comma : p + strlen(p);
		const char *eq = memchr(p, '=', (size_t)(end - p));
		const char *k = p, *kend = eq ? eq : end;
		trim(&k, &kend);
		if (eq == NULL || kend == k) {
			if (eq != NULL || kend != k) {
				snprintf(why, whylen, "%s: pair %zu is not key=value", var, *n + 1);
				return -1;
			}
		} else {
			for (const char *c = k; c < kend; c++)
				if (!isgraph((unsigned char)*c) || *c == ':') {
					snprintf(why, whylen, "%s: a header name has a space, colon or "
						 "control character", var);
					return -1;
				}
			const char *v = eq + 1, *vend = end;
			trim(&v, &vend);
			char *value = pct_decode(v, (size_t)(vend - v));
			size_t klen = (size_t)(kend - k);
			char *line = value ? malloc(klen + strlen(value) + 3) : NULL;
			if (line == NULL) {
				free(value);
				snprintf(why, whylen, "%s: out of memory", var);
				return -1;
			}
			for (char *c = value; *c; c++)
				if (*c == '\r' || *c == '\n')
					*c = ' '; /* never a second header line */
			if (value[0] == '\0') /* "Name:" would remove the header: libcurl's form */
				sprintf(line, "%.*s;", (int)klen, k);
			else
				sprintf(line, "%.*s: %s", (int)klen, k, value);
			free(value);
			size_t i = 0;
			while (i < *n && !(strncasecmp((*lines)[i], k, klen) == 0 &&
					   ((*lines)[i][klen] == ':' || (*lines)[i][klen] == ';')))
				i++;
			if (i < *n) {
				free((*lines)[i]);
			} else {
				char **grown = realloc(*lines, (*n + 2) * sizeof(**lines));
				if (grown == NULL) {
					free(line);
					snprintf(why, whylen, "%s: out of memory", var);
					return -1;
				}
				*lines = grown;
				(*n)++;
			}
			(*lines)[i] = line;
			(*lines)[*n] = NULL;
		}
		p = comma ? comma + 1 : end;
	}
	return 0;
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static int load_signal(ship_signal_conf *c, int sig, const nt_ship_config *cfg, char *why,
		       size_t whylen)
{
	char var[64], var2[64];
	const char *v;
	snprintf(var, sizeof(var), "OTEL_EXPORTER_OTLP_%s_ENDPOINT", signal_name[sig]);
	v = cfg->endpoint ? NULL : secure_getenv(var);
	if (v != NULL && v[0] != '\0') {
		c->url = strdup(v); /* a signal's endpoint is used as it is */
	} else {
		const char *base = cfg->endpoint;
		if (base == NULL) {
			snprintf(var, sizeof(var), "OTEL_EXPORTER_OTLP_ENDPOINT");
			base = secure_getenv(var);
			base = base && base[0] ? base : DEFAULT_ENDPOINT;
		}
		size_t n = strlen(base);
		while (n > 0 && base[n - 1] == '/')
			n--;
		c->url = malloc(n + strlen(signal_path[sig]) + 1);
		if (c->url)
			sprintf(c->url, "%.*s%s", (int)n, base, signal_path[sig]);
	}
	if (c->url == NULL)
		goto nomem;
	if (strncmp(c->url, "http://", 7) != 0 && strncmp(c->url, "https://", 8) != 0) {
		snprintf(why, whylen, "%s: the endpoint is no http:// or https:// URL",
			 cfg->endpoint ? "--otlp-endpoint" : var);
		return -1;
	}
	size_t nh = 0;
	c->headers = calloc(1, sizeof(*c->headers));
	if (c->headers == NULL)
		goto nomem;
	snprintf(var, sizeof(var), "OTEL_EXPORTER_OTLP_HEADERS");
	snprintf(var2, sizeof(var2), "OTEL_EXPORTER_OTLP_%s_HEADERS", signal_name[sig]);
	const char *lists[2] = { cfg->headers ? cfg->headers : secure_getenv(var),
				 cfg->headers ? NULL : secure_getenv(var2) };
	for (int i = 0; i < 2; i++)
		if (lists[i] != NULL &&
		    parse_headers(lists[i], cfg->headers ? "headers" : i ? var2 : var, &c->headers,
				  &nh, why, whylen) != 0)
			return -1;
	/* the SDKs' default; grpc and http/json are other transports, not spoken here */
	if ((v = env2(sig, "PROTOCOL", var, sizeof(var))) != NULL && strcmp(v, "http/protobuf") != 0) {
		snprintf(why, whylen, "%s: '%.40s': only http/protobuf is spoken", var, v);
		return -1;
	}
	if (cfg->compression != 0) {
		c->gzip = cfg->compression == NT_SHIP_GZIP;
	} else if ((v = env2(sig, "COMPRESSION", var, sizeof(var))) != NULL) {
		if (strcmp(v, "gzip") != 0 && strcmp(v, "none") != 0) {
			snprintf(why, whylen, "%s: '%.40s' is neither gzip nor none", var, v);
			return -1;
		}
		c->gzip = strcmp(v, "gzip") == 0;
	}
	c->timeout_ms = cfg->timeout_ms;
	if (c->timeout_ms == 0 && (v = env2(sig, "TIMEOUT", var, sizeof(var))) != NULL) {
		char *end;
		unsigned long ms = strtoul(v, &end, 10);
		if (*end != '\0' || ms == 0 || ms > 3600000) {
			snprintf(why, whylen, "%s: '%.40s' is no timeout in milliseconds (1..3600000)",
				 var, v);
			return -1;
		}
		c->timeout_ms = (unsigned)ms;
	}
	if (c->timeout_ms == 0)
		c->timeout_ms = DEFAULT_TIMEOUT_MS;
	c->ca = dup_or_null(cfg->certificate ? cfg->certificate
					     : env2(sig, "CERTIFICATE", var, sizeof(var)));
	c->cert = dup_or_null(cfg->client_certificate
				      ? cfg->client_certificate
				      : env2(sig, "CLIENT_CERTIFICATE", var, sizeof(var)));
	c->key = dup_or_null(cfg->client_key ? cfg->client_key
					     : env2(sig, "CLIENT_KEY", var, sizeof(var)));
	return 0;
nomem:
	snprintf(why, whylen, "out of memory");
	return -1;
}

int nt_ship_default_spool(char *buf, size_t cap)
{
	const char *state = secure_getenv("XDG_STATE_HOME"), *home = secure_getenv("HOME");
	int n;
	if (state != NULL && state[0] == '/')
		n = snprintf(buf, cap, "%s/nanotrace/otlp-spool", state);
	else if (home != NULL && home[0] == '/')
		n = snprintf(buf, cap, "%s/.local/state/nanotrace/otlp-spool", home);
	else
		return -1;
	return n > 0 && (size_t)n < cap ? 0 : -1;
}

int nt_ship_conf_load(ship_conf *conf, const nt_ship_config *cfg, char *why, size_t whylen)
{
	memset(conf, 0, sizeof(*conf));
	conf->log = cfg->log;
	conf->log_ctx = cfg->log_ctx;
	conf->cap = cfg->spool_cap ? cfg->spool_cap : DEFAULT_CAP;
	for (int i = 0; i < NT_SHIP_SIGNALS; i++)
		if (load_signal(&conf->sig[i], i, cfg, why, whylen) != 0)
			return -1;
	char dflt[4096];
	if (cfg->spool_dir == NULL && nt_ship_default_spool(dflt, sizeof(dflt)) != 0) {
		snprintf(why, whylen, "no spool directory: neither XDG_STATE_HOME nor HOME is an "
			 "absolute path (give one)");
		return -1;
	}
	conf->spool = strdup(cfg->spool_dir ? cfg->spool_dir : dflt);
	if (conf->spool == NULL) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	return 0;
}

void nt_ship_conf_free(ship_conf *conf)
{
	for (int i = 0; i < NT_SHIP_SIGNALS; i++) {
		ship_signal_conf *c = &conf->sig[i];
		for (char **h = c->headers; h && *h; h++) {
			explicit_bzero(*h, strlen(*h));
			free(*h);
		}
		free(c->headers);
		free(c->url);
		free(c->ca);
		free(c->cert);
		free(c->key);
	}
	free(conf->spool);
	memset(conf, 0, sizeof(*conf));
}
