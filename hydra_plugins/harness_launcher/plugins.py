"""The harness's launchers and sweepers under names Hydra accepts (Hydra instantiates plugins only from inside
the `hydra_plugins` namespace package, by class name); the classes themselves live in `harness.launchers` and
`harness.sweeps`. One launcher alias per entry of harness/launchers/registry.py, made from the entry."""
from harness.launchers.registry import PLUGIN_MODULE, LauncherEntry, launchers
from hydra_plugins.harness_launcher.grid_sweeper import GridSweeper as _Grid
from harness.sweeps.optuna_sweeper import OptunaSweeper as _Optuna


class OptunaSweeper(_Optuna):
    pass


class GridSweeper(_Grid):
    pass


def launcher_alias(entry: LauncherEntry) -> type:
    """The entry's launcher class under hydra_plugins (made once; also where pickle finds it)."""
    alias = globals().get(entry.class_name)
    if alias is None:
        base = entry.plugin_class()
        alias = type(entry.class_name, (base,), {"__module__": PLUGIN_MODULE, "__qualname__": entry.class_name})
        globals()[entry.class_name] = alias
    return alias


def plugins() -> tuple:
    """Every plugin class: a launcher per registered entry (those registered since included), the sweepers."""
    return (*dict.fromkeys(launcher_alias(entry) for entry in launchers()), OptunaSweeper, GridSweeper)


PLUGINS = plugins()  # what Hydra's scan of hydra_plugins finds here: the launchers registered at import
