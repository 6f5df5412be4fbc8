"""Harness of bench/contention: the vignette's MLP on a machine where another process keeps one
core busy, for mirrored and PyTorch, next to the same runs on an idle machine.

Each contender (mirrored with its default threads, mirrored with options(mirrored.cpu_threads =
1) and = 2, PyTorch fused-Adam with 2 and with 1 thread) runs once idle and once beside a busy
loop pinned to the last CPU (`taskset -c <last>`, a shell `while :` loop bounded by the run's
timeout and killed when the run ends), every contender and condition interleaved round by round.
The table gives ms/step of epoch 2 (median, min, max over the rounds) and the slowdown busy / idle;
the goals (issue 27): mirrored's default within 1.25x of its best thread setting under load, and
its slowdown no worse than PyTorch's (both with their default threads). Timing runs must not
overlap a build:

    flock /tmp/mr-build.lock python3 bench/contention/run.py --n 5
"""

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
from harness import fmt, run_once  # noqa: E402
from report import cpu_info, git_commit, markers, write_section  # noqa: E402

BEGIN, END = markers("contention")
GOAL_DEFAULT = 1.25


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=5, help="rounds; default 5")
    p.add_argument("--python", default=sys.executable, help="python that has torch")
    p.add_argument("--rscript", default="Rscript", help="Rscript that has mirrored (.lib first)")
    p.add_argument("--timeout", type=float, default=600, help="seconds allowed to one run")
    p.add_argument("--output", default=os.path.join(REPO, "BENCHMARKS.md"), help="file to update")
    p.add_argument("--no-write", action="store_true", help="print the section, leave BENCHMARKS.md alone")
    p.add_argument("--no-torch", action="store_true", help="mirrored only")
    p.add_argument(
        "--also",
        action="append",
        default=[],
        metavar="NAME=CMD",
        help="another contender, e.g. the base commit's build: "
        "--also 'mirrored e7802c3 (default)=cd /work/base && Rscript bench/mlp_cpu/mirrored.R'",
    )
    return p.parse_args()


def contenders(args):
    r = f"{args.rscript} bench/mlp_cpu/mirrored.R"
    py = shlex.quote(args.python)
    out = {
        "mirrored (default)": r,
        "mirrored, cpu_threads = 1": f"{r} --cpu-threads 1",
        "mirrored, cpu_threads = 2": f"{r} --cpu-threads 2",
    }
    for extra in args.also:
        name, sep, cmd = extra.partition("=")
        if not sep or not name or not cmd:
            sys.exit(f"--also: expected NAME=CMD, got {extra!r}")
        out[name] = cmd
    if not args.no_torch:
        out["torch fused Adam, 2 threads (default)"] = f"{py} bench/mlp_cpu/peer_torch.py --adam fused"
        out["torch fused Adam, 1 thread"] = f"MR_BENCH_THREADS=1 {py} bench/mlp_cpu/peer_torch.py --adam fused"
    return out


class BusyCore:
    """A shell busy loop pinned to one CPU for the length of a `with` block."""

    def __init__(self, cpu, limit):
        self.cpu, self.limit, self.proc = cpu, limit, None

    def __enter__(self):
        cmd = ["timeout", str(int(self.limit)), "taskset", "-c", str(self.cpu), "sh", "-c", "while :; do :; done"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return False


def main():
    args = parse_args()
    if shutil.which("taskset") is None:
        sys.exit("bench/contention needs taskset (util-linux)")
    busy_cpu = (os.cpu_count() or 1) - 1
    cmds = contenders(args)
    results = {(name, cond): [] for name in cmds for cond in ("idle", "busy")}
    failures = {}
    for rnd in range(args.n):
        for name, cmd in cmds.items():
            for cond in ("idle", "busy"):
                if name in failures:
                    continue
                if cond == "busy":
                    with BusyCore(busy_cpu, args.timeout + 30):
                        rec, err = run_once(cmd, args.timeout, seed=rnd + 1)
                else:
                    rec, err = run_once(cmd, args.timeout, seed=rnd + 1)
                if rec is None:
                    failures[name] = err
                    print(f"[{rnd + 1}/{args.n}] {name} ({cond}): FAILED ({err})", file=sys.stderr)
                    continue
                results[(name, cond)].append(rec)
                extra = ""
                if "team_active" in rec:
                    extra = f", {rec['team_active']} of {rec['team_threads']} threads working at the end"
                print(
                    f"[{rnd + 1}/{args.n}] {name} ({cond}): {rec['ms_per_step_epoch2']:.3f} ms/step{extra}",
                    file=sys.stderr,
                )
    section = render(args, cmds, results, failures)
    print(section)
    if not args.no_write:
        write_section(args.output, "contention", section)


def med(runs):
    v = [r["ms_per_step_epoch2"] for r in runs]
    return (statistics.median(v), min(v), max(v)) if v else (None, None, None)


def contenders_own(args):
    """This checkout's mirrored rows (the goals compare its default with its own settings)."""
    return [n for n in contenders(argparse.Namespace(**{**vars(args), "also": [], "no_torch": True}))]


def render(args, cmds, results, failures):
    model, cpus, _ = cpu_info()
    lines = [
        BEGIN,
        "## contention",
        "",
        "The vignette's MLP (as in `mlp_cpu`: 784-256-256-10, Adam, batch 64, 2 epochs on 10,000",
        "digits) on an idle machine and beside a busy loop pinned to one of its cores (another",
        "process wanting a core, as a browser or a build does on a laptop). ms/step of epoch 2;",
        f"median (min-max) of {args.n} runs per row and condition, every row and condition interleaved",
        "round by round, each run its own process. Slowdown = busy / idle.",
        "",
        f"Machine: {model}, {cpus} CPUs. Commit {git_commit()}.",
        "Reproduce: `flock /tmp/mr-build.lock python3 "
        + " ".join(shlex.quote(a) for a in [os.path.relpath(sys.argv[0], REPO)] + sys.argv[1:])
        + "`.",
        "",
        "| contender | idle ms/step | busy core ms/step | slowdown | threads working at the end (busy) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name in cmds:
        if name in failures:
            lines.append(f"| {name} | not run: {failures[name]} | | | |")
            continue
        i, b = med(results[(name, "idle")]), med(results[(name, "busy")])
        slow = b[0] / i[0] if i[0] and b[0] else None
        working = ""
        busy_runs = results[(name, "busy")]
        if busy_runs and "team_active" in busy_runs[0]:
            working = ", ".join(f"{r['team_active']}/{r['team_threads']}" for r in busy_runs)
        lines.append(
            f"| {name} | {fmt(i[0])} ({fmt(i[1])}-{fmt(i[2])}) | {fmt(b[0])} ({fmt(b[1])}-{fmt(b[2])}) |"
            f" {fmt(slow, 2)}x | {working} |"
        )
    lines.append("")
    busy = {name: med(results[(name, "busy")])[0] for name in cmds if name not in failures}
    idle = {name: med(results[(name, "idle")])[0] for name in cmds if name not in failures}
    mine = [n for n in busy if n.startswith("mirrored") and n in contenders_own(args)]
    if "mirrored (default)" in busy and mine:
        best = min(busy[n] for n in mine)
        ratio = busy["mirrored (default)"] / best
        lines.append(
            f"Goal: mirrored's default within {GOAL_DEFAULT}x of its best setting under load: "
            f"{ratio:.2f}x ({'met' if ratio <= GOAL_DEFAULT else 'missed'})."
        )
    torch_default = "torch fused Adam, 2 threads (default)"
    if "mirrored (default)" in busy and torch_default in busy:
        ms = busy["mirrored (default)"] / idle["mirrored (default)"]
        ts = busy[torch_default] / idle[torch_default]
        lines.append(
            f"Goal: mirrored's slowdown no worse than PyTorch's (default threads): {ms:.2f}x against "
            f"{ts:.2f}x ({'met' if ms <= ts else 'missed'}); under load mirrored runs "
            f"{busy[torch_default] / busy['mirrored (default)']:.2f}x as fast as PyTorch."
        )
    lines += ["", END, ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
