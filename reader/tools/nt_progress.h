/*
 * nt_progress.h - a progress line on stderr for the reader's tools: while a long render
 * writes its output to a file or a pipe, one line "TOOL: 123.4 MB written, 5.2 s" on the
 * terminal, updated at most every 100 ms and erased at the end. Only when stderr is a
 * terminal and standard output is not (the line would otherwise mix with the output), and
 * not when the user asked for none (--no-progress).
 *
 * It counts bytes as they pass from the renderer to standard output, through a stdio stream
 * of its own (fopencookie) that writes each block straight on to stdout: one clock read
 * per block (the renderers write 64 KiB blocks), no other cost on the rendering.
 */
#ifndef NT_PROGRESS_H
#define NT_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

typedef struct nt_progress {
	const char *tool;     /* "trace-dump" */
	FILE *out;            /* where the renderer writes: the counting stream, or stdout */
	uint64_t bytes;       /* written so far */
	int64_t start_ns, last_ns;
	int shown;            /* a line is on the terminal */
} nt_progress;

/* Whether a progress line belongs on this terminal: stderr a TTY, stdout not. */
int nt_progress_wanted(void);

/* The same for a tool that writes only files: stderr a TTY. */
int nt_progress_wanted_on_stderr(void);

/* Starts counting: p->out is a stream that writes through to stdout and shows the line.
 * When that stream cannot be made, p->out is stdout and nothing is shown. */
void nt_progress_start(nt_progress *p, const char *tool);

/* For work of a known size that writes no output of its own (trace-import): p->out is
 * stdout, and nt_progress_update() shows "TOOL: 12.3 of 45.6 MB imported (27%), 1.2 s". */
void nt_progress_begin(nt_progress *p, const char *tool);

/* The line for `done` of `total` bytes, at most every 100 ms; done == total erases it. */
void nt_progress_update(nt_progress *p, uint64_t done, uint64_t total);

/* Flushes p->out, erases the line and closes the counting stream (stdout stays open: its
 * errors are the caller's to check, as without progress). */
void nt_progress_end(nt_progress *p);

#endif /* NT_PROGRESS_H */
