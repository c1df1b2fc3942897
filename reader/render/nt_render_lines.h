/* nt_render_lines.h - a long list of lines formatted on two threads (not installed).
 *
 * `--stats` of a bundle of 20,000 short processes writes a line per thread and one per
 * process: 40,000 lines, about 2.4 ms of formatting on one thread, after the visit that
 * kept both CPUs busy and is over. Each line is a function of data that nothing changes
 * while the lines are written, so the later part can be formatted on a helper thread into
 * memory while this one formats the earlier part into the output, then written after it:
 * the bytes are the ones one thread writes, in the same order. */
#ifndef NT_RENDER_LINES_H
#define NT_RENDER_LINES_H

#include <stdint.h>

#include "reader/common/nt_out.h"

/* Line i into o: it must read only what stays unchanged during the call, write only into
 * o, and may run on another thread. */
typedef void nt_line_fn(nt_out *o, uint32_t i, const void *ctx);

/* Lines [0, n) into o, in order. With NT_RENDER_LINES_SPLIT lines or more, and helper
 * threads allowed (reader/common/nt_helpers.h: NANOTRACE_READER_AHEAD=off never, a number
 * from 2 lines on, by default with two CPUs), the later 47 % are formatted on a thread of
 * their own into memory (what they take: about 100 bytes a line) and written after the
 * others; when that thread or its memory cannot be had, this thread formats them. Stops
 * early once a write to o fails (o->failed). Cost: O(n) lines; a thread start past the
 * threshold. */
#define NT_RENDER_LINES_SPLIT 4096
void nt_render_lines(nt_out *o, uint32_t n, nt_line_fn *line, const void *ctx);

#endif /* NT_RENDER_LINES_H */
