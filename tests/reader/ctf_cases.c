/* ctf_cases - writes an archive that test_ctf.py exports as CTF: more threads than the
 * export keeps files open for (300, each a stream of its own), every argument type at its
 * edges, argument names that are no TSDL identifiers or collide once made one, dynamic
 * names, and Complete events nested so that the outer one, recorded last, starts first.
 *
 * usage: ctf_cases OUTPUT */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include <nanotrace/nanotrace.h>

#define THREADS 300

static void *worker(void *arg)
{
	int i = (int)(intptr_t)arg;
	char name[32];
	snprintf(name, sizeof(name), "dyn \"%d\\ \x01\xff", i % 7); /* TSDL escapes */
	NT_BEGIN("ctf", "work", NT_I32("i32", -5 - i), NT_U32("u32", 4000000000u),
		 NT_I64("i64", INT64_MIN + i), NT_U64("u64", UINT64_MAX - (uint64_t)i));
	uint64_t outer = nt_now();
	NT_INSTANT("ctf", "edge", NT_F64("neg", -1.25), NT_F64("inf", INFINITY),
		   NT_F64("nan", NAN), NT_BOOL("flag", i & 1),
		   NT_PTR("ptr", (void *)(uintptr_t)(0xdeadbeef00u + (unsigned)i)),
		   NT_STR("s", "quote\" back\\ tab\t nl\n \x01 caf\xc3\xa9"));
	uint64_t inner = nt_now();
	NT_COUNTER("ctf", "level", NT_I64("value", i));
	NT_INSTANT_DYN("ctf", name, NT_I64("n", i));
	NT_COMPLETE("ctf", "inner", inner, NT_I64("depth", 2));
	NT_COMPLETE("ctf", "outer", outer, NT_I64("depth", 1));
	NT_INSTANT("ctf", "names", NT_I64("nt_kind", 1), NT_I64("Bool", 2), NT_I64("a-b", 3),
		   NT_I64("a_b", 4));
	NT_END("ctf", "work");
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: ctf_cases OUTPUT\n");
		return 1;
	}
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.buffer_size = 8u << 20;
	cfg.process_name = "ctf_cases";
	if (nt_start(&cfg) != NT_OK) {
		fprintf(stderr, "ctf_cases: %s\n", nt_last_error());
		return 1;
	}
	for (int batch = 0; batch < THREADS; batch += 50) { /* 50 at a time: each a new thread */
		pthread_t th[50];
		for (int i = 0; i < 50; i++)
			if (pthread_create(&th[i], NULL, worker, (void *)(intptr_t)(batch + i)) != 0) {
				fprintf(stderr, "ctf_cases: cannot start a thread\n");
				return 1;
			}
		for (int i = 0; i < 50; i++)
			pthread_join(th[i], NULL);
	}
	if (nt_finish(argv[1]) != NT_OK) {
		fprintf(stderr, "ctf_cases: %s\n", nt_last_error());
		return 1;
	}
	return 0;
}
