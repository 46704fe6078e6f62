"""Turn the dataset sources of a run into verl-format parquet files (the first step of the batch script).

  python -m harness.trainers.verl.prepare_data <run_dir>/verl/data.json

data.json (plan.py) names, for the training set and each eval set, its sources and output file. A source
is a local .parquet/.json/.jsonl file or `hf:<repo>[:<config>][@<split>]` (needs the `datasets` package and
the HF cache or network). Each row becomes verl's layout:
  data_source (eval set name: its metrics key), prompt ([{"role": "user", "content": ...}]), ability,
  reward_model {"style": "rule", "ground_truth": answer}, extra_info {"index", "source"}
Outputs are rewritten only when data.json changed (a requeued job reuses them).
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any, Dict, List

from harness.trainers.verl.presets import parse_hub_ref
from harness.trainers.verl.verifier import reference_answer


def load_source(source: Dict[str, Any]):
    """A pandas DataFrame with the source's rows."""
    import pandas as pd

    hub = parse_hub_ref(source["ref"])
    if hub is not None:
        if not Path(hub[0]).is_dir() and os.environ.get("HF_DATASETS_OFFLINE", "").lower() in ("1", "true", "yes"):
            raise SystemExit(f"prepare_data: {source['ref']} is not staged and this node is offline (HF_DATASETS_OFFLINE): "
                             f"run `python -m harness stage <the run's overrides>` on a machine with network")
        try:
            import datasets
        except ImportError:
            raise SystemExit(f"prepare_data: {source['ref']} needs the `datasets` package (or give a local file)")
        repo, config, split = hub
        return datasets.load_dataset(repo, config, split=split).to_pandas()
    path = Path(source["ref"]).expanduser()
    if path.suffix == ".parquet":
        return pd.read_parquet(path)
    return pd.read_json(path, lines=path.suffix == ".jsonl")


def verl_rows(frame, source: Dict[str, Any], data_source: str, prompt: str, start: int) -> List[Dict[str, Any]]:
    for key in (source["problem_column"], source["answer_column"]):
        if key not in frame.columns:
            raise SystemExit(f"prepare_data: {source['ref']} has no column {key!r}; columns: "
                             f"{', '.join(map(str, frame.columns))} (set trainer.verl.data.problem_column/answer_column)")
    if source.get("levels"):
        frame = frame[frame["level"].isin(source["levels"])]
    rows = []
    for problem, answer in zip(frame[source["problem_column"]], frame[source["answer_column"]]):
        rows.append({
            "data_source": data_source,
            "prompt": [{"role": "user", "content": prompt.format(problem=str(problem).strip())}],
            "ability": "math",
            "reward_model": {"style": "rule", "ground_truth": reference_answer(str(answer))},
            "extra_info": {"index": start + len(rows), "source": source["ref"]},
        })
    return rows


def build_split(split: Dict[str, Any], prompt: str, seed: int) -> List[Dict[str, Any]]:
    rows: List[Dict[str, Any]] = []
    for source in split["sources"]:
        rows += verl_rows(load_source(source), source, split["name"], prompt, len(rows))
    limit = split.get("max_samples")
    if limit is not None and len(rows) > limit:
        import random

        keep = sorted(random.Random(seed).sample(range(len(rows)), limit))
        rows = [rows[i] for i in keep]
    if not rows:
        raise SystemExit(f"prepare_data: {split['name']} has no rows")
    return rows


def prepare(spec_path: Path) -> List[Path]:
    import pandas as pd

    spec = json.loads(Path(spec_path).read_text())
    digest = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()
    splits = [spec["train"], *spec["eval"].values()]
    stamp = Path(spec_path).with_suffix(".done")
    outs = [Path(s["out"]) for s in splits]
    if stamp.is_file() and stamp.read_text() == digest and all(p.is_file() for p in outs):
        print(f"prepare_data: {len(outs)} files up to date", flush=True)
        return outs
    for split, out in zip(splits, outs):
        rows = build_split(split, spec["prompt"], spec["seed"])
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".tmp.parquet")
        pd.DataFrame(rows).to_parquet(tmp, index=False)
        tmp.replace(out)
        print(f"prepare_data: {split['name']}: {len(rows)} rows -> {out}", flush=True)
    stamp.write_text(digest)
    return outs


def main(argv: List[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    prepare(Path(argv[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
