/*
 * compile_clang.c - compiled, not run: clang and clang++ (-Wall -Wextra -Werror) accept
 * runtime values in every argument of every event macro, the case gcc alone used to accept
 * (`NT_SCOPE("io", "hash_file", NT_STR("path", path))` was "initializer element is not a
 * compile-time constant" under clang). tests/writer/meson.build runs it when clang exists.
 */
#include <nanotrace/nanotrace.h>
#include <nanotrace/nanotrace_trace2.h>

int compile_clang(const char *path, int n, double d, const char *const *argv);
int compile_clang(const char *path, int n, double d, const char *const *argv)
{
	NT_SCOPE("io", "hash_file", NT_STR("path", path));
	NT_INSTANT("io", "i", NT_I64("n", n), NT_U64("u", n), NT_I32("i", n), NT_U32("v", n),
		   NT_F64("d", d), NT_BOOL("b", n > 0), NT_PTR("p", path), NT_STR("s", path));
	NT_BEGIN("io", "b", NT_STR("path", path));
	NT_END("io", "b", NT_I64("n", n));
	NT_COUNTER("io", "c", NT_U64("bytes", n));
	NT_COMPLETE("io", "x", nt_now(), NT_STR("path", path));
	NT_INSTANT_DYN(path, path, nt_arg_i64(path, n));
	NT_BEGIN_DYN(path, path);
	NT_ASYNC_BEGIN("io", "req", path, NT_STR("path", path));
	NT_FLOW_STEP_GLOBAL("io", "flow", 42);
	NT_ASYNC_END_DYN(path, path, 1, nt_arg_str(path, path));
	NT_END_DYN(path, path);
	NT_COUNTER_DYN(path, path, nt_arg_f64(path, d));
	NT_T2_CMD_START(argv);
	NT_T2_CMD_NAME(path);
	NT_T2_REGION_ENTER("io", "r", n);
	NT_T2_REGION_ENTER_PRINTF("io", "r", n, "%s", path);
	NT_T2_DATA_STRING("io", n, "k", path);
	NT_T2_DATA_INTMAX("io", n, "k", n);
	NT_T2_REGION_LEAVE_PRINTF("io", "r", n, "%s", path);
	NT_T2_REGION_LEAVE("io", "r", n);
	return NT_T2_CMD_EXIT(n);
}
