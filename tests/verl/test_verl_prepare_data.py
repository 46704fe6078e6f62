"""prepare_data.py: local sources -> verl-format parquet, as the batch script runs it."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from harness.launchers.compose import compose
from harness.launchers.compose import validated as validate
from harness.trainers.verl.plan import build_plan
from harness.trainers.verl.prepare_data import prepare
from harness.trainers.verl.presets import PROMPT

REPO = Path(__file__).resolve().parents[2]


def write_sources(tmp_path: Path):
    train = tmp_path / "math.jsonl"
    rows = [{"problem": f"What is {i}+{i}?", "solution": f"It is $\\boxed{{{2 * i}}}$.", "level": f"Level {1 + i % 5}"}
            for i in range(20)]
    train.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    aime = tmp_path / "aime.parquet"
    pd.DataFrame({"problem": ["Find n.", "Find m."], "solution": ["204", "7"]}).to_parquet(aime)
    return train, aime


def spec_for(tmp_path: Path, *overrides: str) -> Path:
    train, aime = write_sources(tmp_path)
    cfg = validate(compose(["trainer=verl", "dataset=math_sanity", f"trainer.verl.data.train=[{train}]",
                            f"trainer.verl.data.eval={{aime2024: [{aime}]}}", "trainer.verl.data.answer_column=solution",
                            *overrides]))
    plan = build_plan(cfg, tmp_path / "run")
    plan.write()
    return plan.paths.data_spec


def test_rows_follow_verls_layout(tmp_path):
    spec = spec_for(tmp_path, "trainer.verl.data.max_train_samples=8")
    outs = prepare(spec)
    train = pd.read_parquet(outs[0])
    assert len(train) == 8 and set(train["data_source"]) == {"math_sanity"}
    row = train.iloc[0]
    assert row["prompt"][0]["role"] == "user"
    assert row["prompt"][0]["content"].startswith("What is ") and row["prompt"][0]["content"].endswith("\\boxed{}.")
    assert row["reward_model"]["style"] == "rule"
    first = int(row["prompt"][0]["content"].split()[2].split("+")[0])
    assert row["reward_model"]["ground_truth"] == str(2 * first)  # the \boxed{} of the solution
    aime = pd.read_parquet(outs[1])
    assert list(aime["data_source"]) == ["aime2024", "aime2024"]
    assert [r["ground_truth"] for r in aime["reward_model"]] == ["204", "7"]
    assert PROMPT.format(problem="Find n.") == aime.iloc[0]["prompt"][0]["content"]


def test_subset_is_seeded_and_outputs_are_reused(tmp_path, capsys):
    spec = spec_for(tmp_path, "trainer.verl.data.max_train_samples=5")
    first = pd.read_parquet(prepare(spec)[0])["extra_info"].map(lambda e: e["index"]).tolist()
    assert "up to date" in (prepare(spec), capsys.readouterr().out)[1]
    Path(json.loads(spec.read_text())["train"]["out"]).unlink()
    again = pd.read_parquet(prepare(spec)[0])["extra_info"].map(lambda e: e["index"]).tolist()
    assert first == again and len(first) == 5


def test_level_filter(tmp_path):
    train, _ = write_sources(tmp_path)
    spec = json.loads(spec_for(tmp_path).read_text())
    spec["train"]["sources"][0]["levels"] = ["Level 3", "Level 4"]
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    assert len(pd.read_parquet(prepare(path)[0])) == 8


def test_missing_column_is_one_line(tmp_path):
    spec = spec_for(tmp_path, "trainer.verl.data.answer_column=final")
    proc = subprocess.run([sys.executable, "-m", "harness.trainers.verl.prepare_data", str(spec)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "has no column 'final'; columns: problem, solution, level" in proc.stderr


def test_hub_sources_need_datasets(tmp_path, monkeypatch):
    from harness.trainers.verl import prepare_data

    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(SystemExit, match="needs the `datasets` package"):
        prepare_data.load_source({"ref": "hf:org/name@train"})
