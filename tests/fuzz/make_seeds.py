#!/usr/bin/env python3
"""make_seeds.py - writes the generated seeds of tests/fuzz/corpus: env/ (NANOTRACE_* values,
NUL-separated, in fuzz_env.c's order), wire/ (peer steps in fuzz_wire.c's encoding: a
provider registers, a controller starts and stops a trace, the provider answers on its FIFO),
and the seeds of bundle/ (and bundle_dir/) and follow/ that join several archives of open/ with FUZZ_SPLIT
(fuzz_reader_common.h): files given together, and a followed file and its changes
(fuzz_follow.c's encoding). The other seeds are files: archives the demo, trace-record,
trace-import and make_bundle wrote, and git's own EVENT output (tests/README.md, Fuzzing);
wire_msg's are wire's, merged (libFuzzer -merge=1) for fuzz_wire_msg.

    python3 tests/fuzz/make_seeds.py [ARENA [STREAMING_ARENA]]

ARENA, STREAMING_ARENA (optional): the files of a nanotrace-demo killed while recording with
--buffer-size 65536, in oneshot and in streaming mode (live arena images, as a provider's
buffer holds them); their headers (whose counters say what was claimed), durable records and
first two chunks become the arena writes of the wire seeds 'arena-oneshot-trace' and
'arena-streaming-trace', so the manager's saver starts from real records. The committed
seeds were made so (add --mode streaming for the second):
    nanotrace-demo A --buffer-size 65536 --threads 2 --duration-ms 3000 & sleep 0.4; kill -9 $!
"""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# format/nt_wire.h, format/nt_fifo.h, format/nt_format.h (checked against them at build time
# by nothing: a wrong number here only makes a weaker seed, which the fuzzer mutates anyway).
MAGIC, VERSION = 0x4D57544E, 1
REGISTER, CTL_LIST, CTL_SELECT, CTL_START, CTL_STOP = 1, 16, 17, 18, 19
SYNC = 1
ONESHOT, CIRCULAR, STREAMING = 0, 1, 2
STARTED, SAVE_BUFFER, STOPPED = 0x100, 0x101, 0x102  # STARTED carries the FIFO protocol version, 1

ENV_SEEDS = {
    'all-good': [b'streaming', b'4M', b'writer,-writer.noisy', b'monotonic', b'10', b'3'],
    'oneshot-defaults': [b'oneshot', b'', b'', b'auto', b'', b'off'],
    'negative-and-words': [b'circular', b'-1', b'*', b'tsc', b'abc', b'-7'],
    'huge': [b'oneshot', b'18446744073709551616', b'a' * 300, b'monotonic', b'99999999999999999999', b'99'],
    'suffixes': [b'circular', b'4G', b'x,y,-z', b'auto', b'0', b'19'],
    'non-utf8': [b'\xff\xfe', b'64k\xc3', b'\xe2\x28\xa1', b'\x80tsc', b'1\xff', b'\xc0\xaf'],
    # the 7th value: NANOTRACE_BLOCKING_TIMEOUT
    'blocking-good': [b'streaming', b'', b'', b'', b'', b'', b'10000000'],
    'blocking-off': [b'streaming', b'', b'', b'', b'', b'', b'off'],
    'blocking-bad': [b'streaming', b'', b'', b'', b'', b'', b'10000001'],
    'blocking-words': [b'oneshot', b'', b'', b'', b'', b'', b'-5ms \xff'],
}


def message(op, kind, pid=0, a=0, b=0, c=0, d=0, name=b'', text=b''):
    head = struct.pack('<IHHIHHQQQQ', MAGIC, kind, VERSION, pid, len(name), len(text), a, b, c, d)
    return bytes([op]) + head + name + text


def send(peer, kind, attach=False, **kw):
    return message((peer << 2) | (0x10 if attach else 0), kind, **kw)


def fifo(peer, request, data32=0, data64=0):
    return bytes([(peer << 2) | 1]) + struct.pack('<HHIQ', request, 0, data32, data64)


def hang_up(peer):
    return bytes([(peer << 2) | 2])


TIMERS = bytes([3])


def arena_writes(peer, image, start=0, end=16384):
    """The non-zero 8-byte words of image[start:end] as arena-write steps (255 bytes at most
    each, at 8-byte word offsets)."""
    steps = []
    at = start
    while at < min(end, len(image)):
        if image[at:at + 8] == bytes(8):
            at += 8
            continue
        n = 0
        while n + 8 <= 248 and at + n < end and image[at + n:at + n + 8] != bytes(8):
            n += 8
        steps.append(bytes([(peer << 2) | 0x10 | 3]) + struct.pack('<HB', at // 8, n) +
                     image[at:at + n])
        at += n
    return b''.join(steps)


def trace(mode, saves=0, arena=b''):
    steps = [send(0, REGISTER, a=SYNC, name=b'fuzz-provider'),
             send(1, CTL_START, attach=True, a=mode, b=65536, text=b'*'),
             fifo(0, STARTED, data32=1), arena]
    steps += [fifo(0, SAVE_BUFFER, data32=i) for i in range(saves)]
    steps += [send(1, CTL_STOP), fifo(0, STOPPED), TIMERS, hang_up(0), hang_up(1)]
    return b''.join(steps)


WIRE_SEEDS = {
    'oneshot-trace': trace(ONESHOT),
    'circular-trace': trace(CIRCULAR),
    'streaming-trace': trace(STREAMING, saves=2),
    'list-and-select': b''.join([send(0, REGISTER, name=b'a'), send(2, CTL_SELECT, name=b'a'),
                                 send(2, CTL_LIST), send(2, CTL_START, attach=True, a=ONESHOT),
                                 hang_up(2), TIMERS]),
    'provider-first-then-gone': b''.join([send(0, REGISTER, a=SYNC, name=b'p'),
                                          send(1, CTL_START, attach=True, a=ONESHOT),
                                          hang_up(0), send(1, CTL_STOP)]),
}


def write(folder, seeds):
    os.makedirs(os.path.join(HERE, 'corpus', folder), exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(HERE, 'corpus', folder, name), 'wb') as f:
            f.write(data)


SPLIT = b'\n=NT-FUZZ-SPLIT=\n'  # FUZZ_SPLIT, fuzz_reader_common.h


def archive(name):
    with open(os.path.join(HERE, 'corpus', 'open', name), 'rb') as f:
        return f.read()


def change(op, offset, data=b''):
    """fuzz_follow.c's change: 0 writes data at offset, 1 truncates to offset, 2 replaces."""
    return bytes([op]) + struct.pack('<I', offset) + data


def joined_seeds():
    a = archive
    killed, streaming = a('demo-killed-arena'), a('demo-killed-streaming-first-70k')
    half = len(a('demo-streaming-zstd')) // 2
    bundle = {
        'bundle-and-archives': [a('bundle-two-sections'), a('demo-oneshot-zstd'),
                                a('demo-circular-zstd')],
        'archives-three-formats': [a('fmt2-demo-oneshot-raw'), a('fmt21-demo-oneshot-lanes'),
                                   a('demo-streaming-zstd')],
        'trace2-and-killed': [a('trace2-recorded-raw'), a('trace2-import-zstd'), killed],
        'damaged-and-empty': [a('save-stopped-efbig'), b'', a('demo-oneshot-raw')[:3000]],
        'record-bundle-and-bundle': [a('record-two-demos-bundle'), a('bundle-two-sections')],
        'record-bundle-streaming-import-arena': [a('record-two-demos-bundle'), streaming,
                                                 a('import-git-push-hook'),
                                                 a('demo-killed-circular-arena')],
        'record-tiny-and-archives': [a('record-tiny'), a('demo-oneshot-tiny'),
                                     a('demo-circular-tiny')],
    }
    follow = {
        'arena-then-finished': [killed, change(2, 0, a('demo-oneshot-raw'))],
        'arena-written-then-cut': [killed, change(0, 4096, killed[4096:4352]),
                                   change(1, len(killed) // 2), change(1, len(killed))],
        'streaming-grows': [a('demo-streaming-zstd')[:half],
                            change(0, half, a('demo-streaming-zstd')[half:])],
        'archive-then-bundle': [a('demo-circular-zstd'), change(2, 0, a('bundle-two-sections'))],
        'killed-streaming-grows-twice': [streaming[:30000],
                                         change(0, 30000, streaming[30000:50000]),
                                         change(0, 50000, streaming[50000:])],
        'killed-circular-then-overwritten': [
            a('demo-killed-circular-arena'),
            change(0, 8192, a('demo-killed-circular-arena')[16384:20480]),
            change(2, 0, a('demo-circular-overwritten-raw'))],
    }
    for folder in ('bundle', 'bundle_dir'):  # one encoding, two targets (fuzz_bundle.c)
        write(folder, {k: SPLIT.join(v) for k, v in bundle.items()})
    write('follow', {k: SPLIT.join(v) for k, v in follow.items()})


write('env', {k: b'\0'.join(v) for k, v in ENV_SEEDS.items()})
joined_seeds()
for arg, name, mode, saves in zip(sys.argv[1:], ['arena-oneshot-trace', 'arena-streaming-trace'],
                                  [ONESHOT, STREAMING], [0, 2]):
    with open(arg, 'rb') as f:
        WIRE_SEEDS[name] = trace(mode, saves=saves, arena=arena_writes(0, f.read(16384)))
write('wire', WIRE_SEEDS)
