"""nt_report_svg.py - the SVG plot of nt_report.py, written by hand (no library): ns per
event per thread, mixed shape, by thread count, one series each for nanotrace, LTTng-UST
and the floor. A series with no figures (LTTng-UST not installed) is kept, empty, with its
reason in the legend, so the plot always holds the three series."""
from xml.sax.saxutils import escape

W, H = 640, 400
LEFT, RIGHT, TOP, BOTTOM = 70, 190, 40, 50
SERIES = [  # (id, legend, key in report['scaling'], colour)
    ('nanotrace', 'nanotrace', 'nanotrace_mixed', '#1f77b4'),
    ('lttng', 'LTTng-UST', 'lttng_mixed', '#d62728'),
    ('floor', 'floor (clock + store)', 'floor', '#7f7f7f'),
]


def _nice_max(v):
    """The smallest of 1, 2, 5 x 10^k at least v."""
    step = 1.0
    while step * 10 < v:
        step *= 10
    for m in (1, 2, 5, 10):
        if step * m >= v:
            return step * m
    return step * 10


def write(path, report):
    sc = report.get('scaling') or {}
    threads = sc.get('threads') or [1]
    values = [v for _, _, key, _ in SERIES for v in (sc.get(key) or []) if v is not None]
    ymax = _nice_max(max(values) * 1.1 if values else 1.0)
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def x(i):
        return LEFT + (pw * i / (len(threads) - 1) if len(threads) > 1 else pw / 2)

    def y(v):
        return TOP + ph * (1 - v / ymax)

    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">' % (W, H, W, H),
           '<title>ns per event per thread by thread count (mixed shape)</title>',
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="22" font-size="14">ns/event per thread, mixed shape (%s mode)</text>'
           % (LEFT, escape(str(report.get('mode', ''))))]
    out.append('<g id="axes" stroke="black">')
    out.append('<line x1="%d" y1="%d" x2="%d" y2="%d"/>' % (LEFT, TOP, LEFT, TOP + ph))
    out.append('<line x1="%d" y1="%d" x2="%d" y2="%d"/>' % (LEFT, TOP + ph, LEFT + pw, TOP + ph))
    out.append('</g><g id="ticks" fill="black">')
    for k in range(6):
        v = ymax * k / 5
        out.append('<text x="%d" y="%.1f" text-anchor="end">%g</text>' % (LEFT - 6, y(v) + 4, v))
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>'
                   % (LEFT, y(v), LEFT + pw, y(v)))
    for i, t in enumerate(threads):
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%d</text>' % (x(i), TOP + ph + 18, t))
    out.append('<text x="%d" y="%d" text-anchor="middle">threads</text>'
               % (LEFT + pw // 2, TOP + ph + 38))
    out.append('<text x="16" y="%d" transform="rotate(-90 16 %d)" text-anchor="middle">'
               'ns/event per thread</text>' % (TOP + ph // 2, TOP + ph // 2))
    out.append('</g>')
    for n, (sid, legend, key, colour) in enumerate(SERIES):
        vals = sc.get(key) or []
        pts = [(x(i), y(v)) for i, v in enumerate(vals[:len(threads)]) if v is not None]
        out.append('<g id="series-%s" stroke="%s" fill="%s">' % (sid, colour, colour))
        if len(pts) > 1:
            out.append('<polyline fill="none" stroke-width="2" points="%s"/>'
                       % ' '.join('%.1f,%.1f' % p for p in pts))
        for px, py in pts:
            out.append('<circle cx="%.1f" cy="%.1f" r="3"/>' % (px, py))
        ly = TOP + 20 * n
        label = legend if pts else '%s: %s' % (legend, 'not measured')
        out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke-width="2"/>'
                   % (W - RIGHT + 15, ly, W - RIGHT + 35, ly))
        out.append('<text x="%d" y="%d" stroke="none">%s</text>'
                   % (W - RIGHT + 40, ly + 4, escape(label)))
        out.append('</g>')
    out.append('</svg>')
    with open(path, 'w') as f:
        f.write('\n'.join(out) + '\n')
