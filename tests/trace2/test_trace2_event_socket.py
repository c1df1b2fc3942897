"""test_trace2_event_socket: NANOTRACE_EVENT=af_unix:[stream:|dgram:]<path>, Git's Trace2
socket target (writer/trace2/nt_trace2_forward.c, reader/trace2/nt_trace2_forward.c).

A process tree (t2_program: threads, an exec'd child, a fork() child) sends its EVENT lines to
a listener of this test while NANOTRACE records the archives; what each process sent equals,
line for line and each thread's lines in order (the forwarder follows the live arena:
threads interleave by time within each poll), what `trace-dump --format event` renders
from its archive, with the clock's fields masked (time, t_abs, t_rel and the timers'
t_total, t_min, t_max). A dgram
listener gets one line per datagram. With NANOTRACE_EVENT alone the same lines come and
nothing is left on disk. A listener that goes away mid-run, a missing socket, a stalled
listener and a bad value are one warning per process, and the exit status is the program's
own (3). `trace-dump --format event -o af_unix:...` sends what it prints, one line a message,
also with --follow.
"""
import json
import os
import socket
import subprocess
import threading
import time

import pytest

from conftest import program

PROG, DUMP = program('NT_T2_PROGRAM'), program('NT_TRACE_DUMP')
CLOCK = ('time', 't_abs', 't_rel', 't_total', 't_min', 't_max')


def env_for(tmp_path, **kw):
    env = {k: v for k, v in os.environ.items() if not k.startswith('NANOTRACE')}
    # t2_program links libnanotrace statically: the reader library is found by its soname.
    libdir = os.path.dirname(program('NT_READER_LIB'))
    env['LD_LIBRARY_PATH'] = libdir + (':' + env['LD_LIBRARY_PATH']
                                       if env.get('LD_LIBRARY_PATH') else '')
    private = tmp_path / 'private'
    private.mkdir(exist_ok=True)
    env['XDG_RUNTIME_DIR'] = env['TMPDIR'] = str(private)
    env.update(kw)
    return env


class Listener:
    """A Unix socket listener of `kind` at `path`, collecting on a thread: per stream
    connection its bytes, per datagram one message."""

    def __init__(self, path, kind):
        self.path, self.kind = path, kind
        t = socket.SOCK_STREAM if kind == 'stream' else socket.SOCK_DGRAM
        self.sock = socket.socket(socket.AF_UNIX, t)
        self.sock.bind(path)
        if kind == 'stream':
            self.sock.listen(16)
        self.sock.settimeout(0.1)
        self.streams, self.datagrams = [], []
        self.first = threading.Event()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def read_stream(self, conn, buf):
        conn.settimeout(0.1)
        with conn:
            while True:
                try:
                    data = conn.recv(65536)
                except socket.timeout:
                    if self.stop.is_set():
                        return
                    continue
                if not data:
                    return
                buf.extend(data)
                self.first.set()

    def run(self):
        """Until stopped and nothing more waits (a timeout after the stop)."""
        readers = []
        while True:
            try:
                if self.kind == 'stream':
                    conn, _ = self.sock.accept()
                    buf = bytearray()
                    self.streams.append(buf)
                    r = threading.Thread(target=self.read_stream, args=(conn, buf), daemon=True)
                    r.start()
                    readers.append(r)
                else:
                    self.datagrams.append(self.sock.recv(1 << 20))
                    self.first.set()
            except socket.timeout:
                if self.stop.is_set():
                    break
        for r in readers:
            r.join()

    def close(self):
        self.stop.set()
        self.thread.join()
        self.sock.close()

    def lines(self):
        """Every line received, each stream's in its order, datagrams in arrival order."""
        out = []
        for buf in self.streams:
            text = bytes(buf).decode('utf-8')
            assert text == '' or text.endswith('\n'), text[-200:]
            out += text.splitlines()
        for d in self.datagrams:
            text = d.decode('utf-8')
            assert text.endswith('\n') and text.count('\n') == 1, text  # one line a datagram
            out.append(text[:-1])
        return out


def masked(line):
    d = json.loads(line)
    for k in CLOCK:
        d.pop(k, None)
    return json.dumps(d, sort_keys=True)


def by_sid(lines):
    out = {}
    for line in lines:
        out.setdefault(json.loads(line)['sid'], []).append(masked(line))
    return out


def per_thread(lines):
    """Each (process, thread)'s lines in their order. What a live follow keeps: a thread's
    lines in order, the threads merged by time within each poll; an event published after
    a later one of another thread was sent comes in the next poll, so threads may
    interleave otherwise than in the finished archive's time merge (nanotrace_reader.h,
    LIVE FOLLOW)."""
    out = {}
    for line in lines:
        d = json.loads(line)
        out.setdefault((d['sid'], d.get('thread')), []).append(masked(line))
    return out


def dumped_files(paths):
    lines = []
    for path in paths:
        p = subprocess.run([DUMP, '--format', 'event', path], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, check=True)
        lines += p.stdout.decode('utf-8').splitlines()
    return lines


def dumped(directory):
    return dumped_files([os.path.join(directory, n) for n in sorted(os.listdir(directory))])


def run(env, *args):
    p = subprocess.run([PROG, '--threads', '2'] + list(args), env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    return p.returncode, p.stderr.decode('utf-8', 'replace')


def warnings(stderr):
    return [line for line in stderr.splitlines() if line.startswith('nanotrace:')]


def under_sanitizer():
    """A fork() child of a process with threads that starts a thread and allocates, which
    glibc allows, is what the sanitizers' runtimes cannot do: ThreadSanitizer refuses the
    thread ("dup thread with used id"), AddressSanitizer's allocator (gcc 12) can keep a lock
    the parent's forwarder held at fork() and hang. The fork() child's own forwarder is left
    out of sanitizer builds' runs."""
    with open(PROG, 'rb') as f:
        data = f.read()
    return b'__tsan_init' in data or b'__asan_init' in data


FORK = [] if under_sanitizer() else ['--fork']


def check_tree(tmp_path, kind, target_type):
    sock, arch = str(tmp_path / 's'), tmp_path / 'arch'
    arch.mkdir()
    lis = Listener(sock, kind)
    try:
        code, err = run(env_for(tmp_path, NANOTRACE=str(arch),
                                NANOTRACE_EVENT='af_unix:%s%s' % (target_type, sock)), *FORK)
    finally:
        lis.close()
    assert code == 3 and warnings(err) == [], err
    lines, dumped_lines = lis.lines(), dumped(str(arch))
    got, want = by_sid(lines), by_sid(dumped_lines)
    # The parent, its exec'd child and its fork() child, each complete, each thread's
    # lines in order.
    assert len(want) == 2 + len(FORK) and sorted(got) == sorted(want), (got, want)
    assert per_thread(lines) == per_thread(dumped_lines)
    assert all('"event": "atexit"' in v[-1] for v in got.values())


def test_stream_tree_equals_trace_dump(tmp_path):
    check_tree(tmp_path, 'stream', 'stream:')


def test_dgram_tree_equals_trace_dump(tmp_path):
    check_tree(tmp_path, 'dgram', 'dgram:')


def test_no_type_falls_back_to_dgram(tmp_path):
    check_tree(tmp_path, 'dgram', '')


def test_no_type_takes_stream(tmp_path):
    check_tree(tmp_path, 'stream', '')


def test_event_alone_records_privately(tmp_path):
    sock = str(tmp_path / 's')
    lis = Listener(sock, 'stream')
    try:
        env = env_for(tmp_path, NANOTRACE_EVENT='af_unix:' + sock)
        code, err = run(env, *FORK)
    finally:
        lis.close()
    assert code == 3 and warnings(err) == [], err
    got = by_sid(lis.lines())
    assert len(got) == 2 + len(FORK), sorted(got)
    for lines in got.values():
        assert '"atexit"' in lines[-1], lines
    root = min(got, key=len)
    assert [json.loads(x)['event'] for x in got[root][:2]] == ['version', 'start']
    assert os.listdir(str(tmp_path / 'private')) == []  # no arena, no directory left


def test_listener_gone_mid_run(tmp_path):
    """The listener reads the first lines, then closes and removes its socket; the program
    (waiting on --wait-gone until the socket is gone) goes on: its next send fails, which is
    its one warning; its exec'd child, started later, finds no socket (its one warning)."""
    for kind in ('stream', 'dgram'):
        sock, arch = str(tmp_path / ('s-' + kind)), tmp_path / ('arch-' + kind)
        arch.mkdir()
        lis = Listener(sock, kind)
        env = env_for(tmp_path, NANOTRACE=str(arch), NANOTRACE_EVENT='af_unix:' + sock)
        p = subprocess.Popen([PROG, '--threads', '2', '--wait-gone', sock], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert lis.first.wait(30), 'no line came'
        lis.close()
        os.unlink(sock)
        _, err = p.communicate(timeout=60)
        err = err.decode('utf-8', 'replace')
        w = warnings(err)
        assert p.returncode == 3, err
        assert len(w) == 2 and all('NANOTRACE_EVENT=' in x for x in w), err
        assert sum('cannot connect' in x for x in w) == 1, err  # the child
        assert len(os.listdir(str(arch))) == 2  # the archives are whole
        for line in dumped(str(arch)):
            json.loads(line)


def test_missing_socket(tmp_path):
    sock = str(tmp_path / 'none')
    code, err = run(env_for(tmp_path, NANOTRACE_EVENT='af_unix:dgram:' + sock))
    w = warnings(err)
    # One line per process that records (t2_program and its exec'd child).
    assert code == 3 and len(w) == 2, err
    assert all("NANOTRACE_EVENT='af_unix:dgram:%s': cannot connect" % sock in x for x in w), err
    assert os.listdir(str(tmp_path / 'private')) == []


def test_bad_values(tmp_path):
    arch = tmp_path / 'arch'
    arch.mkdir()
    for value, why in (('af_unix:relative/path', 'not absolute'),
                       ('af_unix:seqpacket:/x', 'unknown socket type'),
                       ('/some/file', 'not af_unix:')):
        code, err = run(env_for(tmp_path, NANOTRACE=str(arch), NANOTRACE_EVENT=value))
        w = warnings(err)
        assert code == 3 and len(w) == 2, err  # the program and its child
        assert all("NANOTRACE_EVENT='%s'" % value in x and why in x for x in w), err
    # The archives still record: two processes per run.
    assert len(os.listdir(str(arch))) == 6


def test_stalled_listener_does_not_hang_exit(tmp_path):
    """A dgram listener that never reads: its queue fills (net.unix.max_dgram_qlen
    datagrams), a send blocks, and the program gives up after about a second with one
    warning. Its exec'd child, whose few lines may still fit the queue, warns at most once."""
    import time
    with open('/proc/sys/net/unix/max_dgram_qlen') as f:
        if int(f.read()) > 40:  # the parent's 50-odd lines would fit: nothing stalls
            pytest.skip('net.unix.max_dgram_qlen is above 40 here')
    sock = str(tmp_path / 'stalled')
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(sock)
    try:
        start = time.monotonic()
        code, err = run(env_for(tmp_path, NANOTRACE_EVENT='af_unix:' + sock))
        elapsed = time.monotonic() - start
    finally:
        s.close()
    w = warnings(err)
    assert code == 3 and 1 <= len(w) <= 2, err  # the program, maybe its exec'd child
    assert all('stopped reading' in x or 'not sent within' in x for x in w), err
    assert elapsed < 30, elapsed  # about 1 s per process; generous for a loaded CI


def test_trace_dump_output_socket(tmp_path):
    """trace-dump --format event -o af_unix:...: the lines it prints, one message each."""
    arch = tmp_path / 'arch'
    arch.mkdir()
    code, err = run(env_for(tmp_path, NANOTRACE=str(arch)))
    assert code == 3, err
    files = [str(arch / n) for n in sorted(os.listdir(str(arch)))]
    want = subprocess.run([DUMP, '--format', 'event'] + files, stdout=subprocess.PIPE,
                          check=True).stdout.decode('utf-8').splitlines()
    for kind in ('stream', 'dgram'):
        sock = str(tmp_path / ('d-' + kind))
        lis = Listener(sock, kind)
        try:
            p = subprocess.run([DUMP, '--format', 'event', '-o', 'af_unix:' + sock] + files,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        finally:
            lis.close()
        assert p.returncode == 0 and p.stdout == b'' and p.stderr == b'', p.stderr
        assert lis.lines() == want
    p = subprocess.run([DUMP, '--format', 'event', '-o', 'af_unix:relative'] + files,
                       stderr=subprocess.PIPE)
    assert p.returncode == 1 and b'not absolute' in p.stderr, p.stderr
    p = subprocess.run([DUMP, '--format', 'event', '-o', 'af_unix:' + str(tmp_path / 'no')]
                       + files, stderr=subprocess.PIPE)
    assert p.returncode == 2 and p.stderr.count(b'\n') == 1 and b'cannot connect' in p.stderr


def test_trace_dump_follow_output_socket(tmp_path):
    """trace-dump --follow --format event -o af_unix:... while the program records: the
    lines of its archive, clock masked, and trace-dump ends when the writer finishes."""
    sock, archive = str(tmp_path / 'f'), str(tmp_path / 'live.ntrace')
    lis = Listener(sock, 'dgram')
    try:
        follow = subprocess.Popen([DUMP, '--follow', '--format', 'event', '-o',
                                   'af_unix:dgram:' + sock, '--wait', '60', '--interval', '5',
                                   archive], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        code, err = run(env_for(tmp_path, NANOTRACE=archive))
        out, ferr = follow.communicate(timeout=60)
    finally:
        lis.close()
    assert code == 3, err
    assert follow.returncode == 0 and out == b'', ferr
    lines, want = lis.lines(), dumped_files([archive])
    assert sorted(masked(x) for x in lines) == sorted(masked(x) for x in want)
    assert per_thread(lines) == per_thread(want)


def test_killed_program_sends_what_was_polled(tmp_path):
    """t2_program --signal kills itself with SIGTERM: no last poll, no warning; what the
    listener got is the start of each process's lines; the private arena is gone."""
    sock = str(tmp_path / 'k')
    lis = Listener(sock, 'stream')
    try:
        code, err = run(env_for(tmp_path, NANOTRACE_EVENT='af_unix:' + sock), '--signal')
    finally:
        lis.close()
    assert code == -15 and warnings(err) == [], (code, err)
    got = by_sid(lis.lines())
    assert got, 'nothing came'
    for sid, lines in got.items():
        events = [json.loads(x)['event'] for x in lines]
        # The killed parent never reaches atexit; its exec'd child (if it ran) does.
        assert events[0] == 'version' and ('/' in sid) == (events[-1] == 'atexit'), events
    assert os.listdir(str(tmp_path / 'private')) == []


def test_manager_forwards_every_recorded_provider(tmp_path):
    """nanotrace-manager --trace2-event: while trace-record records a Trace2 process tree
    through the daemon, each provider's lines reach the listener, none of the programs
    naming a target; what each process sent equals trace-dump --format event of the
    bundle's sections. A malformed target is a usage error."""
    p = subprocess.run([program('NT_MANAGER'), '--trace2-event', 'af_unix:relative/s'],
                       capture_output=True)
    assert p.returncode == 1 and b'--trace2-event' in p.stderr, p.stderr
    sock_dir = tmp_path / 'msock'
    sock_dir.mkdir(mode=0o700)
    msock, target = str(sock_dir / 'm.sock'), str(tmp_path / 's')
    lis = Listener(target, 'stream')
    env = env_for(tmp_path)
    mgr = subprocess.Popen([program('NT_MANAGER'), '--foreground', '--socket', msock,
                            '--trace2-event', 'af_unix:' + target], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    bundle = str(tmp_path / 'tree.ntrace')
    try:
        for _ in range(3000):
            assert mgr.poll() is None, mgr.stderr.read()
            if os.path.exists(msock):
                break
            time.sleep(0.01)
        rec = subprocess.run([program('NT_TRACE_RECORD'), '-o', bundle, '--', PROG,
                              '--threads', '2'], env=dict(env, NANOTRACE_MANAGER=msock),
                             capture_output=True, timeout=120)
        assert rec.returncode == 3, rec.stderr
    finally:
        mgr.terminate()
        _, err = mgr.communicate(timeout=60)
        lis.close()
    err = err.decode('utf-8', 'replace')
    assert mgr.returncode == 0 and 'trace2-event' not in err, err
    lines, dumped_lines = lis.lines(), dumped_files([bundle])
    got, want = by_sid(lines), by_sid(dumped_lines)
    # the parent and its exec'd child, each complete, each thread's lines in order
    assert len(want) == 2 and sorted(got) == sorted(want), (got, want)
    assert per_thread(lines) == per_thread(dumped_lines)
