/* trace_dump_follow.h - trace-dump's --follow mode (trace_dump_follow.c). */
#ifndef TRACE_DUMP_FOLLOW_H
#define TRACE_DUMP_FOLLOW_H

/* Is --follow among the arguments? */
int trace_dump_wants_follow(int argc, char **argv);
/* trace-dump --follow's whole run; returns the exit status. */
int trace_dump_follow(int argc, char **argv);

#endif
