"""Harness of bench/mixed_precision: the vignette's MLP and the MNIST convnet in float32 and
mixed_bfloat16 (and mixed_float16 on a GPU), mirrored against PyTorch autocast in the same
run, plus the loss-scale overflow check on 1, 2 and 4 CPU replicas; writes the
mixed_precision_cpu (or _gpu) section of BENCHMARKS.md.

Each round runs every contender once, each in its own process, interleaved
(bench/harness.py); the same round seed (1..n) goes to every contender, so float32 and bf16
start from the same weights and data order. The table gives ms/step of epoch 2 (median, min,
max), the test accuracy after 2 epochs on the 10,000 bundled digits (median), the speed-up of
each policy over the same contender's float32 (a policy slower than float32 is listed under
the table, not hidden) and PyTorch / mirrored under the same policy.

The accuracy bar (each policy within 0.5 points of float32) is judged on the paired mean of
the per-seed differences, not on the medians: for the MLP the difference of one seed has an
sd of about 1 point (a run's accuracy is fixed by its seed), so a median over 7 seeds is off
by several tenths of a point depending on the seeds (two runs at nearby commits gave -0.33
and -0.59). So after the rounds, --acc-seeds more runs (default 30, seeds 1001..) of every
contender of the --acc-models (default the MLP, whose runs are cheap: about 5 minutes on 2
cores with PyTorch) under each policy, one process each, sequential; only their test
accuracy is used (their timings are not reported). The pairs are the rounds' seeds plus
these; the verdict gives their mean, its standard error and 95% t-interval, and PyTorch's own
low-precision gap on the same seeds as context. Models outside the study are judged on the
rounds' pairs alone. Timing runs must not overlap a build:

    flock /tmp/mr-build.lock python3 bench/mixed_precision/run.py --n 3
"""

import argparse
import json
import math
import os
import shlex
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
from harness import add_common_args, fmt, run_once, run_rounds, summarise  # noqa: E402
from report import cpu_info, git_commit, markers, write_section  # noqa: E402

MODELS = ["mlp", "cnn"]
ACC_POINTS = 0.5  # bf16's test accuracy must be within this many points of float32's
ACC_SEED0 = 1000  # the accuracy study's seeds are 1001, 1002, ...; the timing rounds' are 1..n
# Student's t, 0.975 quantile, by degrees of freedom (t975 takes the nearest tabulated df below).
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
        10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110,
        18: 2.101, 19: 2.093, 20: 2.086, 21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064, 25: 2.060,
        26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045, 30: 2.042, 35: 2.030, 40: 2.021, 45: 2.014,
        50: 2.009, 60: 2.000, 80: 1.990, 120: 1.980}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    p.add_argument("--device", choices=["cpu", "gpu"], default="cpu",
                   help="gpu: on gpu:0 / cuda:0, adding mixed_float16 (tools/gpu-check.sh runs it)")
    p.add_argument("--models", default=",".join(MODELS), help="comma-separated subset of mlp,cnn")
    p.add_argument("--mirrored-cmd", default="Rscript bench/mixed_precision/mirrored.R",
                   help="command that runs mirrored's side and prints its JSON line (run in the repo root)")
    p.add_argument("--no-torch", action="store_true", help="run mirrored only")
    p.add_argument("--no-overflow", action="store_true", help="skip the loss-scale overflow check")
    p.add_argument("--acc-seeds", type=int, default=30,
                   help="accuracy study: this many more runs (seeds 1001..) of each contender of the"
                   " --acc-models under every policy, test accuracy only; 0 turns it off (default 30)")
    p.add_argument("--acc-models", default="mlp",
                   help="comma-separated models the accuracy study covers (default mlp; its runs are cheap)")
    args, _ = p.parse_known_args()
    return add_common_args(p, f"mixed_precision_{args.device}").parse_args()


def policies(device):
    """(mirrored policy, torch autocast) pairs."""
    out = [("float32", "none"), ("mixed_bfloat16", "bf16")]
    if device == "gpu":
        out.append(("mixed_float16", "f16"))
    return out


def model_list(text, flag):
    models = [m.strip() for m in text.split(",") if m.strip()]
    for model in models:
        if model not in MODELS:
            sys.exit(f"{flag}: unknown model '{model}' (expected some of {', '.join(MODELS)})")
    return models


def study_models(args):
    """The models the accuracy study covers: the --acc-models among the --models (none with
    --acc-seeds 0)."""
    run = model_list(args.models, "--models")
    return [m for m in model_list(args.acc_models, "--acc-models") if m in run] if args.acc_seeds > 0 else []


def contender_cmds(args):
    py = shlex.quote(args.python)
    gpu = args.device == "gpu"
    cmds = {}
    for model in model_list(args.models, "--models"):
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


def accuracy_study(args, cmds, started):
    """The accuracy study: args.acc_seeds more runs of every contender of the study_models,
    seeds ACC_SEED0 + 1.., each seed's runs one after another, each in its own process (the
    rounds' run_once); only test_acc is used, so contention is not checked and timings are not
    reported. The records go to args.raw with 'seed', 'study' and the run's start. Returns
    ({name: [record]}, {name: why it was dropped}); a contender's first failure drops it, as in
    the rounds."""
    models = study_models(args)
    todo = {n: c for n, c in cmds.items() if contender_policy(n)[1] in models}
    out, failed = {n: [] for n in todo}, {}
    with open(args.raw, "a") as raw:
        for seed in range(ACC_SEED0 + 1, ACC_SEED0 + 1 + args.acc_seeds):
            for name, cmd in list(todo.items()):
                rec, err = run_once(cmd, args.timeout, seed)
                if rec is not None and not isinstance(rec.get("test_acc"), (int, float)):
                    rec, err = None, "no test_acc in its JSON line"
                if rec is None:
                    failed[name] = f"seed {seed}: {err}"
                    print(f"[accuracy seed {seed}] {name}: FAILED ({err})", file=sys.stderr)
                    del todo[name]
                    continue
                rec.update(seed=seed, study="accuracy", started_utc=started.isoformat(timespec="seconds"))
                raw.write(json.dumps(rec) + "\n")
                raw.flush()
                out[name].append(rec)
                print(f"[accuracy seed {seed}] {name}: test acc {rec['test_acc']:.4f}", file=sys.stderr)
    return out, failed


def t975(df):
    """Student's t 0.975 quantile (the nearest tabulated df below: the interval errs wide)."""
    return 1.96 if df > max(T975) else T975[max(k for k in T975 if k <= df)]


def paired_stats(lowp, f32):
    """Test accuracy differences 100 * (policy - float32) over the seeds both runs lists have
    (same seed: same initial weights and data order): n, mean, sd, se, the 95% t-interval
    lo..hi, float32's own sd over those seeds (these five None with one pair), and the seeds;
    None without a pair."""
    a = {r["seed"]: r["test_acc"] for r in lowp}
    b = {r["seed"]: r["test_acc"] for r in f32}
    seeds = sorted(a.keys() & b.keys())
    if not seeds:
        return None
    d = [100 * (a[k] - b[k]) for k in seeds]
    st = {"n": len(d), "mean": statistics.mean(d), "sd": None, "se": None, "lo": None, "hi": None, "f32_sd": None,
          "seeds": seeds}
    if len(d) > 1:
        sd = statistics.stdev(d)
        se = sd / math.sqrt(len(d))
        half = t975(len(d) - 1) * se
        st.update(sd=sd, se=se, lo=st["mean"] - half, hi=st["mean"] + half,
                  f32_sd=statistics.stdev(100 * b[k] for k in seeds))
    return st


def describe(st):
    """The paired statistics as text."""
    if st["sd"] is None:
        return f"n = 1 pair, difference {st['mean']:+.2f} points (no spread or interval from one pair)"
    return (f"n = {st['n']} pairs, mean difference {st['mean']:+.2f} points (SE {st['se']:.2f}, 95% t-interval"
            f" {st['lo']:+.2f} to {st['hi']:+.2f}; sd of the differences {st['sd']:.2f}; float32's own sd"
            f" over these seeds {st['f32_sd']:.2f})")


def runs(k, what="run"):
    return f"{k} {what}{'' if k == 1 else 's'}"


def seed_range(first, last):
    return f"{first}" if first == last else f"{first}–{last}"


def accuracy_verdict(st, k, med, med_f32):
    """The verdict on one policy's paired statistics st (within ACC_POINTS on the mean; whether
    the 95% interval lies inside +-ACC_POINTS), then the medians of the k timing runs (the
    policy's med, float32's med_f32) and why they are not the basis."""
    study = [x for x in st["seeds"] if x > ACC_SEED0]
    n_rounds = st["n"] - len(study)
    seeds = f"the seeds of the {runs(n_rounds, 'timing run')}" + (
        f" and of the accuracy study's {runs(len(study))} ({seed_range(study[0], study[-1])})" if study else "")
    out = ((f"within {ACC_POINTS} points" if abs(st["mean"]) <= ACC_POINTS else f"NOT within {ACC_POINTS} points")
           + f" of float32, judged on the paired mean over {seeds}: {describe(st)}")
    if st["lo"] is None:
        pass  # describe() says there is no interval
    elif -ACC_POINTS <= st["lo"] and st["hi"] <= ACC_POINTS:
        out += f"; the 95% interval lies inside ±{ACC_POINTS}"
    elif st["hi"] < -ACC_POINTS or st["lo"] > ACC_POINTS:
        out += f"; the 95% interval lies beyond ±{ACC_POINTS}: the gap exceeds {ACC_POINTS} points"
    else:
        crossed = [f"{b:+}" for b in (-ACC_POINTS, ACC_POINTS) if (st["lo"] < b if b < 0 else st["hi"] > b)]
        out += (f"; the 95% interval crosses {' and '.join(crossed)}, so these data do not exclude a gap beyond"
                f" {ACC_POINTS} points")
    out += (f". Medians of the {runs(k, 'timing run')}: {100 * med:.2f}% against float32's"
            f" {100 * med_f32:.2f}% ({100 * (med - med_f32):+.2f} points)")
    if st["sd"]:
        se_med = st["sd"] / math.sqrt(k) * (1.2533 if k > 2 else 1)  # the median's SE, normal differences
        out += (f", not the basis: the per-seed sd of {st['sd']:.2f} points gives a median of {runs(k)} a"
                f" standard error of about {se_med:.2f} points")
    return out


def render(args, names, results, failures, started, load_before, load_after, overflow, acc, study_failed):
    """The section. acc: each contender's runs with their 'seed' (the rounds' and the accuracy
    study's), for the paired accuracy statistics; study_failed: contenders the study dropped."""
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
        f"Accuracy: each policy must be within {ACC_POINTS} points of float32's test accuracy, judged on the paired",
        "differences policy − float32 per seed (the same seed gives both the same initial weights and data",
        "order): their mean, its standard error and 95% t-interval; a median of a few runs is too coarse for",
        f"a {ACC_POINTS}-point bar.",
    ] + ([
        f"For the {', '.join(study_models(args))}, an accuracy study adds"
        f" {args.acc_seeds} more runs of every contender under each policy,",
        f"seeds {seed_range(ACC_SEED0 + 1, ACC_SEED0 + args.acc_seeds)} (the rounds' are {seed_range(1, args.n)}),"
        " one after another after the timing rounds, each in its own",
        "process; only their test accuracy is used (their timings are not reported, nor in the table).",
    ] if study_models(args) else []) + [
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
        st = who == "mirrored" and pol != "float32" and f32 in test_acc and paired_stats(acc[name], acc[f32])
        if st:
            verdicts.append(f"- {model} {pol}: " + accuracy_verdict(st, s["n"], test_acc[name], test_acc[f32]))
            t_low, t_f32 = by.get(("torch", model, pol)), by.get(("torch", model, "float32"))
            t_st = t_low in acc and t_f32 in acc and paired_stats(acc[t_low], acc[t_f32])
            if t_st:
                verdicts.append(f"  - for context, PyTorch autocast's {pol} against its own float32 on the same"
                                f" seeds: {describe(t_st)}")
    lines.append("")
    lines.extend(verdicts or ["- accuracy: no mirrored mixed-precision run to compare"])
    for name, why in study_failed.items():
        lines.append(f"- accuracy study: {name} dropped at {why[:200]}")
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
    cmds = contender_cmds(args)
    names, results, failures, started, load_before, load_after = run_rounds(args, cmds)
    names = [n for n in names if len(n.split()) == 3]  # run_rounds adds a bare "mirrored" for --no-mirrored
    acc = {n: [dict(r, seed=r["round"]) for r in results[n]] for n in names}  # run_rounds: round k, --seed k
    study, study_failed = accuracy_study(args, {n: c for n, c in cmds.items() if n not in failures}, started)
    for n, recs in study.items():
        acc[n] += recs
    overflow = None
    if not args.no_overflow and not args.no_mirrored and args.device == "cpu":
        overflow = overflow_check(args)
    section = render(args, names, results, failures, started, load_before, load_after, overflow, acc, study_failed)
    print(section)
    if not args.no_write:
        write_section(args.output, f"mixed_precision_{args.device}", section)
        print(f"wrote the mixed_precision_{args.device} section of {args.output}", file=sys.stderr)
    return 0 if any(results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
