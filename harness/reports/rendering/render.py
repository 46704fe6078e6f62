"""The HTML around a report's body: Jinja2's rendering of `templates/page.html` (title and meta escaped by
autoescaping; the body is HTML the page built, every value in it escaped there)."""
from __future__ import annotations

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

_ENV = Environment(loader=PackageLoader("harness.reports.rendering", "templates"),
                   autoescape=select_autoescape(["html"]), keep_trailing_newline=True)


def render_page(title: str, meta: str, body_html: str) -> str:
    return _ENV.get_template("page.html").render(title=title, meta=meta, body=Markup(body_html))
