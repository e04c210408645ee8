#!/usr/bin/env python3
"""The tuning report as a reader sees it (docs/tuning.md, "The report"): a simulated tune writes the HTML report, headless
Chromium renders it at a desktop and a phone width, and the screenshots are checked: the page has content
(not blank), nothing runs into the right edge (captions and bars fit: the waterfall caption was cut before),
and the phone rendering is no wider than the phone. Then the report of a tune too noisy to tell anything (a world
file whose pairs vary by 60%): its headline says so in a neutral colour, and its layout as the browser computed it
(a copy with a measuring script, read back with --dump-dom) has tables that fit a 1000 px page, axis labels that
do not overlap and no table row taller than a few lines (a trials row once stood in a screen-high white gap).
Then a session report whose script's loader was timed (loader_verdict.json: sixteen workers crowding two cores, a
transform with a long name): its loader picture fits a 1000 px page, and no label in it overlaps another label or
a bar, or runs out of its picture. Skips (exit 77) without Chromium.

usage: report_in_chromium.py CLI OUTDIR
"""

import json
import os
import re
import shutil
import subprocess
import sys

from PIL import Image


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def shoot(browser, html, png, width, height):
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--window-size=%d,%d" % (width, height), "--screenshot=" + png, "file://" + html],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    return Image.open(png).convert("L")


def ink(img, box):
    """Share of pixels in `box` that are not (near) white."""
    region = img.crop(box)
    hist = region.histogram()
    return 1.0 - sum(hist[245:]) / float(region.width * region.height)


# Measures the page as laid out and writes the figures into the DOM, which --dump-dom prints.
MEASURE = """<script>
window.addEventListener("load", () => {
  // What a reader opens is measured too: the loader's sentences and parts table under Details.
  for (const d of document.querySelectorAll("details")) d.open = true;
  const out = {overflow: [], ticks: [], tallest_row: 0, headline_colour: ""};
  for (const el of document.querySelectorAll(".scroll"))
    if (el.scrollWidth > el.clientWidth + 1) out.overflow.push(el.scrollWidth - el.clientWidth);
  const ticks = Array.from(document.querySelectorAll("text.tick")).map(t => t.getBoundingClientRect())
                     .sort((a, b) => a.left - b.left);
  for (let i = 1; i < ticks.length; ++i)
    if (ticks[i].left < ticks[i - 1].right) out.ticks.push([ticks[i - 1].right, ticks[i].left]);
  for (const tr of document.querySelectorAll("tr")) out.tallest_row = Math.max(out.tallest_row, tr.getBoundingClientRect().height);
  // The loader picture: every label clear of the others and of the bars, and inside its picture.
  out.loader = {pictures: 0, texts: 0, overlaps: [], on_bars: [], outside: [],
                page: document.documentElement.scrollWidth, window: window.innerWidth};
  const hit = (a, b) => a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
  for (const svg of document.querySelectorAll(".loader-picture svg")) {
    out.loader.pictures += 1;
    const box = svg.getBoundingClientRect();
    const texts = Array.from(svg.querySelectorAll("text")).map(t => [t.textContent, t.getBoundingClientRect(), t.parentNode]);
    const bars = Array.from(svg.querySelectorAll("rect.loader-part, rect.loader-rate")).map(r => r.getBoundingClientRect());
    // A mark's line down to its own label crossing another's label (it seems to point at it).
    const lines = Array.from(svg.querySelectorAll("g.loader-mark line")).map(l => [l.parentNode, l.getBoundingClientRect()]);
    out.loader.texts += texts.length;
    texts.forEach(([t, r, g], i) => {
      for (let j = i + 1; j < texts.length; ++j) if (hit(r, texts[j][1])) out.loader.overlaps.push([t, texts[j][0]]);
      if (bars.some(b => hit(r, b))) out.loader.on_bars.push(t);
      if (lines.some(([lg, l]) => lg !== g && hit(r, l))) out.loader.on_bars.push(t + " (a mark's line)");
      if (r.left < box.left - 0.5 || r.right > box.right + 0.5) out.loader.outside.push(t);
    });
  }
  const h = document.querySelector(".headline");
  out.headline_colour = h ? getComputedStyle(h).color : "";
  out.headline = h ? h.textContent : "";
  const pre = document.createElement("pre");
  pre.id = "layout";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def layout(browser, html, width):
    """The report's layout at `width` px, as the measuring script saw it."""
    with open(html) as f:
        text = f.read()
    probe = html[:-5] + "-probe.html"
    with open(probe, "w") as f:
        f.write(text.replace("</body>", MEASURE + "</body>"))
    dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=%d,2400" % width,
                          "--virtual-time-budget=5000", "--dump-dom", "file://" + probe],
                         check=True, capture_output=True, text=True, timeout=120).stdout
    m = re.search(r'<pre id="layout">(.*?)</pre>', dom, re.S)
    return json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&")) if m else None


def noisy_world(out):
    """A world file (docs/tuning.md) whose pairs vary by 60%: no trial can tell anything."""
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "..", "examples", "worlds", "loader-bound.json")) as f:
        world = json.load(f)
    world["name"] = "too noisy"
    world["noise"].update(per_pair=0.6, per_step=0.3, source="test: a machine too noisy to tune on")
    path = os.path.join(out, "noisy-world.json")
    with open(path, "w") as f:
        json.dump(world, f)
    return path


def check_noisy(cli, browser, out, problems):
    html = os.path.join(out, "noisy.html")
    subprocess.run([cli, "tune", "--simulate", "--profile", noisy_world(out), "--budget", "180", "--quiet",
                    "--report", html], check=True, stdout=subprocess.DEVNULL, timeout=300)
    shoot(browser, html, os.path.join(out, "noisy-1000.png"), 1000, 3000)
    got = layout(browser, html, 1000)
    if got is None:
        problems.append("the layout of %s could not be measured" % html)
        return
    if not got["headline"].startswith("Too noisy to tune here"):
        problems.append("a too-noisy tune's headline reads %r" % got["headline"])
    if got["headline_colour"] == "rgb(46, 125, 50)":
        problems.append("a too-noisy tune's headline is green")
    if got["overflow"]:
        problems.append("%d table(s) wider than a 1000 px page (by %s px)" % (len(got["overflow"]), got["overflow"]))
    if got["ticks"]:
        problems.append("axis labels overlap at %s" % got["ticks"])
    if got["tallest_row"] > 120:
        problems.append("a table row is %.0f px tall" % got["tallest_row"])


def check_loader(cli, browser, out, problems):
    """A session report with the loader's verdict and no tune (the tune's report is checked above)."""
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "loader_verdict.json")) as f:
        verdict = json.load(f)
    doc = {"format": "tunebench-session-input", "model": "resnet18", "data": "imagefolder (train.py)",
           "device": {"kind": "cpu", "name": "test cpu"}, "first_config": {"workers": "16"},
           "current_config": {"workers": "16"}, "comparisons": [], "loader": verdict, "tunes": []}
    session = os.path.join(out, "session-loader.json")
    with open(session, "w") as f:
        json.dump(doc, f)
    html = os.path.join(out, "session-loader.html")
    subprocess.run([cli, "report", "--session", session, "--html", html], check=True, stdout=subprocess.DEVNULL,
                   timeout=120)
    shoot(browser, html, os.path.join(out, "session-loader-1000.png"), 1000, 2400)
    phone = shoot(browser, html, os.path.join(out, "session-loader-390.png"), 390, 2400)
    edge = ink(phone, (phone.width - 4, 0, phone.width, phone.height))
    if edge > 0.001:
        problems.append("the session report runs past a 390 px phone screen (%.2f%% of the edge inked)" % (100 * edge))
    got = layout(browser, html, 1000)
    if got is None:
        problems.append("the layout of %s could not be measured" % html)
        return
    lo = got["loader"]
    if lo["pictures"] != 3 or lo["texts"] < 10:
        problems.append("the loader picture has %d pictures and %d labels (3 pictures expected)" % (lo["pictures"], lo["texts"]))
    if lo["page"] > lo["window"]:
        problems.append("the session report is %d px wide in a %d px window" % (lo["page"], lo["window"]))
    if lo["overlaps"]:
        problems.append("loader picture labels overlap: %s" % lo["overlaps"])
    if lo["on_bars"]:
        problems.append("loader picture labels lie on bars or lines: %s" % lo["on_bars"])
    if lo["outside"]:
        problems.append("loader picture labels run out of their picture: %s" % lo["outside"])
    if got["overflow"]:
        problems.append("%d table(s) of the session report wider than a 1000 px page (by %s px)"
                        % (len(got["overflow"]), got["overflow"]))


def main():
    cli, out = sys.argv[1], sys.argv[2]
    browser = chromium()
    if not browser:
        print("SKIP: no chromium (scripts/install-deps.sh installs it)")
        return 77
    os.makedirs(out, exist_ok=True)
    html = os.path.join(out, "report.html")
    subprocess.run([cli, "tune", "--simulate", "--budget", "300", "--quiet", "--report", html], check=True,
                   stdout=subprocess.DEVNULL, timeout=300)
    problems = []
    desk = shoot(browser, html, os.path.join(out, "report-1000.png"), 1000, 2400)
    if ink(desk, (0, 0, desk.width, desk.height)) < 0.03:
        problems.append("the desktop rendering is blank")
    # The page's content sits in a column with margins: the last 8 px at the right stay white everywhere.
    edge = ink(desk, (desk.width - 8, 0, desk.width, desk.height))
    if edge > 0.001:
        problems.append("content runs into the right edge at 1000 px (%.2f%% of the edge inked)" % (100 * edge))
    phone = shoot(browser, html, os.path.join(out, "report-390.png"), 390, 2400)
    edge = ink(phone, (phone.width - 4, 0, phone.width, phone.height))
    if edge > 0.001:
        problems.append("content runs past a 390 px phone screen (%.2f%% of the edge inked)" % (100 * edge))
    got = layout(browser, html, 1000)
    if got is None:
        problems.append("the layout of %s could not be measured" % html)
    else:
        # A tune that kept several changes: its trials' configurations are long, and their table still fits.
        if got["overflow"]:
            problems.append("%d table(s) of a simulated GPU tune's report wider than a 1000 px page (by %s px)"
                            % (len(got["overflow"]), got["overflow"]))
        if got["ticks"]:
            problems.append("axis labels of a simulated GPU tune's report overlap at %s" % got["ticks"])
    check_noisy(cli, browser, out, problems)
    check_loader(cli, browser, out, problems)
    for p in problems:
        print("FAIL: " + p)
    if not problems:
        print("ok: %s, a too-noisy tune's report and a session report with a loader picture rendered at 1000 and "
              "390 px (screenshots in %s)" % (html, out))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
