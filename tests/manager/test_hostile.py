"""Hostile fake providers: each lies or misbehaves in one way while an honest fake provider
records beside it. Every time the manager survives (it still answers, it still runs), the
honest provider's section is intact, and the hostile one's section says what happened
(DAMAGED with what it sent, KILLED, TIMED_OUT), or, for records that lie, is kept for the
reader to judge.

Run by meson (suite manager) with NT_MANAGER, NT_TRACE_RECORD, NT_ARENA_HEADER, NT_WORKDIR.
"""
import os
import socket
import sys
import threading
import time

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from mgr_support import (FIFO, T, WIRE, Controller, FakeProvider, Manager, decode_header,  # noqa: E402
                         parse_bundle, wire)
from test_manager import check_honest_section  # noqa: E402


def hostile_run(workdir, name, act, mode='oneshot', hostile_stops=False):
    """Starts a trace with an honest and a hostile provider, lets `act(hostile)` misbehave,
    stops, and returns (bundle, hostile section, manager log)."""
    m = Manager(workdir, 'h-' + name)
    try:
        honest = FakeProvider(m, 'honest')
        hostile = FakeProvider(m, 'hostile')
        assert m.wait_log('name hostile')
        ctl = Controller(m)
        out = os.path.join(workdir, name + '.ntbundle')
        assert ctl.start(out, mode=mode, size=128 << 10)['a'] == 2
        honest.run_honest()
        hostile.run_honest()
        assert m.wait_log('(hostile, pid %d) started' % os.getpid()), m.log()
        act(hostile, m)
        threads = [threading.Thread(target=f.answer_stop)
                   for f in ([honest, hostile] if hostile_stops else [honest])]
        for t in threads:
            t.start()
        stopped = ctl.stop()
        for t in threads:
            t.join()
        assert stopped['type'] == 'CTL_STOPPED', stopped
        # The manager still serves: a list answers at once, the process runs.
        t0 = time.time()
        names = [p['name'] for p in Controller(m).list()]
        assert time.time() - t0 < 1 and 'honest' in names, names
        assert m.proc.poll() is None, 'the manager died'
        b = parse_bundle(out)
        by_name = {s['name']: s for s in b['sections']}
        check_honest_section(by_name['honest'], honest)
        assert b['end']['state'] == 'finished' and b['end']['sections'] == 2, b['end']
        honest.close()
        hostile.close()
        return b, by_name['hostile'], m.log(), stopped
    finally:
        m.stop()


def expect_damaged(sec, log, words, archive=True):
    assert sec['state'] == 'damaged', sec
    assert words in sec['message'] and words in log, (sec['message'], log)
    if archive:
        assert sec['archive_size'] > 0 and decode_header(sec['archive']).get('layout') in ('0', '1')
    else:
        assert sec['archive_size'] == 0


def send_raw(data):
    def act(h, m):
        h.sock.send(data)
        assert m.wait_log('(hostile, pid %d) dropped' % os.getpid()), m.log()
    return act


GOOD = wire(T['REGISTER'], name=b'x')
CASES = {
    'garbage_bytes': (os.urandom(37), 'message of the wrong size'),
    'wrong_magic': (wire(T['REGISTER'], magic=0xDEADBEEF), 'without the NTWM magic'),
    'short_message': (GOOD[:-1], 'message of the wrong size'),
    'long_message': (GOOD + b'!', 'message of the wrong size'),
    'unknown_type': (wire(99), 'message of an unknown type'),
    'wrong_version': (wire(T['REGISTER'], version=7), 'another protocol version'),
    'name_too_long': (WIRE.pack(0x4D57544E, 1, 1, 0, 200, 0, 0, 0, 0, 0, b'', b''),
                      'string longer than its field'),
    'out_of_place_start': (wire(T['START']), 'sent START on a provider connection'),
    'second_register': (wire(T['REGISTER'], name=b'again'), 'sent REGISTER twice'),
    'controller_message': (wire(T['CTL_STOP']), 'sent CTL_STOP on a provider connection'),
}


@pytest.mark.parametrize('case', sorted(CASES))
def test_bad_message(workdir, case):
    data, words = CASES[case]
    _, sec, log, stopped = hostile_run(workdir, case, send_raw(data))
    expect_damaged(sec, log, words)
    assert 'damaged' in stopped['text'], 'CTL_STOPPED lists the problem'


def test_descriptors_attached(workdir):
    def act(h, m):
        r, w = os.pipe()
        socket.send_fds(h.sock, [wire(T['REGISTER'])], [r])
        os.close(r)
        os.close(w)
        assert m.wait_log('dropped'), m.log()
    _, sec, log, _ = hostile_run(workdir, 'fds', act)
    expect_damaged(sec, log, 'descriptors attached')


def test_flood(workdir):
    def act(h, m):
        h.sock.setblocking(False)
        sent = 0
        try:
            for _ in range(100000):
                h.sock.send(wire(T['START']))
                sent += 1
        except (BlockingIOError, BrokenPipeError, ConnectionResetError):
            pass
        assert sent > 0
        assert m.wait_log('dropped'), m.log()
    _, sec, log, _ = hostile_run(workdir, 'flood', act)
    expect_damaged(sec, log, 'sent START')
    assert log.count('(hostile, pid') < 10, 'one flood, one drop: the log is not flooded'


FIFO_CASES = {
    'fifo_garbage': (b'\x01\x02\x03', 'FIFO packet of the wrong size'),
    'fifo_unknown': (FIFO.pack(0x7777, 0, 0, 0), 'unknown FIFO packet (request 0x7777)'),
    'fifo_started_twice': (FIFO.pack(0x100, 0, 1, 0), 'sent STARTED twice'),
    'fifo_save_in_oneshot': (FIFO.pack(0x101, 0, 1, 0), 'SAVE_BUFFER outside streaming mode'),
    'fifo_answer_sent_by_provider': (FIFO.pack(0x103, 0, 1, 0), 'unknown FIFO packet'),
}


@pytest.mark.parametrize('case', sorted(FIFO_CASES))
def test_bad_fifo_packet(workdir, case):
    data, words = FIFO_CASES[case]

    def act(h, m):
        h.fifo.send(data)
        assert m.wait_log('(hostile, pid %d) dropped' % os.getpid()), m.log()
    _, sec, log, _ = hostile_run(workdir, case, act)
    expect_damaged(sec, log, words)


def test_started_with_wrong_protocol(workdir):
    m = Manager(workdir, 'h-protocol')
    try:
        bad = FakeProvider(m, 'hostile')
        assert m.wait_log('name hostile')
        ctl = Controller(m)
        out = os.path.join(workdir, 'protocol.ntbundle')
        ctl.start(out, size=128 << 10)
        bad.wait_initialize()
        bad.fifo.send(FIFO.pack(0x100, 0, 99, 0))
        assert m.wait_log('FIFO protocol version 99'), m.log()
        assert ctl.stop()['type'] == 'CTL_STOPPED'
        sec = parse_bundle(out)['sections'][0]
        assert sec['state'] == 'damaged' and 'version 99' in sec['message'], sec
        bad.close()
    finally:
        m.stop()


def test_never_answers_stop(workdir):
    def act(h, m):
        pass  # and never reads STOP
    t0 = time.time()
    # Circular: a late provider's section is its arena as it was (a claim it is making may
    # be cut, which only the per-slot counters account exactly).
    _, sec, log, _ = hostile_run(workdir, 'silent', act, mode='circular')
    assert sec['state'] == 'timed out', sec
    assert 'did not answer STOP within 2000 ms' in sec['message'], sec
    assert decode_header(sec['archive']).get('layout') == '1', 'saved as it was'
    assert time.time() - t0 < 10


def test_closes_early(workdir):
    # The provider (this process) closes its connection and runs on: not killed, and the
    # manager cannot know why (issue 25 item 2); its arena is kept as a killed one's is.
    def act(h, m):
        h.close()
        assert m.wait_log('closed its connection without STOPPED'), m.log()
    b, sec, log, _ = hostile_run(workdir, 'early', act, mode='circular')
    assert sec['state'] == 'ended (cause unknown)', sec
    assert 'it closed the connection itself' in sec['message'], sec
    assert decode_header(sec['archive']).get('layout') == '1', 'an unstopped circular arena as it was'
    assert b'HONEST!!' in sec['archive'], 'what it published before it left is kept'
    assert b['sections'][0]['name'] == 'hostile', 'a killed provider is written at once'


def test_header_lies_about_its_sizes(workdir):
    def act(h, m):
        h.write_header(chunk=h.chunk * 2 if h.chunk < 65536 else 4096)
    _, sec, log, _ = hostile_run(workdir, 'header-lies', act)
    expect_damaged(sec, log, 'its arena header says chunk_size', archive=False)


def test_header_is_garbage(workdir):
    def act(h, m):
        h.map[0:4096] = os.urandom(4096)
    _, sec, log, _ = hostile_run(workdir, 'header-garbage', act)
    expect_damaged(sec, log, 'its arena header does not verify', archive=False)


def test_header_claims_huge_sizes_in_place(workdir):
    # A header re-written with absurd counters and offsets: the manager's sizes win.
    def act(h, m):
        h.write_header(mode=2)
    _, sec, log, _ = hostile_run(workdir, 'header-mode', act)
    expect_damaged(sec, log, 'buffering_mode = 2, the manager gave 0', archive=False)


def test_records_lie(workdir):
    junk = os.urandom(8192)

    def act(h, m):
        from mgr_support import layout
        off = layout(h.size, h.chunk)['rolling_offset']
        h.map[off:off + len(junk)] = junk
    b, sec, log, _ = hostile_run(workdir, 'records-lie', act, hostile_stops=True)
    # Not the manager's to judge: the section is kept, made by the shared saver, which
    # takes from the junk only what frames as chunks and records (the reader judges those).
    assert sec['state'] == 'finished' and sec['message'] == '', sec
    assert decode_header(sec['archive']).get('layout') == '0', sec
    # Circular and gone without STOPPED: the arena as it was, junk included.
    def kill(h, m):
        act(h, m)
        h.close()
        assert m.wait_log('closed its connection without STOPPED'), m.log()
    _, sec, log, _ = hostile_run(workdir, 'records-lie-killed', kill, mode='circular')
    assert sec['state'] == 'ended (cause unknown)' and junk in sec['archive'], sec['state']


def test_hostile_controllers(workdir):
    m = Manager(workdir, 'h-controllers')
    try:
        c = Controller(m)
        c.sock.send(wire(T['CTL_START'], b=1 << 20))
        msg = c.until('CTL_END')
        assert 'without the output file' in msg['text'], msg
        c2 = Controller(m)
        assert c2.start(os.path.join(workdir, 'bad-size.ntbundle'), size=1000)['type'] == 'CTL_END'
        c3 = Controller(m)
        c3.sock.send(wire(T['CTL_STOP']))
        assert 'no trace' in c3.until('CTL_END')['text']
        c4 = Controller(m)
        c4.sock.send(wire(T['CTL_LIST']))
        c4.until('CTL_END')
        c4.sock.send(wire(T['INITIALIZE']))
        assert m.wait_log('controller pid %d dropped: it sent INITIALIZE' % os.getpid()), m.log()
        # Silent connections are closed after 5 s; the manager serves others meanwhile.
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.connect(m.path)
        assert Controller(m).list() == []
        s.close()
        assert m.proc.poll() is None
    finally:
        m.stop()


def test_streaming_arena_lies(workdir):
    # Junk where chunks should be, then save requests: the shared saver reads the arena with
    # the manager's own layout and bounds; the manager survives and the others are intact.
    def act(h, m):
        from mgr_support import layout
        lay = layout(h.size, h.chunk)
        junk = bytes([0xFF]) * (h.map_size - lay['rolling_offset'])
        h.map[lay['rolling_offset']:h.map_size] = junk
        h.fifo.settimeout(5)
        for wrap in range(1, 4):
            h.fifo.send(FIFO.pack(0x101, 0, wrap, 123456789))
            ans = FIFO.unpack(h.fifo.recv(64))
            assert ans[0] == 0x103 and ans[2] == wrap and ans[3] == 123456789, ans
    b, sec, log, _ = hostile_run(workdir, 'stream-lies', act, mode='streaming',
                                 hostile_stops=True)
    assert sec['state'] == 'finished', sec
    hdr = decode_header(sec['archive'])  # what the saver kept of the junk follows the header
    assert hdr.get('layout') == '0' and int(hdr['data_offset']) <= sec['archive_size'], hdr


def test_save_buffer_flood(workdir):
    # SAVE_BUFFER after SAVE_BUFFER without waiting: one in flight at a time is the protocol.
    # The manager drops the provider when a request finds the last one still in flight, or,
    # when each save was done before the next request was read, simply answers; it never
    # blocks or grows.
    def act(h, m):
        for wrap in range(200):
            try:
                h.fifo.send(FIFO.pack(0x101, 0, wrap, 0))
            except OSError:
                break
        # Give the manager time to read the flood before the stop (it does not answer STOP:
        # timed out, unless dropped). Which of the two happened is read from the section,
        # not from whether the drop made the log within a fixed time.
        m.wait_log('(hostile, pid %d) dropped' % os.getpid(), timeout=2)
    _, sec, log, _ = hostile_run(workdir, 'save-flood', act, mode='streaming')
    if sec['state'] == 'damaged':
        expect_damaged(sec, log, 'SAVE_BUFFER while one was in flight')
    else:
        assert sec['state'] == 'timed out', sec
