"""The installed library, as a user outside this tree meets it (README "Install and use the
library"): `meson install` of this build into a temporary root; the .pc files found in the
prefix's (multiarch) libdir; examples/nt_example.c compiled with -Werror against
`pkg-config --cflags --libs nanotrace nanotrace-reader` only, linked with the rpath from
`pkg-config --variable=libdir`, run (it records with threads and reads the archive back) and
its archive read by the installed trace-dump; every installed header compiles alone in C
and in C++ (a C++ program records with the same macros); each tool's man page is installed. pkg-config's
--define-variable=prefix moves the .pc files' prefix to the temporary root, as a real
`--prefix` would have set it.

The build tree, as a user who has not installed meets it (README "Build a program against
the build tree"): examples/nt_example.c compiled with `-I build/include` alone and with
`pkg-config` over meson's uninstalled .pc files (build/meson-uninstalled), linked with an
rpath into the build tree, run; build/include/nanotrace holds the installed headers; and no
.pc file hands its users another package's flags (ck.pc's `-D__x86_64__ -I/usr/include`)."""
import glob
import os
import shlex
import shutil
import subprocess

import pytest

BUILD = os.environ['NT_BUILD_ROOT']
PREFIX = os.environ['NT_PREFIX']
LIBDIR = os.environ['NT_LIBDIR']      # relative to the prefix, e.g. lib/x86_64-linux-gnu
MANDIR = os.environ['NT_MANDIR']
BINDIR = os.environ['NT_BINDIR']
EXAMPLE = os.environ['NT_EXAMPLE']
CC = shlex.split(os.environ['NT_CC'])
CXX = shlex.split(os.environ.get('NT_CXX', ''))
EXTRA = shlex.split(os.environ.get('NT_SANITIZE_FLAGS', ''))
TOOLS = ('trace-dump', 'trace-import', 'trace-record', 'nanotrace-manager', 'nanotrace-demo')
API_HEADERS = ('nanotrace.h', 'nanotrace_trace2.h', 'nanotrace_reader.h')


def under(root, path):
    return os.path.join(root, path.lstrip('/'))


@pytest.fixture(scope='module')
def installed(tmp_path_factory):
    for tool in ('meson', 'pkg-config'):
        if shutil.which(tool) is None:
            pytest.skip('%s not installed' % tool)
    root = str(tmp_path_factory.mktemp('destdir'))
    p = subprocess.run(['meson', 'install', '-C', BUILD, '--no-rebuild', '--quiet',
                        '--destdir', root], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    prefix = under(root, PREFIX)
    libdir = LIBDIR if os.path.isabs(LIBDIR) else os.path.join(PREFIX, LIBDIR)
    found = glob.glob(os.path.join(prefix, '**', 'nanotrace.pc'), recursive=True)
    pcdir = os.path.join(under(root, libdir), 'pkgconfig')
    assert found == [os.path.join(pcdir, 'nanotrace.pc')], (found, pcdir)
    env = dict(os.environ, PKG_CONFIG_PATH=pcdir)
    env.pop('PKG_CONFIG_LIBDIR', None)
    return {'root': root, 'prefix': prefix, 'env': env}


def pkg_config(inst, *args):
    p = subprocess.run(['pkg-config', '--define-variable=prefix=' + inst['prefix'], *args],
                       capture_output=True, text=True, env=inst['env'], timeout=30)
    assert p.returncode == 0, (args, p.stderr)
    return p.stdout.split()



def run_linked_example(exe, libdirs, tmp_path, threads, items):
    """Runs the example built against the libraries in `libdirs` (writer's, reader's) with no
    LD_LIBRARY_PATH: ldd must find each there, and it must read back what it wrote. Returns
    the environment and the archive."""
    env = dict(os.environ)
    env.pop('LD_LIBRARY_PATH', None)
    ldd = subprocess.run(['ldd', exe], capture_output=True, text=True, env=env, timeout=30)
    for libdir, lib in zip(libdirs, ('libnanotrace.so.0', 'libnanotrace-reader.so.0')):
        line = next((l for l in ldd.stdout.splitlines() if lib in l), '')
        assert os.path.join(libdir, lib) in line, (lib, ldd.stdout)
    archive = str(tmp_path / 'example.ntrace')
    p = subprocess.run([exe, archive, str(threads), str(items)], capture_output=True,
                       text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    assert '%d threads x %d items read back' % (threads, items) in p.stdout, p.stdout
    return env, archive

def test_example_builds_runs_and_reads_back(installed, tmp_path):
    flags = pkg_config(installed, '--cflags', '--libs', 'nanotrace', 'nanotrace-reader')
    libdir = pkg_config(installed, '--variable=libdir', 'nanotrace')[0]
    assert os.path.isfile(os.path.join(libdir, 'libnanotrace.so.0')), libdir
    assert os.path.isfile(os.path.join(libdir, 'libnanotrace-reader.so.0')), libdir
    exe = str(tmp_path / 'nt_example')
    p = subprocess.run([*CC, '-Wall', '-Wextra', '-Werror', *EXTRA, '-o', exe, EXAMPLE, *flags,
                        '-Wl,-rpath,' + libdir], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    # the installed libraries, not this build's: nothing of the build tree in the paths
    env, archive = run_linked_example(exe, (libdir, libdir), tmp_path, 3, 500)
    assert oct(os.stat(archive).st_mode & 0o777) == oct(0o600)  # private, as the writer makes it
    dump = subprocess.run([os.path.join(under(installed['root'], os.path.join(PREFIX, BINDIR)), 'trace-dump'),
                           archive], capture_output=True, text=True, env=env, timeout=60)
    assert dump.returncode == 0, dump.stderr
    items = [l for l in dump.stdout.splitlines() if ' item' in l and 'worker-' in l]
    assert len(items) == 3 * 500, dump.stdout[:2000]


def test_installed_headers_compile_alone(installed, tmp_path):
    incdir = os.path.join(installed['prefix'], 'include', 'nanotrace')
    headers = sorted(os.path.basename(h) for h in glob.glob(os.path.join(incdir, '*.h')))
    assert set(API_HEADERS) <= set(headers), headers
    cflags = pkg_config(installed, '--cflags', 'nanotrace', 'nanotrace-reader')
    compilers = [('c', CC, ['-std=gnu11'], headers)]
    if CXX and shutil.which(CXX[0]):
        compilers.append(('cpp', CXX, ['-std=c++17'], headers))
    for ext, cc, std, names in compilers:
        for h in names:
            src = tmp_path / ('inc_%s.%s' % (h.replace('.', '_'), ext))
            src.write_text('#include <nanotrace/%s>\n' % h)
            p = subprocess.run([*cc, *std, '-Wall', '-Wextra', '-Werror', '-fsyntax-only',
                                *cflags, str(src)], capture_output=True, text=True, timeout=60)
            assert p.returncode == 0, (h, ext, p.stderr)


def test_man_pages_installed(installed):
    man1 = os.path.join(under(installed['root'], os.path.join(PREFIX, MANDIR)), 'man1')
    for tool in TOOLS:
        assert os.path.isfile(os.path.join(man1, tool + '.1')), (tool, man1)
        assert os.path.isfile(os.path.join(under(installed['root'],
                                                 os.path.join(PREFIX, BINDIR)), tool)), tool


CXX_PROGRAM = r'''
#include <nanotrace/nanotrace.h>
#include <cstdio>
#include <string>
static int work(int i) {
    NT_SCOPE("cxx", "work", NT_I64("i", i));
    std::string s = "item-" + std::to_string(i);
    NT_INSTANT("cxx", "item", NT_STR("s", s.c_str()), NT_F64("half", i / 2.0));
    return i;
}
int main(int argc, char **argv) {
    nt_config cfg;
    nt_config_init(&cfg);
    cfg.path = argc > 1 ? argv[1] : "cxx.ntrace";
    if (nt_start(&cfg) != NT_OK)
        return 1;
    int sum = 0;
    for (int i = 0; i < 100; i++)
        sum += work(i);
    std::printf("%d\n", sum);
    return nt_finish(nullptr) == NT_OK ? 0 : 1;
}
'''


def test_cxx_program_records_with_the_macros(installed, tmp_path):
    """A C++17 program uses the recording macros (NT_SCOPE's cleanup included) against the
    installed headers and library; its archive reads back with every event."""
    if not (CXX and shutil.which(CXX[0])):
        pytest.skip('no C++ compiler')
    src = tmp_path / 'cxx_example.cc'
    src.write_text(CXX_PROGRAM)
    flags = pkg_config(installed, '--cflags', '--libs', 'nanotrace')
    libdir = pkg_config(installed, '--variable=libdir', 'nanotrace')[0]
    exe = str(tmp_path / 'cxx_example')
    p = subprocess.run([*CXX, '-std=c++17', '-Wall', '-Wextra', '-Werror', *EXTRA, '-o', exe,
                        str(src), *flags, '-Wl,-rpath,' + libdir], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    archive = str(tmp_path / 'cxx.ntrace')
    env = dict(os.environ)
    env.pop('LD_LIBRARY_PATH', None)
    p = subprocess.run([exe, archive], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0 and p.stdout == '4950\n', (p.stdout, p.stderr)
    dump = subprocess.run([os.path.join(under(installed['root'], os.path.join(PREFIX, BINDIR)), 'trace-dump'),
                           '--stats', archive], capture_output=True, text=True, env=env, timeout=60)
    assert dump.returncode == 0, dump.stderr
    assert '\nevents: 300\n' in dump.stdout, dump.stdout[:1500]
    assert 'records: begin 100, end 100, instant 100,' in dump.stdout, dump.stdout[:1500]


# What a build-tree program links: the shared libraries where meson builds them.
BUILD_LIBDIRS = [os.path.join(BUILD, 'writer'), os.path.join(BUILD, 'reader')]


def run_example_against_build_tree(tmp_path, flags):
    """Compiles nt_example.c with `flags` and the build tree's rpath, checks that it loads the
    build tree's libraries, runs it, and returns its archive's path."""
    exe = str(tmp_path / 'nt_example')
    rpath = '-Wl,-rpath,' + ':'.join(BUILD_LIBDIRS)
    cmd = [*CC, '-Wall', '-Wextra', '-Werror', *EXTRA, '-o', exe, EXAMPLE, *flags, rpath]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, '$ %s\n%s' % (shlex.join(cmd), p.stderr)
    run_linked_example(exe, BUILD_LIBDIRS, tmp_path, 2, 300)


def test_example_against_build_include(tmp_path):
    """One -I for every public header, the generated nt_version.h included."""
    run_example_against_build_tree(tmp_path, [
        '-I' + os.path.join(BUILD, 'include'),
        *('-L' + d for d in BUILD_LIBDIRS), '-lnanotrace', '-lnanotrace-reader'])


def uninstalled_pkg_config(*args):
    if shutil.which('pkg-config') is None:
        pytest.skip('pkg-config not installed')
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(BUILD, 'meson-uninstalled'))
    p = subprocess.run(['pkg-config', *args], capture_output=True, text=True, env=env,
                       timeout=30)
    assert p.returncode == 0, (args, p.stderr)
    return p.stdout.split()


def test_example_against_uninstalled_pkg_config(tmp_path):
    run_example_against_build_tree(
        tmp_path, uninstalled_pkg_config('--cflags', '--libs', 'nanotrace', 'nanotrace-reader'))


def test_build_include_holds_the_installed_headers(installed):
    incdir = os.path.join(installed['prefix'], 'include', 'nanotrace')
    want = sorted(os.listdir(incdir))
    got = sorted(os.listdir(os.path.join(BUILD, 'include', 'nanotrace')))
    assert got == want


def test_cflags_are_nanotrace_only(installed):
    """nanotrace.pc once required ck (Requires.private), and pkg-config prints a private
    requirement's Cflags to everyone: ck.pc's -D__x86_64__ -I/usr/include. Static links still
    get -lck."""
    for flags in (pkg_config(installed, '--cflags', 'nanotrace', 'nanotrace-reader'),
                  uninstalled_pkg_config('--cflags', 'nanotrace', 'nanotrace-reader')):
        assert not [f for f in flags if f.startswith('-D') or f == '-I/usr/include'], flags
    assert pkg_config(installed, '--cflags', 'nanotrace') == [
        '-I' + os.path.join(installed['prefix'], 'include')]
    assert '-lck' in pkg_config(installed, '--static', '--libs', 'nanotrace')
