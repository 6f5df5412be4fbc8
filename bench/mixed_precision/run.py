"""Harness of bench/mixed_precision: the vignette's MLP and the MNIST convnet in float32 and
mixed_bfloat16 (and mixed_float16 on a GPU), mirrored against PyTorch autocast in the same
run, plus the loss-scale overflow check on 1, 2 and 4 CPU replicas; writes the
mixed_precision_cpu (or _gpu) section of BENCHMARKS.md.

Each round runs every contender once, each in its own process, interleaved
(bench/harness.py); the same round seed goes to every contender, so float32 and bf16 start
from the same weights and data order. The table gives ms/step of epoch 2 (median, min, max),
the test accuracy after 2 epochs on the 10,000 bundled digits (median), the speed-up of each
policy over the same contender's float32 (a policy slower than float32 is listed under the
table, not hidden) and PyTorch / mirrored under the same policy. Timing runs must not overlap
a build:

    flock /tmp/mr-build.lock python3 bench/mixed_precision/run.py --n 3
"""

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
from harness import add_common_args, fmt, run_rounds, summarise  # noqa: E402
from report import cpu_info, git_commit, markers, write_section  # noqa: E402

MODELS = ["mlp", "cnn"]
ACC_POINTS = 0.5  # bf16's test accuracy must be within this many points of float32's


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    p.add_argument("--device", choices=["cpu", "gpu"], default="cpu",
                   help="gpu: on gpu:0 / cuda:0, adding mixed_float16 (tools/gpu-check.sh runs it)")
    p.add_argument("--models", default=",".join(MODELS), help="comma-separated subset of mlp,cnn")
    p.add_argument("--mirrored-cmd", default="Rscript bench/mixed_precision/mirrored.R",
                   help="command that runs mirrored's side and prints its JSON line (run in the repo root)")
    p.add_argument("--no-torch", action="store_true", help="run mirrored only")
    p.add_argument("--no-overflow", action="store_true", help="skip the loss-scale overflow check")
    args, _ = p.parse_known_args()
    return add_common_args(p, f"mixed_precision_{args.device}").parse_args()


def policies(device):
    """(mirrored policy, torch autocast) pairs."""
    out = [("float32", "none"), ("mixed_bfloat16", "bf16")]
    if device == "gpu":
        out.append(("mixed_float16", "f16"))
    return out


def contender_cmds(args):
    py = shlex.quote(args.python)
    gpu = args.device == "gpu"
    cmds = {}
    for model in (m.strip() for m in args.models.split(",")):
        if model not in MODELS:
            sys.exit(f"--models: unknown model '{model}' (expected some of {', '.join(MODELS)})")
        for policy, amp in policies(args.device):
            if not args.no_mirrored:
                cmds[f"mirrored {model} {policy}"] = (
                    f"{args.mirrored_cmd} --model {model} --policy {policy}"
                    + (" --device gpu:0" if gpu else ""))
            if not args.no_torch:
                cmds[f"torch {model} {amp}"] = (
                    f"{py} bench/mixed_precision/torch_amp.py --model {model} --amp {amp}"
                    + (" --device cuda" if gpu else ""))
    return cmds


def overflow_check(args):
    """The JSON lines of overflow.R (CPU replicas), or an error string."""
    proc = subprocess.run(["Rscript", "bench/mixed_precision/overflow.R"], cwd=REPO,
                          capture_output=True, text=True, timeout=args.timeout)
    recs = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not recs:
        tail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-3:]
        return f"exit {proc.returncode}: " + " | ".join(tail)
    return recs


def lowp_flags():
    """Whether the CPU has the bf16 instructions mixed_bfloat16 can use (AVX512-BF16, AMX)."""
    try:
        flags = next(ln for ln in open("/proc/cpuinfo") if ln.startswith("flags")).split()
    except (OSError, StopIteration):
        return "bf16 instructions unknown"
    has = lambda f: "yes" if f in flags else "no"  # noqa: E731
    return f"avx512_bf16 {has('avx512_bf16')}, amx_bf16 {has('amx_bf16')}"


def contender_policy(name):
    """('mirrored'|'torch', model, mirrored policy name) of a contender."""
    who, model, pol = name.split()
    pol = {"none": "float32", "bf16": "mixed_bfloat16", "f16": "mixed_float16"}.get(pol, pol)
    return who, model, pol


def paired_spread(lowp, f32):
    """The rounds' accuracy differences (same round seed, so the same initial weights and data
    order), against float32's own spread over the rounds' seeds: whether a gap is noise."""
    if len(lowp) != len(f32) or len(f32) < 2:
        return ""
    diff = [100 * (a["test_acc"] - b["test_acc"]) for a, b in zip(lowp, f32)]
    base = [100 * b["test_acc"] for b in f32]
    return (f"; per round (same seed) {', '.join(f'{d:+.2f}' for d in diff)}: mean {statistics.mean(diff):+.2f}"
            f" (sd {statistics.stdev(diff):.2f}); float32's own sd over the rounds' seeds"
            f" {statistics.stdev(base):.2f} points")


def render(args, names, results, failures, started, load_before, load_after, overflow):
    section = f"mixed_precision_{args.device}"
    begin, end = markers(section)
    model_name, cpus, avx512 = cpu_info()
    med = {n: summarise(r) for n, r in results.items() if r}
    test_acc = {n: sorted(x["test_acc"] for x in r)[len(r) // 2] for n, r in results.items() if r}
    by = {contender_policy(n): n for n in names}
    where = ("on the CPU with 2 threads, subnormals flushed to zero" if args.device == "cpu"
             else "on one GPU (mirrored gpu:0, PyTorch cuda:0, TF32 off)")
    lines = [
        begin, f"## {section}", "",
        "The vignette's MLP (784-256-256-10, batch 64, unscaled inputs) and keras3's MNIST convnet",
        "(bench/cnn_cpu, batch 128) trained for 2 epochs on the 10,000 bundled digits under each dtype",
        f"policy, {where}; mirrored with `config_set_dtype_policy()` (the last layer float32, as Keras'",
        "mixed precision guide advises), PyTorch with `torch.autocast` (float16 with a GradScaler), fused",
        f"Adam in both. ms/step of epoch 2: median (min–max) over {args.n} interleaved runs of each contender,",
        "each in its own process; test accuracy: the median over the runs, on the 10,000 test digits.",
        "vs float32: the contender's float32 ms/step / this one's (above 1: the policy is faster).",
        "torch / mirrored: PyTorch's ms/step under the same policy / mirrored's (above 1: mirrored is faster).",
        "",
        f"- machine: {model_name}, {cpus} CPUs, avx512f {'yes' if avx512 else 'no'}, {lowp_flags()}; load average"
        f" (1/5/15 min) before the runs {load_before}, after {load_after}",
        f"- date: {started.strftime('%Y-%m-%d %H:%M UTC')}; commit: {git_commit()}",
        "- command: `flock /tmp/mr-build.lock python3 "
        + " ".join(shlex.quote(a) for a in [os.path.relpath(sys.argv[0], REPO)] + sys.argv[1:]) + "`",
        "",
        "| model | contender | policy | ms/step epoch 2 median (min–max) | ms/step epoch 1 | test acc |"
        " vs float32 | torch / mirrored |",
        "|---|---|---|---|---|---|---|---|",
    ]
    slower, notes, verdicts = [], {}, []
    for name in names:
        who, model, pol = contender_policy(name)
        if name not in med:
            why = failures.get(name, ["not run"])[0]
            lines.append(f"| {model} | {who} | {pol} | failed: {why[:160].replace('|', '/')} | | | | |")
            continue
        s = med[name]
        f32 = by.get((who, model, "float32"))
        vs = s and f32 in med and med[f32]["median"] / s["median"]
        if vs and pol != "float32" and vs < 1:
            slower.append(f"{who} {model} {pol} ({vs:.2f}x of float32's speed)")
        other = by.get(("mirrored" if who == "torch" else "torch", model, pol))
        ratio = "—"
        if who == "mirrored" and other in med:
            ratio = fmt(med[other]["median"] / s["median"], 2)
        note = results[name][-1].get("note") or ""
        if note:
            notes[note] = True
        lines.append(
            f"| {model} | {who} | {pol} | {fmt(s['median'])} ({fmt(s['min'])}–{fmt(s['max'])}), n = {s['n']},"
            f" contention <= {100 * s['contention']:.0f}% | {fmt(s['epoch1'])} | {fmt(test_acc[name], 4)} |"
            f" {fmt(vs, 2) if vs else '—'} | {ratio} |")
        if who == "mirrored" and pol != "float32" and f32 in test_acc:
            pts = 100 * (test_acc[name] - test_acc[f32])
            ok = abs(pts) <= ACC_POINTS
            verdicts.append(f"- {model} {pol}: test accuracy {100 * test_acc[name]:.2f}% against float32's"
                            f" {100 * test_acc[f32]:.2f}% ({pts:+.2f} points): "
                            + (f"within {ACC_POINTS} points" if ok else f"NOT within {ACC_POINTS} points")
                            + paired_spread(results[name], results[f32]))
    lines.append("")
    lines.extend(verdicts or ["- accuracy: no mirrored mixed-precision run to compare"])
    lines.append("- slower than float32: " + ("; ".join(slower) if slower else "none"))
    for note in notes:
        lines.append(f"- mirrored's note at compile(): {note}")
    if overflow is not None:
        lines += ["", "Loss-scale overflow check (bench/mixed_precision/overflow.R, CPU replicas): a",
                  "`mixed_float16` MLP with `optimizer_loss_scale(dynamic_growth_steps = 10)`; the last replica",
                  "gets a non-finite gradient after the all-reduce of one step (the core's test hook); the",
                  "all-reduced flag must skip that step on every replica (the scale halves).", ""]
        if isinstance(overflow, str):
            lines.append(f"not run: {overflow[:300]}")
        else:
            lines += ["| replicas | overflow injected | steps skipped | scale after steps 1–12 | final scale |"
                      " max weight diff vs 1 replica | between its replicas |", "|---|---|---|---|---|---|---|"]
            for r in overflow:
                lines.append(f"| {r['replicas']} | replica {r['injected_replica']}, step {r['injected_at']} |"
                             f" {', '.join(str(k) for k in r['skipped_steps']) or 'none'} |"
                             f" {', '.join(f'{v:.3g}' for v in r['first_scales'])} | {r['final_scale']:.6g} |"
                             f" {r['max_weight_diff_vs_1']:.3g} | {r['max_weight_diff_between_replicas']:.3g} |")
            same = len({tuple(r["skipped_steps"]) for r in overflow}) == 1
            lines += ["", "every replica count skipped the same steps: " + ("yes" if same else "NO")]
    lines.append(end)
    return "\n".join(lines) + "\n"


def main():
    args = parse_args()
    names, results, failures, started, load_before, load_after = run_rounds(args, contender_cmds(args))
    names = [n for n in names if len(n.split()) == 3]  # run_rounds adds a bare "mirrored" for --no-mirrored
    overflow = None
    if not args.no_overflow and not args.no_mirrored and args.device == "cpu":
        overflow = overflow_check(args)
    section = render(args, names, results, failures, started, load_before, load_after, overflow)
    print(section)
    if not args.no_write:
        write_section(args.output, f"mixed_precision_{args.device}", section)
        print(f"wrote the mixed_precision_{args.device} section of {args.output}", file=sys.stderr)
    return 0 if any(results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
