/* nt_reader_pipe.h - a helper thread doing a sequence of jobs ahead of the one thread that
 * needs their results in order (nt_reader_pipe.c; not installed). */
#ifndef NT_READER_PIPE_H
#define NT_READER_PIPE_H

#include <stddef.h>
#include <stdint.h>

typedef struct nt_pipe nt_pipe;

/* What a job is. Each is a function of inputs that do not change while the pipe runs, so
 * that its result is the same whichever thread computed it. */
typedef struct nt_pipe_ops {
	/* Job i, its result written into `slot` (slot_size bytes, zeroed at first use, then
	 * as the last job or drop left it: buffers in it may be reused). Runs on the helper. */
	void (*run)(void *ctx, uint32_t i, void *slot);
	/* Releases what a result holds that its consumer did not take (a job done for nothing,
	 * or left at the stop), leaving its reusable buffers. Either thread. */
	void (*drop)(void *ctx, void *slot);
	/* Frees a slot's buffers, at the stop. */
	void (*free_slot)(void *ctx, void *slot);
} nt_pipe_ops;

/* Starts the helper on jobs 0..n-1, at most `window` (2..256) of them done and not yet given
 * back. NULL (then do every job yourself): n or window 0, no memory, no thread. `ops` and
 * `ctx` must outlive the pipe. Cost: a thread's start, window * slot_size bytes. */
nt_pipe *nt_pipe_start(const nt_pipe_ops *ops, void *ctx, uint32_t n, uint32_t window,
		       size_t slot_size);

/* Job i's result when the helper did it: its slot, the caller's until nt_pipe_done(i).
 * NULL when the caller is to do job i itself (the helper has not reached it, and will
 * skip it; it was given up waiting for). Waits (spinning, at most 100 us) only while the
 * helper is doing job i. Jobs are asked for in increasing order, each at most once. NULL
 * is the caller's own when p is NULL. */
void *nt_pipe_take(nt_pipe *p, uint32_t i);

/* The result of job i, taken, is no longer used: its slot goes back to the helper. */
void nt_pipe_done(nt_pipe *p, uint32_t i);

/* Stops the helper (within the job it is doing), joins it, drops what was not taken and
 * frees everything. NULL is ignored. */
void nt_pipe_stop(nt_pipe *p);

#endif /* NT_READER_PIPE_H */
