"""Every command README.md shows, and every man page's EXAMPLES, run against this build, so
that a wrong path or a changed option fails here before a user meets it.

README.md: each ```sh block (indented ones in lists too) is one test, run in README order by
`bash -e -o pipefail` in one scratch directory, so later blocks use what earlier ones made
(out.ntrace, run.ntbundle). A ```c block whose first line is `/* NAME */` is written there as
NAME (the Trace2 example's prog.c), and each ```python block is run by the interpreter the
package is built for. Blocks are written for an installed nanotrace; the build tree stands
in for it: the scratch directory holds the source tree's top-level entries (as links) and
`build` (this build), PATH starts with the build's tool folders, PKG_CONFIG_PATH is
build/meson-uninstalled, LD_LIBRARY_PATH the library folders, PYTHONPATH the package's.
HOME and XDG_RUNTIME_DIR are private to the run. The two quick-start blocks are the only ones
not run (they install Debian packages as root, and run the 20-minute suite): every path they
name must exist.

doc/man/*.1: the lines between .nf and .fi of EXAMPLES, run the same way, one page per test,
in a directory holding what they name (app.ntrace and a traces/ directory from the demo,
events.json and git.ntrace from git's own Trace2 output, a git repository, a Makefile whose
targets record, ./server recording for a few seconds); the one rewrite is /tmp/t2 to a
directory of the run.

A block fails on a nonzero exit. What a block leaves running (a `&` job, the manager daemon)
is killed after it: its process group, and every process whose environment holds this run's
XDG_RUNTIME_DIR, by pid.

Run by meson (suite cli) with NT_SOURCE_ROOT, NT_BUILD_ROOT and NT_PYTHON."""
import os
import re
import shutil
import shlex
import signal
import subprocess

import pytest

SOURCE = os.environ.get('NT_SOURCE_ROOT') or os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get('NT_BUILD_ROOT', os.path.join(SOURCE, 'build'))
PYTHON = os.environ.get('NT_PYTHON', '/usr/bin/python3')
README = os.environ.get('NT_README') or os.path.join(SOURCE, 'README.md')
MAN_DIR = os.path.join(SOURCE, 'doc', 'man')
QUICK_START = '## Quick start'
BLOCK_TIMEOUT = 300


def fenced_blocks(path):
    """(line, info, text) of each fenced block of a Markdown file, indentation removed, and
    the section (## heading) it is in."""
    lines = open(path, encoding='utf-8').read().split('\n')
    found, section, i = [], '', 0
    while i < len(lines):
        if lines[i].startswith('## '):
            section = lines[i]
        m = re.match(r'^(\s*)```(\S*)\s*$', lines[i])
        if m and m.group(2):
            indent, j = len(m.group(1)), i + 1
            while j < len(lines) and lines[j].strip() != '```':
                j += 1
            assert j < len(lines), '%s:%d: block never closed' % (path, i + 1)
            text = '\n'.join(l[indent:] for l in lines[i + 1:j]) + '\n'
            found.append((i + 1, m.group(2), text, section))
            i = j
        i += 1
    return found


README_BLOCKS = fenced_blocks(README)
FILE_HEADER = re.compile(r'/\* (\S+) \*/\n')
RUN = [(line, info, text) for line, info, text, section in README_BLOCKS
       if (info in ('sh', 'python') or (info == 'c' and FILE_HEADER.match(text)))
       and not section.startswith(QUICK_START)]
QUICK = [(line, text) for line, info, text, section in README_BLOCKS
         if info == 'sh' and section.startswith(QUICK_START)]


def kill_leftovers(pgid, marker):
    """The block's process group, and every process whose environment holds `marker` (a
    daemon leaves the group), each by its pid."""
    pids = set()
    for pid in filter(str.isdigit, os.listdir('/proc')):
        if int(pid) == os.getpid():
            continue
        try:
            with open('/proc/%s/environ' % pid, 'rb') as f:
                if marker.encode() in f.read():
                    pids.add(int(pid))
        except OSError:
            pass
    try:
        if pgid is not None:
            os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass


@pytest.fixture(scope='module')
def scratch(tmp_path_factory):
    root = tmp_path_factory.mktemp('readme')
    home, run, work = root / 'home', root / 'run', root / 'work'
    home.mkdir()
    run.mkdir(mode=0o700)
    work.mkdir()
    for entry in os.listdir(SOURCE):
        if not entry.startswith('build') and entry not in ('.git',):
            os.symlink(os.path.join(SOURCE, entry), work / entry)
    os.symlink(BUILD, work / 'build')
    env = {k: v for k, v in os.environ.items() if not k.startswith('NANOTRACE')}
    tools = [os.path.join(BUILD, d) for d in ('reader', 'manager', 'writer')]
    libs = [os.path.join(BUILD, 'writer'), os.path.join(BUILD, 'reader')]
    env.update(HOME=str(home), XDG_RUNTIME_DIR=str(run), PYTHONDONTWRITEBYTECODE='1',
               PATH=':'.join(tools + [env.get('PATH', '/usr/bin:/bin')]),
               PKG_CONFIG_PATH=os.path.join(BUILD, 'meson-uninstalled'),
               LD_LIBRARY_PATH=':'.join(libs + [env.get('LD_LIBRARY_PATH', '')]).rstrip(':'),
               PYTHONPATH=os.path.join(BUILD, 'reader', 'python'))
    env.pop('PKG_CONFIG_LIBDIR', None)
    yield {'dir': str(work), 'env': env, 'run': str(run)}
    kill_leftovers(None, str(run))


def run_shell(scratch, text, where, cwd=None):
    p = subprocess.Popen(['bash', '-e', '-o', 'pipefail', '-c', text], cwd=cwd or scratch['dir'],
                         env=scratch['env'], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=BLOCK_TIMEOUT)
    except subprocess.TimeoutExpired:
        kill_leftovers(p.pid, scratch['run'])
        out, err = p.communicate()
        pytest.fail('%s: still running after %d s\n%s\n%s' % (where, BLOCK_TIMEOUT, out, err))
    finally:
        kill_leftovers(p.pid, scratch['run'])
    assert p.returncode == 0, '%s exits %d:\n%s\n--- stdout (end)\n%s\n--- stderr\n%s' % (
        where, p.returncode, text, out[-3000:], err[-3000:])
    return out


@pytest.mark.parametrize('line,info,text', RUN, ids=['README.md:%d' % l for l, _, _ in RUN])
def test_readme_block(scratch, line, info, text):
    where = 'README.md:%d (```%s)' % (line, info)
    if info == 'c':
        m = FILE_HEADER.match(text)
        with open(os.path.join(scratch['dir'], m.group(1)), 'w', encoding='utf-8') as f:
            f.write(text)
    elif info == 'python':
        p = subprocess.run([PYTHON, '-c', text], cwd=scratch['dir'], env=scratch['env'],
                           capture_output=True, text=True, timeout=BLOCK_TIMEOUT)
        assert p.returncode == 0, '%s exits %d:\n%s\n%s' % (where, p.returncode, text,
                                                          p.stderr[-3000:])
    else:
        run_shell(scratch, text, where)


def named_paths(text):
    """The words of a command line that are paths in the tree: with a slash, no variable."""
    words = shlex.split(text.replace('$(', ' ').replace(')', ' '), comments=True)
    return [w for w in words if '/' in w and '$' not in w and not w.startswith(('-', '/'))]


def test_quick_start_names_what_exists():
    """The two quick-start commands: one installs and builds, one runs the suite. Not run
    here; every file they name exists (in the build for build/...)."""
    assert len(QUICK) == 2, QUICK
    assert 'bash tests/run_suite.sh' in QUICK[1][1], QUICK[1]
    named = [p for _, text in QUICK for p in named_paths(text)]
    assert '.ci/packages' in named and 'build/writer/nanotrace-demo' in named, named
    for path in named:
        full = os.path.join(BUILD, path[len('build/'):]) if path.startswith('build/') \
            else os.path.join(SOURCE, path)
        assert os.path.exists(full), 'README.md quick start names %s: %s does not exist' % (
            path, full)
    packages = open(os.path.join(SOURCE, '.ci', 'packages')).read().split()
    assert 'meson' in packages and 'ninja-build' in packages, packages


MAN_PAGES = sorted(f for f in os.listdir(MAN_DIR) if f.endswith('.1'))


def man_examples(page):
    text = open(os.path.join(MAN_DIR, page), encoding='utf-8').read()
    m = re.search(r'^\.SH EXAMPLES\n\.nf\n(.*?)^\.fi$', text, flags=re.M | re.S)
    assert m, '%s has no EXAMPLES between .nf and .fi' % page
    return m.group(1).replace('\\-', '-').replace('\\e', '\\')


@pytest.fixture(scope='module')
def man_fixtures(scratch):
    """What the man pages' examples name, made once."""
    if shutil.which('git') is None:
        pytest.skip('git not installed: the examples record its Trace2 output')
    d = os.path.join(scratch['dir'], 'man-fixtures')
    os.mkdir(d)
    run_shell(scratch, '''
nanotrace-demo app.ntrace --requests 20
mkdir traces && cp app.ntrace traces/
GIT_TRACE2_EVENT="$PWD/events.json" git --version
trace-import -o git.ntrace events.json
printf 'all: a b\\na:\\n\\tnanotrace-demo a.ntrace --requests 5\\nb:\\n\\tnanotrace-demo b.ntrace --requests 5\\n' > Makefile
printf '#!/bin/sh\\nexec nanotrace-demo server.ntrace --duration-ms 7000\\n' > server
chmod +x server
git init -q repo
''', 'the man pages\' fixtures', cwd=d)
    return d


@pytest.mark.parametrize('page', MAN_PAGES)
def test_man_page_examples(scratch, man_fixtures, page, tmp_path):
    work = tmp_path / 'work'
    work.mkdir()
    for entry in os.listdir(man_fixtures):
        src = os.path.join(man_fixtures, entry)
        if entry == 'repo':
            continue
        subprocess.run(['cp', '-r', src, str(work / entry)], check=True)
    subprocess.run(['git', 'init', '-q', str(work)], check=True, env=scratch['env'])
    (work / 't2').mkdir()
    text = man_examples(page).replace('/tmp/t2', '"$PWD/t2"')
    run_shell(scratch, text, 'doc/man/%s EXAMPLES' % page, cwd=str(work))
