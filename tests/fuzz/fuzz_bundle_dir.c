/*
 * fuzz_bundle_dir.c - libFuzzer target: nt_reader_open_many over a directory of hostile
 * files, fuzz_bundle.c's harness with BUNDLE_DIRECTORY (see there); it reads fuzz_bundle's
 * input encoding, so its corpus began as fuzz_bundle's.
 */
#define BUNDLE_DIRECTORY 1
#include "fuzz_bundle.c"
