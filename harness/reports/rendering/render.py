"""The HTML around a report's body: Jinja2's rendering of `templates/page.html` (title, meta and the link up
escaped by autoescaping; the body is HTML the page built, every value in it escaped there)."""
from __future__ import annotations

from typing import Optional, Tuple

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

_ENV = Environment(loader=PackageLoader("harness.reports.rendering", "templates"),
                   autoescape=select_autoescape(["html"]), keep_trailing_newline=True)


ARTIFACTS = "reports"  # the folder of a sweep's reports on its MLflow parent run (parent_run.log_to_parent)


def render_page(title: str, meta: str, body_html: str, up: Optional[Tuple[str, str]] = None, where: str = "") -> str:
    """`up`: (href, words) of the page this one links back to, shown above its title. `where`: the page's
    folder among the run's artifacts (`reports/sensitivity/`), which names a linked file in MLflow's preview,
    where links cannot open (see the template's last script)."""
    return _ENV.get_template("page.html").render(title=title, meta=meta, body=Markup(body_html), up=up,
                                                 where=where)
