/*
 * nt_archive_header_decode.h - verifies and decodes the ArchiveHeader FlatBuffer at the start
 * of an archive (format/nt_archive_header_decode.c): the one decoder the reader (opening any
 * archive) and the trace manager (reading a provider's live arena header) share, the
 * counterpart of nt_archive_header_encode.h. Not exported by the shared libraries.
 */
#ifndef NT_ARCHIVE_HEADER_DECODE_H
#define NT_ARCHIVE_HEADER_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "nt_archive_header.h"

/* Verifies and decodes the size-prefixed ArchiveHeader FlatBuffer at the start of the `size`
 * bytes at `data` into *out (every field the header lacks takes the schema default; strings
 * are cut to NT_HDR_MAX_STRING bytes). Every offset, vtable and string is checked to lie
 * inside the buffer and `size` before it is read, so any bytes are safe input. Returns the
 * offset of the first record after the header (8-aligned), or 0 with a message in `why`
 * (`whylen` bytes, always terminated) and the byte offset of the problem in *where. Cost:
 * one pass over the header's fields. `data` is read as it is: a caller decoding memory
 * another process may change copies the header first. */
uint64_t nt_header_decode(const uint8_t *data, size_t size, nt_archive_info *out, char *why,
			  size_t whylen, uint64_t *where);

#endif /* NT_ARCHIVE_HEADER_DECODE_H */
