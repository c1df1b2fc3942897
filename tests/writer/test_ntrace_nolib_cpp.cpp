/* test_ntrace_nolib_cpp.cpp - test_ntrace_nolib.c compiled as C++: NTRACE there too. */
#include "test_ntrace_nolib.c"
