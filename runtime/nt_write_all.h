/*
 * nt_write_all.h - a buffer written whole: write(2) (or pwrite(2) at *offset, advanced) again
 * after a short write or an interrupted one, until every byte is out or the system refuses.
 * Shared because the writer's archives, the CTF export, trace-record's and the manager's
 * bundles and the OTLP spool all write so, and none may include another: one definition of
 * what a short write, EINTR and a write of nothing mean.
 */
#ifndef NT_WRITE_ALL_H
#define NT_WRITE_ALL_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

/* 0 when all `len` bytes were written; else the errno of the write that failed, EIO for a
 * write of nothing (which would repeat forever), with *offset (when not NULL) past what
 * was written. */
static inline int nt_write_all(int fd, const void *data, size_t len, uint64_t *offset)
{
	const uint8_t *p = (const uint8_t *)data;
	while (len > 0) {
		ssize_t w = offset ? pwrite(fd, p, len, (off_t)*offset) : write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? errno : EIO;
		p += w;
		len -= (size_t)w;
		if (offset)
			*offset += (uint64_t)w;
	}
	return 0;
}

#endif /* NT_WRITE_ALL_H */
