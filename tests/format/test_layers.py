"""The include graph is the architecture (ARCHITECTURE.md, "Who may include whom").

Every quoted include in the tree is either a bare name of a file in the including file's own
folder, or a path from the repository root; installed headers include each other by bare name
(they are installed side by side under nanotrace/). Each folder includes only the folders its
layer may see, and of another layer only the header that layer offers (writer/core/nt_core.h
to Trace2, manager/core/nt_manager.h to the manager's programs). tests/ are white-box and may
include anything they test."""
import os
import re
import subprocess

ROOT = os.environ.get('NT_SOURCE_ROOT', os.path.join(os.path.dirname(__file__), '..', '..'))

# Files the build generates, reached through the build root on the include path.
GENERATED = {'format/nt_version.h'}
# Headers from outside the tree that are included with quotes.
EXTERNAL = ('flatbuffers/',)
# flatc's output in the build folder (tests/format).
FLATC_OUTPUT = re.compile(r'nanotrace_\w*generated\w*\.h$')

PUBLIC = {'writer/include', 'reader/include'}
BYTES = {'format'}
SHARED = {'format', 'runtime'}

# folder -> folders (or single files of another layer's offer) it may include
ALLOWED = {
    'format': BYTES,
    'runtime': SHARED,
    'writer/include': PUBLIC | BYTES,
    'reader/include': PUBLIC | BYTES,
    'writer/core': {'writer/core', 'writer/include'} | SHARED,
    'writer/trace2': {'writer/trace2', 'writer/include', 'writer/core/nt_core.h'} | SHARED,
    'writer/demo': {'writer/demo', 'writer/include'} | BYTES,
    'reader/common': {'reader/common', 'reader/include'} | SHARED,
    'reader/decode': {'reader/decode', 'reader/common', 'reader/include'} | SHARED,
    'reader/render': {'reader/render', 'reader/common', 'reader/include'} | SHARED,
    'reader/trace2': {'reader/trace2', 'reader/common', 'reader/include'} | SHARED,
    'reader/import': {'reader/import', 'reader/trace2/nt_trace2.h', 'reader/common',
                      'reader/include'} | SHARED,
    'reader/tools': {'reader/tools', 'reader/common', 'reader/include'} | SHARED,
    'reader/python': {'reader/python', 'reader/include'} | BYTES,
    'manager/core': {'manager/core'} | SHARED,
    'manager/tools': {'manager/tools', 'manager/core/nt_manager.h', 'ship/nt_ship.h',
                      'ship/nt_ship_trace2.h'} | SHARED,
    # Leaving the machine: the OTLP shipper reads archives through the reader's public API.
    'ship': {'ship', 'reader/include'} | SHARED,
    # The floor is the writer's own inline clock read (nt_clock_ticks), nothing less; the
    # OTLP exporter's protobuf writer is measured against protobuf-c (bench/otlp_pbc); the
    # shipper (ship/nt_ship.h) by nt_bench_ship.
    'bench': {'bench', 'writer/include', 'reader/include', 'writer/core/nt_clock.h',
              'reader/render/nt_pb.h', 'ship/nt_ship.h'} | SHARED,
    'examples': PUBLIC,
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources():
    out = subprocess.run(['git', '-C', ROOT, 'ls-files', '-co', '--exclude-standard'],
                         capture_output=True, text=True, check=True).stdout.split()
    return [f for f in out if re.search(r'\.(c|h|cpp|h\.in)$', f)
            and os.path.exists(os.path.join(ROOT, f))]


def folder_of(path):
    parts = path.split('/')
    if parts[0] in ('writer', 'reader', 'manager') and len(parts) > 2:
        return '/'.join(parts[:2])
    return parts[0]


def installed(path):
    if folder_of(path) in PUBLIC:
        return True
    if folder_of(path) == 'format':
        meson = open(os.path.join(ROOT, 'format', 'meson.build')).read()
        m = re.search(r'format_public_headers = files\(([^)]*)\)', meson, re.S)
        names = re.findall(r"'([^']+\.h)'", m.group(1)) + ['nt_version.h']
        return os.path.basename(path) in names
    return False


def resolve(includer, name):
    """The file an include names, by the one style; None if it breaks the style."""
    here = os.path.dirname(includer)
    if '/' not in name:
        if os.path.exists(os.path.join(ROOT, here, name)) or os.path.join(here, name) in GENERATED:
            return os.path.join(here, name)
        if installed(includer):
            for d in ('writer/include/nanotrace', 'reader/include/nanotrace', 'format'):
                if os.path.exists(os.path.join(ROOT, d, name)) or os.path.join(d, name) in GENERATED:
                    return os.path.join(d, name)
        return None
    if name.startswith('.'):
        return None
    if os.path.exists(os.path.join(ROOT, name)) or name in GENERATED:
        return name
    return None


def includes():
    for f in sources():
        text = open(os.path.join(ROOT, f), errors='replace').read()
        for m in INCLUDE.finditer(text):
            line = text.count('\n', 0, m.start()) + 1
            yield f, line, m.group(1)


def test_one_include_style():
    bad = []
    for f, line, name in includes():
        if name.startswith(EXTERNAL) or f.startswith('tests/') and FLATC_OUTPUT.match(name):
            continue
        target = resolve(f, name)
        if target is None:
            bad.append('%s:%d: "%s": a bare name of the same folder or a path from the root'
                       % (f, line, name))
        elif '/' in name and os.path.dirname(name) == os.path.dirname(f):
            bad.append('%s:%d: "%s": a same-folder include is a bare name' % (f, line, name))
    assert not bad, '\n'.join(bad)


def test_layers_include_only_what_they_may():
    bad = []
    for f, line, name in includes():
        target = resolve(f, name)
        if target is None or f.startswith('tests/'):
            continue
        src = folder_of(f)
        allowed = ALLOWED.get(src)
        assert allowed is not None, 'folder %s has no row in ALLOWED: add it (and to ARCHITECTURE.md)' % src
        if folder_of(target) not in allowed and target not in allowed:
            bad.append('%s:%d: %s may not include %s' % (f, line, src, target))
        if target.endswith('.c'):
            bad.append('%s:%d: includes a .c file' % (f, line))
    assert not bad, '\n'.join(bad)


def test_every_folder_has_a_row():
    folders = {folder_of(f) for f in sources() if not f.startswith('tests/')}
    assert folders <= set(ALLOWED), sorted(folders - set(ALLOWED))


# Folders whose files call each other only downwards: each has a bottom that calls nothing
# above it and a top that nothing below calls (ARCHITECTURE.md).
ACYCLIC = ('writer/core', 'manager/core', 'manager/tools', 'reader/decode', 'reader/render',
           'reader/trace2', 'reader/import', 'reader/tools', 'runtime', 'format')
DEFINITION = re.compile(r'^(?!static)[A-Za-z_][\w \*]*?\b(nt_\w+)\s*\([^;]*$', re.M)
# Comments, and string and character literals: a message that names a function
# ("call nt_finish()") is no call.
NOT_CODE = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def call_circles(folder):
    """The strongly connected groups of more than one file: a file calls a function that
    another file of the folder defines (not static)."""
    paths = sorted(f for f in sources() if os.path.dirname(f) == folder and f.endswith('.c'))
    text = {}
    for f in paths:
        with open(os.path.join(ROOT, f), errors='replace') as fh:
            text[f] = NOT_CODE.sub(lambda m: '' if m.group(0)[0] == '/' else '""', fh.read())
    owner = {}
    for f in paths:
        for name in DEFINITION.findall(text[f]):
            owner.setdefault(name, f)
    calls = {f: {o for name, o in owner.items()
                 if o != f and re.search(r'\b' + name + r'\s*\(', text[f])} for f in paths}
    index, low, stack, on, groups = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in calls[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))
    for v in paths:
        if v not in index:
            visit(v)
    return groups


def test_folders_call_only_downwards():
    circles = {d: call_circles(d) for d in ACYCLIC}
    assert not any(circles.values()), {d: c for d, c in circles.items() if c}
