"""verl backend (`trainer=verl`): the harness spec as a verl run, the harness objectives inside verl.

  options.py     trainer.verl.* keys, types, defaults      presets.py   model/dataset data for verl
  validate.py    refusals before submission (ConfigError)  layout.py    cluster, batch split, precision
  objective.py   loss name, anchor <-> rollout correction  plugin.py    verl policy-loss registration
  overrides.py   spec -> main_ppo overrides (pure)         script.py    the Ray + main_ppo batch script
  plan.py        command + script + spec files             trainer.py   VerlTrainer: run, bridge metrics
  metrics.py     verl metrics -> harness namespaces        dry_run.py   --dry-run printing
  site.py        verl env, stage folder, offline, GPU memory  memory.py  the memory preflight's arithmetic
  staging.py     the stage folder's manifest               stage.py     `harness stage` (fetch once, share)
  environment.py the verl environment probe at submission  driver.py  the node's NVIDIA driver vs torch's CUDA (launch.sh)
  ray_resources.py  the CPUs verl reserves in Ray (the cpus_per_task preflight)
  prepare_data.py, verifier.py, reward.py: data in verl's format and the rule-based math reward.

Nothing here is imported by composing a config except options/presets/layout/site/staging/memory/script/
validate/ray_resources (torch-free); plugin.py needs torch and verl and is only imported inside verl's processes.
"""
