#!/usr/bin/env python3
"""Checks that a PNG screenshot is not blank (Python standard library only).

Decodes the PNG (8-bit greyscale, RGB or RGBA, not interlaced), then requires a minimum share
of non-white pixels and a minimum number of distinct colours: a blank or failed render is one
flat colour, the report has text, bars in four colours and lines.

Usage: png_check.py FILE.png [--min-ink 0.02] [--min-colours 16]
"""
import argparse
import struct
import sys
import zlib

CHANNELS = {0: 1, 2: 3, 6: 4}


def decode(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path} is not a PNG file")
    pos, idat, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in CHANNELS or interlace:
        raise ValueError(f"unsupported PNG: depth {depth}, colour type {colour}, interlace {interlace}")
    bpp = CHANNELS[colour]
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(height):
        kind, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if kind == 1:
                line[x] = (line[x] + a) & 0xFF
            elif kind == 2:
                line[x] = (line[x] + b) & 0xFF
            elif kind == 3:
                line[x] = (line[x] + (a + b) // 2) & 0xFF
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[x] = (line[x] + pred) & 0xFF
            elif kind != 0:
                raise ValueError(f"bad filter type {kind}")
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("png")
    ap.add_argument("--min-ink", type=float, default=0.02, help="share of non-white pixels")
    ap.add_argument("--min-colours", type=int, default=16, help="distinct colours")
    args = ap.parse_args()
    width, height, bpp, rows = decode(args.png)
    colours, ink = set(), 0
    for line in rows:
        for x in range(0, len(line), bpp):
            px = line[x:x + min(bpp, 3)]
            colours.add(px)
            if any(v < 245 for v in px):
                ink += 1
    share = ink / (width * height)
    print(f"{args.png}: {width}x{height}, {len(colours)} colours, {share:.1%} non-white pixels")
    if share < args.min_ink or len(colours) < args.min_colours:
        print(f"blank render: needs at least {args.min_ink:.0%} non-white pixels and {args.min_colours} colours",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
