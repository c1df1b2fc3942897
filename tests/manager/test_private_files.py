"""Every program that creates a trace file, as a user meets it: the file is 0600 whatever the
umask (0, 022, 077), and a symbolic link planted at its path or at any name one could
predict beside it is never followed and never truncates anything.

Creators: the writer's nt_finish(path) and file-backed arena (env_program start / plain with
NANOTRACE=<file>), a Trace2 directory target (env_program trace2 with NANOTRACE=<dir>),
trace-import -o, trace-record -o, and nanotrace-manager --log. The temporary names are
mkostemp's (runtime/nt_private_file.h; tests/format/test_private_file.c shows they cannot be
predicted); here links wait at every name the old schemes used (<path>.tmp.<pid> for the
next pids, <path>.tmp) and must still be links, pointing at an untouched victim, afterwards.
A planted link at a directory target's per-process name is tests/writer/test_planted_links.c
(it needs a frozen clock to predict the name).
"""
import os
import stat
import subprocess

import pytest

from conftest import program

ENV_PROGRAM = program('NT_ENV_PROGRAM')
TRACE_IMPORT = program('NT_TRACE_IMPORT')
TRACE_RECORD = program('NT_TRACE_RECORD')
MANAGER = program('NT_MANAGER')

VICTIM_TEXT = b'the victim keeps this\n'
EVENT_LINE = (b'{"event":"version","sid":"s1","thread":"main","time":"2024-01-01T00:00:00.000000Z",'
              b'"file":"common-main.c","line":1,"evt":"3","exe":"2.39.5"}\n')


def clean_env(tmp, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith('NANOTRACE')}
    env.update(TMPDIR=str(tmp), XDG_RUNTIME_DIR=str(tmp))
    env.update(extra)
    return env


def run(args, tmp, umask=0o022, **env):
    return subprocess.run(args, env=clean_env(tmp, **env), capture_output=True, timeout=60,
                          preexec_fn=lambda: os.umask(umask))


def victim(tmp):
    path = os.path.join(str(tmp), 'victim')
    with open(path, 'wb') as f:
        f.write(VICTIM_TEXT)
    return path


def plant_predictable(path, target):
    """Links at every temporary name the old schemes could have used for `path`."""
    pid = os.getpid()
    names = [path + '.tmp'] + ['%s.tmp.%d' % (path, p) for p in range(pid, pid + 400)]
    for n in names:
        os.symlink(target, n)
    return names


def assert_untouched(vict, links):
    with open(vict, 'rb') as f:
        assert f.read() == VICTIM_TEXT, 'the victim was written through a link'
    for n in links:
        assert os.path.islink(n), '%s is no longer a link' % n


def mode_of(path):
    st = os.lstat(path)
    assert stat.S_ISREG(st.st_mode), path
    return stat.S_IMODE(st.st_mode)


# ---- who creates what, one function each: (args, env) to create `out` ------------------

def writer_finish(out, tmp):
    return [ENV_PROGRAM, 'start', out], {}


def writer_file_arena(out, tmp):
    return [ENV_PROGRAM, 'plain'], {'NANOTRACE': out}


def importer(out, tmp):
    src = os.path.join(str(tmp), 'in.event')
    with open(src, 'wb') as f:
        f.write(EVENT_LINE)
    return [TRACE_IMPORT, '-o', out, src], {}


def recorder(out, tmp):
    return [TRACE_RECORD, '-o', out, '--', 'true'], {}


CREATORS = {'nt_finish': writer_finish, 'file arena': writer_file_arena,
            'trace-import': importer, 'trace-record': recorder}


@pytest.mark.parametrize('umask', [0, 0o022, 0o077])
@pytest.mark.parametrize('who', sorted(CREATORS))
def test_created_0600_whatever_the_umask(who, umask, tmp_path):
    out = os.path.join(str(tmp_path), 'out.trace')
    args, env = CREATORS[who](out, tmp_path)
    p = run(args, tmp_path, umask, **env)
    assert p.returncode in (0, 7), (who, p.returncode, p.stderr)
    assert mode_of(out) == 0o600, (who, oct(umask), oct(mode_of(out)))


@pytest.mark.parametrize('umask', [0, 0o022])
def test_trace2_directory_target_is_0600(umask, tmp_path):
    d = tmp_path / 'traces'
    d.mkdir()
    p = run([ENV_PROGRAM, 'trace2'], tmp_path, umask, NANOTRACE=str(d))
    assert p.returncode == 7, p.stderr
    files = os.listdir(d)
    assert len(files) == 1 and mode_of(os.path.join(d, files[0])) == 0o600, files


@pytest.mark.parametrize('who', ['nt_finish', 'trace-import', 'trace-record'])
def test_a_link_at_the_target_is_refused(who, tmp_path):
    out = os.path.join(str(tmp_path), 'out.trace')
    vict = victim(tmp_path)
    os.symlink(vict, out)
    links = [out] + plant_predictable(out, vict)
    args, env = CREATORS[who](out, tmp_path)
    before = sorted(os.listdir(tmp_path))  # the importer's input included
    p = run(args, tmp_path, **env)
    err = p.stderr.decode(errors='replace')
    # env_program is a traced program: its own exit status stays 7; the tools fail with 2.
    assert p.returncode == (7 if who == 'nt_finish' else 2), (who, p.returncode, err)
    assert out in err and 'symbolic link' in err, (who, err)
    assert_untouched(vict, links)
    assert sorted(os.listdir(tmp_path)) == before, 'a temporary file was left behind'


def test_a_link_at_a_file_target_is_not_followed(tmp_path):
    # NANOTRACE=<file> with a link there: the name is taken (O_EXCL), so the process writes
    # "<file>.<its own name>" beside it, as a second process given the same file does.
    out = os.path.join(str(tmp_path), 'out.trace')
    vict = victim(tmp_path)
    os.symlink(vict, out)
    links = [out] + plant_predictable(out, vict)
    p = run([ENV_PROGRAM, 'plain'], tmp_path, NANOTRACE=out)
    assert p.returncode == 7 and p.stderr == b'', p.stderr
    assert_untouched(vict, links)
    beside = [n for n in os.listdir(tmp_path) if n.startswith('out.trace.') and
              not os.path.islink(os.path.join(str(tmp_path), n))]
    assert len(beside) == 1 and mode_of(os.path.join(str(tmp_path), beside[0])) == 0o600, beside


def test_predictable_names_change_nothing(tmp_path):
    # Links at the old temporary names, none at the target: every creator writes its file,
    # and every link still points at the untouched victim.
    vict = victim(tmp_path)
    for who in sorted(CREATORS):
        out = os.path.join(str(tmp_path), who.replace(' ', '-') + '.trace')
        links = plant_predictable(out, vict)
        args, env = CREATORS[who](out, tmp_path)
        p = run(args, tmp_path, **env)
        assert p.returncode in (0, 7), (who, p.stderr)
        assert mode_of(out) == 0o600, who
        assert_untouched(vict, links)


def test_manager_log_link_refused(tmp_path):
    d = tmp_path / 'mgr'
    d.mkdir(mode=0o700)
    vict = victim(tmp_path)
    log = str(d / 'manager.log')
    os.symlink(vict, log)
    p = run([MANAGER, '--foreground', '--socket', str(d / 'manager.sock'), '--log', log],
            tmp_path)
    err = p.stderr.decode(errors='replace')
    assert p.returncode == 2 and log in err and 'symbolic link' in err, err
    assert_untouched(vict, [log])


def test_import_never_writes_at_a_cut_name(tmp_path):
    # trace-import names its archive after its input ("<input>.ntrace"); an input path that
    # fits PATH_MAX but not with ".ntrace" added is an error saying so (before, the name was
    # cut and only its temporary name's ENAMETOOLONG stopped it), never a file at a cut name.
    src = os.path.join(str(tmp_path), 'in.event')
    with open(src, 'wb') as f:
        f.write(EVENT_LINE)
    name = './' * ((4090 - len('in.event')) // 2) + 'in.event'
    before = sorted(os.listdir(tmp_path))
    p = subprocess.run([TRACE_IMPORT, name], cwd=str(tmp_path), capture_output=True,
                       timeout=60, env=clean_env(tmp_path))
    assert p.returncode == 2 and b'name it with -o' in p.stderr, p.stderr
    assert sorted(os.listdir(tmp_path)) == before
    p = subprocess.run([TRACE_IMPORT, 'in.event'], cwd=str(tmp_path), capture_output=True,
                       timeout=60, env=clean_env(tmp_path))
    assert p.returncode == 0 and mode_of(os.path.join(str(tmp_path), 'in.event.ntrace')) == 0o600
