"""A set-user-ID or set-group-ID program linking libnanotrace ignores NANOTRACE, every
NANOTRACE_* variable and NANOTRACE_MANAGER (secure_getenv): whoever runs it must not choose
where a privileged process writes or whom it talks to. Needs root (skipped otherwise).
"""
import os
import shutil
import subprocess

import pytest

from conftest import program

PROGRAM = program('NT_ENV_PROGRAM')


def clean_env(target):
    env = {k: v for k, v in os.environb.items() if not k.startswith(b'NANOTRACE')}
    env[b'NANOTRACE'] = os.fsencode(target)
    return env


def without_leak_sanitizer(p):
    """(exit status, stderr) without LeakSanitizer's own failure: in a sanitizer build it
    cannot run in a set-user-ID process (nor read ASAN_OPTIONS there, /proc/self being
    root's), and says so at exit with status 1 after the program's own work is done."""
    lines = [ln for ln in p.stderr.split(b'\n') if ln]
    sanitizer = [ln for ln in lines if ln.startswith(b'==') and
                 (b'LeakSanitizer' in ln or b'HINT' in ln)]
    rest = b''.join(ln + b'\n' for ln in lines if ln not in sanitizer)
    return (7 if sanitizer and p.returncode == 1 else p.returncode), rest


def test_a_set_user_id_program_ignores_nanotrace(tmp_path):
    # Run as root, a copy of env_program set-user-ID to nobody runs with AT_SECURE: NANOTRACE
    # names a directory nobody may write to, which getenv() would obey; secure_getenv()
    # reads it as unset, so nothing is recorded and nothing is said. The same copy without
    # the bit records there (the control). NANOTRACE_MANAGER, an unreachable socket, is
    # likewise ignored: no registration, so no line about it.
    if os.geteuid() != 0:
        pytest.skip('needs root to make a set-user-ID program')
    import pwd
    import tempfile
    nobody = pwd.getpwnam('nobody').pw_uid
    where = tempfile.mkdtemp(prefix='nt-setuid-', dir='/tmp')
    try:
        os.chmod(where, 0o755)
        prog = os.path.join(where, 'env_program')
        shutil.copy(PROGRAM, prog)
        target = os.path.join(where, 'traces')
        os.mkdir(target)
        os.chmod(target, 0o777)
        env = clean_env(target)
        env[b'NANOTRACE_MANAGER'] = b'/nonexistent/nanotrace-setuid-test.sock'

        p = subprocess.run([prog, 'trace2'], env=env, capture_output=True, timeout=60)
        assert p.returncode == 7 and len(os.listdir(target)) == 1, (p.stderr, 'control')
        assert p.stderr.count(b'NANOTRACE_MANAGER') == 1, (p.stderr, 'control')
        for f in os.listdir(target):
            os.unlink(os.path.join(target, f))
        os.chown(prog, nobody, nobody)
        os.chmod(prog, 0o4755)
        p = subprocess.run([prog, 'trace2'], env=env, capture_output=True, timeout=60)
        status, err = without_leak_sanitizer(p)
        assert status == 7 and err == b'', p.stderr
        assert b'recording=0' in p.stdout, p.stdout
        assert os.listdir(target) == [], 'a set-user-ID program obeyed NANOTRACE'
    finally:
        shutil.rmtree(where, ignore_errors=True)
