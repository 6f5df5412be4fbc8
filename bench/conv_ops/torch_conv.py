# PyTorch's timing of the same two convolutions as conv_ops.cpp (batch 128,
# 2 threads): forward with bias, backward-data, backward-filter with the bias
# gradient (aten.convolution_backward with one output at a time), in NCHW
# and in channels_last. Prints rows of the table conv_ops.cpp prints.
import time

import torch

torch.set_num_threads(2)
torch.manual_seed(0)


def median_ms(fn, reps=30):
    fn()
    fn()
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        t.append((time.perf_counter() - t0) * 1e3)
    t.sort()
    return t[len(t) // 2]


def bench(h, c, f, channels_last):
    x = torch.randn(128, c, h, h)
    w = torch.randn(f, c, 3, 3) * 0.1
    b = torch.randn(f)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
        w = w.contiguous(memory_format=torch.channels_last)
    y = torch.nn.functional.conv2d(x, w, b)
    dy = torch.randn_like(y)
    args = (dy, x, w, [f], [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
    fwd = median_ms(lambda: torch.nn.functional.conv2d(x, w, b))
    bwd = median_ms(lambda: torch.ops.aten.convolution_backward(*args, [True, False, False]))
    bwf = median_ms(lambda: torch.ops.aten.convolution_backward(*args, [False, True, True]))
    fmt = "channels_last" if channels_last else "NCHW"
    print(f"| PyTorch {torch.__version__} ({fmt}) | {h}x{h}x{c} -> {f} | {fwd:.2f} | {bwd:.2f} | {bwf:.2f} |")


with torch.no_grad():
    for h, c, f in ((28, 1, 32), (13, 32, 64)):
        for cl in (False, True):
            bench(h, c, f, cl)
