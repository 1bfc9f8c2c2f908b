"""The report page: one self-contained HTML file (images as base64 data URIs, no network).

A Content-Security-Policy forbids every fetch except ``data:`` images, and a short inline script
writes each image's decoded width into ``data-natural-width`` after load and a summary per section
into ``#decode-check`` (so a headless browser's DOM dump shows that the images really decode).
"""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'"

STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5rem auto; max-width: 1300px; color: #222; padding: 0 1rem; }
h1 { font-size: 1.5rem; margin-bottom: .3rem; }
h2 { font-size: 1.2rem; border-bottom: 1px solid #ccc; padding-bottom: .2rem; margin-top: 2rem; }
table.meta td { padding: .1rem .8rem .1rem 0; font-size: .9rem; }
table.meta td:first-child { color: #666; }
figure { margin: .8rem 0; }
figure img { max-width: 100%; image-rendering: pixelated; border: 1px solid #eee; }
figcaption { font-size: .85rem; color: #555; }
p.notice { background: #f6f6f6; border-left: 4px solid #bbb; padding: .5rem .8rem; }
footer { margin-top: 2rem; font-size: .8rem; color: #888; }
"""

DECODE_SCRIPT = """
window.addEventListener("load", function () {
  var summary = {}, total = 0, decoded = 0;
  document.querySelectorAll("section").forEach(function (section) {
    var images = section.querySelectorAll("img"), ok = 0;
    images.forEach(function (img) {
      img.setAttribute("data-natural-width", String(img.naturalWidth));
      if (img.complete && img.naturalWidth > 0) { ok += 1; }
    });
    summary[section.id] = {images: images.length, decoded: ok};
    total += images.length; decoded += ok;
  });
  var check = document.getElementById("decode-check");
  check.setAttribute("data-summary", JSON.stringify(summary));
  check.textContent = decoded + " of " + total + " images decoded";
});
"""


@dataclass(frozen=True)
class Section:
    """One ``<section id=...>`` of the report."""

    id: str
    """Stable element id (tests and links use it), e.g. ``"curves"``."""
    title: str
    """Heading text."""
    body: str
    """Inner HTML (already escaped)."""


def data_uri(data: bytes, mime: str) -> str:
    """``data:<mime>;base64,...`` for inline images."""
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def figure(data: bytes, mime: str, alt: str, caption: str = "", attributes: Mapping[str, str] | None = None) -> str:
    """``<figure>`` with an inline image; ``attributes`` become extra ``data-*``-style attributes of the img."""
    extra = "".join(f' {html.escape(key)}="{html.escape(str(value))}"' for key, value in (attributes or {}).items())
    text = f"<figcaption>{html.escape(caption)}</figcaption>" if caption else ""
    return f'<figure><img src="{data_uri(data, mime)}" alt="{html.escape(alt)}"{extra}>{text}</figure>'


def notice(text: str) -> str:
    """A grey box explaining why a section has no image (e.g. ``not a maze env``)."""
    return f'<p class="notice">{html.escape(text)}</p>'


def paragraph(text: str) -> str:
    return f"<p>{html.escape(text)}</p>"


def render_page(title: str, meta: Mapping[str, str], sections: Sequence[Section]) -> str:
    """The whole page: title, a table of run facts, the sections in order, the decode check."""
    if len({s.id for s in sections}) != len(sections):
        raise ValueError(f"section ids must be unique, got {[s.id for s in sections]}")
    rows = "".join(f"<tr><td>{html.escape(k)}</td><td>{html.escape(v)}</td></tr>" for k, v in meta.items())
    contents = " | ".join(f'<a href="#{s.id}">{html.escape(s.title)}</a>' for s in sections)
    body = "\n".join(f'<section id="{s.id}"><h2>{html.escape(s.title)}</h2>\n{s.body}\n</section>' for s in sections)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<title>{html.escape(title)}</title>
<style>{STYLE}</style>
</head>
<body>
<h1>{html.escape(title)}</h1>
<table class="meta">{rows}</table>
<nav>{contents}</nav>
{body}
<footer><span id="decode-check" data-summary="">images not checked (JavaScript off)</span></footer>
<script>{DECODE_SCRIPT}</script>
</body>
</html>
"""
