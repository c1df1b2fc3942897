"""Real process trees under trace-record: provider_prog (tests/provider) processes that
register by themselves because NANOTRACE_MANAGER is set, one killed with SIGKILL, one
forking, streaming with a small buffer, and two traces in a row on a daemon manager.

Each section is cut out of the bundle and read by today's trace-dump --stats (a section is
a complete archive): decoded + dropped + overwritten must equal what provider_prog says it
made, per process.

Run by meson (suite manager) with NT_MANAGER, NT_TRACE_RECORD, NT_PROVIDER_PROG,
NT_TRACE_DUMP, NT_ARENA_HEADER, NT_WORKDIR.
"""
import os
import re
import signal
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from conftest import program  # noqa: E402
from mgr_support import TRACE_RECORD, Manager, parse_bundle, section_stats  # noqa: E402

PROG = program('NT_PROVIDER_PROG')
TRACE_DUMP = program('NT_TRACE_DUMP')


def recorder_env(tmp_path):
    """No manager on the default path: trace-record embeds one."""
    env = dict(os.environ, XDG_RUNTIME_DIR=str(tmp_path), TMPDIR=str(tmp_path))
    env.pop('NANOTRACE_MANAGER', None)
    return env


def made_lines(path):
    """{pid: total made} from provider_prog's 'made' lines (the last line of each pid)."""
    out = {}
    for m in re.finditer(r'made pid=(\d+) round=\d+ events=\d+ total=(\d+)', open(path).read()):
        out[int(m.group(1))] = int(m.group(2))
    return out


def check_accounting(bundle, made, workdir, tag):
    problems = []
    for sec in bundle['sections']:
        if sec['pid'] not in made:
            problems.append('section of pid %d: no made line' % sec['pid'])
            continue
        st = section_stats(sec, workdir, tag)
        total = st['events'] + st['dropped'] + st['overwritten']
        if total != made[sec['pid']]:
            problems.append('pid %d (%s): decoded %d + dropped %d + overwritten %d != made %d'
                            % (sec['pid'], sec['state'], st['events'], st['dropped'],
                               st['overwritten'], made[sec['pid']]))
    assert not problems, '\n'.join(problems)


def test_three_processes_one_killed_one_forking(workdir, tmp_path):
    out = os.path.join(workdir, 'tree.ntbundle')
    logs = [os.path.join(workdir, 'tree-%s.out' % n) for n in ('plain', 'fork', 'victim')]
    for log in logs:
        open(log, 'w').close()
    script = ('"$P" --sync --threads 3 --events 3000 > "$L1" & '
              '"$P" --sync --fork --events 2000 > "$L2" & '
              '"$P" --sync --events 1500 --hold-ms 60000 > "$L3" & '
              'wait')
    env = dict(recorder_env(tmp_path), P=PROG, L1=logs[0], L2=logs[1], L3=logs[2])
    rec = subprocess.Popen([TRACE_RECORD, '-o', out, '--', 'sh', '-c', script], env=env,
                           stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 30
    while not made_lines(logs[2]):
        assert time.time() < deadline and rec.poll() is None, 'the victim never made its events'
        time.sleep(0.02)
    victim = next(iter(made_lines(logs[2])))
    os.kill(victim, signal.SIGKILL)
    _, err = rec.communicate(timeout=60)
    assert rec.returncode == 128 + signal.SIGKILL or rec.returncode == 0, err
    b = parse_bundle(out)
    made = {}
    for log in logs:
        made.update(made_lines(log))
    assert len(made) == 4, made
    states = {s['pid']: s['state'] for s in b['sections']}
    assert sorted(states) == sorted(made), (states, made)
    assert states[victim] == 'killed', states
    assert all(st == 'exited' for pid, st in states.items() if pid != victim), states
    assert b['end']['state'] == 'finished' and b['end']['sections'] == 4
    check_accounting(b, made, workdir, 'tree')


def test_streaming_small_buffer(workdir, tmp_path):
    out = os.path.join(workdir, 'stream.ntbundle')
    log = os.path.join(workdir, 'stream.out')
    with open(log, 'w') as f:
        p = subprocess.run([TRACE_RECORD, '-o', out, '--buffering-mode', 'streaming',
                            '--buffer-size', '64K', '--', PROG, '--sync', '--threads', '2',
                            '--events', '50000'], env=recorder_env(tmp_path), stdout=f,
                           stderr=subprocess.PIPE, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    b = parse_bundle(out)
    sec = b['sections'][0]
    assert sec['mode'] == 2 and sec['state'] == 'exited', sec
    made = made_lines(log)
    st = section_stats(sec, workdir, 'stream')
    # The writers outrun any round trip here; what matters is that halves went through the
    # manager's saver into the section, and that every event is accounted for.
    saved = int(re.search(r'^halves saved: (\d+)', st['text'], re.M).group(1))
    assert saved >= 1, st['text']
    check_accounting(b, made, workdir, 'stream')


def test_two_traces_on_a_daemon(workdir):
    m = Manager(workdir, 'daemon-twice')
    try:
        log = os.path.join(workdir, 'twice.out')
        prog = subprocess.Popen([PROG, '--sync', '--rounds', '2', '--events', '1000', '--hold-ms', '100'],
                                env=m.env(), stdin=subprocess.PIPE, stdout=open(log, 'w'),
                                text=True)
        assert m.wait_log('name provider_prog'), m.log()
        bundles = []
        for run in range(2):
            out = os.path.join(workdir, 'twice-%d.ntbundle' % run)
            mode = ('circular', 'oneshot')[run]
            rec = subprocess.Popen([TRACE_RECORD, '-o', out, '--buffering-mode', mode,
                                    '--buffer-size', '256K'], env=m.env(),
                                   stderr=subprocess.PIPE, text=True)
            deadline = time.time() + 10
            while m.log().count('(provider_prog, pid %d) started' % prog.pid) < run + 1:
                assert time.time() < deadline, m.log()
                time.sleep(0.02)
            if run == 1:
                prog.stdin.write('next\n')
                prog.stdin.flush()
            # Wait for this round's line, then stop the trace as Ctrl-C would.
            while len(re.findall('round=%d' % run, open(log).read())) < 1:
                assert time.time() < deadline and prog.poll() is None, open(log).read()
                time.sleep(0.02)
            rec.send_signal(signal.SIGINT)
            _, err = rec.communicate(timeout=30)
            assert rec.returncode == 0, err
            bundles.append(parse_bundle(out))
        prog.wait(30)
        rounds = [int(x) for x in re.findall(r'round=\d+ events=(\d+)', open(log).read())]
        for run, b in enumerate(bundles):
            sec = b['sections'][0]
            assert sec['state'] == 'finished' and sec['pid'] == prog.pid, sec
            assert sec['mode'] == (1, 0)[run]
            st = section_stats(sec, workdir, 'twice%d' % run)
            assert st['events'] + st['dropped'] + st['overwritten'] == rounds[run], \
                (run, st['text'], rounds)
    finally:
        m.stop()


@pytest.mark.parametrize('mode', ['oneshot', 'circular', 'streaming'])
def test_each_mode_under_trace_record(workdir, tmp_path, mode):
    out = os.path.join(workdir, 'mode-%s.ntbundle' % mode)
    log = os.path.join(workdir, 'mode-%s.out' % mode)
    with open(log, 'w') as f:
        p = subprocess.run([TRACE_RECORD, '-o', out, '--buffering-mode', mode, '--buffer-size',
                            '128K', '--', PROG, '--sync', '--events', '20000', '--finish'],
                           env=recorder_env(tmp_path), stdout=f, stderr=subprocess.PIPE,
                           text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    check_accounting(parse_bundle(out), made_lines(log), workdir, 'mode-' + mode)


def test_manager_killed_providers_keep_running(workdir):
    m = Manager(workdir, 'killed-daemon')
    try:
        log = os.path.join(workdir, 'orphan.out')
        out = os.path.join(workdir, 'orphan.ntbundle')
        rec = subprocess.Popen([TRACE_RECORD, '-o', out, '--buffering-mode', 'streaming',
                                '--buffer-size', '128K'], env=m.env(), stderr=subprocess.PIPE,
                               text=True)
        assert m.wait_log('trace started'), m.log()
        prog = subprocess.Popen([PROG, '--sync', '--events', '2000', '--hold-ms', '1500'],
                                env=m.env(), stdout=open(log, 'w'))
        assert m.wait_log('(provider_prog, pid %d) started' % prog.pid), m.log()
        # The manager logs the start when it sends it: the provider is recording once its
        # events are made (it then holds 1.5 s). Killed before that, the provider never
        # heard the start (--sync then exits 3), which a loaded machine made happen.
        deadline = time.monotonic() + 30
        while prog.pid not in made_lines(log) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert prog.pid in made_lines(log), 'the provider made no events: ' + m.log()
        m.proc.kill()
        _, err = rec.communicate(timeout=30)
        assert rec.returncode == 3, err
        assert 'the manager went away while recording' in err, err
        b = parse_bundle(out)
        assert b['end']['state'] == 'manager lost' and b['sections'] == [], b
        assert prog.wait(30) == 0, 'the provider keeps running and exits normally'
        assert made_lines(log)[prog.pid] == 4000
    finally:
        m.stop()


def test_trace2_program(workdir, tmp_path):
    out = os.path.join(workdir, 'trace2.ntbundle')
    log = os.path.join(workdir, 'trace2.out')
    with open(log, 'w') as f:
        p = subprocess.run([TRACE_RECORD, '-o', out, '--', PROG, '--sync', '--trace2',
                            '--events', '100', '--finish'], env=recorder_env(tmp_path),
                           stdout=f, stderr=subprocess.PIPE, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    b = parse_bundle(out)
    sec = b['sections'][0]
    st = section_stats(sec, workdir, 'trace2')
    # provider_prog counts its workers' events; Trace2's process events (version, start,
    # exit, atexit: one may come after --finish stopped recording, counted as dropped
    # 'stopped') come on top.
    made = made_lines(log)[sec['pid']]
    assert made <= st['events'] + st['dropped'] <= made + 8, (st['text'], made)
    path = os.path.join(workdir, 'trace2-%d.ntrace' % b['sections'][0]['pid'])
    n = subprocess.run([TRACE_DUMP, '--format', 'normal', path], capture_output=True, text=True,
                       timeout=60)
    assert n.returncode == 0 and 'version' in n.stdout, (n.stdout[:500], n.stderr)


def record_then_signal(tmp_path, out, log, prog_args, record_args, sig, env=None):
    """trace-record -o OUT [RECORD_ARGS] -- the provider program with PROG_ARGS (it holds, its
    'made' lines to LOG); once it has made events it gets SIG, and trace-record must exit as
    the program did. Returns the bundle."""
    open(log, 'w').close()
    rec = subprocess.Popen([TRACE_RECORD, '-o', out, *record_args, '--', 'sh', '-c',
                            'exec "$P" %s --hold-ms 60000 > "$L"' % prog_args],
                           env=dict(recorder_env(tmp_path), P=PROG, L=log, **(env or {})),
                           stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 30
    while not made_lines(log):
        assert time.time() < deadline and rec.poll() is None, 'no events made'
        time.sleep(0.02)
    os.kill(next(iter(made_lines(log))), sig)
    _, err = rec.communicate(timeout=60)
    assert rec.returncode == 128 + sig, err
    return parse_bundle(out)


@pytest.mark.parametrize('mode', ['streaming', 'circular'])
def test_killed_provider_keeps_its_events(workdir, tmp_path, mode):
    out = os.path.join(workdir, 'killed-%s.ntbundle' % mode)
    log = os.path.join(workdir, 'killed-%s.out' % mode)
    b = record_then_signal(tmp_path, out, log, '--sync --events 30000',
                           ['--buffering-mode', mode, '--buffer-size', '256K'], signal.SIGKILL)
    assert b['sections'][0]['state'] == 'killed', b['sections']
    check_accounting(b, made_lines(log), workdir, 'killed-' + mode)


def no_sanitizer_signal_handlers():
    """ASAN_OPTIONS and TSAN_OPTIONS (added to what meson sets) that turn the sanitizers' own
    fatal-signal handlers off, as crash_test's do: with them, the crash handler's re-raise
    lands in ASan's SEGV report, which exits 1, not by the signal a program without them
    dies of."""
    off = 'handle_segv=0:handle_sigbus=0:handle_abort=0'
    return {k: ':'.join(filter(None, [os.environ.get(k, ''), off]))
            for k in ('ASAN_OPTIONS', 'TSAN_OPTIONS')}


def test_fatal_signal_recorded(workdir, tmp_path):
    """A provider ended by a fatal signal: its buffer says which (the crash handler records
    it in the header, Trace2 writes its 'signal' event), the section is killed and names the
    signal, and every event it made is accounted for."""
    out = os.path.join(workdir, 'segv.ntbundle')
    log = os.path.join(workdir, 'segv.out')
    b = record_then_signal(tmp_path, out, log, '--sync --trace2 --events 400', [],
                           signal.SIGSEGV, env=no_sanitizer_signal_handlers())
    sec = b['sections'][0]
    assert sec['state'] == 'killed', sec
    assert 'ended by signal %d' % signal.SIGSEGV in sec['message'], sec['message']
    path = os.path.join(workdir, 'segv-section.ntrace')
    with open(path, 'wb') as f:
        f.write(sec['archive'])
    ev = subprocess.run([TRACE_DUMP, '--format', 'event', path], capture_output=True, text=True,
                        timeout=60)
    assert '"event":"signal"' in ev.stdout and '"signo":%d' % signal.SIGSEGV in ev.stdout, \
        ev.stdout[-600:]
    st = section_stats(sec, workdir, 'segv')
    made = made_lines(log)[sec['pid']]  # workers' events; Trace2's version, start, signal on top
    assert made <= st['events'] + st['dropped'] <= made + 8, (st['text'], made)


def test_buffer_dispositions_across_traces(workdir):
    """One provider, three traces on a daemon: clear (a fresh buffer), retain (the same
    buffer started again, keeping the first run's events), clear-nondurable (the same buffer,
    events dropped, strings and threads kept)."""
    m = Manager(workdir, 'dispositions')
    try:
        log = os.path.join(workdir, 'dispositions.out')
        prog = subprocess.Popen([PROG, '--sync', '--rounds', '3', '--events', '1000',
                                 '--hold-ms', '100'], env=m.env(), stdin=subprocess.PIPE,
                                stdout=open(log, 'w'), text=True)
        assert m.wait_log('name provider_prog'), m.log()
        sections = []
        for run, disposition in enumerate(['clear', 'retain', 'clear-nondurable']):
            out = os.path.join(workdir, 'disposition-%d.ntbundle' % run)
            rec = subprocess.Popen([TRACE_RECORD, '-o', out, '--buffer-size', '1M',
                                    '--buffer-disposition', disposition], env=m.env(),
                                   stderr=subprocess.PIPE, text=True)
            deadline = time.time() + 10
            while m.log().count('(provider_prog, pid %d) started' % prog.pid) < run + 1:
                assert time.time() < deadline and rec.poll() is None, m.log()
                time.sleep(0.02)
            if run > 0:
                prog.stdin.write('next\n')
                prog.stdin.flush()
            while 'round=%d' % run not in open(log).read():
                assert time.time() < deadline and prog.poll() is None, open(log).read()
                time.sleep(0.02)
            rec.send_signal(signal.SIGINT)
            _, err = rec.communicate(timeout=30)
            assert rec.returncode == 0, err
            sec = parse_bundle(out)['sections'][0]
            assert sec['state'] == 'finished', sec
            sections.append(section_stats(sec, workdir, 'disposition%d' % run))
        prog.wait(30)
        rounds = [int(x) for x in re.findall(r'round=\d+ events=(\d+)', open(log).read())]
        decoded = [s['events'] for s in sections]
        assert decoded == [rounds[0], rounds[0] + rounds[1], rounds[2]], (decoded, rounds)
        assert m.log().count('(provider_prog, pid %d): initialized' % prog.pid) == 3, \
            'each trace started it (fresh or again)'
    finally:
        m.stop()


def test_circular_provider_killed_while_writing_reads_clean(workdir, tmp_path):
    # Killed mid-write, its threads' chunks still open: the section must count only the
    # events of closed chunks as written (what a live arena's reader checks), so it reads
    # clean, every event decoded or overwritten (issue 25 item 1).
    out = os.path.join(workdir, 'killed-writing.ntbundle')
    script = ('"$P" --threads 2 --events 1000000000 > /dev/null & V=$!; sleep 1; '
              'kill -9 $V; wait $V')
    p = subprocess.run([TRACE_RECORD, '-o', out, '--buffering-mode', 'circular',
                        '--buffer-size', '1M', '--', 'sh', '-c', script],
                       env=dict(recorder_env(tmp_path), P=PROG), capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 128 + signal.SIGKILL, p.stderr
    sec = parse_bundle(out)['sections'][0]
    assert sec['state'] == 'killed', sec
    st = section_stats(sec, workdir, 'killed-writing')
    assert st['events'] > 0 and st['overwritten'] > 0, st['text']
