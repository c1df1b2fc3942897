"""test_clock_choice: nt_config.clock takes an nt_clock_choice (NT_CLOCK_AUTO,
NT_CLOCK_USE_MONOTONIC, NT_CLOCK_USE_TSC), and the format's clock constants, named
NT_CLOCK_SOURCE_*, cannot be written in its place: `cfg.clock = NT_CLOCK_TSC` once compiled
and silently chose the monotonic clock.

The compiler is run on small programs (meson passes it in NT_CC and NT_CXX, the include
folders in NT_INCLUDES) and must accept the right ones and refuse the mistakes.
"""
import os
import shlex
import subprocess

import pytest

PROGRAM = '''#include <nanotrace/nanotrace.h>
int main(void)
{
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.clock = %s;
	return nt_start(&cfg) == NT_OK ? 0 : 1;
}
'''


def compile_snippet(tmp_path, lang, value):
    """(returncode, diagnostics) of compiling PROGRAM with cfg.clock = value."""
    var = 'NT_CC' if lang == 'c' else 'NT_CXX'
    cmd = os.environ.get(var)
    if not cmd:
        pytest.fail('%s is not set: run this test through `meson test -C build`' % var,
                    pytrace=False)
    src = tmp_path / ('snippet.' + lang)
    src.write_text(PROGRAM % value)
    incs = ['-I' + d for d in os.environ.get('NT_INCLUDES', '').split(':') if d]
    std = ['-std=gnu11'] if lang == 'c' else ['-std=c++17', '-xc++']
    r = subprocess.run(shlex.split(cmd) + std + incs + ['-Wall', '-Wextra', '-Werror',
                       '-fsyntax-only', str(src)], capture_output=True, text=True)
    return r.returncode, r.stderr


@pytest.mark.parametrize('lang', ['c', 'cpp'])
def test_clock_choices_compile(tmp_path, lang):
    for value in ('NT_CLOCK_AUTO', 'NT_CLOCK_USE_MONOTONIC', 'NT_CLOCK_USE_TSC'):
        rc, err = compile_snippet(tmp_path, lang, value)
        assert rc == 0, '%s: cfg.clock = %s refused:\n%s' % (lang, value, err)


@pytest.mark.parametrize('lang', ['c', 'cpp'])
def test_format_clock_names_do_not_compile(tmp_path, lang):
    """The names of the old mistake are gone; the format's own constants are another
    enum, which C++ refuses outright."""
    wrong = ['NT_CLOCK_TSC', 'NT_CLOCK_MONOTONIC']
    if lang == 'cpp':
        wrong += ['NT_CLOCK_SOURCE_TSC', 'NT_CLOCK_SOURCE_MONOTONIC']
    failures = []
    for value in wrong:
        rc, err = compile_snippet(tmp_path, lang, value)
        if rc == 0:
            failures.append('cfg.clock = %s compiled' % value)
        elif 'NT_CLOCK' not in err and 'nt_clock' not in err:
            failures.append('cfg.clock = %s failed for another reason:\n%s' % (value, err))
    assert not failures, '%s:\n%s' % (lang, '\n'.join(failures))
