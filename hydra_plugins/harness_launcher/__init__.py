"""Hydra finds plugins only inside the `hydra_plugins` namespace package: the harness's launchers and sweepers
(`plugins.py`), the grid sweeper, a single run started the way Hydra's `run` does it, Hydra's command line
returning what a run or sweep returned (`app.py`), and Hydra's argument parser. Kept import-free: importing
any of these modules imports this one first."""


def register_with_hydra() -> None:
    """Register our launchers (every entry of harness/launchers/registry.py, those registered since import
    too) and sweepers with Hydra explicitly: Hydra's own scan of `hydra_plugins` cannot list modules through an
    editable install's import hook."""
    from hydra.core.plugins import Plugins

    from hydra_plugins.harness_launcher.plugins import plugins  # the launchers load only when Hydra launches

    registry = Plugins.instance()
    for cls in plugins():
        registry.register(cls)
