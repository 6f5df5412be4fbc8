"""Harness of bench/mlp_cpu: runs mirrored and its peers interleaved, writes BENCHMARKS.md.

Each round runs every contender once, each in its own process (mirrored, torch, keras,
keras-xla, mirrored, torch, ...), so a slow phase of the machine hits all of them alike. Every
contender prints one JSON line (common.emit's format); the harness takes the median, min and
max of ms/step of epoch 2 over the rounds, the ratios peer / mirrored, and rewrites the
`mlp_cpu` section of BENCHMARKS.md between its markers. Timing runs must not overlap a build:

    flock /tmp/mr-build.lock python3 bench/mlp_cpu/run.py --n 5

A mirrored command that is missing or fails leaves mirrored "not run"; the peers still run.
"""

import argparse
import os
import shlex
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
from harness import add_common_args, fmt, mode_lines, peer_problems, run_rounds, summarise  # noqa: E402
from report import cpu_info, git_commit, markers, write_section  # noqa: E402

PEERS = ["torch", "torch-fused", "keras", "keras-xla"]
GOAL_FACTOR = 2.0
CUSTOM = "mirrored-custom-loss"
CUSTOM_BUDGET = 1.10  # issue 15: within 10% of the built-in loss


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "--mirrored-cmd",
        default="Rscript bench/mlp_cpu/mirrored.R",
        help="command that runs mirrored's side and prints its JSON line (run in the repo root)",
    )
    p.add_argument("--peers", default=",".join(PEERS), help=f"comma-separated subset of {','.join(PEERS)}")
    return add_common_args(p, "mlp_cpu").parse_args()


def contender_cmds(args):
    py = shlex.quote(args.python)
    cmds = {}
    if not args.no_mirrored:
        cmds["mirrored"] = args.mirrored_cmd
        # The same model with the vignette's loss written as an op_* function
        # (issue 15): the traced graph runs in the core, as the built-in does.
        cmds[CUSTOM] = args.mirrored_cmd + " --custom-loss"
    table = {
        "torch": f"{py} bench/mlp_cpu/peer_torch.py",
        "torch-fused": f"{py} bench/mlp_cpu/peer_torch.py --adam fused",
        "keras": f"{py} bench/mlp_cpu/peer_keras.py",
        "keras-xla": f"{py} bench/mlp_cpu/peer_keras.py --jit",
    }
    for name in args.peers.split(","):
        name = name.strip()
        if name not in table:
            sys.exit(f"--peers: unknown peer '{name}' (expected some of {', '.join(PEERS)})")
        cmds[name] = table[name]
    return cmds


def render(args, names, results, failures, started, load_before, load_after):
    BEGIN, END = markers(args.section)
    model, cpus, avx512 = cpu_info()
    mirrored = results.get("mirrored")
    m_med = summarise(mirrored)["median"] if mirrored else None
    lines = [
        BEGIN,
        f"## {args.section}",
        "",
        "The vignette's model (784-256-256-10, relu, Adam lr 1e-3 eps 1e-7, sparse CE from logits,",
        "Keras' default init), batch 64, unscaled 0..255 inputs, 2 epochs on `sample10k` (10,000",
        "digits, 157 steps per epoch, the last of 16), shuffled each epoch, on the CPU with 2 threads",
        "and subnormals flushed to zero. ms/step is the wall time of epoch 2 (epoch 1 includes",
        f"tracing and warm-up) over its 157 steps; median, min and max over {args.n} runs of each",
        "contender, each in its own process, interleaved round by round. Ratio = peer / mirrored",
        "(above 1: mirrored is faster). Extra rows: torch-fused is torch with",
        "`Adam(fused=True)` (the plain torch row uses torch's default, the per-tensor loop on the CPU);",
        "keras-xla is `compile(jit_compile = TRUE)` (the vignette sets FALSE). FTZ is checked, not",
        "assumed: each contender reports whether an op on subnormal inputs, run on its compute",
        "threads, gives zeros (torch: `set_flush_denormal(True)`; TensorFlow flushes on its own).",
        "Contention: CPU time other processes used during a run, as a share of the machine; a run",
        f"above {100 * args.max_contention:.0f}% is redone (up to {args.retries} times), and the table gives the",
        "largest share among the runs kept.",
        "",
        f"- machine: {model}, {cpus} CPUs, avx512f {'yes' if avx512 else 'no'}; load average"
        f" (1/5/15 min) before the runs {load_before}, after {load_after}",
        f"- date: {started.strftime('%Y-%m-%d %H:%M UTC')}; commit: {git_commit()}",
        "- command: `flock /tmp/mr-build.lock python3 "
        + " ".join(shlex.quote(a) for a in [os.path.relpath(sys.argv[0], REPO)] + sys.argv[1:])
        + "`",
        "",
        "| contender | version | math library | threads | FTZ | ms/step epoch 2 median (min–max) |"
        " ms/step epoch 1 | final loss / acc | ratio |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    fastest = None
    for name in names:
        runs = results.get(name)
        if not runs:
            why = failures.get(name, ["not run"])[0]
            status = "not run" if name == "mirrored" else "failed"
            lines.append(f"| {name} | {status}: {why[:160].replace('|', '/')} | | | | | | | |")
            continue
        s = summarise(runs)
        rec = runs[-1]
        ours = name in ("mirrored", CUSTOM)
        problems = [] if ours else peer_problems(name, rec)
        label = name + (f" (no peer: {', '.join(problems)})" if problems else "")
        ratio = fmt(s["median"] / m_med, 2) if (m_med and name != "mirrored") else "—"
        if not ours and not problems and (fastest is None or s["median"] < fastest[1]):
            fastest = (name, s["median"])
        lines.append(
            f"| {label} | {rec.get('version', '?')} | {str(rec.get('blas', '?')).replace('|', '/')} |"
            f" {rec.get('threads', '?')} | {'yes' if rec.get('ftz') else 'no'} |"
            f" {fmt(s['median'])} ({fmt(s['min'])}–{fmt(s['max'])}), n = {s['n']},"
            f" contention <= {100 * s['contention']:.0f}% |"
            f" {fmt(s['epoch1'])} | {fmt(s['loss'], 4)} / {fmt(s['acc'], 4)} | {ratio} |"
        )
    lines.append("")
    goal = f"goal: mirrored >= {GOAL_FACTOR:g}x faster than the fastest peer"
    if fastest is None:
        lines.append(f"{goal} — no valid peer ran.")
    elif not m_med:
        lines.append(
            f"{goal} — mirrored not run; the fastest peer is {fastest[0]} at {fmt(fastest[1])} ms/step,"
            f" so the target is <= {fmt(fastest[1] / GOAL_FACTOR)} ms/step."
        )
    else:
        speedup = fastest[1] / m_med
        verdict = "met" if speedup >= GOAL_FACTOR else "not met"
        lines.append(
            f"{goal} — {verdict}: mirrored {fmt(m_med)} ms/step is {speedup:.2f}x faster than the fastest peer"
            f" ({fastest[0]}, {fmt(fastest[1])} ms/step); target <= {fmt(fastest[1] / GOAL_FACTOR)} ms/step."
        )
    custom = results.get(CUSTOM)
    if custom and m_med:
        c_med = summarise(custom)["median"]
        verdict = "met" if c_med <= CUSTOM_BUDGET * m_med else "not met"
        lines.append("")
        lines.append(
            f"custom loss (the sparse cross-entropy written with `op_log_softmax()` and `op_take_along_axis()`):"
            f" {fmt(c_med)} ms/step, {c_med / m_med:.3f}x the built-in loss's {fmt(m_med)} —"
            f" goal <= {CUSTOM_BUDGET:.2f}x {verdict}."
        )
    lines += mode_lines(names, results)
    lines.append(END)
    return "\n".join(lines) + "\n"


def main():
    args = parse_args()
    cmds = contender_cmds(args)
    names, results, failures, started, load_before, load_after = run_rounds(args, cmds)
    section = render(args, names, results, failures, started, load_before, load_after)
    print(section)
    if not args.no_write:
        write_section(args.output, args.section, section)
        print(f"wrote the {args.section} section of {args.output}", file=sys.stderr)
    valid_peers = [n for n in names if n != "mirrored" and results.get(n)]
    return 0 if valid_peers else 1


if __name__ == "__main__":
    sys.exit(main())
