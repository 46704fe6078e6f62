"""Deciding: what a named sweep's runs show, returned as data. Nothing here writes a file: pages and figures
are harness/reports/rendering's, and the pilot's plan (`pilot.plan_record`), the study's state that its later
rounds and its reports read back, is written by the study (harness/sweeps/adaptive.py: `save_plan`).

The named-sweep file format (`sweep_file` reads and checks it, `sweep_spec` is the sweep it describes) and its
design parser (`design`, `design_gates`): the declared tests, preconditions, pilot and budget. On the runs:
arms and their selectors (`arms`), per-run outcomes (`outcomes`), preconditions (`preconditions`), the pilot's
sizing (`pilot`), the declared tests' decisions (`decisions`, `rate_decisions`, α over serial redesigns in
`serial_designs`), whether a threshold matters (`threshold_effect` with its sentences and seed counts in
`threshold_plan`, `threshold_action`, the page's evidence `threshold_study`), whether DPPO is less sensitive to
its threshold than GRPO (`threshold_contrast`, DPPO paper App. F.4, gated on `threshold_binds`) and what two sweeps
share (`compare_cells`). `report_names` lists the report kinds a sweep file may name."""
