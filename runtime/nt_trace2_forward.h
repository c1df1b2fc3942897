/*
 * nt_trace2_forward.h - the one statement of the Trace2 forwarder's entry points, which
 * libnanotrace-reader defines (reader/trace2/nt_trace2_forward.c, declared for users in
 * <nanotrace/nanotrace_reader.h>) and libnanotrace's Trace2 layer finds with dlopen() and
 * dlsym() (writer/trace2/nt_trace2_forward.c): the writer never links the reader, so the
 * names and the function types are written here once, and the reader's definitions are
 * checked against these types by the compiler. Not installed.
 */
#ifndef NT_TRACE2_FORWARD_H
#define NT_TRACE2_FORWARD_H

/* The reader library's file name, as its soname (meson: soversion '0'). */
#define NT_TRACE2_FORWARD_LIBRARY "libnanotrace-reader.so.0"

#define NT_TRACE2_FORWARD_START_NAME "nt_trace2_forward_start"
#define NT_TRACE2_FORWARD_STOP_NAME "nt_trace2_forward_stop"

/* How often the forwarder looks at the archive, and the longest a send to a listener that
 * stopped reading may block (a stalled listener's target is then off, with one warning). */
#define NT_TRACE2_FORWARD_INTERVAL_MS 200u
#define NT_TRACE2_FORWARD_SEND_TIMEOUT_MS 1000

typedef struct nt_trace2_forwarder nt_trace2_forwarder;

typedef nt_trace2_forwarder *nt_trace2_forward_start_fn(const char *archive, const char *target,
							 const char *who, unsigned interval_ms);
typedef int nt_trace2_forward_stop_fn(nt_trace2_forwarder *fw, int timeout_ms);

#endif /* NT_TRACE2_FORWARD_H */
