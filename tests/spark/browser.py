"""Open an HTML file in headless Chromium (Debian's): what the page measured, and a screenshot.

`inspect_page` copies the page with a checking script added, loads it with `--dump-dom`, and
reads back what the script found after the load event: for each image whether it loaded, its
size and its share of saturated (non-grey) pixels, i.e. drawn data rather than an empty frame;
and every element whose right edge passes the window's width outside a scrolling box.
Chromium runs with a fresh profile and no network features, and only ever opens file:// URLs.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)
RESULT_ID = "page-check-result"
CHECK_SCRIPT = """
<pre id="RESULT_ID"></pre>
<script>
function scrollsX(el) {
  const style = getComputedStyle(el);
  return ["auto", "scroll", "hidden"].includes(style.overflowX);
}
function contained(el) {
  for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
    if (scrollsX(p)) return p.getBoundingClientRect().right <= innerWidth + 0.5;
  }
  return false;
}
window.addEventListener("load", () => {
  const out = {width: innerWidth, scrollWidth: document.documentElement.scrollWidth,
               height: document.documentElement.scrollHeight, images: [], overflow: []};
  for (const img of document.images) {
    const r = {alt: img.alt, complete: img.complete, naturalWidth: img.naturalWidth,
               naturalHeight: img.naturalHeight, shownWidth: img.getBoundingClientRect().width,
               right: img.getBoundingClientRect().right, colored: 0};
    if (img.complete && img.naturalWidth > 0) {
      const c = document.createElement("canvas");
      c.width = img.naturalWidth; c.height = img.naturalHeight;
      const g = c.getContext("2d"); g.drawImage(img, 0, 0);
      const d = g.getImageData(0, 0, c.width, c.height).data;
      let colored = 0;
      for (let i = 0; i < d.length; i += 4) {
        const hi = Math.max(d[i], d[i + 1], d[i + 2]), lo = Math.min(d[i], d[i + 1], d[i + 2]);
        if (hi - lo > 60) colored++;
      }
      r.colored = colored / (d.length / 4);
    }
    out.images.push(r);
  }
  for (const el of document.body.querySelectorAll("*")) {
    if (el.id === "RESULT_ID") continue;
    const rect = el.getBoundingClientRect();
    if (rect.right > innerWidth + 0.5 && !contained(el)) {
      out.overflow.push(el.tagName.toLowerCase() + " right=" + Math.round(rect.right));
    }
  }
  document.getElementById("RESULT_ID").textContent = JSON.stringify(out);
});
</script>
""".replace("RESULT_ID", RESULT_ID)


def chromium() -> str | None:
    """Path of Debian's chromium, or None when it is not installed."""
    return shutil.which("chromium")


def _run(page: Path, width: int, height: int, action: str, timeout: float = 120.0) -> str:
    binary = chromium()
    assert binary is not None, "chromium is not installed (bash infra/install_chromium.sh)"
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        answer = subprocess.run(
            [
                binary,
                *CHROMIUM_FLAGS,
                f"--user-data-dir={profile}",
                f"--window-size={width},{height}",
                "--virtual-time-budget=5000",
                action,
                page.resolve().as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    if answer.returncode != 0:
        raise RuntimeError(f"chromium exited {answer.returncode}: {answer.stderr[-2000:]}")
    return answer.stdout


def inspect_page(page: Path, width: int = 1280) -> dict[str, Any]:
    """What the checking script measured on `page` in a window `width` pixels wide."""
    text = page.read_text(encoding="utf-8")
    checked = page.with_name(page.stem + ".checked.html")
    checked.write_text(text.replace("</body>", CHECK_SCRIPT + "</body>"), encoding="utf-8")
    dom = _run(checked, width, 900, "--dump-dom")
    start = dom.find(f'id="{RESULT_ID}">')
    if start < 0:
        raise RuntimeError(f"no check result in the page's DOM: {dom[:500]}")
    start = dom.index(">", start) + 1
    body = dom[start : dom.index("</pre>", start)]
    return dict(json.loads(body.replace("&quot;", '"').replace("&amp;", "&")))


def screenshot(page: Path, target: Path, width: int, height: int) -> Path:
    """A PNG of `page` at width x height pixels (the whole page when height is its height)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    _run(page, width, height, f"--screenshot={target.resolve()}")
    return target
