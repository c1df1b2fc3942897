"""How a provider's end is reported (issue 25 item 2): a fork() child that records, then ends
by exit(0), _exit(3), exec (of another program, or of itself) or SIGKILL, under trace-record's embedded manager and under the
daemon (nanotrace-manager, which is not the child's parent either). Each section's end state
(the bundle's frame, trace-dump --stats's section line) and message must say what happened,
trace-record's summary must say it for every end but exit(), and every event the child made
(its own report) must be in its section.

fork_end_prog (tests/manager/fork_end_prog.c) holds the child (a zombie, or the program it
exec'd) until its stdin ends; the test ends it once the manager has logged the child's end,
so no outcome depends on how soon the manager looked. With reap-now its parent reaps it at
once, as most parents do: then only a kernel that keeps a reaped process's status for a
pidfd (PIDFD_INFO_EXIT, Linux 6.15) can tell; on an older one the manager may have read the
zombie in time, else it must say it cannot know, never "killed".

Run by meson (suite manager) with NT_TRACE_RECORD, NT_MANAGER, NT_FORK_END_PROG,
NT_TRACE_DUMP, NT_WORKDIR.
"""
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from conftest import program  # noqa: E402
from mgr_support import TRACE_RECORD, Manager, parse_bundle, section_stats  # noqa: E402

PROG = program('NT_FORK_END_PROG')
TRACE_DUMP = program('NT_TRACE_DUMP')
EVENTS = 1500

# HOW: (the section's end state, what its message must say, in trace-record's summary)
ENDINGS = {
    'exit': ('exited', None, False),
    '_exit': ('exited without stopping', 'exit status 3', True),
    'exec': ("exec'd", 'now %s' % os.path.realpath('/bin/cat'), True),
    'exec-self': ("exec'd", 'of the same program, %s' % PROG, True),  # see addresses_random
    'kill': ('killed', 'by signal %d (SIGKILL)' % signal.SIGKILL, True),
}


def child_end_logged(text, pid):
    """Whether a manager log holds the line that settles the child's section."""
    return ('pid %d) exited' % pid) in text or ('pid %d) closed its connection' % pid) in text


def record(workdir, how, env, log_of, reap_now=False):
    """Runs trace-record -v over fork_end_prog HOW; returns (bundle, its path, trace-record's
    stderr, the child's pid, the events it made). log_of(stderr so far) is the manager's log
    to wait on."""
    out = os.path.join(workdir, 'ending-%s-%s%s.ntbundle' % (
        how, env.get('NANOTRACE_MANAGER') and 'daemon' or 'embedded', reap_now and '-reaped' or ''))
    rec = subprocess.Popen([TRACE_RECORD, '-v', '-o', out, '--', PROG, how, str(EVENTS)] +
                           (['reap-now'] if reap_now else []),
                           env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    err = []
    reader = threading.Thread(target=lambda: err.extend(rec.stderr), daemon=True)
    reader.start()
    line = rec.stdout.readline()
    m = re.match(r'child pid=(\d+) made=(\d+) how=(\S+)', line)
    assert m, 'child report %r; stderr %s' % (line, ''.join(err))
    child, made = int(m.group(1)), int(m.group(2))
    deadline = time.time() + 60
    while not child_end_logged(log_of(''.join(err)), child):
        assert time.time() < deadline, 'the manager never logged the end of pid %d: %s' % (
            child, log_of(''.join(err)))
        time.sleep(0.02)
    rec.stdin.close()  # the parent reaps the child (or the cat it became ends) and exits
    rest = rec.stdout.read()
    assert rec.wait(timeout=60) == 0, ''.join(err)
    reader.join(timeout=60)
    assert re.search(r'parent pid=\d+ child=%d status=' % child, rest), rest
    return parse_bundle(out), out, ''.join(err), child, made


def addresses_random():
    """Whether an exec draws a process's addresses anew (ASLR): how the manager tells an exec
    of the same program. Without it that exec shows only if its stack moved (other
    arguments), else it looks like a closed connection."""
    with open('/proc/sys/kernel/randomize_va_space') as f:
        system = f.read().strip() != '0'
    with open('/proc/self/personality') as f:
        personal = int(f.read(), 16) & 0x0040000 == 0  # ADDR_NO_RANDOMIZE, inherited
    return system and personal


def state_of(bundle, child):
    return min((s for s in bundle['sections'] if s['pid'] == child), key=lambda s: s['id'],
               default={}).get('state')


def kernel_keeps_status():
    """Whether this kernel keeps a reaped process's exit status for a pidfd (Linux 6.15)."""
    m = re.match(r'(\d+)\.(\d+)', os.uname().release)
    return m is not None and (int(m.group(1)), int(m.group(2))) >= (6, 15)


def check(workdir, how, bundle, out, err, child, made, ending=None):
    state, says, problem = ending or ENDINGS[how]
    secs = sorted((s for s in bundle['sections'] if s['pid'] == child), key=lambda s: s['id'])
    # exec of itself: the new image registers anew, a second provider of that pid, whose
    # recording (nothing) ends at its exit
    assert len(secs) == (2 if how == 'exec-self' else 1), bundle['sections']
    assert how != 'exec-self' or secs[1]['state'] == 'exited', secs[1]
    sec = secs[0]
    assert sec['state'] == state, sec
    if says is None:
        assert sec['message'] == '', sec
    else:
        assert says in sec['message'], sec
    assert section_stats(sec, workdir, 'ending-' + how)['events'] == made, sec
    stats = subprocess.run([TRACE_DUMP, '--stats', out], capture_output=True, text=True,
                           timeout=60)
    assert stats.returncode == 0, stats.stderr
    assert re.search(r'^  section \d+: pid %d fork_end_prog \(provider \d+\): %s, oneshot'
                     % (child, re.escape(state)), stats.stdout, re.M), stats.stdout
    # trace-record's last lines: what went wrong, per provider
    line = re.search(r'^trace-record: provider \d+ \(fork_end_prog, pid %d\): (.*)$'
                     % child, err, re.M)
    if problem:
        assert line and line.group(1).startswith(state + ': ') and says in line.group(1), err
    else:
        assert line is None, err


def expected(how, bundle, child):
    """What HOW must give; where this system cannot always tell, what it said, if that is
    the one other truthful answer."""
    unknown = ('ended (cause unknown)', 'with no sign of an exec', True)
    if how == 'exec-self' and not addresses_random() and state_of(bundle, child) == unknown[0]:
        return unknown
    return ENDINGS[how]


@pytest.mark.parametrize('how', sorted(ENDINGS))
def test_embedded_manager_names_the_end(workdir, tmp_path, how):
    env = dict(os.environ, XDG_RUNTIME_DIR=str(tmp_path), TMPDIR=str(tmp_path))
    env.pop('NANOTRACE_MANAGER', None)
    bundle, out, err, child, made = record(workdir, how, env, lambda err: err)
    check(workdir, how, bundle, out, err, child, made, expected(how, bundle, child))


@pytest.mark.parametrize('how', sorted(ENDINGS))
def test_daemon_names_the_end(workdir, how):
    m = Manager(workdir, 'ending-daemon-' + how)
    try:
        bundle, out, err, child, made = record(workdir, how, m.env(), lambda err: m.log())
        check(workdir, how, bundle, out, err, child, made, expected(how, bundle, child))
        assert child_end_logged(m.log(), child), m.log()
    finally:
        m.stop()


@pytest.mark.parametrize('how', ['_exit', 'kill'])
def test_reaped_at_once(workdir, tmp_path, how):
    env = dict(os.environ, XDG_RUNTIME_DIR=str(tmp_path), TMPDIR=str(tmp_path))
    env.pop('NANOTRACE_MANAGER', None)
    bundle, out, err, child, made = record(workdir, how, env, lambda err: err, reap_now=True)
    unknown = ('ended (cause unknown)', 'its parent reaped it before its status could be read',
               True)
    if not kernel_keeps_status() and state_of(bundle, child) == unknown[0]:
        check(workdir, how, bundle, out, err, child, made, ending=unknown)
    else:
        check(workdir, how, bundle, out, err, child, made)
