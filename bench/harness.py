"""The interleaved whole-process timing loop the CPU training harnesses share
(bench/mlp_cpu, bench/cnn_cpu): each round runs every contender once, each in
its own process, so that a slow phase of the machine hits all of them alike;
every contender prints one JSON line with ms_per_step_epoch1/2; a run during
which other processes used more than a given share of the CPUs is redone.
"""

import datetime
import json
import os
import resource
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def add_common_args(p, name):
    """The options every CPU training harness takes."""
    p.add_argument("--n", type=int, default=5, help="rounds (runs of each contender); default 5")
    p.add_argument(
        "--section",
        default=name,
        help=f"BENCHMARKS.md section to write (default {name}; e.g. {name}_avx2 for a machine of another kind)",
    )
    p.add_argument("--no-mirrored", action="store_true", help="run the peers only")
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
        "--raw", default=os.path.join(REPO, "bench", "out", f"{name}-runs.jsonl"), help="every run's JSON line goes here"
    )
    return p


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


def cross_core_ns():
    """The cross-core round trip between two threads, in ns, from build/bench_team_handoff
    (None when it is not built). On a VM it tells where the hypervisor put the vCPUs: on an AMD
    EPYC Zen 3 with 2 vCPUs it read 57-140 ns when they shared an L3 and 540-570 ns when they did
    not, and a step of the vignette's MLP took 0.60 and 0.86 ms in the two cases (the "far"
    mode, FAR_NS and up; mode_lines() reports both)."""
    for d in ("build", "build-cpu"):
        exe = os.path.join(REPO, d, "bench_team_handoff")
        if os.access(exe, os.X_OK):
            try:
                out = subprocess.run([exe, "20000"], capture_output=True, text=True, timeout=30).stdout
            except (OSError, subprocess.TimeoutExpired):
                return None
            for line in out.splitlines():
                if line.startswith("cross-core round trip"):
                    return float(line.split(":")[1].split()[0])
    return None


def run_once(cmd, timeout, seed):
    """Run one contender; return (record, None) or (None, reason). The record gets
    'contention': the CPU time other processes used during the run, as a fraction of the
    machine's capacity over its wall time (0 = the machine was ours alone)."""
    full = f"{cmd} --seed {seed}"
    rt = cross_core_ns()
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
    rec["cross_core_ns"] = rt
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


def run_rounds(args, cmds):
    """Runs every contender args.n times, interleaved; returns (names, results, failures,
    started, load_before, load_after). A contender's first failure drops it."""
    names = list(cmds)
    results = {name: [] for name in cmds}
    failures = {}
    if args.no_mirrored:
        names.insert(0, "mirrored")
        failures["mirrored"] = ["--no-mirrored"]
    started = datetime.datetime.now(datetime.timezone.utc)
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    os.makedirs(os.path.dirname(args.raw), exist_ok=True)
    active = dict(cmds)
    with open(args.raw, "a") as raw:
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
    load_after = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return names, results, failures, started, load_before, load_after


# A cross-core round trip at or above this puts a run in the "far" mode (the vCPUs share no cache).
FAR_NS = 300


def machine_mode(rec):
    rt = rec.get("cross_core_ns")
    return None if rt is None else ("far" if rt >= FAR_NS else "near")


def mode_lines(names, results):
    """Lines saying in which machine mode (near or far vCPUs) the runs went, and each contender's
    median in each mode, when the round trip was measured."""
    runs = [r for n in names for r in results.get(n) or []]
    if not any(r.get("cross_core_ns") for r in runs):
        return []
    near = sum(machine_mode(r) == "near" for r in runs)
    far = sum(machine_mode(r) == "far" for r in runs)
    out = [
        "",
        f"Machine mode (the cross-core round trip, measured before each run by build/bench_team_handoff):"
        f" near (< {FAR_NS} ns, the vCPUs share an L3) in {near} runs, far in {far}.",
    ]
    if near and far:
        out += ["", "| contender | near: n, median ms/step | far: n, median ms/step |", "| --- | --- | --- |"]
        for n in names:
            cells = []
            for m in ("near", "far"):
                v = [r["ms_per_step_epoch2"] for r in results.get(n) or [] if machine_mode(r) == m]
                cells.append(f"{len(v)}, {statistics.median(v):.3f}" if v else "0")
            out.append(f"| {n} | {cells[0]} | {cells[1]} |")
    return out

