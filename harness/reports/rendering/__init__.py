"""Rendering: the only room that writes report files. Pages (`page`, `render` with `templates/page.html`),
figures (`plots`, `palette`, `threshold_figure`, `geometry_cache`), one module per report kind (`kinds/`,
registered in `registry`), the sections every deciding page shares (`decisions_section`, `pilot_section`,
`claims`), the compare page (`compare`), the build of a sweep's reports (`build`, `rebuild` for the `report`
command, `out_folder` for where they may go) and what the user reads after it: `verdicts.json` (`verdicts`),
the verdict tags (`verdict_tags`) and the reports logged to the sweep's parent run (`parent_run`)."""
