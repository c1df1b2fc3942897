/*
 * replay_main.c - runs a fuzz target's LLVMFuzzerTestOneInput once on every file of the
 * directories (or files) given, without libFuzzer: the corpus as a regression test in
 * every build (gcc, clang, ASan+UBSan, TSan), as OSS-Fuzz's standalone driver does.
 * Each input is read into a buffer of exactly its size, so a read past it is caught by
 * ASan. Prints one line per directory; exits 1 on an unreadable path, and a finding
 * crashes or aborts as it would under libFuzzer.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	if (f == NULL || fstat(fileno(f), &st) != 0) {
		fprintf(stderr, "replay: %s: cannot read\n", path);
		if (f)
			fclose(f);
		return 0;
	}
	size_t size = (size_t)st.st_size;
	uint8_t *buf = malloc(size ? size : 1);
	int ok = buf != NULL && fread(buf, 1, size, f) == size;
	fclose(f);
	if (ok)
		LLVMFuzzerTestOneInput(buf, size);
	else
		fprintf(stderr, "replay: %s: cannot read\n", path);
	free(buf);
	return ok;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int run_dir(const char *dir)
{
	struct dirent **names;
	int n = scandir(dir, &names, NULL, by_name), ok = n >= 0, ran = 0;
	for (int i = 0; i < n; i++) {
		char path[4096];
		if (names[i]->d_name[0] != '.') {
			snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
			ok &= run_file(path);
			ran++;
		}
		free(names[i]);
	}
	free(names);
	if (n < 0)
		fprintf(stderr, "replay: %s: cannot list\n", dir);
	else
		printf("replay: %s: %d inputs\n", dir, ran);
	return ok && ran > 0;
}

int main(int argc, char **argv)
{
	int ok = argc > 1;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		ok &= stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode) ? run_dir(argv[i])
								     : run_file(argv[i]);
	}
	if (argc < 2)
		fputs("usage: replay_TARGET DIR|FILE ...\n", stderr);
	return ok ? 0 : 1;
}
