/*
 * nt_saved_range.h - what a trace manager tells whoever ships a streaming provider's
 * section as its buffers are saved (manager/core's nt_manager_config.on_stream, ship/'s
 * nt_ship_stream): one statement for both, since neither may include the other.
 */
#ifndef NT_SAVED_RANGE_H
#define NT_SAVED_RANGE_H

#include <stddef.h>
#include <stdint.h>

typedef struct nt_saved_range {
	uint64_t id;             /* the stream's number in this manager: 1, 2, ... */
	const char *name;        /* the provider's */
	/* The provider's header as the manager validated it at this save (its loss counts
	 * and clock so far), encoded as a Stream-layout archive's (format/
	 * nt_archive_header_encode.h) with events_written 0 (not counted) and the manager's
	 * codec: followed by the saved records so far it is an archive. In the `ended` call,
	 * the section's own header (its counts to the end), likewise uncounted. */
	const uint8_t *header;
	size_t header_len;
	/* The saved records (durable records and chunks, each whole) that this save
	 * committed: bytes [from, to) of fd, after the earlier calls' bytes. */
	int fd;
	uint64_t from, to;
	/* Set in the last call: the section was written to the bundle, its archive `len`
	 * bytes at `offset` of bundle_fd (len 0: none, as a section whose header failed). */
	int ended;
	int bundle_fd;
	uint64_t offset, len;
} nt_saved_range;

#endif /* NT_SAVED_RANGE_H */
