/*
 * otlp_memory.c - the OTLP exporter's heap, measured: exports ARCHIVE with nt_otlp_export
 * and prints "<requests> <spans bytes> <peak heap bytes>", the heap in use sampled at every
 * request the exporter hands over and at the end: glibc's mallinfo2 (arena and mmap'd
 * blocks), or, in a build with ASan or TSan (whose allocator glibc does not see), the
 * sanitizer's own count. tests/reader/test_otlp.py runs it on a small archive and one of 20
 * times its events from the same program: the peak must not grow with the events.
 */
#include <malloc.h>
#include <stdio.h>

#include <nanotrace/nanotrace_reader.h>

/* Defined by the ASan and TSan run-times only. */
size_t __sanitizer_get_current_allocated_bytes(void) __attribute__((weak));

typedef struct peak {
	size_t requests, bytes, heap;
} peak;

static void sample(peak *p)
{
	size_t now;
	if (__sanitizer_get_current_allocated_bytes) {
		now = __sanitizer_get_current_allocated_bytes();
	} else {
		struct mallinfo2 m = mallinfo2();
		now = m.uordblks + m.hblkhd;
	}
	if (now > p->heap)
		p->heap = now;
}

static int on_request(void *ctx, nt_otlp_signal signal, const uint8_t *msg, size_t len)
{
	(void)signal, (void)msg;
	peak *p = ctx;
	p->requests++;
	p->bytes += len;
	sample(p);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: otlp_memory ARCHIVE\n");
		return 1;
	}
	nt_reader_error err;
	nt_reader *r = nt_reader_open(argv[1], &err);
	if (r == NULL) {
		fprintf(stderr, "otlp_memory: %s\n", err.message);
		return 2;
	}
	/* no helper thread decompressing ahead: its buffers in flight depend on timing */
	nt_reader_set_decompress_ahead(r, NT_READER_AHEAD_OFF);
	peak p = { 0, 0, 0 };
	int rc = nt_otlp_export(r, NULL, on_request, &p);
	sample(&p);
	nt_reader_close(r);
	if (rc != 0) {
		fprintf(stderr, "otlp_memory: nt_otlp_export returned %d\n", rc);
		return 2;
	}
	printf("%zu %zu %zu\n", p.requests, p.bytes, p.heap);
	return 0;
}
