"""Data parallelism across the processes of one segment (``torchrun --nproc_per_node N``).

Each rank samples the rollouts of its share of the iteration's prompts; the rollouts are
gathered so that every rank holds the whole table (advantages and V̂ need whole groups, and a
group never spans ranks: prompts are what is sharded). Each rank then trains on its share of
every minibatch, and DeepSpeed averages the gradients; ``loss_scale`` makes that average the
single-process gradient. Rank 0 writes every file, under a barrier.

With one process (the default, and every CPU run of the embedded config) none of this does
anything: no collective is called and the outputs are byte for byte those of a plain run.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import torch
import torch.distributed as dist

from mintrl.io import atomic_path, commit, discard, tmp_name


def extensions_dir(prefix: str = sys.prefix) -> str:
    """Where DeepSpeed JIT-builds its C++ ops (the CPU allreduce's shared-memory op) for the
    Python environment at ``prefix``. torch's default is one folder per Python version, so two
    environments on one machine (a venv and the system Python) rebuild one .so over each
    other, and a rank that loads it mid-rebuild aborts."""
    cache = os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache"))
    key = hashlib.sha1(os.path.realpath(prefix).encode()).hexdigest()[:12]
    return os.path.join(cache, "torch_extensions", f"mintrl-{key}")


def load_shared_memory_op(directory: str | None = None) -> None:
    """Build or load DeepSpeed's CPU shared-memory allreduce op once per process, before
    ``deepspeed.init_distributed`` asks for it.

    torch's JIT build guards a build with a bare ``lock`` file that only its builder removes:
    a build killed midway (a Snakemake job cancelled, a Ctrl-C) leaves it, and every later
    process waits on it forever. Here the build runs under an ``fcntl`` lock on
    ``<directory>/mintrl.lock``, which the kernel drops when its holder dies; holding it, a
    leftover ``lock`` file can only be a dead builder's and is removed. DeepSpeed caches the
    loaded op per process, so its own call later returns it without touching the files; the
    lock is released before any process group is made (ranks wait on each other there).
    """
    import fcntl

    from deepspeed.comm.torch import build_shm_op

    directory = directory or os.environ.get("TORCH_EXTENSIONS_DIR") or extensions_dir()
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "mintrl.lock"), "w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        try:
            for stale in Path(directory).glob("*/lock"):
                stale.unlink(missing_ok=True)
            build_shm_op()
        finally:
            fcntl.flock(guard, fcntl.LOCK_UN)


def world() -> int:
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def rank() -> int:
    return dist.get_rank() if world() > 1 else 0


def is_main() -> bool:
    return rank() == 0


def barrier() -> None:
    if world() > 1:
        dist.barrier()


def shard(items: list, r: int | None = None, n: int | None = None) -> list:
    """This rank's share: items r, r + n, r + 2n, ... (balanced to within one)."""
    r, n = rank() if r is None else r, world() if n is None else n
    return items[r::n]


def loss_scale() -> float:
    """DeepSpeed averages gradients over ranks; each rank's loss is a share of the
    minibatch's (normalised by the whole minibatch), so it is scaled by the world size."""
    return float(world())


def gather_objects(obj) -> list:
    """Every rank's ``obj`` in rank order (on every rank)."""
    if world() == 1:
        return [obj]
    out = [None] * world()
    dist.all_gather_object(out, obj)
    return out


def sum_floats(values: list[float], device: str = "cpu") -> list[float]:
    """Element-wise sum over ranks (float64)."""
    if world() == 1:
        return list(values)
    t = torch.tensor(values, dtype=torch.float64,
                     device=device if str(device).startswith("cuda") else "cpu")
    dist.all_reduce(t)
    return t.tolist()


def sum_tensor(t: torch.Tensor) -> torch.Tensor:
    """Element-wise sum over ranks of a tensor (returned on the tensor's device)."""
    if world() == 1:
        return t
    t = t.clone()
    dist.all_reduce(t)
    return t


@contextlib.contextmanager
def shared_atomic_path(path: str | Path) -> Iterator[Path]:
    """``io.atomic_path`` for a folder every rank writes into (a DeepSpeed checkpoint: each
    rank saves its own shards): rank 0 names the temporary, and moves it into place once
    every rank is done."""
    path = Path(path)
    if world() == 1:
        with atomic_path(path) as tmp:
            yield tmp
        return
    if is_main():
        path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(gather_objects(str(tmp_name(path)) if is_main() else None)[0])
    try:
        yield tmp
        barrier()
        if is_main():
            commit(tmp, path)
    finally:
        barrier()
        if is_main():
            discard(tmp)
