/*
 * nt_ship_send.c - the sender thread: the spool's requests, oldest first, over OTLP/HTTP
 * (the OTLP specification's "OTLP/HTTP" section) with libcurl:
 *   POST <url>, Content-Type: application/x-protobuf, the configured headers,
 *   Content-Encoding: gzip when compression is on (zlib, gzip framing);
 *   2xx: sent; the body's partial_success (rejected count, error_message) is logged and
 *     counted; the file is deleted;
 *   429, 502, 503, 504, a timeout or a failed connection: retried, after Retry-After when
 *     the response has one (seconds or an HTTP-date; at most RETRY_AFTER_MAX_S), else after
 *     an exponential backoff (BACKOFF_FIRST_MS doubling to BACKOFF_MAX_MS, each wait drawn
 *     in [d/2, d]: full jitter would allow a zero wait in a storm). A request is retried
 *     until sent or the shipper stops: it stays in the spool, so nothing below the cap is
 *     lost, and the next run sends it;
 *   any other status: the request is dropped, counted, logged with the status and the
 *     body's google.rpc.Status message (nt_ship_log escapes what a receiver says).
 * Only the process that holds the spool's flock sends (one sender per spool, no request
 * sent twice by two processes); the others wait for it.
 */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <zlib.h>

#include "nt_ship_internal.h"
#include "runtime/nt_deadline.h"

#define BACKOFF_FIRST_MS 250u
#define BACKOFF_MAX_MS 30000u
#define RETRY_AFTER_MAX_S 300
#define BODY_MAX 4096 /* of a response kept for its message */
#define IDLE_POLL_MS 500 /* a spool another process fills, or another sender's lock */

typedef enum { SEND_OK, SEND_RETRY, SEND_DROP, SEND_STOPPED } send_result;

typedef struct response {
	uint8_t body[BODY_MAX];
	size_t len;
	long retry_after_ms; /* -1: none */
} response;

static size_t on_body(char *data, size_t size, size_t n, void *ctx)
{
	response *r = ctx;
	size_t len = size * n, room = BODY_MAX - r->len;
	memcpy(r->body + r->len, data, len < room ? len : room);
	r->len += len < room ? len : room;
	return len;
}

static size_t on_header(char *data, size_t size, size_t n, void *ctx)
{
	response *r = ctx;
	size_t len = size * n;
	static const char name[] = "retry-after:";
	if (len <= sizeof(name) - 1 || strncasecmp(data, name, sizeof(name) - 1) != 0)
		return len;
	char value[128];
	size_t vlen = len - (sizeof(name) - 1);
	vlen = vlen < sizeof(value) - 1 ? vlen : sizeof(value) - 1;
	memcpy(value, data + sizeof(name) - 1, vlen);
	value[vlen] = '\0';
	char *v = value + strspn(value, " \t"), *end;
	v[strcspn(v, "\r\n")] = '\0';
	long secs = strtol(v, &end, 10);
	if (end != v && *end == '\0' && secs >= 0) {
		r->retry_after_ms = (secs > RETRY_AFTER_MAX_S ? RETRY_AFTER_MAX_S : secs) * 1000;
	} else {
		time_t when = curl_getdate(v, NULL); /* an HTTP-date */
		if (when != -1) {
			long d = (long)(when - time(NULL));
			r->retry_after_ms = (d < 0 ? 0 : d > RETRY_AFTER_MAX_S ? RETRY_AFTER_MAX_S : d) *
					    1000;
		}
	}
	return len;
}

static int on_progress(void *ctx, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	(void)a, (void)b, (void)c, (void)d;
	nt_ship *s = ctx;
	return __atomic_load_n(&s->stop_send, __ATOMIC_RELAXED); /* nonzero aborts */
}

/* gzip of msg into a new buffer; NULL when out of memory. */
static uint8_t *gzip(const uint8_t *msg, size_t len, size_t *out_len)
{
	z_stream z;
	memset(&z, 0, sizeof(z));
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return NULL;
	uLong cap = deflateBound(&z, (uLong)len);
	uint8_t *out = malloc(cap);
	if (out != NULL) {
		z.next_in = (Bytef *)msg;
		z.avail_in = (uInt)len;
		z.next_out = out;
		z.avail_out = (uInt)cap;
		if (deflate(&z, Z_FINISH) != Z_STREAM_END) {
			free(out);
			out = NULL;
		}
		*out_len = z.total_out;
	}
	deflateEnd(&z);
	return out;
}

/* One POST of a request; *status the HTTP status (0: none came), *wire the bytes sent. */
static send_result post(nt_ship *s, CURL *h, int sig, const uint8_t *msg, size_t len,
			response *r, long *status, size_t *wire, char *err, size_t errlen)
{
	const ship_signal_conf *c = &s->conf.sig[sig];
	size_t body_len = len;
	uint8_t *zipped = c->gzip ? gzip(msg, len, &body_len) : NULL;
	if (c->gzip && zipped == NULL) {
		snprintf(err, errlen, "gzip: out of memory");
		return SEND_RETRY;
	}
	struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/x-protobuf");
	if (c->gzip)
		hdrs = curl_slist_append(hdrs, "Content-Encoding: gzip");
	hdrs = curl_slist_append(hdrs, "Expect:"); /* no 100-continue round trip */
	for (char **l = c->headers; *l; l++)
		hdrs = curl_slist_append(hdrs, *l);
	char curl_err[CURL_ERROR_SIZE] = "";
	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, c->url);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_POST, 1L);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, zipped ? zipped : msg);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)c->timeout_ms);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, s);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, curl_err);
	if (c->ca)
		curl_easy_setopt(h, CURLOPT_CAINFO, c->ca);
	if (c->cert)
		curl_easy_setopt(h, CURLOPT_SSLCERT, c->cert);
	if (c->key)
		curl_easy_setopt(h, CURLOPT_SSLKEY, c->key);
	CURLcode rc = curl_easy_perform(h);
	*status = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
	curl_slist_free_all(hdrs); /* header values are secrets: the list is freed at once */
	free(zipped);
	*wire = body_len;
	if (rc == CURLE_ABORTED_BY_CALLBACK)
		return SEND_STOPPED;
	if (rc != CURLE_OK) {
		snprintf(err, errlen, "%s", curl_err[0] ? curl_err : curl_easy_strerror(rc));
		return SEND_RETRY;
	}
	if (*status >= 200 && *status < 300)
		return SEND_OK;
	if (*status == 429 || *status == 502 || *status == 503 || *status == 504)
		return SEND_RETRY;
	return SEND_DROP;
}

/* Waits ms, or until stop (or, with `woken`, a new file); 1 when stopping. */
static int pause_ms(nt_ship *s, unsigned ms, int woken)
{
	struct timespec until = nt_deadline_after_ms((int)ms);
	pthread_mutex_lock(&s->lock);
	while (!s->stop_send && pthread_cond_timedwait(&s->wake, &s->lock, &until) == 0 && !woken)
		;
	int stop = s->stop_send;
	pthread_mutex_unlock(&s->lock);
	return stop;
}

static unsigned backoff_ms(unsigned attempt, unsigned *seed)
{
	unsigned d = BACKOFF_FIRST_MS;
	for (unsigned i = 0; i < attempt && d < BACKOFF_MAX_MS; i++)
		d *= 2;
	d = d < BACKOFF_MAX_MS ? d : BACKOFF_MAX_MS;
	return d / 2 + (unsigned)rand_r(seed) % (d / 2 + 1);
}

static void log_refused(nt_ship *s, const char *name, long status, const response *r)
{
	char text[256];
	if (nt_ship_pb_status_message(r->body, r->len, text, sizeof(text)) <= 0) {
		size_t n = r->len < sizeof(text) - 1 ? r->len : sizeof(text) - 1;
		memcpy(text, r->body, n); /* a text body (a proxy's page) */
		text[n] = '\0';
	}
	nt_ship_log(s, "request %s refused with HTTP %ld: %s; dropped", name, status, text);
}

/* After a 2xx: the counts, and what a partial success says. */
static void sent(nt_ship *s, int sig, int64_t items, size_t wire, const response *r)
{
	int64_t rejected = 0;
	char text[256];
	int partial = nt_ship_pb_partial(r->body, r->len, &rejected, text, sizeof(text));
	pthread_mutex_lock(&s->lock);
	nt_ship_counts *c = &s->counts;
	c->sent++;
	*(sig ? &c->sent_points : &c->sent_spans) += items > 0 ? (uint64_t)items : 0;
	c->sent_bytes += wire;
	if (partial > 0)
		*(sig ? &c->rejected_points : &c->rejected_spans) += rejected > 0 ? (uint64_t)rejected : 0;
	pthread_mutex_unlock(&s->lock);
	if (partial > 0)
		nt_ship_log(s, "partial success: the receiver rejected %lld %s: %s", (long long)rejected,
			    sig ? "data points" : "spans", text);
}

/* Sends one spool file; returns 1 when stopping. */
static int send_one(nt_ship *s, CURL *h, response *r, const char *name, int sig,
		    unsigned *attempt, unsigned *seed)
{
	uint8_t *data;
	size_t len;
	if (nt_ship_spool_read(s, name, &data, &len) != 0) {
		if (errno == ENOENT)
			return 0; /* removed meanwhile (by its user): nothing to send */
		nt_ship_log(s, "spool file %s cannot be read: %s; dropped", name, strerror(errno));
		pthread_mutex_lock(&s->lock);
		s->counts.dropped_bad++;
		pthread_mutex_unlock(&s->lock);
		nt_ship_spool_remove(s, name, 0);
		return 0;
	}
	int64_t items = nt_ship_pb_items(sig, data, len);
	r->len = 0;
	r->retry_after_ms = -1;
	long status;
	size_t wire;
	char err[CURL_ERROR_SIZE + 64] = "";
	send_result res = post(s, h, sig, data, len, r, &status, &wire, err, sizeof(err));
	free(data);
	if (res == SEND_STOPPED)
		return 1;
	if (res == SEND_OK) {
		sent(s, sig, items, wire, r);
		nt_ship_spool_remove(s, name, len);
		*attempt = 0;
	} else if (res == SEND_DROP) {
		log_refused(s, name, status, r);
		pthread_mutex_lock(&s->lock);
		s->counts.dropped_http++;
		*(sig ? &s->counts.dropped_http_points : &s->counts.dropped_http_spans) +=
			items > 0 ? (uint64_t)items : 0;
		pthread_mutex_unlock(&s->lock);
		nt_ship_spool_remove(s, name, len);
		*attempt = 0;
	} else {
		unsigned wait = r->retry_after_ms >= 0 ? (unsigned)r->retry_after_ms
						      : backoff_ms((*attempt)++, seed);
		pthread_mutex_lock(&s->lock);
		s->counts.retries++;
		pthread_mutex_unlock(&s->lock);
		if (status != 0)
			nt_ship_log(s, "HTTP %ld: retrying in %u ms", status, wait);
		else
			nt_ship_log(s, "%s: %s: retrying in %u ms", s->conf.sig[sig].url, err, wait);
		return pause_ms(s, wait, 0);
	}
	return 0;
}

void *nt_ship_sender_main(void *arg)
{
	nt_ship *s = arg;
	CURL *h = curl_easy_init();
	response *r = malloc(sizeof(*r));
	unsigned attempt = 0, seed = (unsigned)time(NULL) ^ (unsigned)(uintptr_t)s;
	int locked = 0;
	if (h == NULL || r == NULL)
		nt_ship_log(s, "libcurl: no handle (out of memory): nothing is sent");
	while (h != NULL && r != NULL) {
		pthread_mutex_lock(&s->lock);
		int stop = s->stop_send;
		pthread_mutex_unlock(&s->lock);
		if (stop)
			break;
		if (!locked && flock(s->lock_fd, LOCK_EX | LOCK_NB) == 0)
			locked = 1;
		char name[256];
		int sig = 0;
		if (!locked || nt_ship_spool_oldest(s, name, sizeof(name), &sig) != 1) {
			pthread_mutex_lock(&s->lock);
			pthread_cond_broadcast(&s->idle);
			pthread_mutex_unlock(&s->lock);
			if (pause_ms(s, IDLE_POLL_MS, 1))
				break;
			continue;
		}
		if (send_one(s, h, r, name, sig, &attempt, &seed))
			break;
	}
	if (h != NULL)
		curl_easy_cleanup(h);
	free(r);
	if (locked)
		flock(s->lock_fd, LOCK_UN);
	return NULL;
}
