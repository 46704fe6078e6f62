"""Rendering: pages (`page`, `render` with `templates/page.html`), figures (`plots`, `palette`,
`threshold_figure`, `geometry_cache`), one module per report kind (`kinds/`, registered in `registry`), what the
claim pages share (`claims`), the compare page (`compare`), the build of a sweep's reports (`build`, `rebuild`
for the `report` command, `out_folder` for where they may go) and what the user reads after it:
`verdicts.json` (`verdicts`) and the verdict tags (`verdict_tags`)."""
