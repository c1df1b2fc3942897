"""Every NANOTRACE_* variable given garbage: empty, huge, negative, non-numeric, overlong and
non-UTF-8 values (the last with a newline and a terminal escape in it).

For each, the traced program (tests/support/env_program.c) prints exactly what it prints
untraced and exits 7, and stderr holds exactly one line more than the same run without the
garbage, and that line names the variable; or, for a value the variable accepts, no line
more. Tracing is then off or on as documented (nanotrace.h, nanotrace_trace2.h), checked by
the archive's presence, and a recorded archive reads cleanly.

Variables: every NANOTRACE_* that writer/ reads (grep getenv writer/); the writer reads no
GIT_TRACE2_* variable.
"""
import os
import re
import shutil
import subprocess

import pytest

from conftest import program

PROGRAM = program('NT_ENV_PROGRAM')
DUMP = program('NT_TRACE_DUMP')

KINDS = {
    'empty': b'',
    'huge': b'9' * 40,
    'negative': b'-1',
    'non-numeric': b'abc',
    'overlong': b'7' * 20000,
    'non-UTF-8': b'\xff\xfe\n\x1b[31m\xc3',
}

# What each value does: OFF / ON without a line, WARN_OFF / WARN_ON with exactly one line
# naming the variable.
OFF, ON, WARN_OFF, WARN_ON = 'off', 'on', 'warned, off', 'warned, on'


def row(**by_kind):
    """A variable's expectations: `default` for every kind not named (underscores for '-')."""
    default = by_kind.pop('default')
    named = {k.replace('_', '-'): v for k, v in by_kind.items()}
    return {kind: named.get(kind, default) for kind in KINDS}


NON_UTF8 = 'non-UTF-8'

# Variables read by NT_T2_INITIALIZE and the Trace2 layer (and by the core under it).
TRACE2 = {
    'NANOTRACE': row(default=WARN_OFF, empty=OFF),
    'NANOTRACE_MODE': row(default=WARN_OFF, empty=ON),
    'NANOTRACE_BUFFER_SIZE': row(default=WARN_OFF, empty=ON),
    # Letters, digits and _-.:/+ make a valid name: only the control bytes are garbage.
    'NANOTRACE_CATEGORIES': {**row(default=ON), NON_UTF8: WARN_OFF},
    'NANOTRACE_CLOCK': row(default=WARN_OFF, empty=ON),
    'NANOTRACE_MAX_FILES': row(default=WARN_OFF, empty=ON),
    # -1 is a level (fast); garbage is the default level, with a line.
    'NANOTRACE_COMPRESSION': row(default=WARN_ON, empty=ON, negative=ON),
    # Microseconds or "off"; read by every session (used by streaming ones): garbage is
    # "never wait", the default, with a line.
    'NANOTRACE_BLOCKING_TIMEOUT': row(default=WARN_ON, empty=ON),
    # Garbage keeps the safe default, redaction (checked below).
    'NANOTRACE_REDACT': row(default=WARN_ON, empty=ON),
    # Free text, copied into the SID and the hierarchy; too long to keep this process's own
    # part: a line, and the chain starts afresh.
    'NANOTRACE_PARENT_SID': row(default=ON, overlong=WARN_ON),
    'NANOTRACE_PARENT_NAME': row(default=ON, overlong=WARN_ON),
    # Lists of globs and of names: every string is one (an item matching nothing is none).
    'NANOTRACE_CONFIG_PARAMS': row(default=ON),
    'NANOTRACE_ENV_VARS': row(default=ON),
    # A manager that cannot be reached: a line, and NANOTRACE records as without one.
    'NANOTRACE_MANAGER': row(default=WARN_ON, empty=ON),
    # Not af_unix:[stream:|dgram:]<absolute path>: a line, and NANOTRACE records as ever.
    'NANOTRACE_EVENT': row(default=WARN_ON, empty=ON),
}

# NANOTRACE_REGISTER_TIMEOUT is read only with NANOTRACE_MANAGER set: its line comes on top
# of the unreachable manager's.
WITH_MANAGER = {'NANOTRACE_MANAGER': b'/nonexistent/nanotrace-env-test.sock'}
TIMEOUT = row(default=WARN_ON, empty=ON)

# nt_start_from_env() (its caller prints nt_last_error() on one line) and nt_start() itself.
PLAIN = {v: TRACE2[v] for v in ('NANOTRACE', 'NANOTRACE_MODE', 'NANOTRACE_BUFFER_SIZE',
                                'NANOTRACE_CATEGORIES', 'NANOTRACE_CLOCK',
                                'NANOTRACE_MAX_FILES', 'NANOTRACE_COMPRESSION',
                                'NANOTRACE_BLOCKING_TIMEOUT')}
START = {'NANOTRACE_CLOCK': row(default=WARN_ON, empty=ON),
         'NANOTRACE_COMPRESSION': TRACE2['NANOTRACE_COMPRESSION'],
         'NANOTRACE_BLOCKING_TIMEOUT': TRACE2['NANOTRACE_BLOCKING_TIMEOUT']}

# Values the issue named, beyond the six kinds.
EXTRA = [
    ('NANOTRACE_BUFFER_SIZE', b' -1', WARN_OFF), ('NANOTRACE_BUFFER_SIZE', b'4G', WARN_OFF),
    ('NANOTRACE_BUFFER_SIZE', b'+5M', WARN_OFF), ('NANOTRACE_BUFFER_SIZE', b'1K', WARN_OFF),
    ('NANOTRACE_BUFFER_SIZE', b'1M', ON), ('NANOTRACE_MAX_FILES', b'99999999999', WARN_OFF),
    ('NANOTRACE', b'/' + b'x' * 5000, WARN_OFF), ('NANOTRACE_REDACT', b'0', ON),
    ('NANOTRACE_CLOCK', b'monotonic', ON), ('NANOTRACE_REGISTER_TIMEOUT', b'600000', WARN_ON),
    ('NANOTRACE_BLOCKING_TIMEOUT', b'off', ON), ('NANOTRACE_BLOCKING_TIMEOUT', b'10000000', ON),
    ('NANOTRACE_BLOCKING_TIMEOUT', b'10000001', WARN_ON),
    ('NANOTRACE_BLOCKING_TIMEOUT', b' 5', WARN_ON), ('NANOTRACE_BLOCKING_TIMEOUT', b'5ms', WARN_ON),
]


def clean_env(target):
    env = {k: v for k, v in os.environb.items() if not k.startswith(b'NANOTRACE')}
    env[b'NANOTRACE'] = os.fsencode(target)
    return env


def run(mode, env, out):
    args = [PROGRAM, mode] + ([out] if mode == 'start' else [])
    return subprocess.run(args, env=env, capture_output=True, timeout=60)


def names(line, var):
    return re.search(rb'(?<![A-Z_])' + var.encode() + rb'(?![A-Z_])', line) is not None


def archives(d):
    return [os.path.join(d, n) for n in sorted(os.listdir(d))]


def check_case(tmp, mode, var, value, want, extra_env=None):
    """One run with var=value against the same run without it; returns failures."""
    d = os.path.join(tmp, 'target')
    out = os.path.join(tmp, 'start.ntrace')
    fails = []
    results = []
    for garbage in (False, True):
        shutil.rmtree(d, ignore_errors=True)
        os.mkdir(d)
        if os.path.exists(out):
            os.unlink(out)
        env = clean_env(d)
        env.update(extra_env or {})
        if garbage:
            env[var.encode()] = value
        results.append((run(mode, env, out), archives(d) if mode != 'start' else
                        ([out] if os.path.exists(out) else [])))
    (base, _), (p, files) = results
    case = '%s %s=%r' % (mode, var, value[:40])
    if p.returncode != 7 or p.stdout.replace(b'recording=0', b'recording=1') != \
            base.stdout.replace(b'recording=0', b'recording=1'):
        fails.append('%s: the program changed: exit %d, %r' % (case, p.returncode, p.stdout))
    lines = p.stderr.split(b'\n')[:-1] if p.stderr else []
    base_lines = base.stderr.split(b'\n')[:-1] if base.stderr else []
    extra = len(lines) - len(base_lines)
    naming = [ln for ln in lines if names(ln, var)]
    if want in (WARN_ON, WARN_OFF):
        if extra != 1 or len(naming) != 1 or not p.stderr.endswith(b'\n'):
            fails.append('%s: want one line naming it, got %r' % (case, p.stderr[:600]))
    elif extra != 0:
        fails.append('%s: want no line, got %r' % (case, p.stderr[:600]))
    recording = bool(files)
    if recording != (want in (ON, WARN_ON)):
        fails.append('%s: tracing is %s, want %s' % (case, 'on' if recording else 'off', want))
    for f in files:
        r = subprocess.run([DUMP, '--format', 'event', f], capture_output=True, timeout=60)
        if r.returncode != 0:
            fails.append('%s: %s does not read: %r' % (case, f, r.stderr[:300]))
        elif var == 'NANOTRACE_REDACT' and value != b'0' and b'secret' in r.stdout:
            fails.append('%s: a password was kept' % case)
    return fails


def cases():
    for var, kinds in TRACE2.items():
        for kind, want in kinds.items():
            yield 'trace2', var, KINDS[kind], want, None
    for kind, want in TIMEOUT.items():
        yield 'trace2', 'NANOTRACE_REGISTER_TIMEOUT', KINDS[kind], want, WITH_MANAGER
    for var, kinds in PLAIN.items():
        for kind, want in kinds.items():
            yield 'plain', var, KINDS[kind], want, None
    for var, kinds in START.items():
        for kind, want in kinds.items():
            yield 'start', var, KINDS[kind], want, None
    for var, value, want in EXTRA:
        extra = WITH_MANAGER if var == 'NANOTRACE_REGISTER_TIMEOUT' else None
        yield 'trace2', var, value, want, extra
        if var in PLAIN:
            yield 'plain', var, value, want, extra


@pytest.mark.parametrize('mode', ['trace2', 'plain', 'start'])
def test_every_variable_with_garbage(mode, tmp_path):
    fails = []
    n = 0
    for m, var, value, want, extra in cases():
        if m == mode:
            n += 1
            fails += check_case(str(tmp_path), m, var, value, want, extra)
    assert n > 0
    assert not fails, '\n'.join(fails)


def test_the_table_covers_every_variable_the_writer_reads():
    # Every NANOTRACE_* name in writer/ sources is in the table (or is a header guard).
    root = os.path.join(os.path.dirname(__file__), '..', '..', 'writer')
    seen = set()
    git_vars = set()
    for d, _, fs in os.walk(root):
        for f in fs:
            if f.endswith(('.c', '.h')):
                with open(os.path.join(d, f), 'rb') as fh:
                    text = fh.read()
                seen |= set(re.findall(rb'\b(NANOTRACE(?:_[A-Z0-9_]+)?)\b', text))
                git_vars |= set(re.findall(rb'getenv\("(GIT_[A-Z0-9_]*)"', text))
    # The Trace2 layer reads no GIT_TRACE2_* variable: nothing of Git's to parse.
    assert git_vars == set(), git_vars
    seen = {s.decode() for s in seen if not s.endswith((b'_H', b'_H_'))}
    covered = set(TRACE2) | {'NANOTRACE_REGISTER_TIMEOUT'}
    assert seen - covered == set(), 'not in the table: %s' % sorted(seen - covered)

