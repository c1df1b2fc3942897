"""What the manager tests share: the wire messages (format/nt_wire.h) and FIFO packets
(format/nt_fifo.h) in Python struct form, a manager daemon fixture, a controller, fake
providers (honest by default; each hostile behaviour is a method), and a bundle parser
(format/nt_bundle.h).

The layouts are restated here with struct because the test must parse what the manager
writes without trusting the C code under test; test_manager.py checks the sizes against the
headers' static assertions (1176, 16, 64, 64).
"""
import mmap
import os
import re
import socket
import struct
import subprocess
import shutil
import tempfile
import time

import pytest

from conftest import program

MANAGER = program('NT_MANAGER')
TRACE_RECORD = program('NT_TRACE_RECORD')
ARENA_HEADER = program('NT_ARENA_HEADER')
TRACE_DUMP = program('NT_TRACE_DUMP')
PROG = program('NT_PROVIDER_PROG')  # a recording provider (tests/provider/provider_prog.c)

WIRE = struct.Struct('<IHHIHH4Q104s1024s')
WIRE_MAGIC = 0x4D57544E
FIFO = struct.Struct('<HHIQ')
PREAMBLE = struct.Struct('<8sIIq32sQ')
FRAME = struct.Struct('<IHBBIIHHIQq3Q')
FRAME_MAGIC = 0x4653544E

T = dict(REGISTER=1, REGISTERED=2, INITIALIZE=3, START=4, STOP=5, TERMINATE=6, CTL_LIST=16,
         CTL_SELECT=17, CTL_START=18, CTL_STOP=19, CTL_PROVIDER=20, CTL_END=21, CTL_STARTED=22,
         CTL_PROGRESS=23, CTL_STOPPED=24)
TYPE_NAME = {v: k for k, v in T.items()}
FIFO_STARTED, FIFO_SAVE_BUFFER, FIFO_STOPPED, FIFO_BUFFER_SAVED = 0x100, 0x101, 0x102, 0x103
MODES = {'oneshot': 0, 'circular': 1, 'streaming': 2}
SECTION = {1: 'finished', 2: 'exited', 3: 'killed', 4: 'timed out', 5: 'damaged',
           6: 'manager lost', 7: 'exited without stopping', 8: "exec'd",
           9: 'ended (cause unknown)'}


def wire(type_, pid=0, a=0, b=0, c=0, d=0, name=b'', text=b'', magic=WIRE_MAGIC, version=1):
    return WIRE.pack(magic, type_, version, pid, len(name), len(text), a, b, c, d, name, text)


def unwire(data):
    f = WIRE.unpack(data)
    return dict(magic=f[0], type=TYPE_NAME.get(f[1], f[1]), pid=f[3], a=f[6], b=f[7], c=f[8],
                d=f[9], name=f[10][:f[4]].decode(), text=f[11][:f[5]].decode())


def recv_wire(sock, timeout=5.0):
    """One message and the descriptors attached to it; None when the peer closed."""
    sock.settimeout(timeout)
    data, fds, _flags, _addr = socket.recv_fds(sock, WIRE.size + 1, 4)
    if not data:
        return None, fds
    assert len(data) == WIRE.size, 'message of %d bytes' % len(data)
    return unwire(data), fds


class Manager:
    """nanotrace-manager --foreground on a socket in a fresh 0700 directory."""

    def __init__(self, workdir, name, stop_timeout=None):
        # The socket in a short private directory (mkdtemp: 0700): a Unix socket path holds
        # 107 bytes, less than a build tree's work folder and a test's name may take. The
        # log stays in the work folder, for reading after a failure.
        self.dir = tempfile.mkdtemp(prefix='ntm-')
        self.path = os.path.join(self.dir, 'manager.sock')
        logs = os.path.join(workdir, name)
        os.makedirs(logs, exist_ok=True)
        self.log_path = os.path.join(logs, 'manager.log')
        self.log_file = open(self.log_path, 'w')
        self.proc = subprocess.Popen([MANAGER, '--foreground', '--verbose', '--socket', self.path],
                                     stdout=self.log_file, stderr=subprocess.STDOUT)
        deadline = time.time() + 10
        while not self.answers():
            assert self.proc.poll() is None, 'manager exited: ' + self.log()
            assert time.time() < deadline, 'manager does not listen: ' + self.log()
            time.sleep(0.02)

    def answers(self):
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            s.connect(self.path)
            s.close()
            return True
        except OSError:
            return False

    def log(self):
        with open(self.log_path) as f:
            return f.read()

    def wait_log(self, text, timeout=5.0):
        deadline = time.time() + timeout
        while text not in self.log():
            if time.time() > deadline:
                return False
            time.sleep(0.02)
        return True

    def env(self):
        return dict(os.environ, NANOTRACE_MANAGER=self.path)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log_file.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        # A sanitizer build's manager reports into its log, not into the test's output.
        log = self.log()
        assert 'Sanitizer' not in log and 'runtime error:' not in log, log[-4000:]


def layout(size, chunk=0):
    out = subprocess.run([ARENA_HEADER, 'layout', str(size), str(chunk)], capture_output=True,
                         check=True, text=True).stdout
    return {k: int(v) for k, v in (line.split('=') for line in out.split())}


def header_bytes(mode, size, chunk, pid, name):
    return subprocess.run([ARENA_HEADER, 'encode', str(mode), str(size), str(chunk), str(pid),
                           name], capture_output=True, check=True).stdout


def decode_header(block):
    p = subprocess.run([ARENA_HEADER, 'decode'], input=block[:4096], capture_output=True)
    return dict(line.split('=', 1) for line in p.stdout.decode().splitlines())


class FakeProvider:
    """A provider written in Python: register, take the buffer and FIFO, answer the
    manager. Honest unless a test makes it otherwise."""

    def __init__(self, manager, name, sync=False):
        self.name = name
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.connect(manager.path)
        self.sock.send(wire(T['REGISTER'], pid=os.getpid(), a=1 if sync else 0,
                            name=name if isinstance(name, bytes) else name.encode()))
        self.fifo = None
        self.map = None
        self.registered = None
        if sync:
            msg, _ = self.expect_init_or('REGISTERED')
            self.registered = msg

    def expect_init_or(self, other):
        msg, fds = recv_wire(self.sock)
        if msg is not None and msg['type'] == 'INITIALIZE':
            self.initialize(msg, fds)
            msg, fds = recv_wire(self.sock)
            assert msg['type'] == 'START', msg
            self.start = msg
            msg, fds = recv_wire(self.sock)
        assert msg is not None and msg['type'] == other, msg
        return msg, fds

    def initialize(self, msg, fds):
        assert len(fds) == 2, fds
        self.init = msg
        self.memfd, fifo_fd = fds
        self.fifo = socket.socket(fileno=fifo_fd)
        self.mode, self.size, self.chunk, self.map_size = msg['a'], msg['b'], msg['c'], msg['d']
        assert os.fstat(self.memfd).st_size == self.map_size
        self.map = mmap.mmap(self.memfd, self.map_size)
        assert self.map[:4096] == bytes(4096), 'a fresh buffer is zero'

    def wait_initialize(self, write_header=True):
        msg, fds = recv_wire(self.sock)
        if msg is not None and msg['type'] == 'TERMINATE':  # a kept buffer let go first
            self.release()
            msg, fds = recv_wire(self.sock)
        assert msg is not None and msg['type'] == 'INITIALIZE', msg
        self.initialize(msg, fds)
        msg, _ = recv_wire(self.sock)
        assert msg['type'] == 'START', msg
        self.start = msg
        if write_header:
            self.write_header()

    def write_header(self, **lie):
        mode = lie.get('mode', self.mode)
        chunk = lie.get('chunk', self.chunk)
        self.map[:4096] = header_bytes(mode, self.size, chunk, os.getpid(), self.name)

    def started(self):
        self.fifo.send(FIFO.pack(FIFO_STARTED, 0, 1, 0))

    def run_honest(self):
        """Initialize, write the header and a marker, STARTED; then wait for STOP and
        answer STOPPED (streaming: the final SAVE_BUFFER round trip first)."""
        self.wait_initialize()
        self.marker()
        self.started()

    def marker(self):
        lay = layout(self.size, self.chunk)
        off = lay['rolling_offset'] - 8
        self.map[off:off + 8] = b'HONEST!!'

    def answer_stop(self, timeout=10):
        msg, _ = recv_wire(self.sock, timeout)
        assert msg is not None and msg['type'] == 'STOP', msg
        if self.mode == MODES['streaming']:
            self.fifo.send(FIFO.pack(FIFO_SAVE_BUFFER, 0, 0xFFFFFFFF, 0))
            self.fifo.settimeout(10)
            ans = FIFO.unpack(self.fifo.recv(64))
            assert ans[0] == FIFO_BUFFER_SAVED and ans[2] == 0xFFFFFFFF, ans
        self.fifo.send(FIFO.pack(FIFO_STOPPED, 0, 0, 0))
        if self.mode == MODES['streaming']:
            # Streaming buffers are let go at once; the others stay with the provider,
            # stopped, until the next trace starts them again or terminates them.
            msg, _ = recv_wire(self.sock, timeout)
            assert msg is not None and msg['type'] == 'TERMINATE', msg
            self.release()

    def release(self):
        if self.map is not None:
            self.map.close()
            os.close(self.memfd)
            self.fifo.close()
            self.map = None

    def close(self):
        self.release()
        self.sock.close()


class Controller:
    def __init__(self, manager):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.connect(manager.path)

    def list(self):
        self.sock.send(wire(T['CTL_LIST']))
        out = []
        while True:
            msg, _ = recv_wire(self.sock)
            if msg['type'] == 'CTL_END':
                return out
            out.append(msg)

    def start(self, path, mode='oneshot', size=1 << 20, categories=b''):
        self.out = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        socket.send_fds(self.sock, [wire(T['CTL_START'], a=MODES[mode], b=size,
                                         text=categories)], [self.out])
        return self.until('CTL_STARTED', 'CTL_END')

    def until(self, *types, timeout=15):
        deadline = time.time() + timeout
        while time.time() < deadline:
            msg, _ = recv_wire(self.sock, timeout)
            assert msg is not None, 'the manager closed the controller connection'
            if msg['type'] in types:
                return msg
        raise AssertionError('no %s within %s s' % (types, timeout))

    def stop(self):
        self.sock.send(wire(T['CTL_STOP']))
        return self.until('CTL_STOPPED', 'CTL_END')

    def close(self):
        self.sock.close()


def parse_bundle(path):
    """{'preamble': ..., 'sections': [...], 'end': frame or None}; raises on a bad layout."""
    data = open(path, 'rb').read()
    magic, version, flags, created, producer, _ = PREAMBLE.unpack_from(data, 0)
    assert magic == b'NTBUNDLE' and version == 1, (magic, version)
    out = dict(preamble=dict(producer=producer.rstrip(b'\0').decode(), created=created),
               sections=[], end=None, size=len(data))
    off = PREAMBLE.size
    while off < len(data):
        f = FRAME.unpack_from(data, off)
        assert f[0] == FRAME_MAGIC, 'frame magic at %d' % off
        kind, state, mode, pid, pid_id, nlen, mlen, sections, asize = f[1:10]
        head = FRAME.size + ((nlen + mlen + 7) & ~7)
        name = data[off + FRAME.size:off + FRAME.size + nlen].decode()
        message = data[off + FRAME.size + nlen:off + FRAME.size + nlen + mlen].decode()
        frame = dict(state=SECTION.get(state, state), mode=mode, pid=pid, id=pid_id, name=name,
                     message=message, sections=sections, archive_size=asize)
        if kind == 2:
            out['end'] = frame
            off += head
            assert off == len(data), 'bytes after the END frame'
            break
        assert kind == 1, 'frame kind %d at %d' % (kind, off)
        frame['archive'] = data[off + head:off + head + asize]
        assert len(frame['archive']) == asize, 'section cut short'
        out['sections'].append(frame)
        off += head + ((asize + 7) & ~7)
    return out


def section_stats(sec, workdir, tag):
    """A bundle section's archive, cut out into WORKDIR/TAG-PID.ntrace and read by
    trace-dump --stats alone: its events decoded, dropped, overwritten, and the text."""
    path = os.path.join(workdir, '%s-%d.ntrace' % (tag, sec['pid']))
    with open(path, 'wb') as f:
        f.write(sec['archive'])
    p = subprocess.run([TRACE_DUMP, '--stats', path], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    num = lambda key: int(re.search(r'^%s: (\d+)' % key, p.stdout, re.M).group(1))  # noqa: E731
    return dict(events=num('events'), dropped=num('dropped'), overwritten=num('overwritten'),
                text=p.stdout)


def manager_fixture(prefix):
    """A pytest fixture `mgr`: a Manager of its own per test, its socket named `prefix` and
    the test's name, stopped after the test. A test module binds it: mgr = manager_fixture('m-')."""
    @pytest.fixture
    def mgr(workdir, request):
        m = Manager(workdir, prefix + request.node.name[:40])
        yield m
        m.stop()
    return mgr
