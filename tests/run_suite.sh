#!/usr/bin/env bash
# The whole test suite: builds nanotrace three ways and runs every test in each.
#   plain        -O2 with assertions
#   asan-ubsan   AddressSanitizer + UndefinedBehaviorSanitizer (every error is fatal)
#   tsan         ThreadSanitizer (atomics mapped to __atomic builtins; see writer/core/nt_atomic.h)
# Ends with one line "N passed, N failed"; exits non-zero if anything failed.
set -u
cd "$(dirname "$0")/.."
jobs=${NT_JOBS:-$(nproc)}
passed=0
failed=0

run_config() {
	local name=$1 dir=build-suite-$1
	shift
	echo "=== $name"
	if [ ! -f "$dir/build.ninja" ]; then
		if ! meson setup "$dir" "$@" >"$dir.setup.log" 2>&1; then
			cat "$dir.setup.log"
			echo "FAIL: meson setup ($name)"
			failed=$((failed + 1))
			return
		fi
	fi
	if ! ninja -C "$dir" -j "$jobs" >"$dir.build.log" 2>&1; then
		tail -n 40 "$dir.build.log"
		echo "FAIL: build ($name)"
		failed=$((failed + 1))
		return
	fi
	meson test -C "$dir" --num-processes "$jobs" --print-errorlogs 2>&1 | tee "$dir.test.log" |
		grep -E '^ *[0-9]+/[0-9]+ ' || true
	local ok fail
	ok=$(sed -n 's/^Ok: *\([0-9]*\).*/\1/p' "$dir.test.log" | tail -n 1)
	fail=$(awk '/^(Fail|Unexpected Pass|Timeout): /{s += $2} END {print s + 0}' "$dir.test.log")
	if [ -z "$ok" ]; then
		echo "FAIL: meson test ($name) did not finish"
		failed=$((failed + 1))
		return
	fi
	passed=$((passed + ok))
	failed=$((failed + fail))
}

export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1

run_config plain
run_config asan-ubsan -Db_sanitize=address,undefined -Db_lundef=false
run_config tsan -Db_sanitize=thread -Db_lundef=false

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
