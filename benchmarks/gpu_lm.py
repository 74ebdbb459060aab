"""Device check of hiddenstate.lm's GPU paths (issue 24): correctness, then speed against
the targets, in one device call of about 6 minutes on an H200.

    python3 benchmarks/gpu_lm.py [--smoke] [--budget SECONDS] [--skip 1,2,3,4,5]

Run from the project root: hiddenstate is imported from ./src, PTB and the Brown clusters
from ./gpu_data (what the device call carries, see benchmarks/README.md) or ../shared/data.
``--smoke``: tiny sizes on CPU (the Triton kernels in Triton's interpreter), about a minute.
Phases, each timed and isolated (a failure is recorded and the next phase runs):

  1 correctness: on the device, the partition recursion (torch) and the fused Triton
    kernels score what the exact CPU numba kernel scores (K = 129 x 8, PTB valid slice;
    float64 within 1e-9 relative, float32 within 1e-4); their gradients agree at the
    paper's block size (k' = 128, float64 1e-9); the device E-step's counts equal the
    numba E-step's (K = 129 x 4, dropout 2 of 4, float64 1e-8 relative).
  2 throughput of one gradient step at K = 33,024 (neural, dropout 128 of 256, 32 tokens
    per stream): the general recursion (what main ran before, batch 64), the partition
    recursion in torch and the Triton kernels at batch 64 / 256 / 512, and the plain-torch
    transcription of the reference recipe at batch 64 / 256. Targets: >= 500k tokens/s and
    >= 5x the transcription at the same batch.
  3 profile of one step per backend at batch 256: CUDA kernels launched, host and device
    milliseconds, the five costliest kernels.
  4 batch EM E-step at K = 33,024 (neural, dropout 128, 32 masks) over all of PTB train
    on the device, at 256 and 1024 streams: tokens/s (target >= 200k), and the M-step's
    seconds.
  5 timed gradient training at K = 33,024 with the device defaults for ``--budget``
    seconds: the validation perplexity curve (the learning-rate schedule at the device
    batch size).

Writes $OUT/gpu_lm.json after every phase and prints one line per result.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path.cwd()
sys.path.insert(0, str(ROOT / "src"))
DATA = next((p for p in (ROOT / "gpu_data", ROOT.parent / "shared" / "data",
                         ROOT.parent.parent / "shared" / "data") if (p / "ptb").is_dir()),
            ROOT / "gpu_data")
OUT = Path(os.environ.get("OUT") or Path(tempfile.gettempdir()) / "gpu_out")
OUT.mkdir(parents=True, exist_ok=True)

import numpy as np  # noqa: E402
import torch  # noqa: E402

from hiddenstate.lm import (  # noqa: E402
    BlockedHMMLM,
    load_corpus,
    read_brown_paths,
    triton_scan,  # noqa: E402
)
from hiddenstate.lm import model as lm_model  # noqa: E402
from hiddenstate.lm.data import sentence_streams  # noqa: E402
from hiddenstate.lm.exact import SentenceLayout  # noqa: E402
from hiddenstate.lm.scan import partition_log_likelihood  # noqa: E402

sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_lm import count_ops  # noqa: E402

R: dict = {"phases": {}}
#: --smoke: tiny networks and windows, so the script runs in about a minute on a CPU
SMOKE = {}
T_START = time.perf_counter()
DEV = "cuda" if torch.cuda.is_available() else "cpu"


def save() -> None:
    (OUT / "gpu_lm.json").write_text(json.dumps(R, indent=1, default=str))


def log(*a) -> None:
    print(f"[{time.perf_counter() - T_START:7.1f}s]", *a, flush=True)


def sync() -> None:
    if DEV == "cuda":
        torch.cuda.synchronize()


def phase(name):
    def wrap(fn):
        def run(*a, **kw):
            t0 = time.perf_counter()
            try:
                out = fn(*a, **kw)
                R["phases"][name] = {"ok": True, "seconds": time.perf_counter() - t0,
                                     **(out or {})}
            except Exception as e:  # noqa: BLE001 - recorded, the next phase runs
                R["phases"][name] = {"ok": False, "seconds": time.perf_counter() - t0,
                                     "error": f"{type(e).__name__}: {e}",
                                     "trace": traceback.format_exc()[-3000:]}
                log(f"{name}: FAILED {type(e).__name__}: {e}")
            save()
            if DEV == "cuda":
                torch.cuda.empty_cache()
        return run
    return wrap


def attempt(out: dict, key: str, fn) -> None:
    """``out[key] = fn()``, or the error; one line logged."""
    try:
        r = fn()
        out[key] = r
        log(f"{key}: " + ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
                                   for k, v in r.items() if not isinstance(v, (list, dict))))
    except Exception as e:  # noqa: BLE001
        out[key] = {"error": f"{type(e).__name__}: {e}"}
        log(f"{key}: FAILED {type(e).__name__}: {e}")
    if DEV == "cuda":
        torch.cuda.empty_cache()
    save()


def corpus():
    c = load_corpus("ptb", DATA)
    wc = read_brown_paths(DATA / "brown-clusters" / "lm-128" / "paths").word_cluster(
        c["vocabulary"])
    return c, wc


def model(c, wc, k, backend="torch", device=None, **kw) -> BlockedHMMLM:
    lm_model.SCAN_BACKEND = backend
    m = BlockedHMMLM(states_per_cluster=k, device=device or DEV, progress=False,
                     random_state=0, **{**SMOKE, **kw})
    m.initialize(c["vocabulary"], wc)
    return m


# ---------------------------------------------------------------------------- phase 1
@phase("1-correctness")
def correctness(c, wc, smoke):
    out = {}
    ids = c["valid"][: 120 if smoke else 20000]
    cpu = model(c, wc, 8, dtype="float64", device="cpu")
    exact = cpu.score(ids)  # numba, whole sentences
    for backend in ("torch", "triton"):
        for dt, tol in (("float64", 1e-9), ("float32", 1e-4)):
            m = model(c, wc, 8, dtype=dt, batch_size=16)
            m.net_.load_state_dict({k: v.to(m._torch_dtype) for k, v in
                                    cpu.net_.state_dict().items()})
            lm_model.SCAN_BACKEND = backend
            got = m._token_log_normalisers(np.asarray(ids)).sum() if backend == "torch" \
                else m._score_torch(np.asarray(ids))
            rel = abs(got - exact) / abs(exact)
            out[f"{backend}-{dt}"] = {"rel_diff": rel, "pass": rel < tol}
            log(f"score {backend} {dt}: rel diff {rel:.2e} ({'ok' if rel < tol else 'FAIL'})")
    # gradients at the paper's block size, torch against Triton, float64 on the device
    if triton_scan.AVAILABLE:
        k = 8 if smoke else 128
        g = torch.Generator().manual_seed(0)
        C, B, T = (3, 2, 4) if smoke else (129, 16, 32)
        args = [torch.log_softmax(torch.randn(C * k, generator=g, dtype=torch.float64), 0),
                torch.log_softmax(torch.randn(C * k, C * k, generator=g, dtype=torch.float64),
                                  1),
                torch.randn(B, T, k, generator=g, dtype=torch.float64)]
        args = [a.to(DEV).requires_grad_(True) for a in args]
        rest = [torch.randint(0, C, (B, T), generator=g).to(DEV),
                torch.randint(0, C, (B,), generator=g).to(DEV),
                torch.full((B, k), 1.0 / k, dtype=torch.float64, device=DEV),
                (torch.rand(B, T, generator=g) < 0.05).to(DEV),
                torch.ones(B, T, dtype=torch.bool, device=DEV)]
        res = []
        for fn in (partition_log_likelihood, triton_scan.triton_log_likelihood):
            ll, _ = fn(*args, *rest)
            res.append([ll.detach(), *torch.autograd.grad(ll.sum(), args)])
        worst = max(float((a - b).abs().max() / b.abs().max().clamp_min(1e-300))
                    for a, b in zip(*res, strict=True))
        out["triton-grad-f64"] = {"k": k, "rel_diff": worst, "pass": worst < 1e-9}
        log(f"gradients triton vs torch, k' = {k}: max rel diff {worst:.2e}")
    # the device E-step against the numba E-step
    train = c["train"][:3000 if smoke else 100000]
    kw = dict(dtype="float64", learn="em", state_dropout=2, dropout_masks=4, batch_size=64)
    host = model(c, wc, 4, device="cpu", **kw)
    m = model(c, wc, 4, **kw)
    layout = SentenceLayout.from_ids(np.asarray(train), m.eos_id_)
    ll_n, cn = host._em_counts(layout, {})  # numba
    ll_t, ct = m._device_counts(*_reordered(m, layout), {})  # the same draws
    worst = max(float((ct[k].cpu() - cn[k]).abs().max() / cn[k].abs().max())
                for k in ("start", "trans", "emit"))
    out["estep-f64"] = {"rel_diff_counts": worst, "rel_diff_ll": abs(ll_t - ll_n) / abs(ll_n),
                        "pass": worst < 1e-8}
    log(f"E-step device vs numba: counts max rel diff {worst:.2e}")
    return out


def _reordered(m, layout):
    order, keeps = m._dropout_draws(layout.n_sentences)
    return layout.reordered(order), keeps


# ---------------------------------------------------------------------------- phase 2
def time_steps(m, train, steps) -> dict:
    m._state = m._new_state()
    tokens, mask = sentence_streams(train, m.eos_id_, m._batch)
    m._step(tokens, mask, 0, len(train))  # warm-up (and kernel compilation)
    m._step(tokens, mask, m.bptt, len(train))
    sync()
    t0 = time.perf_counter()
    for i in range(2, steps + 2):
        m._step(tokens, mask, m.bptt * i, len(train))
    sync()
    dt = (time.perf_counter() - t0) / steps
    return {"K": m.n_states_, "batch": m._batch, "tok_s": m._batch * m.bptt / dt,
            "step_ms": dt * 1e3}


def reference_rate(c, wc, k, steps, B) -> dict:
    """bench_lm's plain-torch transcription of the reference recipe, on DEV."""
    from bench_lm import reference_step_rate
    return reference_step_rate(c, wc, k, steps, B=B, T=SMOKE.get("bptt", 32), device=DEV,
                               sync=sync)


@phase("2-throughput")
def throughput(c, wc, smoke):
    out = {}
    k, steps = (4, 1) if smoke else (256, 5)
    batches = (8, 16) if smoke else (64, 256, 512)
    train = c["train"]
    kw = dict(state_dropout=k // 2, parameterization="neural")
    attempt(out, f"general-b{batches[0]}", lambda: _general(c, wc, k, batches[0], steps, kw))
    for backend in ("torch", "triton"):
        for b in (batches[:1] if smoke and backend == "triton" else batches):  # interpreted
            attempt(out, f"{backend}-b{b}", lambda b=b, backend=backend: time_steps(
                model(c, wc, k, backend, batch_size=b, **kw), train, steps))
    for b in batches[:2]:
        attempt(out, f"reference-b{b}", lambda b=b: reference_rate(c, wc, k, steps, b))
    for b in batches[:2]:
        ref = out.get(f"reference-b{b}", {}).get("tok_s")
        for backend in ("torch", "triton"):
            r = out.get(f"{backend}-b{b}", {})
            if ref and "tok_s" in r:
                r["vs_reference"] = r["tok_s"] / ref
    best = max((r.get("tok_s", 0.0) for r in out.values()), default=0.0)
    out["targets"] = {
        "tok_s_500k": best >= 5e5,
        "vs_reference_5x": any(r.get("vs_reference", 0) >= 5 for r in out.values()
                               if isinstance(r, dict))}
    log(f"targets: best {best:,.0f} tok/s, {out['targets']}")
    return out


def _general(c, wc, k, b, steps, kw) -> dict:
    m = model(c, wc, k, "torch", batch_size=b, **kw)
    m._wc = None  # BlockedForward: the recursion main ran before the partition path
    return time_steps(m, c["train"], steps)


# ---------------------------------------------------------------------------- phase 3
@phase("3-profile")
def profile(c, wc, smoke):
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as tprofile
    out = {}
    k, b = (4, 8) if smoke else (256, 256)
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if DEV == "cuda" else [])
    for backend in ("torch", "triton"):
        m = model(c, wc, k, backend, batch_size=b, state_dropout=k // 2,
                  parameterization="neural")
        m._state = m._new_state()
        tokens, mask = sentence_streams(c["train"], m.eos_id_, m._batch)
        m._step(tokens, mask, 0, len(c["train"]))
        sync()
        with tprofile(activities=acts) as prof:
            t0 = time.perf_counter()
            m._step(tokens, mask, m.bptt, len(c["train"]))
            host = time.perf_counter() - t0
            sync()
        ev = prof.key_averages()
        kern = [e for e in ev if getattr(e, "device_time_total", 0) > 0
                and e.device_type.name == "CUDA"] if DEV == "cuda" else []
        launches = sum(e.count for e in kern) if DEV == "cuda" else count_ops(prof)
        dev_ms = sum(e.device_time_total for e in kern) / 1e3
        top = sorted(kern, key=lambda e: -e.device_time_total)[:5]
        out[backend] = {"kernels": launches, "host_ms": host * 1e3, "device_ms": dev_ms,
                        "top": [(e.key[:60], e.device_time_total / 1e3) for e in top]}
        log(f"profile {backend}: {launches} kernels, host {host * 1e3:.1f} ms, device "
            f"{dev_ms:.1f} ms; top {out[backend]['top'][:3]}")
    return out


# ---------------------------------------------------------------------------- phase 4
@phase("4-em")
def em(c, wc, smoke):
    out = {}
    k = 4 if smoke else 256
    train = np.asarray(c["train"][:5000] if smoke else c["train"])
    for b in ((16, 64) if smoke else (256, 1024)):
        def one(b=b):
            m = model(c, wc, k, "torch", learn="em", state_dropout=k // 2,
                      parameterization="neural", batch_size=b, em_m_steps=10)
            m._state = m._new_state()
            layout = SentenceLayout.from_ids(train, m.eos_id_)
            work = {}
            m._em_counts(SentenceLayout.from_ids(train[:2000], m.eos_id_), work)  # warm-up
            sync()
            t0 = time.perf_counter()
            ll, counts = m._em_counts(layout, work)
            sync()
            e_s = time.perf_counter() - t0
            t1 = time.perf_counter()
            m._m_step(counts)
            sync()
            return {"K": m.n_states_, "batch": b, "estep_s": e_s, "tok_s": len(train) / e_s,
                    "mstep_s": time.perf_counter() - t1, "train_ppl": float(np.exp(
                        -ll / len(train)))}
        attempt(out, f"estep-b{b}", one)
    best = max((r.get("tok_s", 0.0) for r in out.values()), default=0.0)
    out["targets"] = {"estep_200k": best >= 2e5}
    return out


# ---------------------------------------------------------------------------- phase 5
@phase("5-train")
def train_run(c, wc, budget, smoke):
    sys.path.insert(0, str(ROOT / "experiments"))
    from lm_gpu import timed_fit
    k = 4 if smoke else 256
    cc = {**c, "train": c["train"][:3000], "valid": c["valid"][:1000]} if smoke else c
    m = model(cc, wc, k, "auto", state_dropout=k // 2, parameterization="neural")
    curve = timed_fit(m, cc["train"], cc["valid"], budget, log=log)
    return {"K": m.n_states_, "batch": m._batch, "lr": m._lr, "curve": curve}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--smoke", action="store_true", help="tiny sizes on CPU")
    ap.add_argument("--budget", type=float, default=90.0, help="seconds of phase 5")
    ap.add_argument("--skip", default="", help="phases to skip, e.g. 2,5")
    a = ap.parse_args()
    skip = set(a.skip.split(",")) if a.skip else set()
    R.update(device=DEV, torch=torch.__version__, triton=triton_scan.AVAILABLE,
             gpu=torch.cuda.get_device_name(0) if DEV == "cuda" else None)
    log(f"device {DEV} {R['gpu'] or ''} torch {torch.__version__}, triton "
        f"{'yes' if triton_scan.AVAILABLE else 'no'}")
    c, wc = corpus()
    if a.smoke:
        c = {**c, "train": c["train"][:30000]}
        SMOKE.update(hidden_size=16, bptt=8)
    if "1" not in skip:
        correctness(c, wc, a.smoke)
    if "2" not in skip:
        throughput(c, wc, a.smoke)
    if "3" not in skip:
        profile(c, wc, a.smoke)
    if "4" not in skip:
        em(c, wc, a.smoke)
    if "5" not in skip:
        train_run(c, wc, min(a.budget, 10.0) if a.smoke else a.budget, a.smoke)
    R["total_seconds"] = time.perf_counter() - T_START
    save()
    log("done", json.dumps({k: v.get("ok") for k, v in R["phases"].items()}))


if __name__ == "__main__":
    main()
