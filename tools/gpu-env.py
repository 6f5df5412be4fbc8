#!/usr/bin/env python3
"""The GPU machine's CUDA libraries as its python3 holds them, for tools/gpu-first.sh and
tools/gpu-check.sh. Standard library only; never imports torch unless asked ("torch").

    python3 tools/gpu-env.py libdirs        one line: the lib folders, ':'-joined (stdout);
                                            which site-packages and why (stderr)
    python3 tools/gpu-env.py probe DIRS     loads cudart, cuBLAS, NCCL and cuDNN (every
                                            sub-library) from DIRS and prints their versions
                                            and the nvidia-*/cuda-* pip packages beside them
    python3 tools/gpu-env.py torch          torch, its CUDA, cuDNN and NCCL versions and devices
    python3 tools/gpu-env.py bench FILE...  one line per batch size from bench_mlp_gpu and
                                            torch_peer.py JSON lines in the FILEs

The folders are site-packages/nvidia/*/lib of ONE site-packages, the one that holds torch
when there is one (PyTorch's wheels: nvidia-cudnn-cu13, nvidia-nccl-cu13, nvidia-cublas,
nvidia-cuda-runtime, nvidia-cuda-nvrtc, nvidia-nvjitlink, ... one consistent set), else the
first one on sys.path that has an nvidia/ folder. cu13/lib (the CUDA 13 toolkit wheels)
comes first.
"""
import ctypes
import glob
import importlib.metadata
import importlib.util
import json
import os
import site
import sys

WANTED = ["libcudart.so.13", "libcublas.so.13", "libcublasLt.so.13", "libnccl.so.2",
          "libcudnn.so.9", "libnvrtc.so.13"]


def site_dirs():
    dirs = []
    try:
        dirs += site.getsitepackages()
    except AttributeError:  # old virtualenv
        pass
    dirs += [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
    seen, out = set(), []
    for d in dirs:
        d = os.path.realpath(d)
        if d not in seen and os.path.isdir(d):
            seen.add(d)
            out.append(d)
    return out


def chosen_site():
    spec = importlib.util.find_spec("torch")  # locates torch without importing it
    if spec is not None and spec.origin:
        sp = os.path.dirname(os.path.dirname(os.path.realpath(spec.origin)))
        if os.path.isdir(os.path.join(sp, "nvidia")):
            return sp, "holds torch"
    for sp in site_dirs():
        if os.path.isdir(os.path.join(sp, "nvidia")):
            return sp, "first site-packages with nvidia/" + (" (torch not found)" if spec is None else "")
    return None, "no site-packages with nvidia/ on " + sys.executable + "'s path"


def lib_dirs(sp):
    dirs = sorted(glob.glob(os.path.join(sp, "nvidia", "*", "lib")))
    dirs.sort(key=lambda d: (os.path.basename(os.path.dirname(d)) != "cu13", d))
    return dirs


def cmd_libdirs():
    sp, why = chosen_site()
    if sp is None:
        print("gpu-env: " + why, file=sys.stderr)
        print("")
        return 1
    dirs = lib_dirs(sp)
    have = {os.path.basename(f) for d in dirs for f in os.listdir(d)}
    missing = [w for w in WANTED if w not in have]
    print(f"gpu-env: {sp} ({why}, python3 {sys.executable}); {len(dirs)} lib folders"
          + (f"; missing there: {' '.join(missing)}" if missing else ""), file=sys.stderr)
    print(":".join(dirs))
    return 0


def find(dirs, name):
    for d in dirs:
        p = os.path.join(d, name)
        if os.path.exists(p):
            return p
    return None


def cmd_probe(dirs):
    dirs = [d for d in dirs.split(":") if d]
    mode = getattr(os, "RTLD_GLOBAL", 0)
    ok = True

    def load(name):
        nonlocal ok
        p = find(dirs, name)
        if p is None:
            print(f"{name}: NOT FOUND in the lib folders")
            ok = False
            return None
        try:
            return ctypes.CDLL(p, mode=mode)
        except OSError as e:
            print(f"{name}: FAILS TO LOAD: {e}")
            ok = False
            return None

    v = ctypes.c_int(0)
    lib = load("libcudart.so.13")
    if lib is not None:
        lib.cudaRuntimeGetVersion(ctypes.byref(v))
        print(f"cudart: {v.value // 1000}.{v.value % 1000 // 10} ({find(dirs, 'libcudart.so.13')})")
    load("libcublasLt.so.13")
    lib = load("libcublas.so.13")
    if lib is not None:
        parts = []
        for prop in (0, 1, 2):  # MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
            lib.cublasGetProperty(prop, ctypes.byref(v))
            parts.append(str(v.value))
        print(f"cublas: {'.'.join(parts)} ({find(dirs, 'libcublas.so.13')})")
    lib = load("libnccl.so.2")
    if lib is not None:
        lib.ncclGetVersion(ctypes.byref(v))
        n = v.value
        print(f"nccl: {n // 10000}.{n % 10000 // 100}.{n % 100} ({find(dirs, 'libnccl.so.2')})")
    load("libnvrtc.so.13")
    lib = load("libcudnn.so.9")
    if lib is not None:
        lib.cudnnGetVersion.restype = ctypes.c_size_t
        n = lib.cudnnGetVersion()
        print(f"cudnn: {n // 10000}.{n % 10000 // 100}.{n % 100} ({find(dirs, 'libcudnn.so.9')})")
        # cudnnCreate dlopens these: each must load, with its own dependencies.
        subs = ["graph", "ops", "cnn", "adv", "heuristic", "engines_precompiled",
                "engines_runtime_compiled"]
        loaded = [s for s in subs if load(f"libcudnn_{s}.so.9") is not None]
        print(f"cudnn sub-libraries loaded: {len(loaded)}/{len(subs)}")
    sps = {os.path.dirname(os.path.dirname(os.path.dirname(d))) for d in dirs}
    pkgs = []
    for dist in importlib.metadata.distributions(path=sorted(sps)):
        name = dist.metadata["Name"] or ""
        if name.lower().startswith(("nvidia-", "cuda-toolkit", "torch")):
            pkgs.append(f"{name}=={dist.version}")
    print("pip: " + (" ".join(sorted(set(pkgs), key=str.lower)) or "none"))
    return 0 if ok else 1


def cmd_torch():
    try:
        import torch
    except Exception as e:  # noqa: BLE001 -- any failure to import is the answer
        print(f"torch: not importable ({type(e).__name__}: {e})")
        return 1
    c = torch.cuda
    print(f"torch: {torch.__version__} (CUDA {torch.version.cuda}, cuDNN "
          f"{torch.backends.cudnn.version()}, NCCL "
          f"{'.'.join(map(str, c.nccl.version())) if c.is_available() else 'n/a'}) from "
          f"{os.path.dirname(torch.__file__)}")
    if not c.is_available():
        print("torch devices: none (torch.cuda.is_available() is False)")
        return 0
    for i in range(c.device_count()):
        p = c.get_device_properties(i)
        print(f"torch device {i}: {p.name}, {p.total_memory / 2**30:.0f} GiB, sm_{p.major}{p.minor}, "
              f"{p.multi_processor_count} SMs")
    return 0


def cmd_bench(paths):
    rows = {}
    for path in paths:
        if not os.path.exists(path):
            continue
        with open(path, errors="replace") as f:
            for line in f:
                if not line.startswith("{"):
                    continue
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                rows[(r.get("batch"), r.get("contender"))] = r.get("us_per_step")
    batches = sorted({b for b, _ in rows if b is not None})
    if not batches:
        print("no bench rows")
        return 1
    for b in batches:
        m, me = rows.get((b, "mirrored")), rows.get((b, "mirrored_eager"))
        tg, te = rows.get((b, "torch_cuda_graph")), rows.get((b, "torch_eager"))
        cb = rows.get((b, "cublas_step_gemms"))
        best = min([x for x in (tg, te) if x] or [0])
        ratio = f"{best / m:.2f}x the best torch" if m and best else "no ratio"
        fmt = lambda x: f"{x:.1f}" if x else "-"  # noqa: E731
        print(f"batch {b}: mirrored {fmt(m)} us/step (eager {fmt(me)}), torch graph {fmt(tg)} "
              f"eager {fmt(te)}, cuBLAS GEMMs alone {fmt(cb)}: {ratio}")
    return 0


def main(argv):
    if len(argv) >= 1 and argv[0] == "libdirs":
        return cmd_libdirs()
    if len(argv) >= 2 and argv[0] == "probe":
        return cmd_probe(argv[1])
    if len(argv) >= 1 and argv[0] == "torch":
        return cmd_torch()
    if len(argv) >= 2 and argv[0] == "bench":
        return cmd_bench(argv[1:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
