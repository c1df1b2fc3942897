"""Every C code block of README.md compiles and links, with the project's C compiler, as C11
and as GNU C11 (-std=c11, -std=gnu11), with -Wall -Wextra -Werror, against the in-tree
headers and the built static libraries.

The rule, per ```c block (other blocks, ```sh and plain ```, are not compiled):
- A block that contains `int main(` is a whole program: compiled as it stands.
- Any other block is a fragment. Its `#include` lines stay at the top of the file; the rest
  becomes the body of a function whose parameters are the variables fragments use without
  declaring them (FREE_VARIABLES below: add a name there when the README needs a new one),
  after <stdint.h>, <stdio.h>, <stdlib.h> and <string.h>. A `...` in a fragment stands for
  elided code and becomes a comment.
Both are linked into a program (a fragment gets an empty main) against libnanotrace and
libnanotrace-reader, so every function the README names must be exported.

Run by meson (suites cli, quick) with NT_CC (the C compiler command), NT_CFLAGS (the
include directories, sanitizer flags), NT_LDFLAGS (the static libraries and their
dependencies), NT_README and NT_WORKDIR. Each failing snippet is its own failed test, named
after its README line.
"""
import os
import re
import shlex
import subprocess

import pytest

from conftest import program

README = os.environ.get('NT_README') or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), '..', '..', 'README.md')

# Variables a fragment may use without declaring them, as function parameters (so the
# compiler sees them initialized).
FREE_VARIABLES = [
    'int fd',
    'const char *path',
    'uint32_t seq',
    'uint64_t heap_bytes',
]


def snippets():
    """(first line number, text) of every ```c block of README.md."""
    found = []
    lines = open(README, encoding='utf-8').read().split('\n')
    i = 0
    while i < len(lines):
        if lines[i].strip() == '```c':
            start = i + 1
            j = start
            while j < len(lines) and lines[j].strip() != '```':
                j += 1
            assert j < len(lines), 'README.md:%d: ```c block never closed' % (start)
            found.append((start + 1, '\n'.join(lines[start:j]) + '\n'))
            i = j
        i += 1
    return found


def is_program(text):
    return re.search(r'\bint\s+main\s*\(', text) is not None


def translation_unit(line, text):
    """The C file to compile for the snippet at README.md:line."""
    head = '#line %d "README.md"\n' % line
    if is_program(text):
        return head + text
    includes, body = [], []
    for n, src in enumerate(text.split('\n')):
        if src.lstrip().startswith('#include'):
            includes.append('#line %d "README.md"\n%s' % (line + n, src))
            body.append('')
        else:
            body.append(src.replace('...', '/* ... */'))
    params = ',\n'.join('\t__attribute__((unused)) ' + v for v in FREE_VARIABLES)
    return ('#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n'
            + '\n'.join(includes) + '\n'
            + 'void readme_fragment(%s);\nvoid readme_fragment(%s)\n{\n' % (params, params)
            + head + '\n'.join(body) + '\n}\n'
            + '#line 1 "<wrapper>"\nint main(void)\n{\n\treturn 0;\n}\n')


ALL = snippets()


def test_readme_has_c_snippets():
    assert ALL, 'no ```c block found in %s' % README


@pytest.mark.parametrize('std', ['c11', 'gnu11'])
@pytest.mark.parametrize('line,text', ALL, ids=['README.md:%d' % line for line, _ in ALL])
def test_snippet_compiles(line, text, std, workdir):
    cc = shlex.split(os.environ.get('NT_CC', ''))
    if not cc:
        program('NT_CC')  # fails, saying how to run this test
    cflags = shlex.split(os.environ.get('NT_CFLAGS', ''))
    ldflags = shlex.split(os.environ.get('NT_LDFLAGS', ''))
    base = os.path.join(workdir, 'readme_%d_%s' % (line, std))
    with open(base + '.c', 'w', encoding='utf-8') as f:
        f.write(translation_unit(line, text))
    cmd = cc + ['-std=' + std, '-Wall', '-Wextra', '-Werror'] + cflags + \
        [base + '.c', '-o', base] + ldflags
    p = subprocess.run(cmd, capture_output=True, text=True)
    kind = 'program' if is_program(text) else 'fragment'
    assert p.returncode == 0, 'README.md:%d (%s, %s, wrapped in %s.c) does not build:\n$ %s\n%s' % (
        line, kind, std, base, shlex.join(cmd), p.stderr)
