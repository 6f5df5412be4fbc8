#!/usr/bin/env python3
"""The PyTorch peer of bench/allreduce_multiworker: torch.distributed's Gloo
backend between N processes on loopback, all_reduce (sum) of float32 tensors
of 4 KB .. 64 MB in x4 steps, with the timing rule of
src/mr/tests/bench_allreduce_multiworker.cpp: 2 untimed calls, then `reps`
timed ones (reps / 4, at least 3, from 16 MB on), each after a barrier; a
call's time is that of its slowest rank; the figure is the median of those.

    python3 bench/allreduce_multiworker/peer_torch.py [--reps 20] [--ranks 2,3]

Prints "engine ranks bytes median_us algbw_GBps busbw_GBps" lines, engine
"torch", like the C++ benchmark.
"""
import argparse
import os
import socket
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

MIN_BYTES, MAX_BYTES, WARMUP = 4096, 64 << 20, 2


def iterations(nbytes, reps):
    return max(3, reps // 4) if nbytes >= 16 << 20 else reps


def sizes():
    b = MIN_BYTES
    while b <= MAX_BYTES:
        yield b
        b *= 4


def free_port():
    # torch's tcp:// rendezvous needs the port up front: ask the kernel for a
    # free one (a tiny window remains in which another process could take it).
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(rank, ranks, reps, port):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=ranks)
    for nbytes in sizes():
        iters = iterations(nbytes, reps)
        buf = torch.ones(nbytes // 4, dtype=torch.float32)
        mine = torch.zeros(iters, dtype=torch.float64)
        for it in range(-WARMUP, iters):
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(buf, op=dist.ReduceOp.SUM)  # synchronous on the CPU
            s = time.perf_counter() - t0
            if it >= 0:
                mine[it] = s
        every = [torch.zeros(iters, dtype=torch.float64) for _ in range(ranks)]
        dist.all_gather(every, mine)
        if rank == 0:
            worst = torch.stack(every).max(dim=0).values.tolist()
            med = sorted(worst)[len(worst) // 2]  # the C++ benchmark's (upper) median
            algbw = nbytes / med / 1e9
            print(f"{'torch':<8} {ranks:5d} {nbytes:10d} {med * 1e6:12.1f} {algbw:10.3f} "
                  f"{algbw * 2 * (ranks - 1) / ranks:10.3f}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--ranks", default="2,3")
    a = ap.parse_args()
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")  # loopback, as the C++ benchmark binds
    print(f"{'engine':<8} {'ranks':>5} {'bytes':>10} {'median_us':>12} {'algbw_GBps':>10} {'busbw_GBps':>10}",
          flush=True)
    for ranks in (int(r) for r in a.ranks.split(",")):
        mp.spawn(worker, args=(ranks, a.reps, free_port()), nprocs=ranks, join=True)


if __name__ == "__main__":
    main()
