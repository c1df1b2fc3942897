#!/usr/bin/python3
"""Decode a nanotrace archive with the Python code Debian's flatc generates from
schema/nanotrace.fbs, independently of the C reader, and check that both agree on every
event.

usage: conformance.py --flatc FLATC --schema SCHEMA --demo DEMO --dump CANONICAL_DUMP --workdir DIR

It records an archive with DEMO, prints it with CANONICAL_DUMP (libnanotrace-reader) and
with this decoder in the same text form, and compares the two line by line.
"""
import argparse
import os
import struct
import subprocess
import sys


def decode(path, ntfmt):
    from ntfmt.ArchiveHeader import ArchiveHeader
    from ntfmt.RecordPrefix import RecordPrefix
    from ntfmt.LargePrefix import LargePrefix
    from ntfmt.StringRecord import StringRecord
    from ntfmt.ThreadRecord import ThreadRecord
    from ntfmt.CallSiteRecord import CallSiteRecord
    from ntfmt.ChunkHeader import ChunkHeader
    from ntfmt.EventRecord import EventRecord
    from ntfmt.CompleteRecord import CompleteRecord
    from ntfmt.TimestampRecord import TimestampRecord
    from ntfmt.ArgHeader import ArgHeader
    from ntfmt.RecordKind import RecordKind as K
    from ntfmt.ArgType import ArgType as A

    buf = bytearray(open(path, 'rb').read())
    assert ArchiveHeader.ArchiveHeaderBufferHasIdentifier(buf, 4), 'bad identifier'
    h = ArchiveHeader.GetRootAs(buf, 4)
    size = struct.unpack_from('<I', buf, 0)[0]
    out = ['header pid=%d process=%s tps=%d start_ticks=%d mode=%d final=%d written=%d '
           'dropped=%d overwritten=%d' % (
               h.Pid(), h.ProcessName().decode(), h.TicksPerSecond(), h.StartTicks(),
               h.BufferingMode(), h.FinalState(), h.EventsWritten(), h.EventsDropped(),
               h.EventsOverwritten())]
    strings, threads, sites = {}, {}, {}

    def struct_at(cls, off):
        s = cls()
        s.Init(buf, off)
        return s

    assert h.Layout() == 0, 'conformance reads the Stream layout nt_finish() writes'
    off = h.DataOffset()
    assert off >= (4 + size + 7) & ~7
    while off < len(buf):
        p = struct_at(RecordPrefix, off)
        rsize = p.SizeWords() * 8 if p.SizeWords() else struct_at(LargePrefix, off).SizeBytes()
        kind = p.Kind()
        if kind == K.String:
            s = struct_at(StringRecord, off)
            strings[s.Index()] = bytes(buf[off + 8:off + 8 + s.Length()]).decode()
        elif kind == K.Thread:
            t = struct_at(ThreadRecord, off)
            threads[t.Index()] = t.Tid()
        elif kind == K.CallSite:
            c = struct_at(CallSiteRecord, off)
            sites[c.Index()] = '%s|%s|%s:%d' % (strings[c.Category()], strings[c.Name()],
                                                strings[c.File()], c.Line())
        elif kind == K.Chunk:
            ch = struct_at(ChunkHeader, off)
            ticks = ch.BaseTicks()
            pos, end = off + ChunkHeader.SizeOf(), off + ch.SizeBytes()
            while pos + 8 <= end:
                e = struct_at(EventRecord, pos)
                if e.Kind() == K.Invalid:
                    break
                ebytes = e.SizeWords() * 8
                if e.Kind() == K.Timestamp:
                    ticks = struct_at(TimestampRecord, pos).Ticks()
                elif K.Begin <= e.Kind() <= K.Counter:
                    ticks += e.Delta()
                    head, t0 = 8, ticks
                    if e.Kind() == K.Complete:
                        head = 16
                        t0 = ticks - struct_at(CompleteRecord, pos).Duration()
                    args, a = [], pos + head
                    while a < pos + ebytes:
                        ah = struct_at(ArgHeader, a)
                        typ, name = ah.Type(), strings[ah.Name()]
                        if typ == A.Int32:
                            val = str(struct.unpack('<i', struct.pack('<I', ah.Value32()))[0])
                        elif typ in (A.Uint32, A.Bool):
                            val = str(ah.Value32())
                        elif typ == A.Int64:
                            val = str(struct.unpack_from('<q', buf, a + 8)[0])
                        elif typ in (A.Uint64, A.Double, A.Pointer):
                            val = str(struct.unpack_from('<Q', buf, a + 8)[0])
                        elif typ == A.String:
                            val = bytes(buf[a + 8:a + 8 + ah.Value32()]).hex()
                        elif typ == A.StringRef:
                            val = strings[ah.Value32()].encode().hex()
                        else:
                            val = None
                        if val is not None:
                            args.append('%s:%d:%s' % (name, typ, val))
                        a += ah.SizeWords() * 8
                    out.append('event thread=%d tid=%d kind=%d site=%s ticks=%d args=[%s]' % (
                        ch.Thread(), threads[ch.Thread()], e.Kind(), sites[e.Callsite()], t0,
                        ','.join(args)))
                pos += ebytes
        off += rsize
    return out


def main():
    ap = argparse.ArgumentParser()
    for opt in ('--flatc', '--schema', '--demo', '--dump', '--workdir'):
        ap.add_argument(opt, required=True)
    o = ap.parse_args()
    os.makedirs(o.workdir, exist_ok=True)
    gen = os.path.join(o.workdir, 'py')
    subprocess.run([o.flatc, '--python', '-o', gen, o.schema], check=True)
    sys.path.insert(0, gen)
    archive = os.path.join(o.workdir, 'conformance.ntrace')
    subprocess.run([o.demo, archive, '--threads', '3', '--requests', '300'], check=True)
    c_lines = subprocess.run([o.dump, archive], check=True, capture_output=True,
                             text=True).stdout.splitlines()
    py_lines = decode(archive, None)
    events = sum(1 for l in py_lines if l.startswith('event '))
    if events < 1000:
        print('FAIL: the demo archive has only %d events' % events)
        return 1
    for i, (c, p) in enumerate(zip(c_lines, py_lines)):
        if c != p:
            print('FAIL: line %d differs\n  C:      %s\n  Python: %s' % (i + 1, c, p))
            return 1
    if len(c_lines) != len(py_lines):
        print('FAIL: C printed %d lines, Python %d' % (len(c_lines), len(py_lines)))
        return 1
    os.remove(archive)
    print('ok: C reader and flatc-generated Python agree on the header and %d events' % events)
    return 0


if __name__ == '__main__':
    sys.exit(main())
