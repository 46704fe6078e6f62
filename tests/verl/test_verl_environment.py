"""The verl environment a run names is asked, at submission, whether it imports verl and ray at the expected
versions (a subprocess of that interpreter); anything else is refused in one line, exit code 2, before
a run folder or job exists."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.launchers.compose import compose
from harness.launchers.compose import validated as validate
from harness.trainers.verl.environment import VERL_VERSION, check_environment, check_runs
from harness.trainers.verl.site import interpreter

LAUNCHERS = Path(__file__).resolve().parents[2] / "launchers" / "verl"
VERL_PINS = """import json, re, sys
from importlib import metadata
pins = {}
for req in metadata.requires("verl"):
    spec, _, marker = req.partition(";")
    extra = re.search(r'extra == "([^"]+)"', marker)
    name, _, version = spec.strip().partition("==")
    if extra and version:
        pins.setdefault(extra.group(1), {})[name.split("[")[0].lower()] = version.strip()
json.dump(pins, open(sys.argv[1], "w"))
"""


def gpu_pins() -> dict:
    lines = (LAUNCHERS / "requirements-gpu.txt").read_text().splitlines()
    return {m.group(1).split("[")[0].lower(): m.group(2) for line in lines
            if (m := re.fullmatch(r"([A-Za-z0-9_.\[\],-]+)==(\S+)", line.strip()))}


def fake_environment(tmp_path: Path, verl_version: str, ray_version: str = "2.60.0", extra=()) -> Path:
    """An interpreter whose `verl`, `ray` (and `extra` packages) are stand-in packages at the given versions."""
    packages = tmp_path / "site"
    for name, version in (("verl", verl_version), ("ray", ray_version), *((e, "1.0") for e in extra)):
        (packages / name).mkdir(parents=True)
        (packages / name / "__init__.py").write_text(f"__version__ = {version!r}\n")
    python = tmp_path / "bin" / "python"
    python.parent.mkdir()
    python.write_text(f"#!/usr/bin/env bash\nPYTHONPATH={packages} exec {sys.executable} \"$@\"\n")
    python.chmod(0o755)
    return python


def test_wrong_verl_version_is_refused(tmp_path):
    python = fake_environment(tmp_path, "0.8.0")
    with pytest.raises(ValueError, match=rf"has verl 0.8.0, the harness generates for verl {VERL_VERSION}; install "
                                         r"launchers/verl/requirements-gpu.txt there or name another \(here\)"):
        check_environment(str(python), "here")
    check_environment(str(fake_environment(tmp_path / "good", VERL_VERSION)), "here")


def test_flash_attn_is_required_only_when_the_run_attends_with_it(tmp_path):
    """verl[vllm] does not install flash-attn, and it has no wheel for torch 2.11 / CUDA 13: the default attention,
    sdpa, needs none; trainer.verl.attention=flash_attention_2 needs it."""
    python = fake_environment(tmp_path / "without", VERL_VERSION)
    check_runs([validate(compose(["trainer=verl", f"trainer.verl.python={python}"]))])
    flash = ["trainer=verl", "trainer.verl.attention=flash_attention_2"]
    with pytest.raises(ValueError, match=r"lacks flash-attn \(no module flash_attn\), which "
                                         r"trainer.verl.attention=flash_attention_2 needs; install launchers/verl/"):
        check_runs([validate(compose([*flash, f"trainer.verl.python={python}"]))])
    python = fake_environment(tmp_path / "with", VERL_VERSION, extra=["flash_attn"])
    check_runs([validate(compose([*flash, f"trainer.verl.python={python}"]))])


def test_the_gpu_environment_installs_wheels_only_and_no_flash_attn():
    """flash-attn 2.8.3 (verl's pin for torch 2.11 / CUDA 13) exists only as a source package: it compiled for hours."""
    pins = gpu_pins()
    assert "flash-attn" not in pins and pins["torch"] == "2.11.0" and pins["verl"] == VERL_VERSION
    script = (LAUNCHERS / "make_gpu_venv.sh").read_text()
    assert subprocess.run(["bash", "-n", str(LAUNCHERS / "make_gpu_venv.sh")]).returncode == 0
    assert script.count('--only-binary="$pinned"') == 2 and "--no-build-isolation" not in script
    assert "flash_attn" not in script


@pytest.mark.verl
def test_the_gpu_pins_are_the_ones_verl_declares(verl_python, tmp_path):
    out = tmp_path / "pins.json"
    subprocess.run([str(verl_python), "-c", VERL_PINS, str(out)], check=True, timeout=300)
    verl = json.loads(out.read_text())
    pins = gpu_pins()
    for name in ("torch", "torchvision", "torchaudio", "vllm", "transformers"):
        assert pins[name] == verl["vllm"][name], name


def test_each_run_is_probed_for_its_strategy(tmp_path):
    python = fake_environment(tmp_path, VERL_VERSION, extra=["flash_attn"])
    fsdp = validate(compose(["trainer=verl", f"trainer.verl.python={python}"]))
    check_runs([fsdp])
    megatron = validate(compose(["experiment=dppo_moe_qwen3_30b", f"trainer.verl.python={python}"]))
    with pytest.raises(ValueError, match=r"lacks megatron-core .* which trainer.verl.strategy=megatron needs"):
        check_runs([fsdp, megatron])


def test_an_interpreter_without_verl_is_refused():
    with pytest.raises(ValueError, match=r"cannot import verl \(ModuleNotFoundError: No module named 'verl'\)"):
        check_environment(sys.executable, "trainer.verl.python")


def test_a_venv_folder_names_its_python(tmp_path):
    python = fake_environment(tmp_path, VERL_VERSION)
    assert interpreter(str(tmp_path)) == str(python)
    assert interpreter(str(python)) == str(python)


def test_cli_refuses_a_missing_environment_before_anything_exists(run_harness, tmp_path):
    proc = run_harness("trainer=verl", "algo=drpo", f"trainer.verl.python={tmp_path}/nope/bin/python")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == (f"harness: error: the verl environment '{tmp_path}/nope/bin/python' does not exist")
    assert not (tmp_path / "outputs").exists() and not list(tmp_path.glob("mlruns*"))


def test_cli_refuses_python3_without_verl(run_harness, tmp_path):
    env = fake_environment(tmp_path, "0.7.0")
    proc = run_harness("trainer=verl", "algo=drpo", f"trainer.verl.python={env.parent.parent}")
    assert proc.returncode == 2
    line, = proc.stderr.strip().splitlines()
    assert f"'{env}' has verl 0.7.0" in line and "(trainer.verl.python)" in line


@pytest.mark.verl
def test_the_verl_test_environment_passes(verl_python):
    check_environment(str(verl_python), "HARNESS_VERL_VENV")
