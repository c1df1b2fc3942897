"""The trace manager and trace-record with fake providers (mgr_support.py): the socket
directory rules, SO_PEERCRED, listing, a start/stop cycle whose bundle parses frame by frame,
trace-record's options and exit codes, and a manager killed mid-run.

Run by meson (suite manager) with NT_MANAGER, NT_TRACE_RECORD, NT_ARENA_HEADER, NT_WORKDIR.
"""
import os
import re
import signal
import socket
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from mgr_support import (FIFO, FRAME, PREAMBLE, TRACE_RECORD, WIRE, Controller, FakeProvider,  # noqa: E402
                         Manager, decode_header, layout, manager_fixture, parse_bundle, MANAGER)


mgr = manager_fixture('m-')


def test_struct_sizes():
    # The sizes the headers assert; the parsers here depend on them.
    assert (WIRE.size, FIFO.size, PREAMBLE.size, FRAME.size) == (1176, 16, 64, 64)


def run_manager(path, *extra):
    return subprocess.run([MANAGER, '--foreground', '--socket', path, *extra],
                          capture_output=True, text=True, timeout=10)


def test_socket_directory_rules(workdir):
    base = os.path.join(workdir, 'dirs')
    os.makedirs(base, exist_ok=True)
    real = os.path.join(base, 'real')
    os.makedirs(real, mode=0o700, exist_ok=True)
    link = os.path.join(base, 'link')
    if not os.path.islink(link):
        os.symlink(real, link)
    p = run_manager(os.path.join(link, 'manager.sock'))
    assert p.returncode == 2 and 'symbolic link' in p.stderr, p.stderr
    wide = os.path.join(base, 'wide')
    os.makedirs(wide, exist_ok=True)
    os.chmod(wide, 0o755)
    p = run_manager(os.path.join(wide, 'manager.sock'))
    assert p.returncode == 2 and 'mode 755, not 0700' in p.stderr, p.stderr
    if os.geteuid() == 0:
        other = os.path.join(base, 'other')
        os.makedirs(other, mode=0o700, exist_ok=True)
        os.chown(other, 65534, 65534)
        p = run_manager(os.path.join(other, 'manager.sock'))
        assert p.returncode == 2 and 'owned by uid 65534' in p.stderr, p.stderr
    # A missing directory of a socket named by --socket is refused, never made; the default
    # socket's is made 0700.
    short = tempfile.mkdtemp(prefix='ntm-')
    fresh = os.path.join(short, 'nanotrace')
    sock = os.path.join(fresh, 'manager.sock')
    p = run_manager(sock)
    assert p.returncode == 2 and "socket directory '%s' does not exist" % fresh in p.stderr, \
        p.stderr
    assert not os.path.exists(fresh)
    env = dict(os.environ, XDG_RUNTIME_DIR=short)
    env.pop('NANOTRACE_MANAGER', None)
    p = subprocess.Popen([MANAGER, '--foreground'], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 10
        while not os.path.exists(sock):
            assert p.poll() is None and time.time() < deadline, 'manager did not listen'
            time.sleep(0.02)
        assert os.stat(fresh).st_mode & 0o777 == 0o700
    finally:
        p.terminate()
        p.wait(10)
        shutil.rmtree(short, ignore_errors=True)


def test_stale_socket_replaced_live_one_refused(mgr, workdir):
    p = run_manager(mgr.path)
    assert p.returncode == 2 and 'a manager already runs' in p.stderr, p.stderr
    mgr.proc.kill()  # leaves its socket file behind
    mgr.proc.wait()
    assert os.path.exists(mgr.path)
    again = subprocess.Popen([MANAGER, '--foreground', '--socket', mgr.path],
                             stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 5
        while not mgr.answers():
            assert again.poll() is None and time.time() < deadline, again.stderr.read()
            time.sleep(0.02)
    finally:
        again.terminate()
        again.wait(5)
    assert not os.path.exists(mgr.path), 'SIGTERM removes the socket'


def test_other_uid_refused(mgr):
    if os.geteuid() != 0:
        pytest.skip('switching uid needs root')
    # Open the directory and socket to everyone: only SO_PEERCRED stands in the way now.
    os.chmod(mgr.dir, 0o711)
    os.chmod(mgr.path, 0o777)
    pid = os.fork()
    if pid == 0:
        try:
            os.setgid(65534)
            os.setuid(65534)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            s.connect(mgr.path)
            s.settimeout(5)
            s.send(WIRE.pack(0x4D57544E, 16, 1, 0, 0, 0, 0, 0, 0, 0, b'', b''))
            data = s.recv(2000)
            os._exit(0 if data == b'' else 1)
        except (ConnectionResetError, BrokenPipeError):
            os._exit(0)
        except BaseException as e:  # noqa: B036 (a forked child must not return)
            os.write(2, ('child as uid 65534: %r\n' % e).encode())
            os._exit(3)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0, 'the other uid got an answer'
    assert mgr.wait_log('uid 65534: not uid 0'), mgr.log()
    assert Controller(mgr).list() == [], 'the manager still serves its own uid'


def test_list(mgr):
    a = FakeProvider(mgr, 'alpha')
    b = FakeProvider(mgr, 'beta', sync=True)
    assert b.registered['a'] == 0, 'no trace: not started'
    assert mgr.wait_log('name alpha')
    p = subprocess.run([TRACE_RECORD, '--list'], env=mgr.env(), capture_output=True, text=True,
                       timeout=10)
    assert p.returncode == 0, p.stderr
    lines = [l.split() for l in p.stdout.splitlines()[1:]]
    assert sorted(l[2] for l in lines) == ['alpha', 'beta'], p.stdout
    assert all(l[0] == str(os.getpid()) and l[1] == 'registered' for l in lines), p.stdout
    a.close()
    b.close()


def test_a_provider_name_cannot_drive_the_terminal(mgr):
    # ESC, BEL, C1's CSI as UTF-8 (c2 9b) and raw (9b): each is one '?' in --list and the log
    # (runtime/nt_term_escape.h), as in trace-dump's output of the section name.
    evil = FakeProvider(mgr, b'ev\x1b[31mil\x07\xc2\x9b2J\x9bX')
    assert mgr.wait_log('name ev')
    p = subprocess.run([TRACE_RECORD, '--list'], env=mgr.env(), capture_output=True, timeout=10)
    assert p.returncode == 0, p.stderr
    with open(mgr.log_path, 'rb') as f:
        log = f.read()
    for shown in (p.stdout, log):
        assert b'ev?[31mil??2J?X' in shown, shown
        assert not any(c in shown for c in (b'\x1b', b'\x07', b'\x9b')), shown
    evil.close()


def check_honest_section(sec, fake, state='finished'):
    assert sec['state'] == state, sec
    assert sec['name'] == fake.name and sec['pid'] == os.getpid(), sec
    # A stopped provider's section is compact: a Stream-layout archive, its header (the
    # provider's fields, the manager's sizes) then the records the shared saver found in its
    # arena: none here, the fake recorded no event (its marker is no record).
    hdr = decode_header(sec['archive'])
    assert hdr.get('layout') == '0' and hdr['process_name'] == fake.name, hdr
    assert int(hdr['pid']) == os.getpid(), hdr
    assert int(hdr['data_offset']) == sec['archive_size'], (hdr, sec['archive_size'])


def test_start_stop_cycle(mgr, workdir):
    fakes = [FakeProvider(mgr, 'one'), FakeProvider(mgr, 'two')]
    assert mgr.wait_log('name two')
    ctl = Controller(mgr)
    out = os.path.join(workdir, 'cycle.ntbundle')
    started = ctl.start(out, size=256 << 10)
    assert started['type'] == 'CTL_STARTED' and started['a'] == 2, started
    for f in fakes:
        f.run_honest()
    assert mgr.wait_log('(two, pid %d) started' % os.getpid()), mgr.log()
    # A second trace while one runs is refused, with the reason.
    other = Controller(mgr)
    refused = other.start(os.path.join(workdir, 'second.ntbundle'))
    assert refused['type'] == 'CTL_END' and 'already recording' in refused['text'], refused
    threads = [threading.Thread(target=f.answer_stop) for f in fakes]
    for t in threads:
        t.start()
    stopped = ctl.stop()
    for t in threads:
        t.join()
    assert stopped['type'] == 'CTL_STOPPED' and stopped['a'] == 2, stopped
    b = parse_bundle(out)
    assert b['preamble']['producer'].startswith('nanotrace '), b['preamble']
    # Sections come in the order the providers answered STOP.
    secs = sorted(b['sections'], key=lambda s: s['name'])
    assert [s['name'] for s in secs] == ['one', 'two'], b['sections']
    for sec, fake in zip(secs, fakes):
        check_honest_section(sec, fake)
    assert b['end']['state'] == 'finished' and b['end']['sections'] == 2, b['end']
    assert stopped['c'] == b['size'], 'CTL_STOPPED counts the bundle bytes'
    # Two idle 256 KiB buffers cost their headers, not their arenas.
    assert b['size'] < 4096, 'finished sections are compact'
    # Providers stay registered and idle after TERMINATE; a second trace starts them again.
    assert sorted(p['name'] for p in ctl.list()) == ['one', 'two']
    for f in fakes:
        f.close()


def test_late_registration_joins_the_trace(mgr, workdir):
    ctl = Controller(mgr)
    out = os.path.join(workdir, 'late.ntbundle')
    assert ctl.start(out, mode='streaming', size=128 << 10)['a'] == 0
    f = FakeProvider(mgr, 'late', sync=True)  # INITIALIZE, START, then REGISTERED(1)
    assert f.registered['a'] == 1 and f.mode == 2, f.registered
    f.write_header()
    f.marker()
    f.started()
    # One SAVE_BUFFER round trip while recording.
    f.fifo.send(FIFO.pack(0x101, 0, 1, 0))
    f.fifo.settimeout(5)
    ans = FIFO.unpack(f.fifo.recv(64))
    assert ans[0] == 0x103 and ans[2] == 1, ans
    t = threading.Thread(target=f.answer_stop)
    t.start()
    stopped = ctl.stop()
    t.join()
    assert stopped['type'] == 'CTL_STOPPED', stopped
    sec = parse_bundle(out)['sections'][0]
    assert sec['state'] == 'finished' and sec['mode'] == 2, sec
    hdr = decode_header(sec['archive'])  # the saved stream right after the header
    assert hdr.get('layout') == '0' and int(hdr['data_offset']) <= sec['archive_size'], hdr
    f.close()


def test_trace_record_usage(workdir):
    for args, text in ((['--buffering-mode', 'ring', '-o', 'x'], 'oneshot, circular or streaming'),
                       (['--buffer-size', '1K', '-o', 'x'], 'from 64K to 4G'),
                       (['--duration', '-1', '-o', 'x'], 'positive number'),
                       ([], '-o FILE is required')):
        p = subprocess.run([TRACE_RECORD, *args], capture_output=True, text=True, timeout=10)
        assert p.returncode == 1 and text in p.stderr, (args, p.stderr)
    p = subprocess.run([TRACE_RECORD, '--help'], capture_output=True, text=True, timeout=10)
    assert p.returncode == 0 and 'Exit status' in p.stdout


def test_trace_record_embedded_and_command_status(workdir, tmp_path):
    env = dict(os.environ, XDG_RUNTIME_DIR=str(tmp_path), TMPDIR=str(tmp_path))
    env.pop('NANOTRACE_MANAGER', None)
    out = os.path.join(workdir, 'embedded.ntbundle')
    # A link planted at the output is refused before the command runs, never followed.
    victim = os.path.join(workdir, 'victim')
    open(victim, 'w').write('keep')
    if os.path.lexists(out):
        os.unlink(out)
    os.symlink(victim, out)
    ran = os.path.join(workdir, 'embedded.ran')
    if os.path.lexists(ran):
        os.unlink(ran)
    p = subprocess.run([TRACE_RECORD, '-o', out, '--', 'touch', ran],
                       env=env, capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and out in p.stderr and 'symbolic link' in p.stderr, p.stderr
    assert open(victim).read() == 'keep' and os.path.islink(out) and not os.path.exists(ran)
    assert not [n for n in os.listdir(workdir) if n.startswith('.embedded.ntbundle.')]
    os.unlink(out)
    p = subprocess.run([TRACE_RECORD, '-o', out, '--', 'sh', '-c',
                        'test -S "$NANOTRACE_MANAGER" || exit 9; exit 5'],
                       env=env, capture_output=True, text=True, timeout=30)
    assert p.returncode == 5, p.stderr
    assert open(victim).read() == 'keep' and not os.path.islink(out)
    assert os.stat(out).st_mode & 0o777 == 0o600
    b = parse_bundle(out)
    assert b['sections'] == [] and b['end']['state'] == 'finished', b
    assert not [n for n in os.listdir(tmp_path) if n.startswith('nanotrace-record-')], \
        'the private socket directory is removed'
    p = subprocess.run([TRACE_RECORD, '-o', out, '--', 'sh', '-c', 'kill -TERM $$'],
                       env=env, capture_output=True, text=True, timeout=30)
    assert p.returncode == 128 + signal.SIGTERM, p.stderr


def test_trace_record_duration_with_a_daemon(mgr, workdir):
    f = FakeProvider(mgr, 'steady')
    assert mgr.wait_log('name steady')
    out = os.path.join(workdir, 'duration.ntbundle')
    rec = subprocess.Popen([TRACE_RECORD, '-o', out, '--duration', '0.5', '--buffer-size', '128K'],
                           env=mgr.env(), stderr=subprocess.PIPE, text=True)
    f.run_honest()
    f.answer_stop()
    _, err = rec.communicate(timeout=30)
    assert rec.returncode == 0, err
    b = parse_bundle(out)
    check_honest_section(b['sections'][0], f)
    assert 'wrote %s: 1 process, ' % out in err, err
    f.close()


def section_written(out):
    """trace-record's bundle for `out` (still under its temporary name, .NAME.XXXXXX beside
    it) holds one whole section; a frame still being written does not parse yet."""
    d, base = os.path.split(out)
    for name in os.listdir(d):
        if name.startswith('.' + base + '.'):
            try:
                b = parse_bundle(os.path.join(d, name))
            except (AssertionError, OSError, struct.error, UnicodeDecodeError):
                continue
            # Whole up to its padding, as trace-record's salvage counts a section.
            if len(b['sections']) == 1:
                sec = b['sections'][0]
                head = FRAME.size + ((len(sec['name']) + len(sec['message']) + 7) & ~7)
                if b['size'] >= PREAMBLE.size + head + ((sec['archive_size'] + 7) & ~7):
                    return True
    return False


def test_manager_killed_mid_run(mgr, workdir):
    leaver = FakeProvider(mgr, 'leaver')
    stayer = FakeProvider(mgr, 'stayer')
    assert mgr.wait_log('name stayer')
    out = os.path.join(workdir, 'lost.ntbundle')
    if os.path.exists(out):  # an earlier run's (meson test --repeat): not this one's
        os.unlink(out)
    rec = subprocess.Popen([TRACE_RECORD, '-o', out, '--buffer-size', '128K', '--duration', '30'],
                           env=mgr.env(), stderr=subprocess.PIPE, text=True)
    leaver.run_honest()
    stayer.run_honest()
    # The leaver stops itself and exits: its section is written at once (EXITED).
    leaver.fifo.send(FIFO.pack(0x102, 0, 0, 0))
    leaver.close()
    assert mgr.wait_log('(leaver, pid %d) exited' % os.getpid()), mgr.log()
    # The log line comes before the section is written: wait for the section itself in the
    # bundle (a fixed pause loses it when the manager is slow), then kill.
    deadline = time.time() + 30
    while not section_written(out):
        assert time.time() < deadline, mgr.log()
        time.sleep(0.02)
    mgr.proc.kill()
    _, err = rec.communicate(timeout=30)
    assert rec.returncode == 3, err
    assert 'the manager went away' in err and '1 process sections' in err, err
    b = parse_bundle(out)
    assert [s['name'] for s in b['sections']] == ['leaver'], b['sections']
    assert b['sections'][0]['state'] == 'exited'
    assert b['end']['state'] == 'manager lost' and 'went away' in b['end']['message'], b['end']
    # The provider that stayed keeps its buffer mapped and may go on.
    stayer.map[4096:4104] = b'still ok'
    stayer.close()


def test_daemon_detaches_logs_and_stops_on_sigterm(workdir):
    d = os.path.join(workdir, 'daemon%d' % os.getpid())
    os.mkdir(d, 0o700)
    path = os.path.join(d, 'manager.sock')
    p = subprocess.run([MANAGER, '--socket', path], capture_output=True, text=True, timeout=10)
    assert p.returncode == 0, p.stderr
    assert os.stat(d).st_mode & 0o777 == 0o700
    log = os.path.join(d, 'manager.log')
    assert os.stat(log).st_mode & 0o777 == 0o600
    deadline = time.time() + 10
    while not re.search(r'\[(\d+)\] listening on', open(log).read()):
        assert time.time() < deadline, open(log).read()
        time.sleep(0.02)
    pid = int(re.search(r'\[(\d+)\] listening on', open(log).read()).group(1))
    assert Controller(type('M', (), {'path': path})).list() == []
    os.kill(pid, signal.SIGTERM)
    deadline = time.time() + 10
    while os.path.exists(path):
        assert time.time() < deadline, open(log).read()
        time.sleep(0.02)
    assert 'stopped' in open(log).read()
    # A second daemon on a live socket says so and fails, before detaching.
    m = Manager(workdir, 'daemon-live')
    try:
        p = subprocess.run([MANAGER, '--socket', m.path], capture_output=True, text=True,
                           timeout=10)
        assert p.returncode == 2 and 'already runs' in p.stderr, p.stderr
    finally:
        m.stop()


def test_progress_line_on_a_tty(mgr, workdir):
    import pty
    f = FakeProvider(mgr, 'progress')
    assert mgr.wait_log('name progress')
    master, slave = pty.openpty()
    out = os.path.join(workdir, 'progress.ntbundle')
    rec = subprocess.Popen([TRACE_RECORD, '-o', out, '--duration', '0.8', '--buffer-size', '128K'],
                           env=mgr.env(), stderr=slave)
    os.close(slave)
    f.run_honest()
    f.answer_stop()
    rec.wait(30)
    text = b''
    try:
        while True:
            chunk = os.read(master, 4096)
            if not chunk:
                break
            text += chunk
    except OSError:
        pass
    os.close(master)
    assert rec.returncode == 0, text
    assert b'\rtrace-record: 1 providers, ' in text, text
    f.close()


def test_provider_selection(mgr, workdir):
    wanted = FakeProvider(mgr, 'wanted')
    other = FakeProvider(mgr, 'other')
    assert mgr.wait_log('name other')
    out = os.path.join(workdir, 'select.ntbundle')
    rec = subprocess.Popen([TRACE_RECORD, '-o', out, '--provider', 'wanted', '--duration', '0.5',
                            '--buffer-size', '128K', '--categories', 'acct,io'],
                           env=mgr.env(), stderr=subprocess.PIPE, text=True)
    wanted.run_honest()
    assert wanted.init['text'] == 'acct,io', wanted.init
    wanted.answer_stop()
    _, err = rec.communicate(timeout=30)
    assert rec.returncode == 0, err
    b = parse_bundle(out)
    assert [s['name'] for s in b['sections']] == ['wanted'], b['sections']
    # The other one was never given a buffer: nothing waits on its socket.
    other.sock.settimeout(0.2)
    with pytest.raises(socket.timeout):
        other.sock.recv(2000)
    wanted.close()
    other.close()


def test_default_socket_path(tmp_path):
    env = dict(os.environ, XDG_RUNTIME_DIR=str(tmp_path))
    env.pop('NANOTRACE_MANAGER', None)
    d = subprocess.Popen([MANAGER, '--foreground'], env=env, stderr=subprocess.PIPE, text=True)
    try:
        path = tmp_path / 'nanotrace' / 'manager.sock'
        deadline = time.time() + 10
        while not path.exists():
            assert d.poll() is None and time.time() < deadline, d.stderr.read()
            time.sleep(0.02)
        assert os.stat(path.parent).st_mode & 0o777 == 0o700
        p = subprocess.run([TRACE_RECORD, '--list'], env=env, capture_output=True, text=True,
                           timeout=10)
        assert p.returncode == 0 and 'PID' in p.stdout and 'no manager' not in p.stderr, p
    finally:
        d.terminate()
        d.wait(10)
    p = subprocess.run([TRACE_RECORD, '--list'], env=env, capture_output=True, text=True,
                       timeout=10)
    assert p.returncode == 0 and 'no manager answers' in p.stderr, p.stderr
