"""The public headers as a strict ISO program meets them: compile_pedantic.c (every macro of
nanotrace.h and nanotrace_trace2.h, event macros with and without arguments) compiles with
-std=c11, -std=c++11 and -std=c++17, -Wall -Wextra -Wpedantic -Werror, with gcc, g++, clang and
clang++ (those installed), with and without NTRACE. And the diagnostics of a wrong call: an
argument that is not an NT_*() value gets the compiler's error about that argument and no
"at most 32 arguments" assertion after it; a 33rd argument gets that assertion.

Run by meson (suite writer) with NT_HEADER_FLAGS (the -I flags of the public headers) and
NT_PEDANTIC_SOURCE."""
import os
import shlex
import shutil
import subprocess

import pytest

FLAGS = shlex.split(os.environ.get('NT_HEADER_FLAGS', ''))
SOURCE = os.environ.get('NT_PEDANTIC_SOURCE') or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), 'compile_pedantic.c')
WARN = ['-Wall', '-Wextra', '-Wpedantic', '-Werror']
COMPILERS = [('gcc', 'c', 'c11'), ('clang', 'c', 'c11'),
             ('g++', 'c++', 'c++11'), ('g++', 'c++', 'c++17'),
             ('clang++', 'c++', 'c++11'), ('clang++', 'c++', 'c++17')]


def compile_text(compiler, lang, std, path, extra=()):
    if shutil.which(compiler) is None:
        pytest.skip('%s not installed' % compiler)
    cmd = [compiler, '-x', lang, '-std=' + std, '-fsyntax-only', *WARN, *FLAGS, *extra, path]
    return cmd, subprocess.run(cmd, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize('ntrace', [False, True], ids=['recording', 'NTRACE'])
@pytest.mark.parametrize('compiler,lang,std', COMPILERS,
                         ids=['%s-%s' % (c, s) for c, _, s in COMPILERS])
def test_every_macro_is_pedantic_clean(compiler, lang, std, ntrace):
    cmd, p = compile_text(compiler, lang, std, SOURCE, ['-DNTRACE'] if ntrace else [])
    assert p.returncode == 0, '$ %s\n%s' % (shlex.join(cmd), p.stderr)


WRONG = [
    # an int where an NT_*() argument belongs: brace elision once packed two of them into
    # one array element, and the array's size check fired as "at most 32 arguments"
    ('NT_INSTANT("c", "n", x, x);', 'int'),
    ('NT_INSTANT("c", "n", NT_I64("a", 1), 2, 3);', 'int'),
    ('NT_COMPLETE("c", "n", nt_now(), 1.5);', 'double'),
    ('NT_INSTANT_DYN("c", "n", x);', 'int'),
]


@pytest.mark.parametrize('call,kind', WRONG, ids=[c for c, _ in WRONG])
@pytest.mark.parametrize('compiler,lang,std', [('clang', 'c', 'c11'), ('g++', 'c++', 'c++17'),
                                               ('clang++', 'c++', 'c++17')])
def test_wrong_argument_is_one_error_about_it(tmp_path, compiler, lang, std, call, kind):
    src = tmp_path / 'wrong.c'
    src.write_text('#include <nanotrace/nanotrace.h>\nvoid f(int x);\nvoid f(int x)\n{\n'
                   '\t(void)x;\n\t%s\n}\n' % call)
    cmd, p = compile_text(compiler, lang, std, str(src))
    assert p.returncode != 0, '$ %s compiled' % shlex.join(cmd)
    assert 'wrong.c:6:' in p.stderr and kind in p.stderr, p.stderr
    assert 'at most 32 arguments' not in p.stderr, p.stderr
    assert 'sizeof' not in p.stderr, p.stderr


@pytest.mark.parametrize('macro', ['NT_INSTANT("c", "n", %s)', 'NT_COMPLETE("c", "n", 0, %s)',
                                   'NT_INSTANT_DYN("c", "n", %s)'])
@pytest.mark.parametrize('compiler,lang,std', [('gcc', 'c', 'c11'), ('clang++', 'c++', 'c++11')])
def test_a_33rd_argument_is_refused(tmp_path, compiler, lang, std, macro):
    args = ', '.join('NT_I64("a%d", %d)' % (i, i) for i in range(33))
    if 'DYN' in macro:
        args = args.replace('NT_I64(', 'nt_arg_i64(')
    src = tmp_path / 'many.c'
    src.write_text('#include <nanotrace/nanotrace.h>\nvoid f(void);\nvoid f(void)\n{\n\t%s;\n}\n'
                   % (macro % args))
    cmd, p = compile_text(compiler, lang, std, str(src))
    assert p.returncode != 0, '$ %s compiled' % shlex.join(cmd)
    assert 'at most 32 arguments' in p.stderr, p.stderr
    # 32 compile
    src.write_text(src.read_text().replace(', NT_I64("a32", 32)', '')
                   .replace(', nt_arg_i64("a32", 32)', ''))
    cmd, p = compile_text(compiler, lang, std, str(src))
    assert p.returncode == 0, '$ %s\n%s' % (shlex.join(cmd), p.stderr)
