/*
 * render_cases - writes archives whose rendering must stay true to what they can prove
 * (test_trace_dump.py renders and checks them).
 *
 * usage: render_cases circular|threads OUTPUT
 *   circular  one thread opens "outer", then records far more than the circular arena holds
 *             (requests: a Begin, instants, an End) and ends "outer": the wrap overwrites
 *             outer's Begin, so its End survives alone.
 *   threads   two threads record the same counter with different values; the main thread
 *             ends "stray", which it never began, and begins "unfinished", which it never
 *             ends.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <nanotrace/nanotrace.h>

static int start(int mode, size_t buffer, size_t chunk)
{
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.mode = mode;
	cfg.buffer_size = buffer;
	cfg.chunk_size = chunk;
	cfg.process_name = "render_cases";
	if (nt_start(&cfg) != NT_OK) {
		fprintf(stderr, "render_cases: %s\n", nt_last_error());
		return 0;
	}
	return 1;
}

static void record_circular(void)
{
	NT_BEGIN("case", "outer");
	/* About 50 times the 64 KiB arena. */
	for (int req = 0; req < 4000; req++) {
		NT_BEGIN("case", "request", NT_I64("n", req));
		for (int i = 0; i < 50; i++)
			NT_INSTANT("case", "step", NT_I64("i", i));
		NT_END("case", "request");
	}
	NT_END("case", "outer");
}

static void *counting_thread(void *arg)
{
	uint64_t base = *(const uint64_t *)arg;
	for (uint64_t i = 0; i < 5; i++)
		NT_COUNTER("mem", "heap", NT_U64("bytes", base + i));
	return NULL;
}

static int record_threads(void)
{
	static const uint64_t bases[2] = { 1000, 5000000 };
	pthread_t th[2];
	NT_END("case", "stray");
	NT_BEGIN("case", "unfinished");
	for (int i = 0; i < 2; i++)
		if (pthread_create(&th[i], NULL, counting_thread, (void *)&bases[i]) != 0) {
			fprintf(stderr, "render_cases: cannot start a thread\n");
			return 0;
		}
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	return 1;
}

int main(int argc, char **argv)
{
	if (argc != 3 || (strcmp(argv[1], "circular") != 0 && strcmp(argv[1], "threads") != 0)) {
		fprintf(stderr, "usage: render_cases circular|threads OUTPUT\n");
		return 1;
	}
	int circular = strcmp(argv[1], "circular") == 0;
	if (!start(circular ? NT_MODE_CIRCULAR : NT_MODE_ONESHOT, 65536, 4096))
		return 1;
	if (circular)
		record_circular();
	else if (!record_threads())
		return 1;
	if (nt_finish(argv[2]) != NT_OK) {
		fprintf(stderr, "render_cases: %s\n", nt_last_error());
		return 1;
	}
	return 0;
}
