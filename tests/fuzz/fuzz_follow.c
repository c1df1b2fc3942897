/*
 * fuzz_follow.c - libFuzzer target: nt_follow_open and nt_follow_poll (trace-dump --follow)
 * on a hostile file that changes between polls, as a writer (or an attacker) changes it.
 * The input is parts joined by FUZZ_SPLIT (fuzz_reader_common.h): the first is the file's
 * first content; each later one is a change made before the next poll, its first byte op
 * and the next four a little-endian offset, the rest its bytes:
 *   op % 3 == 0  the bytes written at offset (modulo the file's size + 1)
 *   op % 3 == 1  the file truncated or grown to offset (modulo twice its size + 64 KiB)
 *   op % 3 == 2  the file's content replaced by the bytes (a finished archive, another
 *                recording)
 * The follower is polled once after opening and once after each change, until a poll
 * returns anything but RUNNING; then its reader, error and lost count are read.
 * The file is a memfd, followed through /proc/self/fd/N: nothing is written to disk.
 * A failed poll retries twice 1 ms apart (a copy that met a writer's half-done store); the
 * harness's file does not change between those tries, so usleep is a no-op here (it would
 * cap this target at a few hundred inputs a second).
 */
#include "fuzz_reader_common.h"

#include <sys/mman.h>
#include <sys/stat.h>

#define MAX_PARTS 9

int usleep(useconds_t us)
{
	(void)us;
	return 0;
}

static void on_gap(void *ctx, const nt_reader_gap *gap)
{
	(void)ctx;
	(void)gap;
}

static void write_all_at(int fd, const uint8_t *p, size_t len, off_t at)
{
	while (len > 0) {
		ssize_t n = pwrite(fd, p, len, at);
		if (n <= 0)
			return;
		p += n;
		len -= (size_t)n;
		at += n;
	}
}

static void change(int fd, const uint8_t *p, size_t len)
{
	uint8_t op = len > 0 ? p[0] : 0;
	uint32_t offset = 0;
	if (len >= 5)
		memcpy(&offset, p + 1, 4);
	const uint8_t *bytes = len >= 5 ? p + 5 : p + len;
	size_t nbytes = len >= 5 ? len - 5 : 0;
	struct stat st;
	if (fstat(fd, &st) != 0)
		return;
	uint64_t size = (uint64_t)st.st_size;
	switch (op % 3) {
	case 0:
		write_all_at(fd, bytes, nbytes, (off_t)(offset % (size + 1)));
		break;
	case 1:
		if (ftruncate(fd, (off_t)(offset % (2 * size + 65536))) != 0)
			return;
		break;
	case 2:
		if (ftruncate(fd, 0) == 0)
			write_all_at(fd, bytes, nbytes, 0);
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *part[MAX_PARTS];
	size_t len[MAX_PARTS];
	size_t n = fuzz_split(data, size, part, len, MAX_PARTS);
	int fd = memfd_create("nt-fuzz-follow", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	write_all_at(fd, part[0], len[0], 0);
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	nt_reader_error err;
	nt_follower *f = nt_follow_open(path, &err);
	if (f != NULL) {
		nt_reader_callbacks cb = { 0 };
		cb.on_event = fuzz_count_event;
		cb.on_error = fuzz_ignore_error;
		cb.on_gap = on_gap;
		uint64_t events = 0;
		int st = nt_follow_poll(f, &cb, &events);
		for (size_t i = 1; i < n && st == NT_FOLLOW_RUNNING; i++) {
			change(fd, part[i], len[i]);
			st = nt_follow_poll(f, &cb, &events);
		}
		(void)nt_follow_reader(f);
		(void)nt_follow_error(f);
		(void)nt_follow_lost(f);
		nt_follow_close(f);
	}
	close(fd);
	return 0;
}
