"""Reading generated pages back: image sources (the file each embedded figure shows), run ids, and the checks
every page must pass."""
from __future__ import annotations

import base64
from html.parser import HTMLParser
from pathlib import Path
from typing import List


class _Images(HTMLParser):
    def __init__(self):
        super().__init__()
        self.sources: List[str] = []
        self.embedded: List[str] = []
        self.links: List[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":  # embedded (a data URI), named by its file beside the page
            self.sources.append(attrs.get("data-file", ""))
            self.embedded.append(attrs.get("src", ""))
        if tag in ("a", "link", "script") and (attrs.get("href") or attrs.get("src")):
            self.links.append(attrs.get("href") or attrs.get("src"))


def parse(html_path: Path) -> _Images:
    parser = _Images()
    parser.feed(Path(html_path).read_text(encoding="utf-8"))
    return parser


def check_page(html_path: Path) -> List[str]:
    """Asserts the page is self-contained and complete; returns its image sources."""
    html_path = Path(html_path)
    page = parse(html_path)
    for src in page.sources + page.links:
        assert "://" not in src and not src.startswith("/"), f"{html_path}: non-relative link {src}"
    for src, data in zip(page.sources, page.embedded):
        assert (html_path.parent / src).is_file(), f"{html_path}: broken image {src}"
        assert (html_path.parent / src).stat().st_size > 2000, f"{html_path}: empty image {src}"
        assert data.startswith("data:image/png;base64,"), f"{html_path}: {src} is not embedded"
        assert base64.b64decode(data.split(",", 1)[1]) == (html_path.parent / src).read_bytes(), src
    text = html_path.read_text(encoding="utf-8")
    md = (html_path.parent / "summary.md").read_text(encoding="utf-8")
    assert "<h2>Runs used</h2>" in text and "## Runs used" in md
    return page.sources
