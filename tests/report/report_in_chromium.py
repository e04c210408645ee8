#!/usr/bin/env python3
"""The tuning report as a reader sees it (docs/tuning.md, "The report"): a simulated tune writes the HTML report, headless
Chromium renders it at a desktop and a phone width, and the screenshots are checked: the page has content
(not blank), nothing runs into the right edge (captions and bars fit: the waterfall caption was cut before),
and the phone rendering is no wider than the phone. Skips (exit 77) without Chromium.

usage: report_in_chromium.py CLI OUTDIR
"""

import os
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
    for p in problems:
        print("FAIL: " + p)
    if not problems:
        print("ok: %s rendered at 1000 and 390 px (screenshots in %s)" % (html, out))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
