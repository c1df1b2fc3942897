/*
 * nt_error.h - how the writer reports a failure (nt_error.c), at the bottom of writer/core:
 * it calls nothing else of the writer, so every file may report through it.
 *
 * A public function returns nt_result (NT_OK, or the NT_ERR_* that says what kind of
 * failure) and leaves a one-line message naming what and where for nt_last_error(), set by
 * nt_set_error(); a public function that returns a value instead (nt_is_recording, counts)
 * cannot fail. An internal function returns nt_result the same way, or an int that is 0 on
 * success and nonzero on failure when its callers only need to know whether it worked;
 * whichever fails first sets the message (nt_set_error), and callers above it pass the
 * result on without replacing the message. A system call's errno becomes part of that
 * message (nt_file_strerror), never a return value. Async-signal handlers and the event
 * path report nothing: they count what they drop in the header's counters.
 */
#ifndef NT_ERROR_H
#define NT_ERROR_H

/* Sets this thread's nt_last_error() message (printf format; control characters become
 * '?' so that it stays one line). */
void nt_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Empties this thread's nt_last_error() message (a session starting). */
void nt_clear_error(void);

#endif /* NT_ERROR_H */
