/*
 * nt_fork_path.h - where a fork() child's own archive goes: beside its parent's.
 *
 * The one definition of the name, shared by the writer (which creates the child's file, or
 * redirects a child's nt_finish(path)) and the reader (whose --stats tells a parent's
 * archive where its children's went). A parent archive "<stem>.ntrace" gives
 * "<stem>.<pid>.ntrace"; any other name "<name>" gives "<name>.<pid>". A grandchild's name
 * is derived the same way from its parent's (the child's).
 */
#ifndef NT_FORK_PATH_H
#define NT_FORK_PATH_H

#include <stdio.h>
#include <string.h>

#define NT_FORK_SUFFIX ".ntrace"

/* Writes the child's name for parent archive `base` and the child's pid as text `pid` into
 * out. Returns 1, or 0 when it does not fit `cap` (out then holds a truncated name that
 * must not be used). */
static inline int nt_fork_child_name(char *out, size_t cap, const char *base, const char *pid)
{
	size_t n = strlen(base), s = sizeof(NT_FORK_SUFFIX) - 1;
	int len;
	if (n > s && strcmp(base + n - s, NT_FORK_SUFFIX) == 0)
		len = snprintf(out, cap, "%.*s.%s%s", (int)(n - s), base, pid, NT_FORK_SUFFIX);
	else
		len = snprintf(out, cap, "%s.%s", base, pid);
	return len > 0 && (size_t)len < cap;
}

#endif /* NT_FORK_PATH_H */
