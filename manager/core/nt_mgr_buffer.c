/*
 * nt_mgr_buffer.c - a provider's buffer: a memfd the manager creates and keeps, so what a
 * provider published survives the provider.
 *
 * Sealed against growing and shrinking before it is handed out: the provider cannot
 * truncate it under the manager's mapping (which would turn the manager's reads into
 * SIGBUS), nor make it huge. A new memfd is zero-filled, which is what a fresh arena is.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "nt_mgr_internal.h"

static const char *layout_problem(int rc)
{
	switch (rc) {
	case NT_LAYOUT_BAD_BUFFER_SIZE:
		return "buffer size outside [64 KiB, 4 GiB]";
	case NT_LAYOUT_BAD_CHUNK_SIZE:
		return "chunk size not a power of two in [4 KiB, 64 KiB]";
	case NT_LAYOUT_TOO_FEW_CHUNKS:
		return "fewer than 2 chunks per rolling half";
	}
	return "invalid sizes";
}

int nt_mgr_buffer_create(nt_mgr_provider *p, uint64_t buffer_size, uint64_t chunk_size,
			 int mode, char *why, size_t whylen)
{
	int rc = nt_arena_layout_compute(buffer_size, chunk_size, &p->layout);
	if (rc != NT_LAYOUT_OK) {
		snprintf(why, whylen, "%s", layout_problem(rc));
		return -1;
	}
	int fd = memfd_create("nanotrace-buffer", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) {
		snprintf(why, whylen, "memfd_create: %s", strerror(errno));
		return -1;
	}
	if (ftruncate(fd, (off_t)p->layout.map_size) != 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) != 0) {
		snprintf(why, whylen, "sizing and sealing the buffer: %s", strerror(errno));
		close(fd);
		return -1;
	}
	void *map = mmap(NULL, p->layout.map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		snprintf(why, whylen, "mapping the buffer (%llu bytes): %s",
			 (unsigned long long)p->layout.map_size, strerror(errno));
		close(fd);
		return -1;
	}
	p->memfd = fd;
	p->map = map;
	p->mode = mode;
	return 0;
}

void nt_mgr_buffer_release(nt_mgr_provider *p)
{
	if (p->stream != NULL) {
		nt_mgr_saver_free(p->stream);
		p->stream = NULL;
	}
	if (p->map != NULL)
		munmap(p->map, p->layout.map_size);
	p->map = NULL;
	if (p->memfd >= 0)
		close(p->memfd);
	p->memfd = -1;
	if (p->fifo >= 0)
		close(p->fifo);
	p->fifo = -1;
}
