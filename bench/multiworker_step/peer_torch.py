"""PyTorch DistributedDataParallel on the gloo backend, the same MLP and data
sizes as mirrored.R: 2 processes of 1 thread, global batch 64 (32 each), Adam;
prints ms/step of epochs 2-4 (the slowest process)."""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank, world, port, out):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    torch.manual_seed(2)
    model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Dropout(0.2),
                                torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(ddp.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(1)
    x = torch.rand(6400, 784, generator=g)
    y = torch.randint(0, 10, (6400,), generator=g)
    per = 64 // world

    def epoch():
        for s in range(100):
            lo = s * 64 + rank * per
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(ddp(x[lo:lo + per]), y[lo:lo + per])
            loss.backward()
            opt.step()

    epoch()
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(3):
        epoch()
    dist.barrier()
    out[rank] = 1000 * (time.perf_counter() - t0) / 300
    dist.destroy_process_group()


def main():
    world = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 29611
    out = mp.Manager().dict()
    mp.spawn(worker, args=(world, port, out), nprocs=world, join=True)
    print(f"{max(out.values()):.4f}")


if __name__ == "__main__":
    main()
