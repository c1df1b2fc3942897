"""trace-dump over many processes: a bundle (written by make_bundle, as trace-record's
manager would), several archives given together (`trace-dump a b`) and a directory, in every
format. Text and Chrome show every process (text: a PID column beside the thread, so two
processes sharing a tid differ; Chrome: one pid per provider, with its name),
--stats reports per provider, Git's formats render every Trace2 process as a directory of
the same archives does, and a bundle cut short or with a damaged section is reported with
exit 2 while the rest is still shown.

Programs: NT_TRACE_DUMP, NT_DEMO, NT_T2_PROGRAM, NT_MAKE_BUNDLE (tests/cli/meson.build).
"""
import json
import os
import re
import shutil
import subprocess
import time

import pytest

from conftest import program

DUMP, DEMO, T2, MAKE = (program('NT_TRACE_DUMP'), program('NT_DEMO'),
                        program('NT_T2_PROGRAM'), program('NT_MAKE_BUNDLE'))


def run(*args):
    p = subprocess.run([DUMP] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p.returncode, p.stdout.decode('utf-8', 'replace'), p.stderr.decode('utf-8', 'replace')


def make_bundle(out, *sections, end=None, end_message=None):
    args = [MAKE, out]
    if end is not None:
        args += ['--end', end]
    if end_message is not None:
        args += ['--end-message', end_message]
    subprocess.run(args + list(sections), check=True)
    return out


def overwrote(path):
    """The (live) archive at `path` counts overwritten events."""
    if not os.path.exists(path):
        return False
    rc, out, _ = run('--stats', path)
    m = re.search(r'^overwritten: (\d+) events$', out, re.M)
    return rc == 0 and m is not None and int(m.group(1)) > 0


@pytest.fixture(scope='module')
def work(workdir):
    """Three demo processes (two finished, one killed mid-run), recorded at the same time."""
    d = os.path.join(workdir, 'bundle')
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, 'procs'))
    paths = [os.path.join(d, 'procs', 'p%d.ntrace' % i) for i in range(3)]
    procs = [subprocess.Popen([DEMO, paths[0], '--threads', '2', '--requests', '40']),
             subprocess.Popen([DEMO, paths[1], '--threads', '3', '--requests', '30']),
             subprocess.Popen([DEMO, paths[2], '--mode', 'circular', '--buffer-size', '65536',
                               '--threads', '2', '--duration-ms', '5000'])]
    procs[0].wait()
    procs[1].wait()
    # The third is killed once its arena has wrapped (test_stats_per_provider and the gaps
    # need overwritten events): a live arena file reads at any moment, so wait for that, not
    # for the file alone, which a loaded machine may show long before the first wrap.
    deadline = time.time() + 30
    while not overwrote(paths[2]):
        assert procs[2].poll() is None, 'the circular demo ended before it wrapped'
        assert time.time() < deadline, 'the circular demo did not wrap within 30 s'
        time.sleep(0.01)
    procs[2].kill()
    procs[2].wait()
    bundle = make_bundle(os.path.join(d, 'run.ntrace'), paths[0] + ',name=web',
                         paths[1] + ',state=exited,name=db',
                         paths[2] + ',state=killed,name=cache,msg=connection closed')
    return {'dir': d, 'paths': paths, 'bundle': bundle}


def pids_of(paths):
    """The pid of each archive, from its --stats."""
    out = []
    for p in paths:
        rc, text, err = run('--stats', p)
        assert rc == 0, err
        out.append(int(re.search(r'^process: .* \(pid (\d+)\)$', text, re.M).group(1)))
    return out


def chrome_doc(*args):
    rc, out, err = run('--format', 'chrome', *args)
    assert rc == 0, err
    return json.loads(out)


def test_chrome_has_every_process(work):
    pids = pids_of(work['paths'])
    assert len(set(pids)) == 3
    for what, args in (('bundle', [work['bundle']]), ('files', work['paths']),
                       ('directory', [os.path.join(work['dir'], 'procs')])):
        doc = chrome_doc(*args)
        events = doc['traceEvents']
        names = {e['pid']: e['args']['name'] for e in events
                 if e['ph'] == 'M' and e['name'] == 'process_name'}
        assert sorted(names) == sorted(pids), what
        if what == 'bundle':
            assert [names[p] for p in pids] == ['web', 'db', 'cache']
        seen = {e['pid'] for e in events if e['ph'] != 'M'}
        assert seen == set(pids), '%s: events of every process' % what
        assert doc['otherData']['processes'] == 3


def test_text_merges_by_time(work):
    rc, out, err = run(work['bundle'])
    assert rc == 0 and err == '', err
    rows = [l for l in out.splitlines()[1:] if not l.startswith('--')]
    times = [float(l.split()[0]) for l in rows]
    assert times == sorted(times), 'text is in time order across processes'
    # The same events, whichever way the processes are given.
    rc2, out2, _ = run(*work['paths'])
    rc3, out3, _ = run(os.path.join(work['dir'], 'procs'))
    assert rc2 == 0 and rc3 == 0 and out2 == out3 == out


def text_rows(out):
    """(pid, thread, rest of the line) of each event row of a many-process text dump."""
    lines = out.splitlines()
    assert lines[0].split()[:4] == ['TIME(s)', 'PID', 'THREAD', 'PH'], lines[0]
    return [tuple(l.split(None, 3)[1:]) for l in lines[1:] if not l.startswith('--')]


def test_text_names_each_process(work):
    pids = pids_of(work['paths'])
    # What each archive shows alone: its threads (name:tid) and how many events.
    alone = []
    for p in work['paths']:
        rc, out, err = run(p)
        assert rc == 0, err
        assert out.splitlines()[0].split()[:2] == ['TIME(s)', 'THREAD'], 'one process: no PID'
        rows = [l.split() for l in out.splitlines()[1:] if not l.startswith('--')]
        alone.append([r[1] for r in rows])
    for args in ([work['bundle']], [os.path.join(work['dir'], 'procs')]):
        rc, out, err = run(*args)
        assert rc == 0, err
        rows = text_rows(out)
        assert {int(r[0]) for r in rows} == set(pids), args
        for pid, threads in zip(pids, alone):
            mine = [r[1] for r in rows if int(r[0]) == pid]
            assert sorted(mine) == sorted(threads), 'pid %d on its own events, %s' % (pid, args)
        # A gap names its thread's process too (only the killed circular demo loses events).
        gaps = [l for l in out.splitlines() if l.startswith('-- gap:')]
        assert all(' (pid %d) lost' % pids[2] in g for g in gaps), gaps


def test_text_same_tid_two_processes(work):
    """Imported Git logs name no tid (0): two processes' "main:0" differ only by pid."""
    d = os.path.join(work['dir'], 'same-tid')
    os.makedirs(d, exist_ok=True)
    for pid, cmd in ((0x1111, 'status'), (0x2222, 'log')):
        sid = '20261122T101500.000001Z-H0a7c9cdf-P%08x' % pid
        lines = [{'event': 'version', 'evt': '4', 'exe': '2.55.0'},
                 {'event': 'start', 't_abs': 0.00025, 'argv': ['git', cmd]},
                 {'event': 'exit', 't_abs': 0.001, 'code': 0}]
        ev = os.path.join(work['dir'], '%d.event' % pid)
        with open(ev, 'w') as f:
            for i, l in enumerate(lines):
                l.update(sid=sid, thread='main', file='git.c', line=1,
                         time='2026-11-22T10:15:00.0000%d0Z' % (i + 1))
                f.write(json.dumps(l) + '\n')
        subprocess.run([program('NT_TRACE_IMPORT'), '-o', os.path.join(d, '%d.ntrace' % pid),
                        ev], check=True)
    bundle = make_bundle(os.path.join(work['dir'], 'same-tid.ntrace'),
                         *sorted(os.path.join(d, f) for f in os.listdir(d)))
    for args in ([d], [bundle]):
        rc, out, err = run(*args)
        assert rc == 0, err
        rows = text_rows(out)
        assert {r[1] for r in rows} == {'main:0'} and len(rows) == 6, out
        starts = {int(r[0]): r[2] for r in rows if 'argv=' in r[2]}
        assert sorted(starts) == [0x1111, 0x2222], out
        assert '"status"' in starts[0x1111] and '"log"' in starts[0x2222], out


def test_stats_per_provider(work):
    rc, out, err = run('--stats', work['bundle'])
    assert rc == 0, err
    pids = pids_of(work['paths'])
    rows = re.findall(r'^  section (\d+): pid (\d+) (\S+) \(provider (\d+)\): ([a-z ]+), (\w+)'
                      r'(?:, message: ([^;]*))?; events decoded (\d+), dropped (\d+) .*'
                      r'overwritten (\d+), written \d+, bytes (\d+)$', out, re.M)
    assert [(int(r[1]), r[2], r[4]) for r in rows] == [
        (pids[0], 'web', 'finished'), (pids[1], 'db', 'exited'), (pids[2], 'cache', 'killed')]
    assert rows[2][6] == 'connection closed'
    total = re.search(r'^providers total: events decoded (\d+), dropped (\d+), overwritten (\d+)',
                      out, re.M)
    assert int(total.group(1)) == sum(int(r[7]) for r in rows)
    assert int(total.group(1)) == int(re.search(r'^events: (\d+)$', out, re.M).group(1))
    # Each provider's decoded count is what its own archive gives.
    for r, p in zip(rows, work['paths']):
        _, single, _ = run('--stats', p)
        assert int(r[7]) == int(re.search(r'^events: (\d+)$', single, re.M).group(1))
    assert int(rows[2][9]) > 0, 'the killed circular demo overwrote events'


@pytest.fixture(scope='module')
def trace2(work):
    """t2_program and its child, one archive each (NANOTRACE=directory), and a bundle of them."""
    d = os.path.join(work['dir'], 't2')
    os.mkdir(d)
    env = {k: v for k, v in os.environ.items() if not k.startswith('NANOTRACE')}
    env['NANOTRACE'] = d
    subprocess.run([T2], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    files = sorted(os.path.join(d, f) for f in os.listdir(d))
    assert len(files) == 2
    bundle = make_bundle(os.path.join(work['dir'], 't2.bundle'), *files)
    return {'dir': d, 'files': files, 'bundle': bundle}


@pytest.mark.parametrize('fmt', ('normal', 'perf', 'event'))
def test_trace2_every_process(trace2, fmt):
    rc, want, err = run('--format', fmt, trace2['dir'])
    assert rc == 0, err
    for args in ([trace2['bundle']], trace2['files']):
        rc, got, err = run('--format', fmt, *args)
        assert rc == 0, err
        assert got == want, '%s of %s renders as the directory does' % (fmt, args)
    if fmt == 'event':
        sids = {json.loads(l)['sid'] for l in want.splitlines()}
        assert len(sids) == 2, 'both processes'


def test_cut_and_damaged_bundles(work):
    b = open(work['bundle'], 'rb').read()
    cut = os.path.join(work['dir'], 'cut.ntrace')
    open(cut, 'wb').write(b[:len(b) - 100])  # inside the last section's archive
    rc, out, err = run('--stats', cut)
    assert rc == 2 and 'cut short after 2 sections' in err and cut in err, err
    assert 'providers: 2' in out
    rc, out, err = run('--format', 'chrome', cut)
    assert rc == 2 and len({e['pid'] for e in json.loads(out)['traceEvents']}) == 2
    # A section whose archive is garbage: named with its section; the others are shown.
    junk = os.path.join(work['dir'], 'junk')
    open(junk, 'wb').write(b'not an archive at all')
    bad = make_bundle(os.path.join(work['dir'], 'bad.ntrace'), work['paths'][0],
                      junk + ',state=damaged,msg=header did not verify', work['paths'][1])
    rc, out, err = run(bad)
    assert rc == 2 and 'section 1' in err and 'not a nanotrace archive' in err, err
    assert len(out.splitlines()) > 10
    rc, out, err = run('--stats', bad)
    assert re.search(r'section 1: .* damaged, .*message: header did not verify; not readable',
                     out), out
    # A recording the manager lost: said, with its message.
    lost = make_bundle(os.path.join(work['dir'], 'lost.ntrace'), work['paths'][0],
                       end='manager_lost', end_message='manager exited')
    rc, out, err = run(lost)
    assert rc == 2 and 'manager lost' in err and 'manager exited' in err, err
    # No END frame.
    noend = make_bundle(os.path.join(work['dir'], 'noend.ntrace'), work['paths'][0], end='none')
    rc, out, err = run('--format', 'event', noend)
    assert rc == 2 and 'cut short after 1 sections (no END frame)' in err, err


def test_unreadable_among_several(work):
    missing = os.path.join(work['dir'], 'missing.ntrace')
    rc, out, err = run(work['paths'][0], missing)
    assert rc == 2 and missing in err and 'No such file' in err and out == ''
    empty = os.path.join(work['dir'], 'empty-dir')
    os.makedirs(empty, exist_ok=True)
    rc, out, err = run('--format', 'chrome', empty)
    assert rc == 2 and 'no archives in this directory' in err


CONTROLS = re.compile(rb'[\x00-\x08\x0a-\x1f\x7f]|\xc2[\x80-\x9f]|[\x80-\x9f]')


def test_section_name_cannot_drive_the_terminal(work):
    """A crafted bundle's section name and message (ESC, BEL, CR, LF, C1 as UTF-8 and raw
    0x9b) reach stderr's error line and --stats's lines as '?' (SECURITY.md), valid UTF-8
    unchanged: issue 25 item 7."""
    junk = os.path.join(work['dir'], 'junk-esc')
    open(junk, 'wb').write(b'not an archive at all')
    name = b'ev\x1b[31mil\x07\r\nX\xc2\x9bY\x9bZ\xc3\xa9'
    out = os.path.join(work['dir'], 'esc.ntrace')
    subprocess.run([MAKE, out, work['paths'][0].encode(),
                    junk.encode() + b',state=damaged,name=' + name + b',msg=m\x1b]0;t\x07'], check=True)
    for args in ([out], ['--stats', out], ['--format', 'chrome', out]):
        p = subprocess.run([DUMP] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert p.returncode == 2, p.stderr
        text = p.stdout if args[0] == '--stats' else b''
        for stream in (p.stderr, text):
            lines = stream.replace(b'\t', b' ').split(b'\n')
            bad = [l for l in lines if CONTROLS.search(l)]
            assert bad == [], bad
        assert b'ev?[31mil???X?Y?Z\xc3\xa9' in p.stderr, p.stderr
    p = subprocess.run([DUMP, '--stats', out], stdout=subprocess.PIPE)
    assert b'ev?[31mil???X?Y?Z\xc3\xa9' in p.stdout and b'message: m?]0;t?' in p.stdout
    assert b'not readable: ' + out.encode() in p.stdout


def test_one_section_is_singular(work):
    """Issue 25 item 16: a bundle of one process says "1 section", not "1 sections"."""
    one = make_bundle(os.path.join(work['dir'], 'one.ntrace'), work['paths'][0])
    rc, out, err = run('--stats', one)
    assert rc == 0 and re.search(r'^processes: 1 section$', out, re.M), out[:300]
    rc, out, err = run('--stats', work['bundle'])
    assert re.search(r'^processes: 3 sections$', out, re.M), out[:300]


def run_sections(mode, *args):
    env = dict(os.environ, NANOTRACE_READER_SECTIONS=mode)
    p = subprocess.run([DUMP] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=env)
    return p.returncode, p.stdout, p.stderr.decode('utf-8', 'replace')


@pytest.mark.parametrize('fmt', [[], ['--stats'], ['--format', 'chrome'], ['--format', 'normal']])
def test_sections_closed_or_open_read_the_same(work, trace2, fmt):
    """NANOTRACE_READER_SECTIONS=closed closes every section it can between visits (the reader's
    rule for bundles of more than 64 sections), =open keeps them open: every output is the
    same; a value that is neither is one line on stderr and the default."""
    for bundle in (work['bundle'], trace2['bundle']):
        want = run_sections('open', *fmt, bundle)
        got = run_sections('closed', *fmt, bundle)
        assert got[0] == want[0] and got[1] == want[1]
        assert 'NANOTRACE_READER_SECTIONS' not in got[2]
        odd = run_sections('shut', *fmt, bundle)
        assert odd[0] == want[0] and odd[1] == want[1]
        assert ('nanotrace: NANOTRACE_READER_SECTIONS="shut" is not open or closed'
                in odd[2])

