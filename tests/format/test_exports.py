"""test_exports: libnanotrace.so and libnanotrace-reader.so export exactly what their
installed headers declare.

The ABI is the headers: a function a header declares (the public ones, and those its macros
call, such as nt_emit_ and nt_t2_*_) or an extern variable it declares (nt_session_tag_) is
exported, and nothing else. The version scripts list the names one by one, so an internal
function whose name happens to match a prefix never leaks; this test proves the lists and
the headers agree, in both directions, by reading `nm -D --defined-only` of the built
libraries and parsing the headers for declarations.

Run as `python3 -m pytest test_exports.py` with NT_WRITER_SO, NT_READER_SO,
NT_WRITER_HEADERS and NT_READER_HEADERS (colon-separated) set: tests/format/meson.build
does. `python3 test_exports.py HEADER...` prints the names the headers declare, one a line
(what the version scripts list).
"""
import os
import re
import shutil
import subprocess
import sys

import pytest


def _strip(text):
    """The header's C declarations only: no comments, no preprocessor lines, no extern "C"
    wrapper, no bodies (a static inline function's, a struct's)."""
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    text = re.sub(r'//[^\n]*', ' ', text)
    text = re.sub(r'\\\n', ' ', text)  # macro continuations: the whole #define goes below
    text = re.sub(r'^\s*#[^\n]*', ' ', text, flags=re.M)
    text = text.replace('extern "C" {', ' ')
    out, depth = [], 0
    for ch in text:
        if ch == '{':
            depth += 1
            if depth == 1:
                out.append(' {} ')  # a body: the statement ends (inline function) or not
        elif ch == '}':
            depth -= 1
        elif depth <= 0:
            out.append(ch)
    # The closing brace of extern "C" left depth at -1: harmless, it was outside.
    return ''.join(out)


def declared(paths):
    """Names of the functions and extern variables the headers declare (not static, not
    typedef'd, not macros)."""
    names = set()
    for path in paths:
        with open(path, encoding='utf-8') as f:
            text = _strip(f.read())
        # A function body ends its statement just as a ';' does.
        for stmt in re.split(r';|\{\}', text):
            stmt = ' '.join(stmt.split())
            if not stmt or stmt.startswith(('typedef', 'static')):
                continue
            m = re.match(r'(?:extern\s+)?[\w\s\*]*?\b(nt_\w+)\s*\(', stmt)
            if m:
                names.add(m.group(1))
                continue
            m = re.match(r'extern\s+[\w\s\*]*?\b(nt_\w+)\s*(\[[^\]]*\])?$', stmt)
            if m:
                names.add(m.group(1))
    return names


def exported(so):
    """Names the shared library exports (defined dynamic symbols, version nodes left out)."""
    out = subprocess.run(['nm', '-D', '--defined-only', so], check=True,
                         capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        fields = line.split()
        if len(fields) < 3 or fields[1] == 'A':  # 'A': the version node NANOTRACE_0
            continue
        names.add(fields[2].split('@')[0])
    return names


def _env_list(var):
    value = os.environ.get(var)
    if not value:
        pytest.fail('%s is not set: run this test through `meson test -C build`' % var,
                    pytrace=False)
    return value.split(':')


@pytest.mark.parametrize('lib', ['WRITER', 'READER'])
def test_exports_equal_declarations(lib):
    if shutil.which('nm') is None:
        pytest.skip('nm not found (Debian package binutils)')
    headers = _env_list('NT_%s_HEADERS' % lib)
    so = _env_list('NT_%s_SO' % lib)[0]
    want, have = declared(headers), exported(so)
    assert want, 'no declaration found in %s: the parser is broken' % headers
    problems = ['exported but declared by no installed header: %s' % n
                for n in sorted(have - want)]
    problems += ['declared in %s but not exported: %s' % (', '.join(map(os.path.basename,
                                                                          headers)), n)
                 for n in sorted(want - have)]
    assert not problems, '%s:\n  %s' % (so, '\n  '.join(problems))


def test_parser_sees_what_headers_hold(tmp_path):
    """The parser itself: declarations found, and inline functions, macros, typedefs,
    struct fields and function pointers not taken for exports."""
    h = tmp_path / 'x.h'
    h.write_text('''
#define NT_MACRO(x) nt_not_a_function(x)
#define NT_LONG(x) \\
    nt_not_either(x)
typedef struct nt_s { void (*nt_field)(int); int nt_member; } nt_s;
typedef int (*nt_fnptr)(void);
extern uint32_t nt_var_;
static inline int nt_inline_(int a) { return nt_hidden(a); }
/* nt_commented(void); */
const char *nt_one(void);
void nt_two_(nt_s *s, unsigned kind,
             const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#ifdef __cplusplus
extern "C" {
#endif
nt_result nt_three(const nt_s *const *p, size_t n);
#ifdef __cplusplus
}
#endif
''')
    assert declared([str(h)]) == {'nt_var_', 'nt_one', 'nt_two_', 'nt_three'}


if __name__ == '__main__':
    for name in sorted(declared(sys.argv[1:])):
        print(name)
