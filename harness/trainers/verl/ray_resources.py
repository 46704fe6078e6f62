"""How many CPUs verl 0.9.1 reserves in Ray on the head node (torch-free): fewer and its start-up waits forever.

What verl's v1 trainer places, per node of the job's Ray cluster:
  - the worker pool: a STRICT_PACK placement group per node with one bundle {CPU: 3, GPU: 1} per GPU
    (single_controller/ray/base.py, ResourcePoolManager.max_colocate_count = 3), held for the whole run;
  - TransferQueue (main_ppo.py TaskRunnerV1.run -> tq.init): a controller actor of num_cpus=1, and
    `num_data_storage_units` SimpleStorageUnit actors of num_cpus=1 each, round-robin over the nodes
    (transfer_queue 0.1.11, storage/bootstrap/simple_storage_bootstrap.py); the harness pins the count
    (overrides.py) so the number checked here is the number launched;
  - actors with Ray's default options (the task runner, agent-loop and reward-loop workers): 1 free CPU to be
    placed, 0 once running.
The head node carries the controller and the task runner, so it needs the most; every node gets the same
`cpus_per_task`. Reproduced with Ray on CPU (issue 24): with 8 CPUs for 1 GPU, tq.init never returns.
"""
from __future__ import annotations

import math

from harness.trainers.verl.layout import Cluster

POOL_CPUS_PER_GPU = 3  # verl ResourcePoolManager.max_colocate_count
TQ_STORAGE_UNITS = 8  # verl's default transfer_queue.backend.SimpleStorage.num_data_storage_units
TQ_STORAGE_UNITS_KEY = "transfer_queue.backend.SimpleStorage.num_data_storage_units"
TQ_CONTROLLER_CPUS = 1
PLACEMENT_CPUS = 1  # a default actor needs one free CPU to be placed


def head_cpus(shape: Cluster) -> int:
    """Logical CPUs Ray must have on the head node for verl to start."""
    storage_here = math.ceil(TQ_STORAGE_UNITS / shape.nodes)
    return POOL_CPUS_PER_GPU * shape.gpus_per_node + TQ_CONTROLLER_CPUS + storage_here + PLACEMENT_CPUS


def check_cpus(cpus_per_task: int, shape: Cluster) -> None:
    """ValueError (one line) when the allocation gives Ray fewer CPUs per node than verl reserves."""
    need = head_cpus(shape)
    if cpus_per_task < need:
        raise ValueError(
            f"launcher.cpus_per_task={cpus_per_task} is not allowed with trainer=verl on {shape.gpus_per_node} GPU(s) "
            f"per node: verl 0.9.1 reserves {need} CPUs in Ray on the head node ({POOL_CPUS_PER_GPU} per GPU, "
            f"TransferQueue's controller and {math.ceil(TQ_STORAGE_UNITS / shape.nodes)} storage units, 1 to place "
            f"its task runner) and waits forever with fewer; set launcher.cpus_per_task={need} or more "
            f"({shape.source})")
