"""The security review's findings, one test each (or more): a manager socket that another
user planted is refused by trace-record and by providers; a failed final rename keeps the
recording; a controller that stops reading is not dropped and a long provider list arrives
whole; connection slots are shared fairly; connects never block against a stuck manager.

Run by meson (suite manager) with NT_MANAGER, NT_TRACE_RECORD, NT_PROVIDER_PROG, NT_WORKDIR.
"""
import os
import re
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from mgr_support import (MANAGER, TRACE_RECORD, T, Controller, FakeProvider,  # noqa: E402
                         manager_fixture, parse_bundle, recv_wire, wire)
from conftest import program  # noqa: E402

PROG = program('NT_PROVIDER_PROG')
NOBODY = 65534


mgr = manager_fixture('r-')


def need_root():
    if os.geteuid() != 0:
        pytest.skip('another uid needs root')


class FakeServer:
    """A "manager" that is not ours: a listening socket at `path` made by a forked child,
    which takes uid `uid` before listen() when given one (SO_PEERCRED names the uid of
    listen()). It accepts for `seconds` and reports on a pipe whether any client sent it
    a byte."""

    def __init__(self, path, uid=None, seconds=4.0):
        self.path = path
        r, w = os.pipe()
        ready_r, ready_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            os.close(r)
            os.close(ready_r)
            self._child(w, ready_w, uid, seconds)
        os.close(w)
        os.close(ready_w)
        assert os.read(ready_r, 1) == b'L', 'the fake server did not listen'
        os.close(ready_r)
        self.report = r

    def _child(self, w, ready_w, uid, seconds):
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            s.bind(self.path)
            if uid is not None:
                os.setgid(uid)
                os.setuid(uid)
            s.listen(16)
            os.write(ready_w, b'L')
            got = b'-'
            s.settimeout(0.1)
            conns = []
            end = time.time() + seconds
            while time.time() < end:
                try:
                    c, _ = s.accept()
                    c.setblocking(False)
                    conns.append(c)
                except socket.timeout:
                    pass
                for c in conns:
                    try:
                        if c.recv(4096):
                            got = b'G'
                    except (BlockingIOError, OSError):
                        pass
            os.write(w, got)
            os._exit(0)
        except BaseException as e:  # noqa: B036 (a forked child must not return)
            os.write(2, ('fake server: %r\n' % e).encode())
            os._exit(3)

    def got_data(self):
        """Waits for the server's end; True when a client sent it anything."""
        out = os.read(self.report, 1)
        os.close(self.report)
        _, status = os.waitpid(self.pid, 0)
        assert os.WEXITSTATUS(status) == 0, 'the fake server failed'
        return out == b'G'


def planted_dir(owner):
    d = tempfile.mkdtemp(prefix='ntf-')
    os.chown(d, owner, owner)
    return d


def record_env(path, tmp):
    return dict(os.environ, NANOTRACE_MANAGER=path, TMPDIR=tmp)


def test_trace_record_refuses_a_directory_of_another_owner(workdir, tmp_path):
    need_root()
    d = planted_dir(NOBODY)
    try:
        path = os.path.join(d, 'manager.sock')
        server = FakeServer(path, seconds=3)
        out = os.path.join(str(tmp_path), 'x.ntbundle')
        for args in (['--list'], ['-o', out, '--', 'true']):
            p = subprocess.run([TRACE_RECORD, *args], env=record_env(path, str(tmp_path)),
                               capture_output=True, text=True, timeout=30)
            assert p.returncode == 2, (args, p.returncode, p.stderr)
            assert path in p.stderr and 'owned by uid %d' % NOBODY in p.stderr, p.stderr
        assert not server.got_data(), 'trace-record talked to a manager of another owner'
        assert not os.path.exists(out)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_trace_record_and_provider_refuse_a_server_of_another_uid(workdir, tmp_path):
    need_root()
    d = planted_dir(0)  # our directory, 0700: only SO_PEERCRED can tell
    try:
        path = os.path.join(d, 'manager.sock')
        server = FakeServer(path, uid=NOBODY, seconds=4)
        out = os.path.join(str(tmp_path), 'x.ntbundle')
        for args in (['--list'], ['-o', out, '--', 'true']):
            p = subprocess.run([TRACE_RECORD, *args], env=record_env(path, str(tmp_path)),
                               capture_output=True, text=True, timeout=30)
            assert p.returncode == 2, (args, p.returncode, p.stderr)
            assert path in p.stderr and 'runs as uid %d' % NOBODY in p.stderr, p.stderr
        p = subprocess.run([PROG, '--events', '10'], env=dict(os.environ, NANOTRACE_MANAGER=path),
                           capture_output=True, text=True, timeout=30)
        want = 'nanotrace: the trace manager at %s runs as uid %d, not 0; not tracing' % (
            path, NOBODY)
        assert p.returncode == 0 and want in p.stderr, p.stderr
        assert 'registered=0' in p.stdout, p.stdout
        assert not server.got_data(), 'a client sent its registration to another uid'
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_trace_record_still_uses_its_own_manager(mgr, tmp_path):
    f = FakeProvider(mgr, 'mine')
    assert mgr.wait_log('name mine')
    p = subprocess.run([TRACE_RECORD, '--list'], env=mgr.env(), capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 0 and 'mine' in p.stdout, p.stderr
    f.close()


def test_output_that_is_a_directory_is_a_usage_error(workdir, tmp_path):
    d = tmp_path / 'adir'
    d.mkdir()
    p = subprocess.run([TRACE_RECORD, '-o', str(d), '--', 'true'], capture_output=True,
                       text=True, timeout=30, env=dict(os.environ, TMPDIR=str(tmp_path)))
    assert p.returncode == 1 and "-o '%s' is a directory" % d in p.stderr, p.stderr
    assert os.listdir(d) == [] and os.listdir(tmp_path) == ['adir'], 'nothing was created'


def test_failed_rename_keeps_the_recording(workdir, tmp_path):
    # The command takes the output's name with a directory while it is recorded: the final
    # rename fails, and the finished recording stays under its temporary name.
    env = dict(os.environ, TMPDIR=str(tmp_path), XDG_RUNTIME_DIR=str(tmp_path))
    env.pop('NANOTRACE_MANAGER', None)
    out = tmp_path / 'run.ntbundle'
    p = subprocess.run([TRACE_RECORD, '-o', str(out), '--', 'mkdir', str(out)],
                       capture_output=True, text=True, timeout=30, env=env)
    assert p.returncode == 2, (p.returncode, p.stderr)
    m = re.search(r"the recording is kept in '([^']+)'", p.stderr)
    assert m and 'renaming the archive to' in p.stderr, p.stderr
    kept = m.group(1)
    assert os.path.dirname(kept) == str(tmp_path) and os.path.isfile(kept), kept
    b = parse_bundle(kept)
    assert b['end']['state'] == 'finished', b


def register_many(manager, n, per_process=4, name='many'):
    """n registered providers (names name0, name1, ...), each connection made and
    REGISTERed by a short-lived child process (a few per process: the manager limits
    connections per pid) and handed to this one with SCM_RIGHTS, which keeps them open
    and never reads them. Returns the sockets."""
    socks = []
    for first in range(0, n, per_process):
        count = min(per_process, n - first)
        here, there = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            try:
                here.close()
                for k in range(first, first + count):
                    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                    s.connect(manager.path)
                    s.send(wire(T['REGISTER'], pid=os.getpid(),
                                name=('%s%d' % (name, k)).encode()))
                    socket.send_fds(there, [b'x'], [s.fileno()])
                    s.close()
                os._exit(0)
            except BaseException as e:  # noqa: B036 (a forked child must not return)
                os.write(2, ('register_many child: %r\n' % e).encode())
                os._exit(3)
        there.close()
        for _ in range(count):
            _, fds, _, _ = socket.recv_fds(here, 1, 1)
            assert len(fds) == 1, 'the child did not hand its connection over'
            socks.append(socket.socket(fileno=fds[0]))
        _, status = os.waitpid(pid, 0)
        assert os.WEXITSTATUS(status) == 0
        here.close()
    deadline = time.time() + 20
    while len(Controller(manager).list()) < n:
        assert time.time() < deadline, 'not all %d providers registered' % n
        time.sleep(0.1)
    return socks


def test_list_of_200_providers_is_complete(mgr):
    socks = register_many(mgr, 200)
    try:
        p = subprocess.run([TRACE_RECORD, '--list'], env=mgr.env(), capture_output=True,
                           text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        names = sorted(line.split()[-1] for line in p.stdout.splitlines()[1:])
        assert names == sorted('many%d' % k for k in range(200)), p.stdout
        assert 'dropped' not in mgr.log(), mgr.log()
    finally:
        for s in socks:
            s.close()


def test_controller_that_stops_reading_keeps_its_trace(mgr, tmp_path):
    # 150 providers the trace does not select: listing them fills the controller's socket
    # (about 93 messages), and the controller then reads nothing for 4 s.
    socks = register_many(mgr, 150)
    try:
        c = Controller(mgr)
        c.sock.send(wire(T['CTL_SELECT'], name=b'nobody-of-these'))
        out = str(tmp_path / 'quiet.ntbundle')
        assert c.start(out)['type'] == 'CTL_STARTED'
        c.sock.send(wire(T['CTL_LIST']))
        time.sleep(4)
        assert 'dropped' not in mgr.log() and 'stopping' not in mgr.log(), mgr.log()
        listed, progress = 0, 0
        while True:
            msg, _ = recv_wire(c.sock)
            assert msg is not None, 'the manager closed the controller'
            if msg['type'] == 'CTL_END':
                break
            listed += msg['type'] == 'CTL_PROVIDER'
            progress += msg['type'] == 'CTL_PROGRESS'
        assert listed == 150, listed
        assert c.until('CTL_PROGRESS')['type'] == 'CTL_PROGRESS', 'progress goes on'
        assert c.stop()['type'] == 'CTL_STOPPED'
        assert parse_bundle(out)['end']['state'] == 'finished'
        c.close()
    finally:
        for s in socks:
            s.close()


def test_manager_sends_progress_while_stopping(mgr, tmp_path):
    # A provider that never answers STOP holds the trace for the stop budget (2 s): the
    # controller hears progress all that time, so it can tell a busy manager from a lost one.
    f = FakeProvider(mgr, 'slow')
    assert mgr.wait_log('name slow')
    c = Controller(mgr)
    out = str(tmp_path / 'slow.ntbundle')
    assert c.start(out)['type'] == 'CTL_STARTED'
    f.run_honest()
    c.sock.send(wire(T['CTL_STOP']))
    beats = []
    while True:
        msg, _ = recv_wire(c.sock, 10)
        assert msg is not None
        if msg['type'] == 'CTL_PROGRESS':
            beats.append(time.time())
        if msg['type'] in ('CTL_STOPPED', 'CTL_END'):
            break
    assert msg['type'] == 'CTL_STOPPED', msg
    assert len(beats) >= 4, 'only %d progress messages while stopping' % len(beats)
    assert parse_bundle(out)['sections'][0]['state'] == 'timed out'
    c.close()
    f.close()


class FakeController:
    """A "manager" of ours (same uid, private 0700 directory) that answers one controller:
    CTL_STARTED, then after CTL_STOP `beats` progress messages 0.2 s apart and CTL_STOPPED,
    or (silent) nothing at all, holding the connection open until release()."""

    def __init__(self, beats=0, silent=False):
        self.dir = tempfile.mkdtemp(prefix='ntc-')
        self.path = os.path.join(self.dir, 'manager.sock')
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.listener.bind(self.path)
        self.listener.listen(4)
        self.beats, self.silent = beats, silent
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        conn, _ = self.listener.accept()
        while True:
            msg, fds = recv_wire(conn, 30)
            for fd in fds:
                os.close(fd)
            if msg is None:
                return
            if msg['type'] == 'CTL_START':
                conn.send(wire(T['CTL_STARTED']))
            if msg['type'] == 'CTL_STOP':
                break
        if self.silent:
            self.done.wait(30)
        else:
            for _ in range(self.beats):
                conn.send(wire(T['CTL_PROGRESS']))
                time.sleep(0.2)
            conn.send(wire(T['CTL_STOPPED']))
            self.done.wait(30)
        conn.close()

    def release(self):
        self.done.set()
        self.thread.join(10)
        self.listener.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def test_trace_record_waits_while_the_manager_sends_progress(tmp_path):
    fake = FakeController(beats=15)  # 3 s of progress, three times --manager-timeout
    try:
        out = tmp_path / 'beats.ntbundle'
        p = subprocess.run([TRACE_RECORD, '-o', str(out), '--manager-timeout', '1', '--',
                            'true'], env=dict(os.environ, NANOTRACE_MANAGER=fake.path),
                           capture_output=True, text=True, timeout=30)
        assert p.returncode == 0 and out.exists(), p.stderr
    finally:
        fake.release()


def test_silent_manager_with_an_open_connection_is_never_raced(tmp_path):
    fake = FakeController(silent=True)
    try:
        out = tmp_path / 'silent.ntbundle'
        p = subprocess.run([TRACE_RECORD, '-o', str(out), '--manager-timeout', '1', '--',
                            'true'], env=dict(os.environ, NANOTRACE_MANAGER=fake.path),
                           capture_output=True, text=True, timeout=30)
        assert p.returncode == 3, (p.returncode, p.stderr)
        m = re.search(r"sent nothing for 1 s while stopping; the unfinished recording is kept "
                      r"in '([^']+)'", p.stderr)
        assert m, p.stderr
        assert not out.exists(), 'renamed while the manager still held the file'
        assert os.path.getsize(m.group(1)) == 0, 'salvaged while the manager held the file'
    finally:
        fake.release()


def test_one_process_gets_at_most_8_connections(mgr):
    # A child process (a pid of its own) asks for 12 connections and registers on each:
    # 8 are served, and a controller still gets in.
    here, there = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid = os.fork()
    if pid == 0:
        try:
            socks = []
            here.close()
            for k in range(12):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                s.connect(mgr.path)
                try:
                    s.send(wire(T['REGISTER'], pid=os.getpid(), name=b'greedy%d' % k))
                except (BrokenPipeError, ConnectionResetError):
                    pass  # a refused connection may be closed before the child writes
                socks.append(s)
            there.send(b'r')
            there.recv(1)  # hold them until the test is done
            os._exit(0)
        except BaseException as e:  # noqa: B036 (a forked child must not return)
            os.write(2, ('greedy child: %r\n' % e).encode())
            os._exit(3)
    there.close()  # a child that fails closes the pair: EOF here, never a hang
    try:
        here.settimeout(60)
        assert here.recv(1) == b'r', 'the greedy child failed'
        assert mgr.wait_log('refused connection from pid %d: it has 8 already' % pid), mgr.log()
        deadline = time.time() + 10
        while True:
            greedy = [p for p in Controller(mgr).list() if p['name'].startswith('greedy')]
            if len(greedy) == 8 or time.time() > deadline:
                break
            time.sleep(0.1)
        assert len(greedy) == 8, greedy
        p = subprocess.run([TRACE_RECORD, '--list'], env=mgr.env(), capture_output=True,
                           text=True, timeout=30)
        assert p.returncode == 0 and p.stdout.count('greedy') == 8, p
    finally:
        here.send(b'x')
        _, status = os.waitpid(pid, 0)
        assert os.WEXITSTATUS(status) == 0


def test_providers_leave_slots_for_controllers(mgr):
    # 1008 providers (the cap, 1024, less the 16 kept for controllers) fill every slot they
    # may have; the next is refused and a controller still gets in.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1200:
        if hard != resource.RLIM_INFINITY and hard < 1200:
            pytest.skip('needs 1200 descriptors, the hard limit is %d' % hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (1200, hard))
    socks = register_many(mgr, 1008, per_process=8, name='crowd')
    try:
        extra = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:  # a pid of its own: the limit per process is not what refuses it
            try:
                extra.connect(mgr.path)
                extra.send(wire(T['REGISTER'], pid=os.getpid(), name=b'one-too-many'))
                extra.settimeout(10)
                os._exit(0 if extra.recv(2000) == b'' else 1)
            except ConnectionResetError:
                os._exit(0)
            except BaseException as e:  # noqa: B036
                os.write(2, ('extra provider: %r\n' % e).encode())
                os._exit(3)
        _, status = os.waitpid(pid, 0)
        assert os.WEXITSTATUS(status) == 0, 'the 1009th provider was kept'
        assert mgr.wait_log('refused REGISTER from pid %d: 1008 providers already' % pid), \
            mgr.log()[-2000:]
        p = subprocess.run([TRACE_RECORD, '--list'], env=mgr.env(), capture_output=True,
                           text=True, timeout=60)
        assert p.returncode == 0 and p.stdout.count('crowd') == 1008, p.stderr
    finally:
        for s in socks:
            s.close()


def test_a_stuck_manager_hangs_no_connect(tmp_path):
    # A listener that never accepts, its accept queue full: every connect would block.
    d = tempfile.mkdtemp(prefix='nts-')
    path = os.path.join(d, 'manager.sock')
    stuck = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    stuck.bind(path)
    stuck.listen(0)
    fillers = []
    try:
        while True:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            s.setblocking(False)
            try:
                s.connect(path)
            except BlockingIOError:
                s.close()
                break
            fillers.append(s)
            assert len(fillers) < 100, 'the accept queue never fills'
        t0 = time.time()
        p = subprocess.run([MANAGER, '--foreground', '--socket', path], capture_output=True,
                           text=True, timeout=30)
        assert p.returncode == 2 and 'a manager already runs' in p.stderr, p.stderr
        assert time.time() - t0 < 5
        t0 = time.time()
        p = subprocess.run([TRACE_RECORD, '--list'], capture_output=True, text=True,
                           timeout=30, env=dict(os.environ, NANOTRACE_MANAGER=path))
        assert p.returncode == 0 and 'no manager answers' in p.stderr, p.stderr
        assert time.time() - t0 < 10
        t0 = time.time()
        p = subprocess.run([PROG, '--events', '10'], env=dict(os.environ, NANOTRACE_MANAGER=path),
                           capture_output=True, text=True, timeout=30)
        assert p.returncode == 0 and 'not tracing' in p.stderr, p.stderr
        assert time.time() - t0 < 10
    finally:
        for s in fillers:
            s.close()
        stuck.close()
        shutil.rmtree(d, ignore_errors=True)


def test_default_socket_directory_of_another_owner_is_refused(tmp_path):
    # The default path ($XDG_RUNTIME_DIR/nanotrace/manager.sock here; /tmp/nanotrace-$UID
    # without it) is checked as $NANOTRACE_MANAGER is: another user made the directory.
    need_root()
    base = tempfile.mkdtemp(prefix='ntx-')
    try:
        d = os.path.join(base, 'nanotrace')
        os.mkdir(d, 0o700)
        os.chown(d, NOBODY, NOBODY)
        path = os.path.join(d, 'manager.sock')
        server = FakeServer(path, seconds=2)
        env = dict(os.environ, XDG_RUNTIME_DIR=base, TMPDIR=str(tmp_path))
        env.pop('NANOTRACE_MANAGER', None)
        p = subprocess.run([TRACE_RECORD, '--list'], env=env, capture_output=True, text=True,
                           timeout=30)
        assert p.returncode == 2 and path in p.stderr and 'owned by uid %d' % NOBODY in p.stderr, \
            p.stderr
        assert not server.got_data()
    finally:
        shutil.rmtree(base, ignore_errors=True)
