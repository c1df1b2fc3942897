"""bench/nt_report.py, run as CI runs it (smoke sizes: the figures mean nothing here and no
timing is asserted): its JSON carries every key issue 14 lists, each a number or null beside
a "<key>_reason"; its SVG is well-formed with the nanotrace, LTTng-UST and floor series; a
floor that drifts beyond the band withholds its ratios; a peer missing from PATH is "not
installed", not a failure. In CI (CI=true installs LTTng and babeltrace2) the peers must
have been measured."""
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from conftest import program

# The keys issue 14 asks for, written out here (not imported from nt_report.py) so that a
# key dropped from the report fails this test.
ISSUE_KEYS = [
    'ns_per_event_1t', 'floor_ns', 'ratio_1t', 'ratio_mixed_1t', 'ratio_threads_max',
    'lttng_ns_per_event_1t', 'speedup_vs_lttng', 'bytes_per_event_mixed',
    'lttng_bytes_per_event_mixed', 'disk_bytes_per_event_zone', 'disk_bytes_per_event_mixed',
    'streaming_lost_pct_1t_mixed', 'saver_mb_s', 'plain_write_mb_s', 'reader_mev_s_stream',
    'reader_mev_s_time', 'babeltrace2_mev_s', 'reader_speedup_vs_babeltrace2',
    'render_text_mev_s', 'render_chrome_mev_s', 'render_trace2_normal_mev_s',
    'render_trace2_perf_mev_s', 'render_trace2_event_mev_s', 'reader_anon_kb_1m',
    'reader_anon_kb_10m',
    'import_mb_s',  # issue 15
    # issue 28: Perfetto's protobuf beside Chrome JSON, mixed shape and demo
    'render_perfetto_mev_s', 'chrome_bytes_per_event_mixed', 'perfetto_bytes_per_event_mixed',
    'perfetto_size_ratio_mixed', 'perfetto_speedup_mixed', 'chrome_bytes_per_event_demo',
    'perfetto_bytes_per_event_demo', 'perfetto_size_ratio_demo', 'render_chrome_demo_mev_s',
    'render_perfetto_demo_mev_s', 'perfetto_speedup_demo',
    # issue 26: async and flow events beside BEGIN/END, and their bytes on disk
    'async_vs_zone', 'flow_vs_zone', 'disk_bytes_per_event_async', 'disk_bytes_per_event_flow',
    # issue 29: instructions per event under callgrind (null where valgrind cannot run the
    # program: not installed, or a sanitizer build)
    'instr_per_event_floor', 'instr_per_event_zone', 'instr_per_event_mixed',
    'instr_ratio_zone', 'instr_ratio_mixed',
    # issue 29: streaming's blocking disposition (nt_bench_blocking)
    'blocking_off_lost', 'blocking_off_lost_pct', 'blocking_off_ns_per_event',
    'blocking_on_lost', 'blocking_on_lost_pct', 'blocking_on_ns_per_event', 'blocking_on_waits',
    'blocking_on_waits_ended_in_drop', 'blocking_on_blocked_ms',
    'blocking_on_blocked_ms_max_thread',
    # issue 29: a bundle of short processes beside one archive of the same events
    'bundle20k_text_mev_s', 'bundle20k_text_vs_single', 'bundle20k_stats_s',
    'bundle20k_stats_vs_single', 'bundle20k_reader_kb', 'bundle20k_reader_kb_limit',
    # issue 29: streaming beside oneshot, the same events
    'streaming_disk_bytes_per_event_zone', 'streaming_disk_bytes_per_event_mixed',
    'streaming_vs_oneshot_bytes_zone', 'streaming_vs_oneshot_bytes_mixed',
    'streaming_lost_pct_zone', 'streaming_lost_pct_mixed', 'streaming_ns_vs_oneshot',
    'manager_streaming_vs_oneshot_bytes_zone', 'manager_streaming_vs_oneshot_bytes_mixed',
    'manager_streaming_lost_pct_zone', 'manager_streaming_lost_pct_mixed',
    # issue 27: live OTLP shipping (nt_bench_ship)
    'ship_spans_s_gzip', 'ship_bytes_per_span_gzip', 'ship_spans_s_none',
    'ship_bytes_per_span_none', 'ship_gzip_size_ratio',
    # issue 27: the Trace2 macros with NANOTRACE_EVENT's socket target (nt_bench_t2event)
    't2_event_archive_ns', 't2_event_target_ns', 't2_event_target_ratio',
    't2_event_target_wall_ratio', 't2_event_private_ratio', 't2_event_forward_cpu_pct',
]
RATIO_KEYS = ['ratio_1t', 'ratio_mixed_1t', 'ratio_threads_max']
SVG = '{http://www.w3.org/2000/svg}'


def run_report(workdir, name, env=None):
    svg = os.path.join(workdir, name + '.svg')
    if os.path.exists(svg):
        os.unlink(svg)
    p = subprocess.run([sys.executable, program('NT_REPORT'), '--build',
                        program('NT_BUILD_ROOT'), '--smoke', '--json', '--svg', svg],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                       timeout=540)
    assert p.returncode == 0, 'nt_report.py failed (%d):\n%s\n%s' % (p.returncode, p.stdout,
                                                                    p.stderr)
    return json.loads(p.stdout.strip().split('\n')[-1]), svg, p.stdout


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def check_keys(report):
    bad = []
    for key in ISSUE_KEYS:
        if key not in report:
            bad.append('%s: missing' % key)
        elif report[key] is None:
            reason = report.get(key + '_reason')
            if not isinstance(reason, str) or not reason.strip():
                bad.append('%s: null without a reason' % key)
        elif not is_number(report[key]):
            bad.append('%s: %r is neither a number nor null' % (key, report[key]))
    for key in RATIO_KEYS:  # a ratio below the floor is withheld, never printed as real
        if is_number(report.get(key)) and report[key] < 0.95:
            bad.append('%s: %r printed although below 1' % (key, report[key]))
    return bad


@pytest.fixture(scope='module')
def full(workdir):
    return run_report(workdir, 'report')


def test_every_issue_key_is_a_number_or_null_with_reason(full):
    report, _, _ = full
    assert check_keys(report) == []
    if os.environ.get('CI') == 'true':  # CI installs LTTng and babeltrace2: measured there
        for key in ('lttng_ns_per_event_1t', 'speedup_vs_lttng', 'lttng_bytes_per_event_mixed',
                    'babeltrace2_mev_s', 'reader_speedup_vs_babeltrace2'):
            assert is_number(report[key]), '%s: %s' % (key, report.get(key + '_reason'))


def test_svg_is_well_formed_with_three_series(full):
    report, svg, _ = full
    root = ET.parse(svg).getroot()
    assert root.tag == SVG + 'svg'
    groups = {g.get('id'): g for g in root.iter(SVG + 'g')}
    for series in ('series-nanotrace', 'series-lttng', 'series-floor'):
        assert series in groups, 'no %s in %s' % (series, svg)
    threads = report['scaling']['threads']
    for series in ('series-nanotrace', 'series-floor'):
        points = len(list(groups[series].iter(SVG + 'circle')))
        assert points == len(threads), '%s: %d points for %d thread counts' % (
            series, points, len(threads))
    lttng_points = len(list(groups['series-lttng'].iter(SVG + 'circle')))
    assert lttng_points == (len(threads) if report['lttng_ns_per_event_1t'] is not None else 0)


def test_table_names_the_figures(full):
    _, _, text = full
    for label in ('floor', 'LTTng-UST', 'babeltrace2', 'streaming', 'decode'):
        assert label in text, 'the table has no %r line' % label


def test_a_drifting_floor_withholds_its_ratios():
    # A band of 1.000001: no three rounds of a real floor agree that closely.
    p = subprocess.run([program('NT_BENCH_PEERS'), '--part', 'scaling', '--rounds', '3',
                        '--events', '20000', '--band', '1.000001', '--json'],
                       stdout=subprocess.PIPE, text=True, timeout=300)
    assert p.returncode == 0
    report = json.loads(p.stdout.strip().split('\n')[-1])
    for key in ('ratio_1t', 'ratio_mixed_1t', 'ratio_threads_max'):
        assert report[key] is None, '%s printed despite a drifting floor' % key
        reason = report[key + '_reason']
        assert reason.startswith('floor unstable') or (
            key == 'ratio_threads_max' and reason.startswith('one CPU')), reason
    assert 'ratio: floor unstable' in p.stdout


def test_missing_peers_are_not_installed(workdir):
    # A PATH with what the report needs but neither lttng nor babeltrace2.
    bindir = os.path.join(workdir, 'no-peers-bin')
    shutil.rmtree(bindir, ignore_errors=True)
    os.makedirs(bindir)
    for tool in ('unshare', 'mount'):
        found = shutil.which(tool)
        if found:
            os.symlink(found, os.path.join(bindir, tool))
    env = dict(os.environ, PATH=bindir)
    report, _, text = run_report(workdir, 'no-peers', env)
    assert check_keys(report) == []
    for key in ('lttng_ns_per_event_1t', 'speedup_vs_lttng', 'babeltrace2_mev_s',
                'reader_speedup_vs_babeltrace2'):
        assert report[key] is None
        assert 'not installed' in report[key + '_reason'], report[key + '_reason']
    assert 'not installed' in text
    assert is_number(report['ns_per_event_1t']) and is_number(report['reader_mev_s_stream'])
