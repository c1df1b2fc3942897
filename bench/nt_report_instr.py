"""nt_report_instr.py - instructions per event under valgrind's callgrind, the part of
bench/nt_report.py that does not move with the machine's load (issue 29: where an event's
cost goes beyond the floor's, counted rather than guessed).

bench/nt_bench_instr runs one case (floor, zone, mixed) in its own function; callgrind counts
the instructions of that function and what it calls (--toggle-collect). Each case runs at
EVENTS and at 2 x EVENTS events: the difference over EVENTS is the cost of one event, with
the first event's registration and the session's start cancelled out.
"""
import os
import re
import shutil
import subprocess

CASES = ('floor', 'zone', 'mixed')
COLLECTED = re.compile(r'Collected : (\d+)')


def collected(program, case, events):
    """Instructions callgrind counted in <case>_case for `events` events."""
    p = subprocess.run(['valgrind', '--tool=callgrind', '--callgrind-out-file=/dev/null',
                        '--collect-atstart=no', '--toggle-collect=%s_case' % case,
                        program, case, str(events)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    m = COLLECTED.search(p.stderr)
    if p.returncode != 0 or m is None:
        tail = p.stderr.strip().splitlines()[-1:] or ['no output']
        raise RuntimeError('%s %s %d: exit %d: %s' % (program, case, events, p.returncode,
                                                       tail[0]))
    return int(m.group(1))


def instructions(build, events=300000):
    """{'instr_per_event_<case>': ..., 'instr_ratio_zone'/'_mixed': case / floor}, or
    {key: None, key + '_reason': why} when valgrind or the program is missing or fails."""
    keys = ['instr_per_event_%s' % c for c in CASES] + ['instr_ratio_zone', 'instr_ratio_mixed']
    program = os.path.join(build, 'bench', 'nt_bench_instr')
    why = None
    if shutil.which('valgrind') is None:
        why = 'valgrind is not installed'
    elif not os.access(program, os.X_OK):
        why = '%s was not built' % program
    out = {}
    if why is None:
        try:
            for c in CASES:
                one = collected(program, c, events)
                two = collected(program, c, 2 * events)
                out['instr_per_event_%s' % c] = (two - one) / events
        except (RuntimeError, subprocess.TimeoutExpired, OSError) as e:
            why, out = 'callgrind: %s' % e, {}
    if why is not None:
        for k in keys:
            out[k], out[k + '_reason'] = None, why
        return out
    floor = out['instr_per_event_floor']
    out['instr_ratio_zone'] = out['instr_per_event_zone'] / floor
    out['instr_ratio_mixed'] = out['instr_per_event_mixed'] / floor
    return out
