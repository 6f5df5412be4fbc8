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
import datetime
import json
import os
import platform
import resource
import shlex
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
from report import cpu_info, git_commit, markers, write_section  # noqa: E402

BEGIN, END = markers("mlp_cpu")
PEERS = ["torch", "torch-fused", "keras", "keras-xla"]
GOAL_FACTOR = 2.0


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=5, help="rounds (runs of each contender); default 5")
    p.add_argument(
        "--mirrored-cmd",
        default="Rscript bench/mlp_cpu/mirrored.R",
        help="command that runs mirrored's side and prints its JSON line (run in the repo root)",
    )
    p.add_argument("--no-mirrored", action="store_true", help="run the peers only")
    p.add_argument("--peers", default=",".join(PEERS), help=f"comma-separated subset of {','.join(PEERS)}")
    p.add_argument("--python", default=sys.executable, help="python that has torch / tensorflow / keras")
    p.add_argument("--timeout", type=float, default=900, help="seconds allowed to one run")
    p.add_argument(
        "--max-contention",
        type=float,
        default=0.05,
        help="a run during which other processes used more than this share of the CPUs is redone",
    )
    p.add_argument("--retries", type=int, default=3, help="redos of a contended run (then it is kept, flagged)")
    p.add_argument("--output", default=os.path.join(REPO, "BENCHMARKS.md"), help="file to update")
    p.add_argument("--no-write", action="store_true", help="print the section, leave BENCHMARKS.md alone")
    p.add_argument(
        "--raw", default=os.path.join(REPO, "bench", "out", "mlp_cpu-runs.jsonl"), help="every run's JSON line goes here"
    )
    return p.parse_args()


def contender_cmds(args):
    py = shlex.quote(args.python)
    cmds = {}
    if not args.no_mirrored:
        cmds["mirrored"] = args.mirrored_cmd
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


def busy_cpu_seconds():
    """CPU seconds all processes have spent busy (not idle or iowait), from /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal [guest guest_nice, already in user/nice]
    busy = sum(fields[:8]) - fields[3] - fields[4]
    return busy / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run_once(cmd, timeout, seed):
    """Run one contender; return (record, None) or (None, reason). The record gets
    'contention': the CPU time other processes used during the run, as a fraction of the
    machine's capacity over its wall time (0 = the machine was ours alone)."""
    full = f"{cmd} --seed {seed}"
    busy0, own0, t0 = busy_cpu_seconds(), children_cpu_seconds(), time.perf_counter()
    try:
        proc = subprocess.run(full, shell=True, cwd=REPO, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout:.0f} s"
    wall = time.perf_counter() - t0
    others = (busy_cpu_seconds() - busy0) - (children_cpu_seconds() - own0)
    contention = max(0.0, others / (wall * (os.cpu_count() or 1)))
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-3:]
        return None, f"exit {proc.returncode}: " + " | ".join(tail)
    try:
        rec = json.loads(lines[-1])
    except json.JSONDecodeError as e:
        return None, f"bad JSON line ({e}): {lines[-1][:200]}"
    if not isinstance(rec.get("ms_per_step_epoch2"), (int, float)):
        return None, f"no ms_per_step_epoch2 in {lines[-1][:200]}"
    rec["contention"] = round(contention, 4)
    rec["process_s"] = round(wall, 3)
    return rec, None


def peer_problems(name, rec):
    """Reasons a contender's runs cannot stand as a peer (the issue's rules)."""
    out = []
    if not rec.get("ftz"):
        out.append("subnormals not flushed")
    blas = str(rec.get("blas", "")).lower()
    if name == "torch" and ("blas_info=generic" in blas or "reference" in blas or "blas_info" not in blas):
        out.append("reference/unknown BLAS")
    if rec.get("threads") != 2:
        out.append(f"threads = {rec.get('threads')}")
    return out


def median_of(runs, key):
    vals = [r[key] for r in runs if isinstance(r.get(key), (int, float))]
    return statistics.median(vals) if vals else None


def summarise(runs):
    ms2 = [r["ms_per_step_epoch2"] for r in runs]
    ms1 = [r["ms_per_step_epoch1"] for r in runs if isinstance(r.get("ms_per_step_epoch1"), (int, float))]
    return {
        "median": statistics.median(ms2),
        "min": min(ms2),
        "max": max(ms2),
        "epoch1": statistics.median(ms1) if ms1 else None,
        "loss": median_of(runs, "final_loss"),
        "acc": median_of(runs, "final_acc"),
        "n": len(runs),
        "contention": max(r.get("contention", 0.0) for r in runs),
    }


def fmt(x, digits=3):
    return "—" if x is None else f"{x:.{digits}f}"


def render(args, names, results, failures, started, load_before, load_after):
    model, cpus, avx512 = cpu_info()
    mirrored = results.get("mirrored")
    m_med = summarise(mirrored)["median"] if mirrored else None
    lines = [
        BEGIN,
        "## mlp_cpu",
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
        problems = [] if name == "mirrored" else peer_problems(name, rec)
        label = name + (f" (no peer: {', '.join(problems)})" if problems else "")
        ratio = fmt(s["median"] / m_med, 2) if (m_med and name != "mirrored") else "—"
        if name != "mirrored" and not problems and (fastest is None or s["median"] < fastest[1]):
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
    lines.append(END)
    return "\n".join(lines) + "\n"


def main():
    args = parse_args()
    cmds = contender_cmds(args)
    names = list(cmds)
    results = {name: [] for name in cmds}
    failures = {}
    if args.no_mirrored:
        names.insert(0, "mirrored")
        failures["mirrored"] = ["--no-mirrored"]
    started = datetime.datetime.now(datetime.timezone.utc)
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    os.makedirs(os.path.dirname(args.raw), exist_ok=True)
    raw = open(args.raw, "a")
    active = dict(cmds)
    for rnd in range(args.n):
        for name, cmd in list(active.items()):
            for attempt in range(args.retries + 1):
                rec, err = run_once(cmd, args.timeout, seed=rnd + 1)
                if rec is None or rec["contention"] <= args.max_contention:
                    break
                print(
                    f"[{rnd + 1}/{args.n}] {name}: other processes took {100 * rec['contention']:.0f}% of the"
                    f" CPUs ({rec['ms_per_step_epoch2']:.3f} ms/step); "
                    + ("redoing" if attempt < args.retries else "keeping it, flagged"),
                    file=sys.stderr,
                )
                if attempt < args.retries:
                    time.sleep(5)
            if rec is None:
                failures.setdefault(name, []).append(err)
                print(f"[{rnd + 1}/{args.n}] {name}: FAILED ({err})", file=sys.stderr)
                # The first failure of a contender drops it: a broken command stays broken.
                del active[name]
                continue
            rec["round"] = rnd + 1
            rec["started_utc"] = started.isoformat(timespec="seconds")
            raw.write(json.dumps(rec) + "\n")
            raw.flush()
            results[name].append(rec)
            print(
                f"[{rnd + 1}/{args.n}] {name}: {rec['ms_per_step_epoch2']:.3f} ms/step (epoch 2),"
                f" {rec.get('ms_per_step_epoch1', float('nan')):.3f} (epoch 1), loss {rec['final_loss']:.4f},"
                f" acc {rec['final_acc']:.4f}; process {rec['process_s']:.1f} s,"
                f" contention {100 * rec['contention']:.1f}%",
                file=sys.stderr,
            )
    raw.close()
    load_after = " ".join(f"{x:.2f}" for x in os.getloadavg())
    section = render(args, names, results, failures, started, load_before, load_after)
    print(section)
    if not args.no_write:
        write_section(args.output, "mlp_cpu", section)
        print(f"wrote the mlp_cpu section of {args.output}", file=sys.stderr)
    valid_peers = [n for n in names if n != "mirrored" and results.get(n)]
    return 0 if valid_peers else 1


if __name__ == "__main__":
    sys.exit(main())
