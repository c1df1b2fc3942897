"""Hostile directories and files around the manager (issue 25): a provider applies the rule
SECURITY.md states for a manager socket's directory (the user's own, 0700, not a link), not
only the server's uid; the manager's --log and --socket create nothing they should not and
open nothing another user owns; trace-record falls back to its own manager when the default
socket's directory is someone else's.
Run by meson (suite manager) with NT_MANAGER, NT_TRACE_RECORD, NT_PROVIDER_PROG, NT_WORKDIR.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from mgr_support import MANAGER, PROG, TRACE_RECORD, parse_bundle  # noqa: E402
from test_review_fixes import NOBODY, FakeServer, need_root  # noqa: E402


def provider_refuses(path, reason):
    server = FakeServer(path, seconds=2)
    p = subprocess.run([PROG, '--events', '10'], env=dict(os.environ, NANOTRACE_MANAGER=path),
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    want = 'nanotrace: cannot reach the trace manager at %s: %s; not tracing' % (path, reason)
    assert want in p.stderr, p.stderr
    assert 'registered=0' in p.stdout, p.stdout
    assert not server.got_data(), 'the provider registered with a manager in ' + reason


def test_provider_refuses_a_socket_directory_of_another_owner():
    need_root()
    d = tempfile.mkdtemp(prefix='ntd-')  # 0700: only its owner is wrong
    try:
        os.chown(d, NOBODY, NOBODY)
        provider_refuses(os.path.join(d, 'manager.sock'),
                         "socket directory '%s' is owned by uid %d, not by uid %d: refused"
                         % (d, NOBODY, os.geteuid()))
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_provider_refuses_a_socket_directory_others_may_enter():
    d = tempfile.mkdtemp(prefix='ntd-')
    try:
        os.chmod(d, 0o755)
        provider_refuses(os.path.join(d, 'manager.sock'),
                         "socket directory '%s' has mode 755, not 0700: refused" % d)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_provider_refuses_a_socket_directory_that_is_a_link():
    base = tempfile.mkdtemp(prefix='ntd-')
    try:
        real = os.path.join(base, 'real')
        os.mkdir(real, 0o700)
        link = os.path.join(base, 'link')
        os.symlink(real, link)
        path = os.path.join(link, 'manager.sock')
        provider_refuses(path, "socket directory '%s' is a symbolic link: refused" % link)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def run_manager(*args, env=None):
    return subprocess.run([MANAGER, '--foreground', *args], capture_output=True, text=True,
                          timeout=10, env=env)


def test_manager_never_makes_the_directory_of_a_socket_it_was_given(tmp_path):
    missing = os.path.join(str(tmp_path), 'nonexist')
    for how in ('--socket', 'NANOTRACE_MANAGER'):
        sock = os.path.join(missing, 'x.sock')
        if how == '--socket':
            p = run_manager('--socket', sock)
        else:
            p = run_manager(env=dict(os.environ, NANOTRACE_MANAGER=sock))
        assert p.returncode == 2, (how, p.stderr)
        assert "socket directory '%s' does not exist" % missing in p.stderr, (how, p.stderr)
        assert not os.path.exists(missing), how


def test_manager_log_of_another_owner_is_refused(tmp_path):
    need_root()
    d = tempfile.mkdtemp(prefix='ntl-')
    try:
        log = os.path.join(str(tmp_path), 'theirs.log')
        with open(log, 'w') as f:
            f.write('theirs\n')
        os.chmod(log, 0o666)
        os.chown(log, NOBODY, NOBODY)
        p = run_manager('--socket', os.path.join(d, 'manager.sock'), '--log', log)
        assert p.returncode == 2, p.stderr
        assert "log '%s' is owned by uid %d, not by uid 0: refused" % (log, NOBODY) in p.stderr, \
            p.stderr
        assert open(log).read() == 'theirs\n', 'the manager wrote into a log of another user'
        assert not os.path.exists(os.path.join(d, 'manager.sock'))
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_manager_log_is_created_private(tmp_path):
    d = tempfile.mkdtemp(prefix='ntl-')
    try:
        log = os.path.join(str(tmp_path), 'mine.log')
        p = subprocess.Popen([MANAGER, '--foreground', '--socket', os.path.join(d, 'm.sock'),
                              '--log', log], stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 10
        while not (os.path.exists(log) and 'listening on' in open(log).read()):
            assert p.poll() is None and time.time() < deadline, p.stderr.read()
            time.sleep(0.02)
        p.terminate()
        p.wait(10)
        assert os.stat(log).st_mode & 0o777 == 0o600
    finally:
        shutil.rmtree(d, ignore_errors=True)


def as_user(uid):
    def drop():
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    return drop


def test_trace_record_records_privately_when_the_tmp_default_is_squatted():
    # Without XDG_RUNTIME_DIR the default socket is /tmp/nanotrace-$UID, a name any user can
    # take first. trace-record refuses it as before, and records with a manager of its own
    # in a private directory, saying so in one line; nanotrace-manager still refuses. As a
    # uid of its own, so that no other test's /tmp/nanotrace-0 is touched.
    need_root()
    uid = 40000 + os.getpid() % 20000
    squat = '/tmp/nanotrace-%d' % uid
    work = tempfile.mkdtemp(prefix='ntq-')
    os.chown(work, uid, uid)
    env = dict(os.environ, TMPDIR=work)
    env.pop('XDG_RUNTIME_DIR', None)
    env.pop('NANOTRACE_MANAGER', None)
    try:
        for kind in ('another owner', 'a link'):
            if kind == 'another owner':
                os.mkdir(squat, 0o700)
                os.chown(squat, NOBODY, NOBODY)
            else:
                os.symlink(work, squat)  # to a directory of the user's: a link all the same
            out = os.path.join(work, 'squat.ntbundle')
            p = subprocess.run([TRACE_RECORD, '-o', out, '--', PROG, '--events', '10'],
                               env=env, preexec_fn=as_user(uid), capture_output=True, text=True,
                               timeout=60)
            assert p.returncode == 0, (kind, p.stderr)
            said = [line for line in p.stderr.splitlines() if squat in line]
            assert len(said) == 1, (kind, p.stderr)
            assert 'recording with a private manager at %s/nanotrace-record-' % work in said[0], \
                (kind, said)
            b = parse_bundle(out)
            assert len(b['sections']) == 1 and b['sections'][0]['state'] == 'exited', b
            m = subprocess.run([MANAGER, '--foreground'], env=env, preexec_fn=as_user(uid),
                               capture_output=True, text=True, timeout=10)
            assert m.returncode == 2 and squat in m.stderr and 'refused' in m.stderr, m.stderr
            os.unlink(out)
            if os.path.islink(squat):
                os.unlink(squat)
            else:
                shutil.rmtree(squat)
        assert [n for n in os.listdir(work) if n.startswith('nanotrace-record-')] == []
    finally:
        if os.path.islink(squat):
            os.unlink(squat)
        shutil.rmtree(squat, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
