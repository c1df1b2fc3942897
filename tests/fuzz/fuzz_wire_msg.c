/*
 * fuzz_wire_msg.c - libFuzzer target: the trace manager's message and FIFO packet handling
 * alone, fuzz_wire.c's harness without the arena and its saver (see there,
 * WIRE_MESSAGES_ONLY); it reads fuzz_wire's input encoding, so the two share seeds.
 */
#define WIRE_MESSAGES_ONLY 1
#include "fuzz_wire.c"
