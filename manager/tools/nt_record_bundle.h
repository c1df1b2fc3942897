/*
 * nt_record_bundle.h - what trace-record does with a bundle the manager could not finish:
 * keep every whole frame, cut after the last one, and end it with END(MANAGER_LOST).
 */
#ifndef NT_RECORD_BUNDLE_H
#define NT_RECORD_BUNDLE_H

#include <stddef.h>
#include <stdint.h>

/* Makes the bundle in `fd` a complete one: validates the preamble (writes a fresh one when
 * the file is too short to hold it), walks the frames while each lies whole inside the file,
 * truncates after the last whole SECTION and appends an END frame with `end_state` and
 * `message`. *sections gets the SECTION frames kept. Returns 0, or -1 with the reason in
 * why (the file is not a bundle, or an I/O error); a bundle that already has its END frame
 * is left as it is. Cost: one read per frame, one truncate, one write. */
int nt_record_bundle_salvage(int fd, int end_state, const char *message, uint32_t *sections,
			     char *why, size_t whylen);

#endif /* NT_RECORD_BUNDLE_H */
