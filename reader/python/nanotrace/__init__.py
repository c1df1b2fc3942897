"""Read nanotrace archives from Python, with libnanotrace-reader (the decoder trace-dump uses).

    import nanotrace
    with nanotrace.open("x.ntrace") as trace:          # or a bundle, a directory, a list
        for ev in trace:                                # time order; order="stream" too
            print(ev.time_ns, ev.kind, ev.category, ev.name, ev.thread, ev.process, ev.args)
        print(trace.summary["pid"], trace.stats()["events"])

Events stream: memory is the reader's (O(threads + strings + call sites)), never
O(events), and iterating again starts a new visit. An Event is read-only: time_ns
(CLOCK_MONOTONIC ns; a complete event's start), wall_ns, duration_ns (complete events),
kind ('begin', 'end', 'instant', 'complete', 'counter', or a Trace2 message such as
'region_enter'), category, name, file, line, thread (tid), thread_name, process (pid),
process_name, args (a dict: int, float, bool, str, a list of str, or Pointer), offset (of the
record in its file).

Damage: an archive that cannot be opened raises Error (a ValueError) whose message is the
reader's, naming the file and the byte offset; with on_corrupt="stop" (the default) a
damaged record raises Error when the iteration reaches it, with on_corrupt="skip" it is
skipped and listed in trace.errors as (offset, message), as trace-dump --on-corrupt skip
does. Events lost between chunks are in trace.gaps.
"""
import os

from . import _built_for


def _not_loadable(error):
    """The ImportError of an extension that does not load. When it was built for another
    interpreter (a `python3` on PATH is often not the one meson found), it says which one
    it needs and which one is running; otherwise it is the loader's error, said as such."""
    import glob
    import importlib.machinery
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    built = [os.path.basename(f) for f in glob.glob(os.path.join(here, '_nanotrace.*.so'))]
    loadable = [f for f in built
                if f in ('_nanotrace' + x for x in importlib.machinery.EXTENSION_SUFFIXES)]
    if built and not loadable:
        return ImportError(
            'nanotrace: its extension module (%s, in %s) was built for %s (Python %s), but '
            'this is %s (Python %d.%d): run %s, or configure nanotrace with -Dpython=%s (and '
            "that interpreter's headers) and rebuild"
            % (', '.join(built), here, _built_for.PYTHON, _built_for.VERSION, sys.executable,
               sys.version_info[0], sys.version_info[1], _built_for.PYTHON, sys.executable))
    return ImportError('nanotrace: its extension module _nanotrace (in %s, built for %s) does '
                       'not load: %s' % (here, _built_for.PYTHON, error))


try:
    from . import _nanotrace
except ImportError as e:
    raise _not_loadable(e) from e
from ._nanotrace import Error, Event, Reader, library_version

__all__ = ['open', 'Trace', 'Event', 'Error', 'Pointer', 'library_version']


class Pointer(int):
    """A pointer argument: an int that shows itself in hexadecimal, as trace-dump does."""
    __slots__ = ()

    def __repr__(self):
        return '0x%x' % self

    __str__ = __repr__


_nanotrace._set_pointer_type(Pointer)

_POLICIES = {'stop': True, 'skip': False}
_ORDERS = ('time', 'stream')
COLUMNS = ('time_ns', 'kind', 'category', 'name', 'thread', 'process', 'id', 'args')


def _saving_stopped(info):
    """trace-dump's line for an archive whose writer's saving stopped (nt_render_save_stopped),
    or None."""
    if not info['save_errno']:
        return None
    return 'saving stopped: %s; %d events not saved' % (os.strerror(info['save_errno']),
                                                        info['dropped_unsaved'])


def open(path, order='time', on_corrupt='stop'):
    """Open an archive, a bundle, a directory of archives, or a list of them as one trace
    (every process merged by time). Raises Error when one cannot be read, ValueError for
    an order or on_corrupt that is not one of ('time', 'stream') and ('stop', 'skip')."""
    return Trace(path, order=order, on_corrupt=on_corrupt)


class Trace:
    """An open trace; iterate it for its events. A context manager; close() frees it."""

    def __init__(self, path, order='time', on_corrupt='stop'):
        if order not in _ORDERS:
            raise ValueError("order must be 'time' or 'stream', not %r" % (order,))
        if on_corrupt not in _POLICIES:
            raise ValueError("on_corrupt must be 'stop' or 'skip', not %r" % (on_corrupt,))
        paths = list(path) if isinstance(path, (list, tuple)) else [path]
        self.order = order
        self.on_corrupt = on_corrupt
        self._reader = Reader([os.fspath(p) for p in paths], _POLICIES[on_corrupt])

    def __iter__(self):
        return self._reader.events(self.order)

    def events(self, order=None):
        """An iterator over the events in `order` ('time' or 'stream'; default the trace's)."""
        return self._reader.events(order or self.order)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        """Close the archive; iterators still open stop with ValueError."""
        self._reader.close()

    @property
    def closed(self):
        return self._reader.closed

    @property
    def errors(self):
        """[(offset, message)]: the damage the latest iteration or stats() met."""
        return list(self._reader.errors)

    @property
    def gaps(self):
        """[(thread index, events lost, time_ns, offset)] of the latest iteration."""
        return list(self._reader.gaps)

    @property
    def summary(self):
        """The archive header (pid, process_name, clock_source, ticks_per_second,
        buffering_mode, events_written, events_dropped, ... every ArchiveHeader field by
        name), the open-time counts (file_bytes, chunks, strings, threads, callsites, ...),
        compression, and sections (one dict per process) and threads (dicts). For many
        processes (a bundle, a directory, a list) the counters are summed, and pid and
        process_name are the first process's: the first section that opened (in a bundle
        trace-record wrote, the first to register: the command it ran, when that records),
        as a viewer names a trace after its first process; every process is in sections."""
        s = self._reader.info()
        s.update(self._reader.summary_counts())
        s['sections'] = self._reader.sections()
        s['threads'] = self._reader.threads()
        if s['pid'] == 0:
            first = next((x for x in s['sections'] if x['opened']), None)
            if first is not None:
                s['pid'], s['process_name'] = first['pid'], first['name']
        return s

    def stats(self):
        """What trace-dump --stats reports, as a dict: events, records by kind (events by
        kind included), threads with their events and their waits for a streaming saver
        ('blocked': waits, ended_in_drop, ns), written, dropped by reason, the header's
        blocked totals ('blocked': waits, ended_in_drop, ns, timeout_us),
        overwritten, wraps, gaps, durable_dropped, values_truncated, bytes, compression,
        damaged places and what the first 64 were ('damage': [(offset, message)], a
        truncated archive's missing events among them), and trace-dump's "saving stopped" line
        ('saving_stopped', None when saving did not stop). One stream-order visit (raises
        Error on damage when on_corrupt='stop')."""
        counts = self._reader.counts()
        info = self._reader.info()
        summary = self._reader.summary_counts()
        records = dict(counts['records_by_kind'])
        records.update(counts['events_by_kind'])
        none = {'waits': 0, 'ended_in_drop': 0, 'ns': 0}
        threads = [dict(t, events=counts['events_by_thread'].get(t['index'], 0),
                        blocked=counts['blocked_by_thread'].get(t['index'], none))
                   for t in self._reader.threads()]
        return {
            'events': counts['events'],
            'records': records,
            'threads': threads,
            'written': info['events_written'],
            'dropped': {'total': info['events_dropped'],
                        'rolling_full': info['dropped_rolling_full'],
                        'durable_full': info['dropped_durable_full'],
                        'stopped': info['dropped_stopped'],
                        'not_saved': info['dropped_unsaved']},
            'save_errno': info['save_errno'],
            'blocked': {'waits': info['blocked_waits'],
                        'ended_in_drop': info['blocked_timeouts'],
                        'ns': info['blocked_ns'],
                        'timeout_us': info['blocking_timeout_us']},
            'overwritten': info['events_overwritten'],
            'wraps': info['wraps'],
            'gaps': counts['gaps'],
            'gap_events': counts['gap_events'],
            'durable_dropped': info['durable_dropped'],
            'values_truncated': info['values_truncated'],
            'strings': summary['strings'],
            'callsites': summary['callsites'],
            'chunks': summary['chunks'],
            'bytes': {k: summary[k + '_bytes'] for k in ('file', 'header', 'durable', 'chunk')},
            'compressed_chunks': summary['compressed_chunks'],
            'chunk_bytes_uncompressed': summary['chunk_bytes_uncompressed'],
            'damaged': counts['errors'],
            'damage': counts['damage'],
            'saving_stopped': _saving_stopped(info),
        }

    def to_dataframe(self, order=None):
        """The events as a pandas DataFrame with columns time_ns, kind, category, name,
        thread, process, id (an async or flow event's, else 0), args (a dict per row). Needs pandas (ImportError naming it
        otherwise); holds every event in memory."""
        try:
            import pandas
        except ImportError as e:
            raise ImportError('Trace.to_dataframe needs pandas (Debian: python3-pandas)') from e
        columns = {c: [] for c in COLUMNS}
        appends = [(columns[c].append, c) for c in COLUMNS]
        for ev in self.events(order):
            for append, c in appends:
                append(getattr(ev, c))
        return pandas.DataFrame(columns, columns=list(COLUMNS))

    def __repr__(self):
        state = 'closed' if self.closed else 'open'
        return '<nanotrace.Trace %s order=%r %s>' % (
            self._reader.summary_counts()['name'] if not self.closed else '', self.order, state)
