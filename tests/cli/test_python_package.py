"""The Python package as a new user meets it from the build tree (README "Python"):
PYTHONPATH=<build>/reader/python imports it under the interpreter meson built it for; in an
interpreter it was not built for, `import nanotrace` fails with one ImportError that names
both interpreters (the extension is copied with another interpreter's ABI tag, so this runs
wherever one interpreter is installed); a bundle's summary names its first process, as
README's example prints it.

Run by meson (suite cli) with NT_PYTHON_PATH (the build tree's package folder), NT_PYTHON
(the interpreter it is built for), NT_TRACE_RECORD and NT_DEMO."""
import os
import shutil
import subprocess

import pytest

from conftest import program

PACKAGE_PARENT = os.environ.get('NT_PYTHON_PATH', '')
PYTHON = os.environ.get('NT_PYTHON', '')


def run_python(code, pythonpath, cwd=None):
    env = dict(os.environ, PYTHONPATH=pythonpath, PYTHONDONTWRITEBYTECODE='1')
    return subprocess.run([PYTHON, '-c', code], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=120)


@pytest.fixture(scope='module')
def built():
    if not PACKAGE_PARENT or not PYTHON:
        program('NT_PYTHON_PATH')
    return os.path.join(PACKAGE_PARENT, 'nanotrace')


def test_imports_under_the_interpreter_it_names(built):
    p = run_python('import nanotrace, nanotrace._built_for as b, sys; '
                   'print(b.PYTHON); print(sys.executable)', PACKAGE_PARENT)
    assert p.returncode == 0, p.stderr
    named, running = p.stdout.split()
    assert os.path.realpath(named) == os.path.realpath(PYTHON), (named, PYTHON)


def test_another_interpreter_is_told_which_one(built, tmp_path):
    """The extension's file name carries the ABI it was built for: given another ABI's tag,
    this interpreter cannot load it, exactly as another interpreter cannot load ours."""
    pkg = tmp_path / 'nanotrace'
    pkg.mkdir()
    ext = [f for f in os.listdir(built) if f.startswith('_nanotrace.') and f.endswith('.so')]
    assert len(ext) == 1, os.listdir(built)
    for f in os.listdir(built):
        if f.endswith('.py'):
            shutil.copy(os.path.join(built, f), pkg / f)
    shutil.copy(os.path.join(built, ext[0]), pkg / '_nanotrace.cpython-29-x86_64-linux-gnu.so')
    p = run_python('import nanotrace', str(tmp_path))
    assert p.returncode != 0
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith('ImportError: nanotrace: its extension module'), p.stderr
    assert '_nanotrace.cpython-29-x86_64-linux-gnu.so' in last, last
    assert 'built for %s' % PYTHON in last, last
    assert 'but this is %s (Python %d.%d)' % (
        PYTHON if os.path.isabs(PYTHON) else shutil.which(PYTHON),
        *run_version()) in last, last
    assert 'circular import' not in last, last


def run_version():
    p = subprocess.run([PYTHON, '-c', 'import sys; print(*sys.version_info[:2])'],
                       capture_output=True, text=True, timeout=60)
    return tuple(int(x) for x in p.stdout.split())


def test_a_bundles_summary_names_its_first_process(built, tmp_path):
    record, demo = program('NT_TRACE_RECORD'), program('NT_DEMO')
    bundle = str(tmp_path / 'run.ntbundle')
    p = subprocess.run([record, '-o', bundle, '--', 'sh', '-c',
                        '"$0" a.ntrace --requests 5 && "$0" b.ntrace --requests 5', demo],
                       capture_output=True, text=True, cwd=str(tmp_path), timeout=120)
    assert p.returncode == 0, p.stderr
    p = run_python('import nanotrace\n'
                   'with nanotrace.open("run.ntbundle") as t:\n'
                   '    s = t.summary\n'
                   '    print(s["pid"], s["process_name"])\n'
                   '    print(*[x["pid"] for x in s["sections"]])\n'
                   '    print(len({ev.process for ev in t}))\n', PACKAGE_PARENT, cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr
    first, pids, processes = p.stdout.splitlines()
    pids = pids.split()
    assert len(pids) == 2 and processes == '2', p.stdout
    assert first == '%s nanotrace-demo' % pids[0], p.stdout
