/*
 * fuzz_render_ctf.c - libFuzzer target: any bytes as an archive, exported as CTF
 * (nt_render_ctf) into "trace" under a private directory of this process (mkdtemp), which
 * is emptied after each input and removed at exit.
 */
#include "fuzz_reader_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *base = fuzz_private_dir("ctf");
	nt_reader_error err;
	nt_reader *r = base != NULL ? nt_reader_open_memory(data, size, "fuzz", &err) : NULL;
	if (r == NULL)
		return 0;
	char dir[600];
	snprintf(dir, sizeof(dir), "%s/trace", base);
	nt_render_options opt;
	nt_render_options_init(&opt);
	nt_render_ctf(r, dir, &opt, &err);
	nt_reader_close(r);
	fuzz_empty_dir(dir);
	rmdir(dir);
	return 0;
}
