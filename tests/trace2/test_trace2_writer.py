"""The Trace2 writer end to end: t2_program (every message, threads, a child process)
recorded through NANOTRACE, rendered by trace-dump in all three formats.

Checks that a user of Git's Trace2 relies on:
  * EVENT satisfies trace2receiver's parse rules (trace2-formats.md §11) for every line;
  * the three renderings agree: same messages, same order, same values;
  * SID chain and depth, cmd_name hierarchy, thread names, nesting, t_rel, timers and
    counters (exact totals), redaction, exit codes, exec failure;
  * a fatal signal leaves a readable trace ending in a "signal" message;
  * NANOTRACE handling: file mode 0600, per-process files, max-files sentinel, file target
    shared with a child, bad values warn and leave the program unaffected.
"""
import json
import os
import re
import stat
import subprocess

import pytest

from conftest import program

PROG, DUMP, IMPORT = program('NT_T2_PROGRAM'), program('NT_TRACE_DUMP'), program('NT_TRACE_IMPORT')
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
    return cond


def run_prog(env_extra, args=()):
    env = {k: v for k, v in os.environ.items() if not k.startswith('NANOTRACE')}
    env.update(env_extra)
    return subprocess.run([PROG] + list(args), env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)


def dump(fmt, path, *extra):
    p = subprocess.run([DUMP, '--format', fmt] + list(extra) + [path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    check(p.returncode == 0, 'trace-dump --format %s %s: exit %d: %s' %
          (fmt, path, p.returncode, p.stderr.decode()))
    return p.stdout.decode('utf-8').splitlines()


TIME = re.compile(r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$')
# trace2receiver's required keys per event (trace2-formats.md §11).
REQUIRED = {
    'version': ['evt', 'exe'], 'start': ['argv', 't_abs'], 'exit': ['code', 't_abs'],
    'atexit': ['code', 't_abs'], 'signal': ['signo', 't_abs'], 'error': ['msg', 'fmt'],
    'printf': ['msg'], 'cmd_path': ['path'], 'cmd_ancestry': ['ancestry'],
    'cmd_name': ['name', 'hierarchy'], 'cmd_mode': ['name'], 'alias': ['alias', 'argv'],
    'child_start': ['child_id', 'child_class', 'use_shell', 'argv'],
    'child_exit': ['child_id', 'pid', 'code', 't_rel'],
    'child_ready': ['child_id', 'pid', 'ready', 't_rel'], 'exec': ['exec_id', 'argv'],
    'exec_result': ['exec_id', 'code'], 'def_param': ['param', 'value'],
    'def_repo': ['repo', 'worktree'], 'region_enter': ['nesting'],
    'region_leave': ['nesting', 't_rel'], 'data': ['nesting', 'category', 'key', 'value'],
    'data_json': ['nesting', 'category', 'key', 'value'],
    'timer': ['category', 'name', 'intervals', 't_total', 't_min', 't_max'],
    'th_timer': ['category', 'name', 'intervals', 't_total', 't_min', 't_max'],
    'counter': ['category', 'name', 'count'], 'th_counter': ['category', 'name', 'count'],
    'thread_start': [], 'thread_exit': ['t_rel'], 'too_many_files': [],
}


def receiver_ok(ev, line):
    for k in ('event', 'sid', 'thread', 'time'):
        if not check(k in ev, 'event line lacks %s: %s' % (k, line)):
            return False
    check(TIME.match(ev['time']) is not None, 'bad time in %s' % line)
    name = ev['event']
    if not check(name in REQUIRED, 'unknown event %s' % name):
        return False
    for k in REQUIRED[name]:
        check(k in ev, '%s lacks %s: %s' % (name, k, line))
    if name == 'child_start':
        check(isinstance(ev.get('use_shell'), bool), 'use_shell not a bool: ' + line)
    if name == 'data':
        check(isinstance(ev.get('value'), str), 'data value not a string: ' + line)
    if 'repo' in ev:
        check(isinstance(ev['repo'], int), 'repo not an int: ' + line)
    return True


def main_run(tmp):
    d = os.path.join(tmp, 'traces')
    os.mkdir(d)
    p = run_prog({'NANOTRACE': d, 'A_VAR': '1', 'NANOTRACE_ENV_VARS': 'A_VAR,MISSING',
                  'NANOTRACE_CONFIG_PARAMS': 'core.*, remote.*.url'})
    check(p.returncode == 3, 't2_program exit %d, want 3: %s' % (p.returncode, p.stderr))
    files = sorted(os.listdir(d))
    check(len(files) == 2, 'want one archive per process (2), got %s' % files)
    for f in files:
        mode = stat.S_IMODE(os.stat(os.path.join(d, f)).st_mode)
        check(mode == 0o600, '%s has mode %o, want 600' % (f, mode))
        check(re.match(r'^\d{8}T\d{6}\.\d{6}Z-(H[0-9a-f]{8}|Localhost)-P[0-9a-f]{8}$', f),
              'archive name is not a SID component: ' + f)

    events = [json.loads(line) for line in dump('event', d, '--nesting', '100')]
    for ev in events:
        receiver_ok(ev, json.dumps(ev))
    names = [e['event'] for e in events]
    for must in REQUIRED:
        if must in ('signal', 'too_many_files'):
            continue
        check(must in names, 'no %s message recorded' % must)

    sids = sorted({e['sid'] for e in events}, key=len)
    check(len(sids) == 2 and sids[1].startswith(sids[0] + '/'),
          'child SID must extend the parent SID: %s' % sids)
    parent = [e for e in events if e['sid'] == sids[0]]
    child = [e for e in events if e['sid'] == sids[-1]]
    hier = [e['hierarchy'] for e in child if e['event'] == 'cmd_name']
    check(hier == ['t2prog/t2prog'], 'child hierarchy %s' % hier)
    check([e['code'] for e in parent if e['event'] in ('exit', 'atexit')] == [3, 3],
          'parent exit/atexit codes')
    threads = sorted({e['thread'] for e in parent})
    # Ids follow the order the threads started; the long name is cut to 24 like Git's.
    shapes = sorted(re.sub(r'^th0[123]:', 'thNN:', t) for t in threads)
    ids = sorted(t[:4] for t in threads if t != 'main')
    check(shapes == ['main', 'thNN:worker', 'thNN:worker', 'thNN:worker-with-a-long-'] and
          ids == ['th01', 'th02', 'th03'], 'thread names: %s' % threads)
    ready = [e for e in parent if e['event'] == 'child_ready']
    check(len(ready) == 1 and ready[0]['ready'] == 'ready' and ready[0]['child_id'] == 0,
          'child_ready %s' % ready)
    nest = [(e['event'], e.get('label'), e['nesting']) for e in parent
            if e['event'].startswith('region') and e['thread'] == 'main' and
            e.get('category') != 'repo']
    check(nest == [('region_enter', 'do_read_index', 1), ('region_enter', 'read', 2),
                   ('region_enter', 'read', 3), ('region_leave', 'read', 3),
                   ('region_leave', 'read', 2), ('region_leave', 'do_read_index', 1)],
          'region nesting %s' % nest)
    each = [e.get('repo') for e in parent if e.get('label') == 'each']
    check(each == [1, 1, 2, 2], 'one call site used with two repositories: %s' % each)
    data = [e for e in parent if e['event'] == 'data' and e['thread'] == 'main']
    check(data and data[0]['nesting'] == 3 and data[0]['value'] == '4', 'data %s' % data)
    dj = [e for e in parent if e['event'] == 'data_json']
    check(dj and dj[0]['value'] == {'entries': 3, 'depth': 1}, 'data_json %s' % dj)
    counters = {(e['event'], e['thread']): e['count'] for e in parent if 'count' in e}
    check(counters.get(('counter', 'main')) == 30, 'counter total %s' % counters)
    check(sorted(v for (k, t), v in counters.items() if k == 'th_counter') == [5, 10, 15],
          'per-thread counters %s' % counters)
    timers = {e['name']: e for e in parent if e['event'] == 'timer'}
    check(timers.get('work', {}).get('intervals') == 15, 'nested starts count once')
    check(timers.get('total', {}).get('intervals') == 1, 'total timer')
    params = {e['param']: e['value'] for e in parent if e['event'] == 'def_param'}
    check(params.get('remote.origin.url') == 'https://user:<REDACTED>@example.com/r.git',
          'redaction: %s' % params)
    check('user.name' not in params and params.get('A_VAR') == '1' and 'MISSING' not in params,
          'config/env listing %s' % params)
    cexit = [e for e in parent if e['event'] == 'child_exit']
    check([c['code'] for c in cexit] == [0, 127], 'child exit codes %s' % cexit)
    check(all(c['t_rel'] > 0 for c in cexit), 'child run times')
    er = [e for e in parent if e['event'] == 'exec_result']
    check(er and er[0]['code'] == 2, 'exec_result %s' % er)
    # The child's messages sit between child_start and child_exit of the parent.
    pos = {id(e): i for i, e in enumerate(events)}
    first_start = next(e for e in parent if e['event'] == 'child_start')
    check(pos[id(first_start)] < pos[id(child[0])] and pos[id(child[-1])] < pos[id(cexit[0])],
          'child lines must come between child_start and child_exit')

    # The three renderings tell the same story.
    perf = dump('perf', d)
    normal = dump('normal', d)
    check(len(perf) == len(events), 'perf has %d lines, event (nesting 100) %d' %
          (len(perf), len(events)))
    perf_names = [line.split(' | ')[3].strip() for line in perf]
    check(perf_names == names, 'perf and event disagree on message order')
    hidden = ('region_enter', 'region_leave', 'data', 'data_json', 'thread_start',
              'thread_exit', 'too_many_files')
    check(len(normal) == len([n for n in names if n not in hidden]),
          'normal has %d lines, want %d' % (len(normal), len([n for n in names if n not in hidden])))
    # nanotrace's own messages (atexit, cmd_ancestry, timers, counters) name their source
    # file, never the library build's path to it; the user's sites keep the user's __FILE__.
    sites = [line.split()[1] for line in normal]
    own = sorted({fl for fl in sites if 't2_program.c:' not in fl})
    check(len(own) < len(set(sites)) and any(fl.startswith('nt_trace2.c:') for fl in own),
          'normal: want user sites and an atexit from nt_trace2.c: %s' % sorted(set(sites)))
    check(all(fl.startswith('nt_') and '/' not in fl for fl in own),
          'nanotrace call sites carry a build path: %s' % own)
    depth = {line.split(' | ')[1] for line in perf if 't2prog/t2prog' in line}
    check(depth == {'d1'}, 'child depth in perf: %s' % depth)
    ev2 = dump('event', d)
    deep = [e for e in events if e['event'] in ('region_enter', 'region_leave', 'data',
                                                 'data_json') and e['nesting'] > 2]
    check(len(deep) == 4 and len(ev2) == len(events) - len(deep),
          'default nesting 2 hides exactly the deeper regions and data (%d of %d)' %
          (len(events) - len(ev2), len(deep)))
    brief = dump('normal', d, '--brief')
    check(brief and brief[0] == 'version t2-test-1.0', 'brief normal: %s' % brief[:1])


def signal_run(tmp):
    d = os.path.join(tmp, 'sig')
    os.mkdir(d)
    p = run_prog({'NANOTRACE': d}, ['--signal', '--threads', '1'])
    check(p.returncode == -15, 'SIGTERM must still kill the program (rc %d)' % p.returncode)
    evs = [json.loads(x) for x in dump('event', d)]
    parent = [e for e in evs if '/' not in e['sid']]
    check(parent and parent[-1]['event'] == 'signal' and parent[-1]['signo'] == 15,
          'trace of a killed process ends with signal: %s' % (parent[-1:] or None))
    check(parent and '/' not in parent[-1].get('file', '/'),
          'the signal message names nanotrace\'s file without a path: %s' % (parent[-1:] or None))


def env_handling(tmp):
    # Bad values: one warning line, the program unaffected, no file.
    for var, val in (('NANOTRACE', 'relative/path'), ('NANOTRACE_MODE', 'sideways'),
                     ('NANOTRACE_BUFFER_SIZE', '12Q'), ('NANOTRACE_MAX_FILES', 'x')):
        d = os.path.join(tmp, 'bad-' + var)
        os.mkdir(d)
        env = {'NANOTRACE': d, var: val}
        p = run_prog(env, ['--threads', '1'])
        err = p.stderr.decode()
        check(p.returncode == 3, '%s=%s changed the exit code to %d' % (var, val, p.returncode))
        check(err.startswith('nanotrace: ') and var in err, '%s=%s warning: %r' % (var, val, err))
        check(os.listdir(d) == [], '%s=%s still wrote %s' % (var, val, os.listdir(d)))
    # Max files: 3 entries + . and .. reach 5: the sentinel takes the trace.
    d = os.path.join(tmp, 'maxfiles')
    os.mkdir(d)
    for i in range(3):
        open(os.path.join(d, 'prefill%d' % i), 'w').close()
    p = run_prog({'NANOTRACE': d, 'NANOTRACE_MAX_FILES': '5'}, ['--threads', '1'])
    check(p.returncode == 3, 'max files run exit %d' % p.returncode)
    sentinel = os.path.join(d, 'nanotrace-discard')
    check(os.path.exists(sentinel), 'no discard sentinel: %s' % os.listdir(d))
    if os.path.exists(sentinel):
        evs = [json.loads(x) for x in dump('event', sentinel)]
        check([e['event'] for e in evs[:2]] == ['version', 'too_many_files'],
              'sentinel starts version, too_many_files')
    before = sorted(os.listdir(d))
    run_prog({'NANOTRACE': d, 'NANOTRACE_MAX_FILES': '5'}, ['--threads', '1'])
    check(sorted(os.listdir(d)) == before, 'after the sentinel nothing more is written')
    # An argv longer than one record is cut, and the cut is counted.
    d = os.path.join(tmp, 'long')
    os.mkdir(d)
    run_prog({'NANOTRACE': d}, ['--threads', '1'] + ['argument-%04d' % i for i in range(400)])
    arch = [os.path.join(d, x) for x in os.listdir(d)]
    top = [a for a in arch if '/' not in json.loads(dump('event', a)[0])['sid']]
    parent = top[0] if top else None
    if check(parent is not None, 'no archive for the long argv run'):
        start = [json.loads(x) for x in dump('event', parent) if '"start"' in x]
        kept = len(start[0]['argv']) if start else 0
        check(2 < kept < 401, 'argv must be cut to fit one record: %d kept' % kept)
        p = subprocess.run([DUMP, '--stats', parent], stdout=subprocess.PIPE)
        check(b'values truncated: 1 events' in p.stdout, 'the cut is counted: %r' %
              re.findall(rb'values truncated.*', p.stdout))
    # A file target shared with the child: neither replaces the other.
    f = os.path.join(tmp, 'one.ntrace')
    p = run_prog({'NANOTRACE': f}, ['--threads', '1'])
    side = [x for x in os.listdir(tmp) if x.startswith('one.ntrace.')]
    check(os.path.exists(f) and len(side) == 1, 'file target: %s' % os.listdir(tmp))
    if side:
        parent = [json.loads(x) for x in dump('event', f)]
        kid = [json.loads(x) for x in dump('event', os.path.join(tmp, side[0]))]
        check(parent[0]['sid'] + '/' in kid[0]['sid'], 'child archive beside the file')


def cli(tmp):
    def run(cmd, stdin=None, cwd=None):
        return subprocess.run(cmd, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              cwd=cwd)
    line = (b'{"event":"exit","sid":"s-P00000001","thread":"main","time":'
            b'"2026-11-21T23:02:46.882185Z","file":"git.c","line":374,"t_abs":0.001329,'
            b'"code":0}\n')
    p = run([IMPORT, os.path.join(tmp, 'missing.event')])
    check(p.returncode == 2 and b'missing.event' in p.stderr, 'missing input: %r' % p.stderr)
    p = run([IMPORT, '--bogus'])
    # one line naming the option and a pointer to --help, not the whole help
    check(p.returncode == 1 and b"'--bogus'" in p.stderr and b'usage' not in p.stderr and
          p.stderr.endswith(b"Try 'trace-import --help'.\n"), 'bad option: %r' % p.stderr)
    bad = os.path.join(tmp, 'bad.event')
    with open(bad, 'wb') as f:
        f.write(line + b'{"event":"exit",\n')
    p = run([IMPORT, '-o', os.path.join(tmp, 'bad.ntrace'), bad])
    check(p.returncode == 2 and b'line 2' in p.stderr and b'bad.event' in p.stderr,
          'malformed line: %r' % p.stderr)
    check(not os.path.exists(os.path.join(tmp, 'bad.ntrace')), 'no archive from bad input')
    p = run([IMPORT], stdin=line, cwd=tmp)
    check(p.returncode == 0 and os.path.exists(os.path.join(tmp, 'trace2.ntrace')),
          'stdin import: %r' % p.stderr)
    out = run([DUMP, '--format', 'event', os.path.join(tmp, 'trace2.ntrace')])
    check(out.stdout == line, 'stdin round trip: %r' % out.stdout)
    good = os.path.join(tmp, 'good.event')
    with open(good, 'wb') as f:
        f.write(line)
    p = run([IMPORT, '-o', os.path.join(tmp, 'nodir', 'x.ntrace'), good])
    check(p.returncode == 2 and b'nodir' in p.stderr, 'unwritable output: %r' % p.stderr)
    # Links planted at the output and at the old predictable temporary name are never
    # written through: the output link is refused (exit 2 naming it), the victims stay,
    # nothing is left behind; without the output link the archive is written, 0600.
    victim = os.path.join(tmp, 'victim')
    with open(victim, 'wb') as f:
        f.write(b'precious')
    out = os.path.join(tmp, 'linked.ntrace')
    os.symlink(victim, out)
    for pid in range(os.getpid(), os.getpid() + 64):
        os.symlink(victim, '%s.tmp.%d' % (out, pid))
    before = sorted(os.listdir(tmp))
    p = run([IMPORT, '-o', out, good])
    with open(victim, 'rb') as f:
        check(p.returncode == 2 and out.encode() in p.stderr and b'symbolic link' in p.stderr
              and f.read() == b'precious' and os.path.islink(out) and
              sorted(os.listdir(tmp)) == before,
              'trace-import with a link at -o: exit %d, %r' % (p.returncode, p.stderr))
    os.unlink(out)
    p = run([IMPORT, '-o', out, good])
    with open(victim, 'rb') as f:
        check(p.returncode == 0 and f.read() == b'precious' and not os.path.islink(out) and
              stat.S_IMODE(os.stat(out).st_mode) == 0o600,
              'trace-import with planted links: exit %d, victim or output wrong' % p.returncode)
    for args in (['--nesting', '0'], ['--format', 'perf', '--stats'], ['--format', 'xml']):
        p = run([DUMP] + args + [os.path.join(tmp, 'trace2.ntrace')])
        check(p.returncode == 1, 'trace-dump %s: exit %d' % (args, p.returncode))
    empty = os.path.join(tmp, 'emptydir')
    os.mkdir(empty)
    p = run([DUMP, '--format', 'normal', empty])
    check(p.returncode == 2 and b'no archives' in p.stderr, 'empty directory: %r' % p.stderr)
    mixed = os.path.join(tmp, 'mixed')
    os.mkdir(mixed)
    os.rename(os.path.join(tmp, 'trace2.ntrace'), os.path.join(mixed, 'a.ntrace'))
    with open(os.path.join(mixed, 'junk'), 'wb') as f:
        f.write(b'not an archive at all')
    p = run([DUMP, '--format', 'event', mixed])
    check(p.returncode == 2 and b'junk' in p.stderr and p.stdout == line,
          'a junk file is reported and the archives still render: %r %r' % (p.stderr, p.stdout))



@pytest.mark.parametrize('part', (main_run, cli, signal_run, env_handling),
                         ids=('main_run', 'cli', 'signal_run', 'env_handling'))
def test_trace2_writer(part, tmp_path):
    failures.clear()
    part(str(tmp_path))
    assert not failures, '\n'.join(failures)
