/*
 * nt_error.h - how the writer reports a failure (nt_error.c), at the bottom of writer/core:
 * it calls nothing else of the writer, so every file may report through it.
 *
 * The convention of the writer library:
 * - A public function that can fail returns nt_result (NT_OK, or the NT_ERR_* that says
 *   what kind of failure) and leaves one line naming what and where for nt_last_error();
 *   one that returns a value instead (nt_is_recording, nt_get_stats) cannot fail.
 * - An internal function that can fail and knows what failed returns nt_result too and sets
 *   the message itself (nt_set_error); callers pass the result up without replacing the
 *   message. One that only answers whether something worked returns int, nonzero for yes.
 * - The file helpers that wrap one system call (nt_file.c: nt_create_beside,
 *   nt_file_publish) keep its convention (-1 and errno) and set no message: their caller,
 *   who knows what the file was for, words it. nt_write_all, several write()s, returns 0
 *   or the errno that stopped it, for the saver to keep in the header (SAVE_ERRNO).
 * - The event path and the async-signal handlers set no message: what they cannot record
 *   they count in the header's counters.
 * - The provider thread (nt_registry.c) answers the trace manager, not a caller: its
 *   message handlers return 1 or 0 with the reason written into the caller's buffer,
 *   which goes to the manager.
 */
#ifndef NT_ERROR_H
#define NT_ERROR_H

/* Sets this thread's nt_last_error() message (printf format; control characters become
 * '?' so that it stays one line). */
void nt_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Empties this thread's nt_last_error() message (a session starting). */
void nt_clear_error(void);

#endif /* NT_ERROR_H */
