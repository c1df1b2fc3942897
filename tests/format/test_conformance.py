"""Decode a nanotrace archive with the Python code Debian's flatc generates from
schema/nanotrace.fbs, independently of the C reader, and check that both agree on every
event.

Run by meson (suite format) with NT_FLATC, NT_SCHEMA, NT_DEMO, NT_CANONICAL_DUMP and NT_WORKDIR.
Skipped (exit 77) without flatc (flatbuffers-compiler) or python3-flatbuffers.

It records an archive with DEMO, prints it with CANONICAL_DUMP (libnanotrace-reader) and
with this decoder in the same text form, and compares the two line by line: once with the
chunks stored as they are, once compressed (CompressedChunk records, whose zstd frames this
decoder opens with the zstd command-line tool, Debian package zstd).
"""
import os
import shutil
import struct
import subprocess
import sys

import pytest

from conftest import program


def decode(path, ntfmt):
    from ntfmt.ArchiveHeader import ArchiveHeader
    from ntfmt.RecordPrefix import RecordPrefix
    from ntfmt.LargePrefix import LargePrefix
    from ntfmt.StringRecord import StringRecord
    from ntfmt.ThreadRecord import ThreadRecord
    from ntfmt.CallSiteRecord import CallSiteRecord
    from ntfmt.ChunkHeader import ChunkHeader
    from ntfmt.CompressedChunkRecord import CompressedChunkRecord
    from ntfmt.Codec import Codec
    from ntfmt.EventRecord import EventRecord
    from ntfmt.CompleteRecord import CompleteRecord
    from ntfmt.IdEventRecord import IdEventRecord
    from ntfmt.TimestampRecord import TimestampRecord
    from ntfmt.ArgHeader import ArgHeader
    from ntfmt.CallSiteArgsRecord import CallSiteArgsRecord
    from ntfmt.ArgSlot import ArgSlot
    from ntfmt.CompactHead import CompactHead
    from ntfmt.RecordKind import RecordKind as K
    from ntfmt.ArgType import ArgType as A

    id_kinds = {K.AsyncBegin, K.AsyncInstant, K.AsyncEnd, K.FlowBegin, K.FlowStep, K.FlowEnd,
                K.AsyncBeginGlobal, K.AsyncInstantGlobal, K.AsyncEndGlobal, K.FlowBeginGlobal,
                K.FlowStepGlobal, K.FlowEndGlobal}
    file = bytearray(open(path, 'rb').read())
    buf = file
    assert ArchiveHeader.ArchiveHeaderBufferHasIdentifier(buf, 4), 'bad identifier'
    h = ArchiveHeader.GetRootAs(buf, 4)
    size = struct.unpack_from('<I', buf, 0)[0]
    out = ['header pid=%d process=%s tps=%d start_ticks=%d mode=%d final=%d written=%d '
           'dropped=%d overwritten=%d' % (
               h.Pid(), h.ProcessName().decode(), h.TicksPerSecond(), h.StartTicks(),
               h.BufferingMode(), h.FinalState(), h.EventsWritten(), h.EventsDropped(),
               h.EventsOverwritten())]
    strings, threads, sites, site_args = {}, {}, {}, {}
    zchunks = [0]

    def struct_at(cls, off, data=None):
        s = cls()
        s.Init(buf if data is None else data, off)
        return s

    def chunk_at(off):
        """The chunk at `off`: (bytes holding it, its offset there)."""
        if struct_at(RecordPrefix, off, file).Kind() != K.CompressedChunk:
            return file, off
        z = struct_at(CompressedChunkRecord, off, file)
        assert z.Codec() in (Codec.Zstd, Codec.ZstdLanes4), 'codec %d' % z.Codec()
        head = CompressedChunkRecord.SizeOf()
        frame = bytes(file[off + head:off + head + z.CompressedBytes()])
        records = subprocess.run(['zstd', '-dcq'], input=frame, check=True,
                                 capture_output=True).stdout
        if z.Codec() == Codec.ZstdLanes4:  # lane k holds byte k of every 4-byte word
            q = len(records) // 4
            records = bytes(records[k * q + w] for w in range(q) for k in range(4))
        chunk_head = ChunkHeader.SizeOf()
        assert len(records) == z.Chunk(ChunkHeader()).SizeBytes() - chunk_head, 'size'
        zchunks[0] += 1
        return bytearray(file[off + 8:off + 8 + chunk_head]) + records, 0

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
        elif kind == K.CallSiteArgs:
            ca = struct_at(CallSiteArgsRecord, off)
            slots = [struct_at(ArgSlot, off + CallSiteArgsRecord.SizeOf() + 4 * i)
                     for i in range(ca.Count())]
            site_args[ca.Callsite()] = [(strings[s.Name()], s.Type()) for s in slots]
        elif kind in (K.Chunk, K.CompressedChunk):
            buf, at = chunk_at(off)
            ch = struct_at(ChunkHeader, at)
            ticks = ch.BaseTicks()
            pos, end = at + ChunkHeader.SizeOf(), at + ch.SizeBytes()
            while pos + 4 <= end:
                head = struct_at(CompactHead, pos).Head()
                if head & 0x80:  # a compact record: the bits are the schema's CompactHead
                    code, nvalues = head & 7, (head >> 3) & 7
                    assert code <= 6 and not head & 0x40, 'reserved compact code'
                    if code:
                        ekind = [None, K.Begin, K.End, K.Instant, K.Counter,
                                 K.Trace2RegionEnter, K.Trace2RegionLeave][code]
                        site = (head >> 8) & 0x3ff
                        ticks += head >> 18
                        args = []
                        for i, (name, typ) in enumerate(site_args.get(site, [])[:nvalues]):
                            v = struct.unpack_from('<I', buf, pos + 4 + 4 * i)[0]
                            if typ in (A.Int32, A.Int64):
                                args.append('%s:%d:%d' % (name, A.Int32,
                                                          struct.unpack('<i', struct.pack('<I', v))[0]))
                            elif typ == A.Bool:
                                args.append('%s:%d:%d' % (name, A.Bool, v != 0))
                            else:
                                args.append('%s:%d:%d' % (name, A.Uint32, v))
                        assert len(args) == nvalues, 'compact values and call-site arguments'
                        out.append('event thread=%d tid=%d kind=%d site=%s ticks=%d args=[%s]' % (
                            ch.Thread(), threads[ch.Thread()], ekind, sites[site], ticks,
                            ','.join(args)))
                    pos += 4 + 4 * nvalues
                    continue
                if pos + 8 > end:
                    break
                e = struct_at(EventRecord, pos)
                if e.Kind() == K.Invalid:
                    break
                ebytes = e.SizeWords() * 8
                if e.Kind() == K.Timestamp:
                    ticks = struct_at(TimestampRecord, pos).Ticks()
                elif K.Begin <= e.Kind() <= K.Counter or e.Kind() in id_kinds:
                    ticks += e.Delta()
                    head, t0, id_text = 8, ticks, ''
                    if e.Kind() == K.Complete:
                        head = 16
                        t0 = ticks - struct_at(CompleteRecord, pos).Duration()
                    elif e.Kind() in id_kinds:  # an async or flow event: its id
                        head = 16
                        id_text = ' id=%d' % struct_at(IdEventRecord, pos).Id()
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
                    out.append('event thread=%d tid=%d kind=%d site=%s ticks=%d%s args=[%s]' % (
                        ch.Thread(), threads[ch.Thread()], e.Kind(), sites[e.Callsite()], t0,
                        id_text, ','.join(args)))
                pos += ebytes
            buf = file
        off += rsize
    return out, zchunks[0]


@pytest.mark.parametrize('source', ['demo', 'requests', 'requests-global'])
@pytest.mark.parametrize('compression', ['off', '3'])
def test_python_decoder_agrees(workdir, compression, source):
    if not os.environ.get('NT_FLATC'):
        pytest.skip('flatc not found (Debian package flatbuffers-compiler)')
    pytest.importorskip('flatbuffers', reason='Python module flatbuffers not found '
                        '(Debian package python3-flatbuffers)')
    flatc, schema = program('NT_FLATC'), program('NT_SCHEMA')
    demo, dump = program('NT_DEMO'), program('NT_CANONICAL_DUMP')
    gen = os.path.join(workdir, 'py')
    subprocess.run([flatc, '--python', '-o', gen, schema], check=True)
    sys.path.insert(0, gen)
    if compression != 'off' and shutil.which('zstd') is None:
        pytest.skip('the zstd command is not installed (Debian package zstd)')
    archive = os.path.join(workdir, 'conformance-%s-%s.ntrace' % (source, compression))
    if source == 'demo':
        subprocess.run([demo, archive, '--threads', '3', '--requests', '300'], check=True,
                       env=dict(os.environ, NANOTRACE_COMPRESSION=compression))
    else:  # async spans and flows (IdEventRecord), process or global ids
        subprocess.run([program('NT_REQUEST_PROGRAM'), '200'] + source.split('-')[1:],
                       check=True, env=dict(os.environ, NANOTRACE=archive,
                                            NANOTRACE_COMPRESSION=compression))
    c_lines = subprocess.run([dump, archive], check=True, capture_output=True,
                             text=True).stdout.splitlines()
    py_lines, zchunks = decode(archive, None)
    assert (zchunks > 0) == (compression != 'off'), '%d compressed chunks' % zchunks
    events = sum(1 for l in py_lines if l.startswith('event '))
    assert events >= 1000, 'the demo archive has only %d events' % events
    for i, (c, p) in enumerate(zip(c_lines, py_lines)):
        assert c == p, 'line %d differs\n  C:      %s\n  Python: %s' % (i + 1, c, p)
    assert len(c_lines) == len(py_lines), 'C printed %d lines, Python %d' % (
        len(c_lines), len(py_lines))
    os.remove(archive)
