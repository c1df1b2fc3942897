/* nt_bench_scratch.h - where a benchmark program puts its files: one private directory per
 * process (mkdtemp under $TMPDIR or /tmp, mode 0700), made when the first file is named in
 * it and removed, with whatever it still holds, when the process that made it exits. A
 * name like /tmp/nt-bench-<pid> is one another user of the machine can guess and plant a
 * link at; a benchmark writes through whatever it finds there. Needs _GNU_SOURCE (nftw). */
#ifndef NT_BENCH_SCRATCH_H
#define NT_BENCH_SCRATCH_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char nt_bench_scratch_dir_[512];
static pid_t nt_bench_scratch_owner_;

static inline int nt_bench_scratch_remove_(const char *path, const struct stat *st, int type,
					   struct FTW *ftw)
{
	(void)st, (void)type, (void)ftw;
	return remove(path);
}

/* A fork()ed child that exits leaves the directory to the process that made it. */
static inline void nt_bench_scratch_clean_(void)
{
	if (nt_bench_scratch_dir_[0] != '\0' && getpid() == nt_bench_scratch_owner_)
		nftw(nt_bench_scratch_dir_, nt_bench_scratch_remove_, 8, FTW_DEPTH | FTW_PHYS);
}

/* buf[cap] = "<this process's directory>/<name>"; the directory is made at the first call.
 * When it cannot be made, says why and exits 2. */
static inline void nt_bench_scratch(char *buf, size_t cap, const char *name)
{
	if (nt_bench_scratch_dir_[0] == '\0') {
		const char *tmp = getenv("TMPDIR");
		snprintf(nt_bench_scratch_dir_, sizeof(nt_bench_scratch_dir_), "%s/nt-bench-XXXXXX",
			 tmp != NULL && *tmp != '\0' ? tmp : "/tmp");
		if (mkdtemp(nt_bench_scratch_dir_) == NULL) {
			perror(nt_bench_scratch_dir_);
			exit(2);
		}
		nt_bench_scratch_owner_ = getpid();
		atexit(nt_bench_scratch_clean_);
	}
	if ((size_t)snprintf(buf, cap, "%s/%s", nt_bench_scratch_dir_, name) >= cap) {
		fprintf(stderr, "%s/%s: the path is too long\n", nt_bench_scratch_dir_, name);
		exit(2);
	}
}

#endif /* NT_BENCH_SCRATCH_H */
