#!/usr/bin/env python3
"""PyTorch DDP (gloo, CPU) training steps of the seeds' FFN or LeNet5: the yardstick of
benchmarks/ddp_compare.sh.

  /usr/bin/python3 benchmarks/ddp_torch.py ffn --ranks 2 --batch 32 --steps 200

Starts --ranks processes (torch.multiprocessing, one thread each), wraps the model in
DistributedDataParallel (gloo, default 25 MB buckets), trains --steps steps of global batch
--batch (batch / ranks per rank) on synthetic batches of MNIST's shapes with Momentum SGD, and
prints rank 0's mean step time over the steps after --warmup as "ddp <model>: X ms/step".
"""
import argparse
import os
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from torch import nn  # noqa: E402


def ffn():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                         nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))


def lenet5():
    return nn.Sequential(nn.Conv2d(1, 6, 5, bias=False), nn.ReLU(), nn.MaxPool2d(2, 2),
                         nn.Conv2d(6, 16, 5, bias=False), nn.ReLU(), nn.MaxPool2d(2, 2), nn.Flatten(),
                         nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))


def worker(rank, args):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}", rank=rank,
                            world_size=args.ranks)
    torch.manual_seed(1)
    model = nn.parallel.DistributedDataParallel(ffn() if args.model == "ffn" else lenet5())
    opt = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.1)
    loss_fn = nn.CrossEntropyLoss()
    local = args.batch // args.ranks
    side = 28 if args.model == "ffn" else 32
    g = torch.Generator().manual_seed(rank)
    xs = [torch.randn(local, 1, side, side, generator=g) for _ in range(8)]
    ys = [torch.randint(0, 10, (local,), generator=g) for _ in range(8)]
    start = 0.0
    for step in range(args.warmup + args.steps):
        if step == args.warmup:
            dist.barrier()
            start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(xs[step % 8]), ys[step % 8])
        loss.backward()
        opt.step()
    dist.barrier()
    seconds = time.perf_counter() - start
    if rank == 0:
        print(f"ddp {args.model}: {1e3 * seconds / args.steps:.3f} ms/step "
              f"({args.ranks} ranks, global batch {args.batch}, torch {torch.__version__})", flush=True)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", choices=["ffn", "lenet5"])
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--port", type=int, default=29517)
    args = p.parse_args()
    mp.spawn(worker, args=(args,), nprocs=args.ranks, join=True)


if __name__ == "__main__":
    main()
