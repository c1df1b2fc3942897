/*
 * fuzz_env.c - libFuzzer target: the NANOTRACE_* parsers of writer/core/nt_env.c, which
 * are static there (the exported ABI stays as it is): the file is compiled into this
 * program, so its static parsers are called directly. This object then defines every global
 * of nt_env.c, so the linker never takes libnanotrace.a's nt_env.o (an archive member is
 * pulled only for a symbol still undefined): no duplicate, whatever nt_env.c comes to hold.
 *
 * The input is up to seven values separated by NUL bytes, for NANOTRACE_MODE, _BUFFER_SIZE,
 * _CATEGORIES, _CLOCK, _MAX_FILES, _COMPRESSION and _BLOCKING_TIMEOUT in that order (a
 * missing one is unset). config_from_env (nt_start_from_env's settings, category patterns
 * included), nt_compression_level and nt_blocking_timeout_ns (writer/core/nt_env_warn.c,
 * linked from the library) read them. Their contract: a value is accepted into the config or
 * refused with an error naming the variable; the compression level is off, the default or
 * a level zstd takes; the blocking timeout is 0 (never wait) or at most
 * NT_BLOCKING_TIMEOUT_MAX_US microseconds. Anything else aborts, as a finding.
 */
#include "writer/core/nt_env.c"

#include <stdint.h>

/* Each variable lives in a buffer of ours handed to putenv once: a value is written in
 * place, so no exec allocates (setenv keeps every value it was ever given). */
#define MAX_VALUE 4096
static const char *const names[] = { "NANOTRACE_MODE", "NANOTRACE_BUFFER_SIZE",
				      "NANOTRACE_CATEGORIES", "NANOTRACE_CLOCK",
				      "NANOTRACE_MAX_FILES", "NANOTRACE_COMPRESSION",
				      "NANOTRACE_BLOCKING_TIMEOUT" };
#define NVARS (sizeof(names) / sizeof(names[0]))
static char vars[NVARS][32 + MAX_VALUE + 1];
static int devnull = -1;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	for (size_t i = 0; i < NVARS; i++) {
		snprintf(vars[i], sizeof(vars[i]), "%s=", names[i]);
		putenv(vars[i]);
	}
	devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	return 0;
}

static void set_values(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *end = data + size;
	for (size_t i = 0; i < NVARS; i++) {
		char *v = vars[i] + strlen(names[i]) + 1;
		const uint8_t *nul = p < end ? memchr(p, '\0', (size_t)(end - p)) : NULL;
		size_t n = p < end ? (size_t)((nul ? nul : end) - p) : 0;
		if (n > MAX_VALUE)
			n = MAX_VALUE;
		memcpy(v, p, n);
		v[n] = '\0';
		p = nul ? nul + 1 : end;
	}
}

/* nt_compression_level and nt_blocking_timeout_ns print one line per bad value: to
 * /dev/null while fuzzing. */
static int quiet_levels(uint64_t *block_ns)
{
	int saved = devnull >= 0 ? dup(2) : -1;
	if (saved >= 0)
		dup2(devnull, 2);
	int level = nt_compression_level(0);
	*block_ns = nt_blocking_timeout_ns(0);
	if (saved >= 0) {
		dup2(saved, 2);
		close(saved);
	}
	return level;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (devnull < 0)
		LLVMFuzzerInitialize(NULL, NULL); /* replay_main calls no initializer */
	set_values(data, size);
	nt_config cfg;
	nt_config_init(&cfg);
	long max_files = -1;
	nt_result rc = config_from_env(&cfg, &max_files);
	if (rc == NT_OK && (max_files < 0 || cfg.mode < 0))
		abort(); /* accepted, yet out of range */
	if (rc != NT_OK && strstr(nt_last_error(), "NANOTRACE") == NULL)
		abort(); /* a refusal names the variable */
	uint64_t block_ns;
	int level = quiet_levels(&block_ns);
	if (level != 0 && !nt_zchunk_level_ok(level))
		abort();
	if (block_ns > (uint64_t)NT_BLOCKING_TIMEOUT_MAX_US * 1000u)
		abort();
	return 0;
}
