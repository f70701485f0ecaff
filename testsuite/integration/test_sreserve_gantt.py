#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""sreserve's pictures, on a real grid with the real flexcod: a
co-allocation split over alpha and beta waits behind local jobs, is
shifted earlier when they end, runs and completes; then `sreserve show ID
--chart --svg FILE` draws it (free nodes per cluster, the window it was
moved away from, the reserved window, when each part ran, the move), and
`sreserve profile --svg` overlays both clusters.  Each SVG is rasterised
by a real renderer (rsvg-convert, librsvg2-bin) and the PNG is checked:
its size, that it is not blank, that the reserved-window colour (or the
clusters' line colours) appear."""

import os
import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET
import zlib

import flexcotest as t
from flexcodtest import Flexcod

SVG = "{http://www.w3.org/2000/svg}"
RESERVED = (0xe0, 0x7b, 0x00)            # kGanttReservedColour, #e07b00
OVERLAY = [(0x1f, 0x77, 0xb4), (0xd6, 0x27, 0x28)]  # the first two lines of profile --svg


def sreserve_path():
    return os.path.join(t.builddir(), "src", "sreserve", "sreserve")


def sreserve(conf, *argv, env=None):
    e = {k: v for k, v in os.environ.items()
         if not k.startswith(("FLEXCO_URL", "FLEXCO_MUNGE", "FLEXCOD_CONF", "SRESERVE_"))}
    e.update(FLEXCOD_CONF=conf, TZ="UTC")
    e.update(env or {})
    return subprocess.run([sreserve_path(), *argv], capture_output=True, text=True,
                          timeout=120, env=e, stdin=subprocess.DEVNULL)


def read_png(path):
    """(width, height, rows of (r, g, b, a) tuples) of an 8-bit RGB/RGBA,
    non-interlaced PNG, as rsvg-convert writes them."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or interlace:
                raise ValueError(f"unexpected PNG format depth={depth} type={ctype}")
            bpp = 4 if ctype == 6 else 3
        elif kind == b"IDAT":
            idat += body
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        prev = line
        rows.append([tuple(line[x * bpp:x * bpp + 3]) + ((line[x * bpp + 3],) if bpp == 4 else (255,))
                     for x in range(w)])
    return w, h, rows


def rasterise(svg, what, colours):
    """rsvg-convert the SVG; TAP results for its size, ink and colours."""
    png = svg[:-4] + ".png"
    r = subprocess.run(["rsvg-convert", "-o", png, svg], capture_output=True, text=True,
                       timeout=60)
    t.ok(r.returncode == 0 and r.stderr == "", f"{what}: rsvg-convert renders it",
         r.stderr)
    root = ET.parse(svg).getroot()
    want = (round(float(root.get("width"))), round(float(root.get("height"))))
    try:
        w, h, rows = read_png(png)
    except (OSError, ValueError, zlib.error) as e:
        w, h, rows = 0, 0, []
        t.note(f"{png}: {e}")
    t.ok((w, h) == want, f"{what}: the PNG is {want[0]}x{want[1]}, the SVG's size",
         f"{w}x{h}")
    count = {}
    for row in rows:
        for px in row:
            count[px[:3]] = count.get(px[:3], 0) + 1
    background = count.get((255, 255, 255), 0)
    ink = w * h - background
    t.ok(w * h and ink > w * h // 50, f"{what}: not blank (more than 2 % of the pixels are not white)",
         f"{ink} of {w * h}")
    for c in colours:
        t.ok(count.get(c, 0) >= 100, f"{what}: colour #{bytes(c).hex()} is drawn",
             f"{count.get(c, 0)} pixels")


def main():
    t.require_grid_tools()
    if not os.access(sreserve_path(), os.X_OK):
        t.bail_out(f"{sreserve_path()} not built")
    if not shutil.which("rsvg-convert"):
        t.bail_out("rsvg-convert not found (librsvg2-bin; contrib/install-deps)")
    with t.Grid(nodes=[4, 4]) as grid:
        fc = Flexcod(grid)
        t.ok(t.wait_for(fc.listening, 30, "flexcod to reconcile"), "flexcod is up")
        conf = fc.info["conf"]
        t.ok(fc.reconfigure(RescheduleMode="shift", RescheduleMargin=30, RescheduleWait=20,
                            MaxMoves=3), "RescheduleMode=shift (SIGHUP)")

        # Both clusters full for 10 minutes: the co-allocation waits.
        blockers = [(c, grid.submit(c, ["-N4", "-t", "10", "-o", "/dev/null", "--wrap", "sleep 600"]))
                    for c in ("alpha", "beta")]
        t.ok(all(grid.wait_job(c, j, states=("RUNNING",)).get("JobState") == "RUNNING"
                 for c, j in blockers),
             "alpha and beta are full with local jobs")
        r = sreserve(conf, "submit", "-N", "6", "-t", "1", "-o", "/dev/null", "--parsable",
                     "--wrap", "sleep 15")
        coid = r.stdout.strip()
        t.ok(r.returncode == 0 and coid.isdigit(), "submit: 6 nodes, behind the local jobs",
             r.stdout + r.stderr)
        for c, j in blockers:
            grid.run(c, ["scancel", j])

        def get():
            return fc.get(coid)[1] or {}
        moved = t.wait_for(lambda: get().get("moves", 0) >= 1, 90, f"co-{coid} to move")
        t.ok(moved, "the local jobs end: it is shifted earlier")
        done = t.wait_for(lambda: get().get("state") in ("completed", "failed"), 150,
                          f"co-{coid} to complete")
        doc = get()
        t.ok(done and doc.get("state") == "completed"
             and sorted(p["cluster"] for p in doc.get("parts", [])) == ["alpha", "beta"]
             and all(p.get("actual_start") and p.get("actual_end") for p in doc["parts"]),
             "it ran on alpha and beta and completed", repr(doc)[:1500])

        # -- show --chart --svg -----------------------------------------------
        svg = os.path.join(grid.run_dir, "gantt.svg")
        # The exchange is kept (SRESERVE_RECORD) for the golden case
        # testsuite/sreserve_golden/show_chart.
        r = sreserve(conf, "show", coid, "--chart", "--width", "100", "--svg", svg,
                     env={"SRESERVE_RECORD": os.path.join(t.builddir(), "testsuite",
                                                          "gantt-exchange.json")})
        out = r.stdout
        chart = out.split("\nCHART\n", 1)[1] if "\nCHART\n" in out else ""
        rows = {}
        lane = None
        for line in chart.splitlines():
            if "|" not in line:
                continue
            head, body = line.split("|", 1)
            words = head.split()
            if len(words) == 2:
                lane = words[0]
            if words:
                rows[(lane, words[-1])] = body
        t.ok(r.returncode == 0 and r.stderr == ""
             and out.startswith(f"CoallocationId={coid} ") and chart.startswith(f"co-{coid} (completed)"),
             "show --chart: the record, then the chart", f"{r.returncode}\n{out}\n{r.stderr}")
        t.ok(all("#" in rows.get((c, "resv"), "") and "-" in rows.get((c, "resv"), "")
                 and "R" in rows.get((c, "run"), "") for c in ("alpha", "beta")),
             "show --chart: on each cluster the reserved window ('#'), the window it was "
             "moved away from ('-') and the part job's run ('R')", chart)
        events = [v for k, v in rows.items() if k[1] == "events"]
        t.ok(len(events) == 1 and events[0].count("S") == 1,
             "show --chart: the shift is marked on the events line", chart)
        free = rows.get(("alpha", "free"), "").strip()
        t.ok(free and set(free) <= set("01234") and "4" in free,
             "show --chart: alpha's free nodes from now on (its 4 nodes are free again)", chart)

        try:
            root = ET.parse(svg).getroot()
        except (OSError, ET.ParseError) as e:
            root = ET.Element("none")
            t.note(f"{svg}: {e}")
        lanes = [g.get("id") for g in root.iter(SVG + "g") if g.get("class") == "lane"]
        kinds = [x.get("class") for x in root.iter() if x.get("class")]
        t.ok(lanes == ["alpha", "beta"], "show --svg: a lane per cluster", repr(lanes))
        t.ok(kinds.count("reserved") == 2 and kinds.count("moved-from") == 2
             and kinds.count("ran") == 2 and kinds.count("move") == 1
             and kinds.count("free") >= 2,
             "show --svg: two reserved windows, the two it left, two runs, one move, free nodes",
             repr(kinds))
        rasterise(svg, "show --svg", [RESERVED])
        # the example of doc/sreserve.md comes from here
        shutil.copy(svg, os.path.join(t.builddir(), "testsuite", "gantt-example.svg"))

        # -- errors: nothing written -------------------------------------------
        nowhere = os.path.join(grid.run_dir, "no-such-dir", "x.svg")
        r = sreserve(conf, "show", coid, "--svg", nowhere)
        t.ok(r.returncode == 1 and r.stderr.startswith("sreserve: error: cannot write " + nowhere)
             and not os.path.exists(nowhere),
             "show --svg into a missing directory: exit 1, one error", r.stderr)
        other = os.path.join(grid.run_dir, "unknown.svg")
        r = sreserve(conf, "show", "999", "--svg", other, "--chart")
        t.ok(r.returncode == 1 and r.stdout == "" and "no co-allocation 999" in r.stderr
             and not os.path.exists(other),
             "show --svg of an unknown id: exit 1, no file", f"{r.returncode} {r.stdout} {r.stderr}")

        # -- profile --svg overlays the clusters --------------------------------
        blocker = grid.submit("alpha", ["-N3", "-t", "10", "-o", "/dev/null", "--wrap", "sleep 600"])
        grid.wait_job("alpha", blocker, states=("RUNNING",))
        psvg = os.path.join(grid.run_dir, "profile.svg")
        r = sreserve(conf, "profile", "--horizon", "1:00:00", "--width", "40", "--svg", psvg)
        t.ok(r.returncode == 0, "profile --svg", r.stderr)
        rasterise(psvg, "profile --svg", OVERLAY)
        grid.run("alpha", ["scancel", blocker])

        p = grid.run("alpha", ["scontrol", "ping"])
        t.ok(p.returncode == 0 and "UP" in p.stdout, "slurmctld is alive")


if __name__ == "__main__":
    t.run_main(main)
