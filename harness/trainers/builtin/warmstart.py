"""Supervised warm start: turn a random network into a "base model" that solves a fraction of the task.

RL from a random policy on these tasks would never see a reward; RL from a perfect one has nothing to learn.
A short teacher-forced run on prompt + answer + `<eos>` lands in between. The result is cached on disk, keyed
by everything that determines it, so sweeps pay for each warm start once.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import pickle
import time
import uuid
from pathlib import Path
from typing import Optional

import numpy as np
import torch
import torch.nn.functional as F

from harness.infra.locks import locked
from harness.trainers.builtin.completions import completions_text
from harness.trainers.builtin.precision import precision_spec
from harness.trainers.builtin.tokenizer import encode_batch
from harness.trainers.ensemble.sampling import PROBE, Draws
from harness.trainers.ensemble.stacked_model import StackedQwen3
from harness.trainers.ensemble.stacked_rollout import StackedRollout

log = logging.getLogger("harness")

# Bump when the training procedure changes, so stale cache entries are not reused.
WARMSTART_VERSION = 1
# With a target accuracy: how often it is checked, and on how many train-split problems.
CHECK_EVERY = 25
PROBE_SIZE = 256
# In the key of a warm start with a target accuracy: its stopping step follows the probe's samples, so a change
# of the engine or sampler that draws them must change it (3: counter-based draws, `ensemble.sampling`; 2: the
# ensemble's StackedRollout with a torch.Generator; 1 had its own engine).
PROBE_SAMPLER = 3


def cache_folder(output_root: str, cache_dir: Optional[str]) -> Path:
    """The warm-start cache of a run: its `cache_dir`, else `<output_root>/.harness/cache`."""
    return Path(cache_dir).expanduser() if cache_dir else Path(output_root).expanduser() / ".harness" / "cache"


def warm_start(model, tokenizer, task, cfg, cache_dir: Path, seed: int, *, wait: bool = True,
               announce=None) -> dict:
    """Train `model` in place on the task's train split (loss on answer tokens and `<eos>` only), or load the cache.

    cfg: any object with `steps`, `batch_size`, `lr` (AdamW, constant rate) and optionally `target_accuracy`
    (default None). With a target, training stops early once the policy's T=1 sampled accuracy on a fixed probe
    set of train-split problems (checked every CHECK_EVERY steps) reaches it: the step at which these small
    networks "click" varies a lot between seeds, a target accuracy does not. `steps` is then the maximum.
    The cache file is `cache_dir/<key>.pt`, key = hash of (model architecture, the model's initial weights,
    task.describe(), the cfg fields above, seed, tokenizer vocab and, with a target, the probe's sampler); it is
    written to a temporary file and renamed, so concurrent processes warming the same config never read a partial
    file. A miss is trained under a lock per key (`cache_dir/.<key>.lock`): of the processes that miss the same key
    at once, one trains it and the others load its entry; with `wait=False` a key another process is training
    raises `LockHeld` at once (an ensemble warms its other members meanwhile). `announce()`, if given, is called
    just before this process trains (once per training, in the one process that trains it).
    Returns {"warmstart/cache_hit": 0|1, "warmstart/loss": mean train loss of the last 10 steps (nats per answer
    token), "warmstart/steps": steps trained, "warmstart/probe_accuracy": last probe accuracy (NaN without a
    target), "warmstart/seconds": wall time of this call, "warmstart/train_seconds": time the training took}.
    """
    started = time.perf_counter()
    cache_dir = Path(cache_dir)
    key = warmstart_key(model, tokenizer, task, cfg, seed)
    path = cache_dir / f"{key}.pt"
    seen = _entry_version(path)
    cached = _load_cached(path, model) if seen else None
    if cached is None:
        cache_dir.mkdir(parents=True, exist_ok=True)
        with locked(cache_dir / f".{key}.lock", blocking=wait):
            if _entry_version(path) not in (None, seen):  # another process trained it while we waited
                cached = _load_cached(path, model)
            if cached is None:
                if announce is not None:
                    announce()
                stats = _train(model, tokenizer, task, cfg, seed)
                stats["warmstart/train_seconds"] = time.perf_counter() - started
                _store(path, model, stats)
                return {"warmstart/cache_hit": 0, **stats, "warmstart/seconds": time.perf_counter() - started}
    return {"warmstart/cache_hit": 1, **cached, "warmstart/seconds": time.perf_counter() - started}


def _store(path: Path, model, stats: dict) -> None:
    """Write the entry whole (a temporary file renamed over it). Where it cannot be written (a full disk, a folder
    in its place), one warning says why and no temporary file is left: the run goes on with the model it trained."""
    temporary = path.parent / f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp"
    # Serialised in memory and written by Python: a full disk then reads "No space left on device", where torch's
    # own file writer says only "[enforce fail at inline_container.cc] unexpected pos".
    entry = io.BytesIO()
    torch.save({"state_dict": model.state_dict(), "stats": stats}, entry)
    try:
        temporary.write_bytes(entry.getbuffer())
        os.replace(temporary, path)
    except (OSError, RuntimeError) as err:
        temporary.unlink(missing_ok=True)
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        log.warning("warm-start cache entry %s not written (%s): this run goes on with the base model it trained",
                    path, reason)


def _entry_version(path: Path) -> tuple | None:
    """What tells a cache entry from the one seen before (None: no entry)."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return stat.st_ino, stat.st_mtime_ns, stat.st_size


def _load_cached(path: Path, model) -> dict | None:
    """The cached stats, the entry's weights loaded into `model`; None for an entry that cannot be read or does
    not fit the model (`model` untouched): a miss, trained again and the entry replaced."""
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
        state, stats = payload["state_dict"], dict(payload["stats"])
        own = model.state_dict()
        if set(state) != set(own) or any(tuple(state[k].shape) != tuple(own[k].shape) for k in own):
            raise ValueError("its weights do not fit the model")
    except (pickle.UnpicklingError, RuntimeError, EOFError, OSError, ValueError, KeyError, TypeError,
            AttributeError) as err:
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        log.warning("warm-start cache entry %s is unreadable (%s): training it again and replacing it", path, reason)
        return None
    model.load_state_dict(state)
    return stats


def warmstart_key(model, tokenizer, task, cfg, seed: int) -> str:
    """Hex digest naming the warm-start result of this exact (model, tokenizer, task, cfg, seed)."""
    architecture = {k: v for k, v in model.config.to_dict().items() if k != "transformers_version"}
    weights = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        weights.update(name.encode())
        weights.update(tensor.detach().float().cpu().contiguous().numpy().tobytes())
    identity = {
        "version": WARMSTART_VERSION,
        "architecture": architecture,
        "initial_weights": weights.hexdigest(),
        "task": task.describe(),
        "warmstart": {
            "steps": int(cfg.steps),
            "batch_size": int(cfg.batch_size),
            "lr": float(cfg.lr),
            "target_accuracy": _target_accuracy(cfg),
            **({} if _target_accuracy(cfg) is None else {"probe_sampler": PROBE_SAMPLER}),
        },
        "seed": int(seed),
        "vocab": sorted(tokenizer.get_vocab().items()),
    }
    text = json.dumps(identity, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def supervised_batch(tokenizer, problems) -> tuple[torch.LongTensor, torch.FloatTensor]:
    """Teacher-forcing inputs for `<bos>` prompt answer `<eos>`, right-padded with `<pad>`.

    Returns (input_ids LongTensor [B, L], target_mask FloatTensor [B, L]); target_mask[b, i] = 1 where
    token i is an answer token or the `<eos>` (the positions the loss scores).
    """
    rows, masks = [], []
    for problem in problems:
        prompt = [tokenizer.bos_token_id, *tokenizer.encode(problem.prompt, add_special_tokens=False)]
        target = [*tokenizer.encode(problem.answer, add_special_tokens=False), tokenizer.eos_token_id]
        rows.append(prompt + target)
        masks.append([0.0] * len(prompt) + [1.0] * len(target))
    length = max(len(row) for row in rows)
    input_ids = torch.full((len(rows), length), tokenizer.pad_token_id, dtype=torch.long)
    target_mask = torch.zeros(len(rows), length)
    for index, (row, mask) in enumerate(zip(rows, masks)):
        input_ids[index, : len(row)] = torch.tensor(row)
        target_mask[index, : len(mask)] = torch.tensor(mask)
    return input_ids, target_mask


def accuracy(engine: StackedRollout, tokenizer, task, problems, seed: int | None) -> float:
    """Fraction of `problems` solved by one completion each from a one-member `engine` (synced): sampled at
    temperature 1 from a generator seeded `seed`, or the greedy completion when seed is None."""
    prompts = encode_batch(tokenizer, [p.prompt for p in problems]).unsqueeze(0)
    draws = None if seed is None else Draws(torch.tensor([seed], device=prompts.device), PROBE, 0)
    # Room for the longest answer and its `<eos>`; anything longer cannot be correct.
    (rollout,) = engine.generate(prompts, task.max_answer_length + 1, [1.0], draws, [True],
                                 greedy=seed is None).members()
    rewards = [task.reward(p, c) for p, c in zip(problems, completions_text(tokenizer, rollout))]
    return float(np.mean(rewards)) if rewards else float("nan")


def _target_accuracy(cfg) -> float | None:
    target = getattr(cfg, "target_accuracy", None)
    return None if target is None else float(target)


def _train(model, tokenizer, task, cfg, seed: int) -> dict:
    rng = np.random.default_rng([seed, WARMSTART_VERSION])
    target = _target_accuracy(cfg)
    if target is not None:
        probe = task.sample_split(np.random.default_rng([seed, WARMSTART_VERSION, 1]), PROBE_SIZE)
        probe_model = StackedQwen3(model, members=1)
        probe_engine = StackedRollout(probe_model, precision_spec("fp32"), mismatch_scales=[1.0])
    optimizer = torch.optim.AdamW(model.parameters(), lr=float(cfg.lr), weight_decay=0.0)
    was_training = model.training
    model.train()
    recent_losses: list[float] = []
    probe_accuracy = float("nan")
    step = 0
    while step < int(cfg.steps):
        input_ids, target_mask = supervised_batch(tokenizer, task.sample_split(rng, int(cfg.batch_size)))
        # Padding sits after every real token, so causal attention keeps it from influencing the scored positions.
        logits = model(input_ids=input_ids[:, :-1], use_cache=False).logits
        token_loss = F.cross_entropy(logits.float().transpose(1, 2), input_ids[:, 1:], reduction="none")
        weights = target_mask[:, 1:]
        loss = (token_loss * weights).sum() / weights.sum()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        recent_losses = (recent_losses + [loss.item()])[-10:]
        step += 1
        if target is not None and step % CHECK_EVERY == 0:
            probe_model.load_member(0, model.state_dict())
            probe_engine.sync()
            probe_accuracy = accuracy(probe_engine, tokenizer, task, probe, seed=seed)
            if probe_accuracy >= target:
                break
    model.train(was_training)
    return {
        "warmstart/loss": float(np.mean(recent_losses)) if recent_losses else float("nan"),
        "warmstart/steps": step,
        "warmstart/probe_accuracy": probe_accuracy,
    }
