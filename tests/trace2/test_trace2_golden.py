"""Golden tests against real git 2.39.5 output (shared/corpus/trace2-git-2.39.5).

For every case, each EVENT file is converted with trace-import and rendered back with
trace-dump:
  * --format event must equal git's EVENT file byte for byte;
  * --format normal / perf must equal git's NORMAL / PERF files except for what an EVENT
    stream cannot carry (trace2-formats.md §10.4), which is masked on both sides:
      - the clock digits (each git target read its own clock);
      - PERF t_abs of the messages whose EVENT line has none;
      - the target's own file:line of atexit, signal, timer and counter lines;
      - PERF lines of regions and data that git's nesting filter kept out of EVENT, and
        the indentation of other lines inside such regions (clamped to what is visible).
Directory cases (one file per process) are also rendered as a directory, which must give
each process's lines in its own order, interleaved by time; the same must come out of
importing the directory itself, and of importing its files named one by one (in reverse
order: the import orders them, not the command line).

A hand-made EVENT file (tests/trace2/data/t2_unknown_keys.event: "msg":"" on regions, empty data
values, keys and events a newer Git could write, with nested values) must come back byte
for byte too; NORMAL and PERF of it must render, and --stats must count what was kept.

One pytest case per corpus case (named after it) and one for t2_unknown_keys; any
difference is a failure. The corpus lives beside the clone (../shared/corpus, NT_CORPUS):
without it every case is skipped (exit 77).
"""
import os
import re
import shutil
import subprocess
import types

import pytest

from conftest import program

CLOCK = re.compile(rb'^\d\d:\d\d:\d\d\.\d{6} ')
SELF_EVENTS = (b'atexit', b'signal', b'timer', b'counter', b'th_timer', b'th_counter')
NO_EVENT_T_ABS = (b'region_enter', b'region_leave', b'child_start', b'child_exit',
                  b'child_ready', b'thread_start', b'thread_exit', b'exec', b'exec_result')
PERF = re.compile(rb'^(?P<pre>(?:\d\d:\d\d:\d\d\.\d{6} (?P<fl>.{28}) \| )?)'
                  rb'(?P<d>d\d+ \| .{24} \| )(?P<ev>\S+)(?P<evpad> *) \| '
                  rb'(?P<repo>[^|]*) \| (?P<tabs>[^|]*) \| (?P<trel>[^|]*) \| '
                  rb'(?P<cat>.{12}) \| (?P<rest>.*)$', re.S)


def normal_mask(lines):
    out = []
    for line in lines:
        line = CLOCK.sub(b'<clock> ', line)
        m = re.match(rb'^(<clock> )(\S+:\d+) +(\S+)', line)
        if m and m.group(3) in SELF_EVENTS:
            line = m.group(1) + b'<self> ' + line[m.end(2):].lstrip(b' ')
        out.append(line)
    return out


def perf_mask(lines, nesting, drop_filtered):
    out = []
    for line in lines:
        m = PERF.match(line)
        if not m:
            out.append(b'UNPARSED ' + line)
            continue
        ev, rest = m.group('ev'), m.group('rest')
        dots = len(rest) - len(rest.lstrip(b'.'))
        if ev in (b'region_enter', b'region_leave', b'data', b'data_json'):
            if drop_filtered and dots > 2 * (nesting - 1):
                continue
        elif dots > 2 * nesting:
            rest = b'.' * (2 * nesting) + rest[dots:]
        pre = m.group('pre')
        if pre:
            fl = b'<self>'.ljust(28) if ev in SELF_EVENTS else m.group('fl')
            pre = b'<clock> ' + fl + b' | '
        tabs = m.group('tabs')
        if ev in NO_EVENT_T_ABS:
            tabs = b'<t_abs>'
        out.append(pre + m.group('d') + ev + m.group('evpad') + b' | ' + m.group('repo') +
                   b' | ' + tabs + b' | ' + m.group('trel') + b' | ' + m.group('cat') +
                   b' | ' + rest)
    return out


def case_env(case_dir):
    env = {}
    with open(os.path.join(case_dir, 'cmd.txt'), 'rb') as f:
        text = f.read().decode('utf-8', 'replace')
    for m in re.finditer(r'(GIT_TRACE2_EVENT_NESTING|TZ)=(\S+)', text):
        env[m.group(1)] = m.group(2)
    return env


def run(cmd, env=None):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    if p.returncode != 0:
        raise RuntimeError('%s failed (%d): %s' % (' '.join(cmd), p.returncode,
                                                   p.stderr.decode('utf-8', 'replace')))
    return p.stdout


def split_lines(data):
    return data.split(b'\n')[:-1] if data.endswith(b'\n') else data.split(b'\n')


def diff(name, want, got):
    import difflib
    d = list(difflib.unified_diff([w.decode('latin-1') for w in want],
                                  [g.decode('latin-1') for g in got], 'git', 'nanotrace',
                                  lineterm='', n=1))
    return '%s:\n  %s' % (name, '\n  '.join(d[:14]))


def check_file(args, tmp, case, event_path, normal_path, perf_path, env, failures, counts):
    nesting = int(env.get('GIT_TRACE2_EVENT_NESTING', '2'))
    renv = dict(os.environ)
    renv['TZ'] = env.get('TZ', 'UTC')
    archive = os.path.join(tmp, case + '-' + os.path.basename(event_path) + '.ntrace')
    run([args.trace_import, '-o', archive, event_path])
    dump = [args.trace_dump, '--nesting', str(nesting), '--format']
    name = '%s/%s' % (case, os.path.basename(event_path))

    with open(event_path, 'rb') as f:
        want = f.read()
    got = run(dump + ['event', archive], renv)
    counts['event'][1] += 1
    if got == want:
        counts['event'][0] += 1
    else:
        failures.append(diff(name + ' event', split_lines(want), split_lines(got)))

    for fmt, path in (('normal', normal_path), ('perf', perf_path)):
        with open(path, 'rb') as f:
            want = split_lines(f.read())
        got = split_lines(run(dump + [fmt, archive], renv))
        if fmt == 'normal':
            w, g = normal_mask(want), normal_mask(got)
        else:
            w, g = perf_mask(want, nesting, True), perf_mask(got, nesting, False)
        counts[fmt][1] += 1
        if w == g:
            counts[fmt][0] += 1
        else:
            failures.append(diff('%s %s' % (name, fmt), w, g))
    return archive


def check_directory(args, tmp, case, case_dir, env, failures, counts):
    """Each per-process file on its own, then the directory of archives as one stream."""
    ev_dir = os.path.join(case_dir, 'event')
    arch_dir = os.path.join(tmp, case + '-archives')
    os.makedirs(arch_dir, exist_ok=True)
    files = sorted(f for f in os.listdir(ev_dir) if os.path.getsize(os.path.join(ev_dir, f)))
    expected = []
    for f in files:
        a = check_file(args, tmp, case, os.path.join(ev_dir, f),
                       os.path.join(case_dir, 'normal', f), os.path.join(case_dir, 'perf', f),
                       env, failures, counts)
        os.rename(a, os.path.join(arch_dir, f + '.ntrace'))
        with open(os.path.join(ev_dir, f), 'rb') as fh:
            expected.append(split_lines(fh.read()))
    # Every process's lines, in its own order, interleaved by their "time".
    merged = sorted((re.search(rb'"time":"([^"]*)"', line).group(1), i, j, line)
                    for i, lines in enumerate(expected) for j, line in enumerate(lines))
    want = [x[3] for x in merged]
    one = os.path.join(tmp, case + '-dir.ntrace')
    several = os.path.join(tmp, case + '-files.ntrace')
    run([args.trace_import, '-o', one, ev_dir])
    run([args.trace_import, '-o', several] +
        [os.path.join(ev_dir, f) for f in reversed(files)])
    for what, target in (('directory of archives', arch_dir), ('imported directory', one),
                         ('imported files', several)):
        got = split_lines(run([args.trace_dump, '--format', 'event', target]))
        counts['directory'][1] += 1
        if got == want:
            counts['directory'][0] += 1
        else:
            failures.append(diff('%s %s' % (case, what), want, got))


def check_kept_keys(args, tmp, failures, counts):
    """Empty values and keys or events this version does not know survive the round trip."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data',
                        't2_unknown_keys.event')
    archive = os.path.join(tmp, 'unknown-keys.ntrace')
    run([args.trace_import, '-o', archive, path])
    with open(path, 'rb') as f:
        want = f.read()
    got = run([args.trace_dump, '--format', 'event', archive])
    counts['event'][1] += 1
    if got == want:
        counts['event'][0] += 1
    else:
        failures.append(diff('t2_unknown_keys event', split_lines(want), split_lines(got)))
    for fmt in ('normal', 'perf'):
        out = run([args.trace_dump, '--format', fmt, archive])
        # Git's text targets do not know the unknown events either: they leave them out.
        if b'future_event' in out or b'no_time_event' in out or not out:
            failures.append('t2_unknown_keys %s: unknown events must be left out, the rest '
                            'rendered:\n%s' % (fmt, out.decode('latin-1')))
    stats = run([args.trace_dump, '--stats', archive])
    if b'trace2 unknown: 2 events, 8 keys' not in stats:
        failures.append('t2_unknown_keys --stats does not count what was kept:\n' +
                        stats.decode('latin-1'))


ARGS = types.SimpleNamespace(trace_import=program('NT_TRACE_IMPORT'),
                             trace_dump=program('NT_TRACE_DUMP'))
CORPUS = os.environ.get('NT_CORPUS', '')


def corpus_cases():
    if not os.path.isdir(CORPUS):
        return [pytest.param(None, marks=pytest.mark.skip(
            reason='golden corpus not found: %s (clone ../shared beside the repository)'
            % (CORPUS or 'NT_CORPUS unset')), id='no-corpus')]
    with open(os.path.join(CORPUS, 'CASES.txt')) as f:
        return [c.strip() for c in f if c.strip()]


def new_counts():
    return {'event': [0, 0], 'normal': [0, 0], 'perf': [0, 0], 'directory': [0, 0]}


@pytest.mark.parametrize('case', corpus_cases())
def test_git_case(case, tmp_path):
    """One case of git 2.39.5's output: EVENT byte-exact, NORMAL/PERF masked per §10.4."""
    failures, counts = [], new_counts()
    d = os.path.join(CORPUS, case)
    env = case_env(d)
    try:
        if os.path.isdir(os.path.join(d, 'event')):
            check_directory(ARGS, str(tmp_path), case, d, env, failures, counts)
        else:
            check_file(ARGS, str(tmp_path), case, os.path.join(d, 'event'),
                       os.path.join(d, 'normal'), os.path.join(d, 'perf'), env,
                       failures, counts)
    except RuntimeError as e:
        failures.append('%s: %s' % (case, e))
    assert not failures, '\n'.join(failures)
    assert counts['event'][1] > 0, '%s: no EVENT file was compared' % case


def test_kept_keys(tmp_path):
    failures = []
    try:
        check_kept_keys(ARGS, str(tmp_path), failures, new_counts())
    except RuntimeError as e:
        failures.append('t2_unknown_keys: %s' % e)
    assert not failures, '\n'.join(failures)


def test_import_of_no_event_fails(tmp_path):
    """Issue 25 item 6: whatever the input (a FILE, standard input, a DIRECTORY whose files
    are all empty), an import with no Trace2 event exits 2 naming it and writes no archive;
    a directory skips its empty files, and an empty FILE beside a real one adds nothing."""
    empty, blank = tmp_path / 'empty', tmp_path / 'blank'
    empty.write_bytes(b'')
    blank.write_bytes(b'\n\n')
    out = tmp_path / 'x.ntrace'
    for args, stdin, name in (([str(empty)], None, str(empty)), ([str(blank)], None, str(blank)),
                              ([], b'', '(standard input)')):
        p = subprocess.run([ARGS.trace_import, '-o', str(out)] + args, input=stdin,
                           capture_output=True)
        assert p.returncode == 2 and not out.exists(), (args, p.returncode)
        assert p.stderr.decode() == ('trace-import: %s: no Trace2 event to import (an empty '
                                     'file, or one git has not written yet); no archive '
                                     'written\n' % name), p.stderr
    d = tmp_path / 'dir'
    d.mkdir()
    (d / 'a').write_bytes(b'')
    p = subprocess.run([ARGS.trace_import, '-o', str(out), str(d)], capture_output=True)
    assert p.returncode == 2 and b'empty files are skipped' in p.stderr and not out.exists()
    if os.path.isdir(CORPUS):
        real = os.path.join(CORPUS, 'alias_git', 'event')
        shutil.copy(real, str(d / 'b'))
        for args in ([str(d)], [real, str(empty)]):
            p = subprocess.run([ARGS.trace_import, '-o', str(out)] + args, capture_output=True)
            assert p.returncode == 0 and out.exists(), (args, p.stderr)
            out.unlink()
