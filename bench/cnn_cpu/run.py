"""Harness of bench/cnn_cpu: keras3's MNIST convnet on the CPU, mirrored against PyTorch
(channels_last and NCHW, fused Adam) and Keras 3 / TensorFlow in the same run; writes the
cnn_cpu section of BENCHMARKS.md.

Each round runs every contender once, each in its own process, interleaved (bench/harness.py).
The table gives ms/step of epoch 2 (median, min, max over the rounds), the ratio peer /
mirrored, and the share of the machine's FMA ceiling (build/bench_gemm's FMA loop on 2
threads) that the step's convolution arithmetic reaches: conv FLOPs per step / step time /
ceiling (the step also runs pooling, the dense layer, the loss and Adam, so this is a lower
bound of the convolutions' own share). Timing runs must not overlap a build:

    flock /tmp/mr-build.lock python3 bench/cnn_cpu/run.py --n 5
"""

import argparse
import os
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import common_cnn as cc  # noqa: E402
from harness import add_common_args, fmt, mode_lines, peer_problems, run_rounds, summarise  # noqa: E402
from report import cpu_info, git_commit, markers, write_section  # noqa: E402

PEERS = ["torch-channels_last", "torch-nchw", "keras"]
GOAL_FACTOR = 1.5


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mirrored-cmd", default="Rscript bench/cnn_cpu/mirrored.R",
                   help="command that runs mirrored's side and prints its JSON line (run in the repo root)")
    p.add_argument("--peers", default=None, help=f"comma-separated subset of {','.join(PEERS)}")
    p.add_argument("--device", choices=["cpu", "gpu"], default="cpu",
                   help="gpu: the same model on cuda:0 / gpu:0 against PyTorch (bench/cnn_gpu)")
    p.add_argument("--gemm-bench", default=os.path.join(REPO, "build", "bench_gemm"),
                   help="binary whose 'FMA ceiling:' line gives the ceiling (make core builds it)")
    args, _ = p.parse_known_args()
    return add_common_args(p, f"cnn_{args.device}").parse_args()


def contender_cmds(args):
    py = shlex.quote(args.python)
    gpu = args.device == "gpu"
    cmds = {} if args.no_mirrored else {"mirrored": args.mirrored_cmd + (" --device gpu:0" if gpu else "")}
    dev = " --device cuda" if gpu else ""
    table = {
        "torch-channels_last": f"{py} bench/cnn_cpu/peer_torch.py --format channels_last{dev}",
        "torch-nchw": f"{py} bench/cnn_cpu/peer_torch.py --format nchw{dev}",
    }
    if not gpu:  # the GPU machine has PyTorch only
        table["keras"] = f"{py} bench/cnn_cpu/peer_keras.py"
    for name in (n.strip() for n in (args.peers or ",".join(table)).split(",")):
        if name not in table:
            sys.exit(f"--peers: unknown peer '{name}' (expected some of {', '.join(PEERS)})")
        cmds[name] = table[name]
    return cmds


def fma_ceiling(binary):
    """(1-thread, 2-thread) GFLOP/s of bench_gemm's FMA loop, or None."""
    if not os.path.exists(binary):
        return None
    out = subprocess.run([binary, "2"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("FMA ceiling:"):
            parts = line.split()
            return float(parts[4]), float(parts[8])
    return None


def render(args, names, results, failures, started, load_before, load_after, ceiling):
    if args.device == "gpu":
        return render_gpu(args, names, results, failures, started)
    section = args.section if args.section != "cnn_gpu" else "cnn_cpu"
    begin, end = markers(section)
    model, cpus, avx512 = cpu_info()
    flops = cc.conv_flops()
    conv_gflop = sum(flops.values()) / 1e9
    mirrored = results.get("mirrored")
    m_med = summarise(mirrored)["median"] if mirrored else None
    ceil_txt = (f"{ceiling[0]:.1f} GFLOP/s on 1 thread, {ceiling[1]:.1f} on 2" if ceiling
                else "not measured (build/bench_gemm missing)")
    lines = [
        begin,
        f"## {section}",
        "",
        "keras3's \"Simple MNIST convnet\" (Conv2D 32 3x3 relu, MaxPool 2, Conv2D 64 3x3 relu, MaxPool 2,",
        "Flatten, Dropout 0.5, Dense 10 softmax; categorical cross-entropy; Adam lr 1e-3 eps 1e-7),",
        "batch 128, inputs scaled to 0..1, 2 epochs on the 10,000 bundled digits (79 steps per",
        "epoch), on the CPU with 2 threads and subnormals flushed to zero; PyTorch with fused Adam in",
        "channels_last (NHWC) and NCHW memory formats. ms/step is the wall time of epoch 2 over its",
        f"79 steps; median, min and max over {args.n} runs of each contender, each in its own process,",
        "interleaved round by round. Ratio = peer / mirrored (above 1: mirrored is faster). Conv share:",
        f"the convolutions' arithmetic ({conv_gflop:.3f} GFLOP per step: forward, filter gradients and",
        "the second conv's data gradient) divided by the step time and by the 2-thread FMA ceiling",
        f"({ceil_txt}): a lower bound of the convolutions' own share, since the step's time includes",
        "everything else.",
        "",
        f"- machine: {model}, {cpus} CPUs, avx512f {'yes' if avx512 else 'no'}; load average"
        f" (1/5/15 min) before the runs {load_before}, after {load_after}",
        f"- date: {started.strftime('%Y-%m-%d %H:%M UTC')}; commit: {git_commit()}",
        "- command: `flock /tmp/mr-build.lock python3 "
        + " ".join(shlex.quote(a) for a in [os.path.relpath(sys.argv[0], REPO)] + sys.argv[1:]) + "`",
        "",
        "| contender | version | math library | threads | FTZ | ms/step epoch 2 median (min–max) |"
        " ms/step epoch 1 | conv share of ceiling | final loss / acc | ratio |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    fastest = None
    for name in names:
        runs = results.get(name)
        if not runs:
            why = failures.get(name, ["not run"])[0]
            status = "not run" if name == "mirrored" else "failed"
            lines.append(f"| {name} | {status}: {why[:160].replace('|', '/')} | | | | | | | | |")
            continue
        s = summarise(runs)
        rec = runs[-1]
        problems = [] if name == "mirrored" else [p for p in peer_problems(name, rec)
                                                   if p != "reference/unknown BLAS"]
        label = name + (f" (no peer: {', '.join(problems)})" if problems else "")
        ratio = fmt(s["median"] / m_med, 2) if (m_med and name != "mirrored") else "—"
        share = (f"{100 * conv_gflop / (s['median'] / 1000) / ceiling[1]:.1f}%" if ceiling else "—")
        if name != "mirrored" and not problems and (fastest is None or s["median"] < fastest[1]):
            fastest = (name, s["median"])
        lines.append(
            f"| {label} | {rec.get('version', '?')} | {str(rec.get('blas', '?')).replace('|', '/')} |"
            f" {rec.get('threads', '?')} | {'yes' if rec.get('ftz') else 'no'} |"
            f" {fmt(s['median'])} ({fmt(s['min'])}–{fmt(s['max'])}), n = {s['n']},"
            f" contention <= {100 * s['contention']:.0f}% | {fmt(s['epoch1'])} | {share} |"
            f" {fmt(s['loss'], 4)} / {fmt(s['acc'], 4)} | {ratio} |"
        )
    lines.append("")
    goal = (f"due: mirrored at least as fast as the fastest peer; goal: {GOAL_FACTOR:g}x faster")
    if fastest is None:
        lines.append(f"{goal} — no valid peer ran.")
    elif not m_med:
        lines.append(f"{goal} — mirrored not run; the fastest peer is {fastest[0]} at {fmt(fastest[1])} ms/step.")
    else:
        speedup = fastest[1] / m_med
        verdict = ("goal met" if speedup >= GOAL_FACTOR else "due met, goal not met" if speedup >= 1
                   else "not met")
        lines.append(
            f"{goal} — {verdict}: mirrored {fmt(m_med)} ms/step is {speedup:.2f}x the speed of the fastest"
            f" peer ({fastest[0]}, {fmt(fastest[1])} ms/step)."
        )
    lines += mode_lines(names, results)
    lines.append(end)
    return "\n".join(lines) + "\n"


def render_gpu(args, names, results, failures, started):
    """The cnn_gpu section: ms/step on cuda:0, mirrored against PyTorch (FP32, TF32 off)."""
    begin, end = markers("cnn_gpu")
    mirrored = results.get("mirrored")
    m_med = summarise(mirrored)["median"] if mirrored else None
    device = next((r[-1].get("blas", "") for n, r in results.items() if r and n != "mirrored"), "")
    lines = [begin, "## cnn_gpu", "",
             "The cnn_cpu model on one GPU (mirrored: `gpu:0`; PyTorch: cuda:0, fused Adam, cuDNN benchmark",
             "mode, TF32 off in both), batch 128, ms/step of epoch 2, median (min–max) over"
             f" {args.n} interleaved runs.", "",
             f"- device: {device}; date: {started.strftime('%Y-%m-%d %H:%M UTC')}; commit: {git_commit()}", "",
             "| contender | ms/step epoch 2 median (min–max) | ms/step epoch 1 | final loss / acc | ratio |",
             "|---|---|---|---|---|"]
    for name in names:
        runs = results.get(name)
        if not runs:
            lines.append(f"| {name} | not run: {failures.get(name, ['?'])[0][:160].replace('|', '/')} | | | |")
            continue
        s = summarise(runs)
        ratio = fmt(s["median"] / m_med, 2) if (m_med and name != "mirrored") else "—"
        lines.append(f"| {name} | {fmt(s['median'])} ({fmt(s['min'])}–{fmt(s['max'])}), n = {s['n']} |"
                     f" {fmt(s['epoch1'])} | {fmt(s['loss'], 4)} / {fmt(s['acc'], 4)} | {ratio} |")
    lines.append(end)
    return "\n".join(lines) + "\n"


def main():
    args = parse_args()
    ceiling = fma_ceiling(args.gemm_bench) if args.device == "cpu" else None
    names, results, failures, started, load_before, load_after = run_rounds(args, contender_cmds(args))
    section = render(args, names, results, failures, started, load_before, load_after, ceiling)
    print(section)
    if not args.no_write:
        name = args.section if args.device == "cpu" else "cnn_gpu"
        write_section(args.output, name, section)
        print(f"wrote the {name} section of {args.output}", file=sys.stderr)
    return 0 if any(results.get(n) for n in names if n != "mirrored") else 1


if __name__ == "__main__":
    sys.exit(main())
