"""Training throughput and peak memory of hiddenstate.lm against a plain-PyTorch
transcription of the reference recipe (Chiu & Rush 2020, hmm-lm), same machine, same run.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_lm.py [--sizes 10 12] [--steps 3]
    PYTHONPATH=src .venv/bin/python benchmarks/bench_lm.py --em [10 12 14] [--steps 3]
    PYTHONPATH=src .venv/bin/python benchmarks/bench_lm.py --neural-m-step [10 12 14]
    PYTHONPATH=src .venv/bin/python benchmarks/bench_lm.py --launches [8 10 12] [--steps 5]

Each measurement runs in its own process (so peak RSS, ``ru_maxrss``, is its own) with one
torch thread, on PTB train (Brown clusters lm-128 plus one ``<eos>`` cluster, so
K = 129 x k), batch 64 streams x 32 tokens, scalar parameterisation, AdamW, one full
training step (forward, backward, clip, update) timed ``--steps`` times after a warm-up:

- ``hiddenstate``: :class:`hiddenstate.lm.BlockedHMMLM` with state dropout (k/2 of k per
  cluster): transitions normalised over the kept states only, scaled forward as a batched
  ``bmm`` per step, gradients from the explicit marginals (no autograd graph of the scan).
- ``reference``: the recipe as the paper describes it, written here in plain PyTorch: the
  full K x K transition and K x V emission logits, dropped states masked to -inf then
  log-softmax over all K (emissions masked to each state's cluster, log-softmax over V),
  the k x k blocks of every token pair gathered up front, a log-space scan
  (``logsumexp`` of broadcast sums) and autograd through it.
- ``dense``: an ordinary K-state HMM through the same library code (one cluster, k = K,
  no dropout), batch 4 x 32 (it is K^2 per token), only where it fits.

Batch EM, E-step tokens/s (``--em``; numba with its 2 threads, torch with one, the
faster setting for torch on this shared machine): ``em-numba`` is the exact
E-step that ``BlockedHMMLM(learn="em")`` runs on CPU (:mod:`hiddenstate.lm.exact`: the
probabilities from the logits, then the numba forward-backward over whole sentences of the
first ``--em-tokens`` tokens of PTB train, counts reduced); ``em-torch`` the exact
two-pass torch E-step that the same model runs on a GPU (:func:`hiddenstate.lm.scan.
stream_counts`: 64 streams read 32 tokens at a time, the backward pass carried across
windows, the counts of the same tokens); ``em-dropout`` the numba E-step with state dropout
(3k/4 of k kept, the setting docs/lm.md recommends; 32 masks over the shuffled sentences:
:func:`hiddenstate.lm.exact.dropout_counts`, what ``BlockedHMMLM(learn="em",
state_dropout=3 * k // 4)`` runs on CPU).
Ratio: em-numba over that line (so below 1 where the dropout E-step is faster).

The neural parameterisation's batch-EM M-step (``--neural-m-step``; torch with 2 threads,
as in training): seconds per AdamW step on random expected counts (``BlockedHMMLM(
parameterization="neural", learn="em")``, hidden 256), ``--steps`` steps after a warm-up.
``per-cluster`` is the library (the emission logits of a partition as one matrix product
per cluster, padded); ``per-word`` the same step with the emission logits per word (a
gather of each word's k state vectors and a batched dot product: what random constraint
sets use). Ratio: per-word seconds over per-cluster seconds.

Operations per training step (``--launches``; torch with one thread, gradient step with
state dropout k/2, batch 64 x 32, scalar and neural): ``general`` is the recursion of
:class:`hiddenstate.lm.forward.BlockedForward` (any constraint set: one gathered block, a
``bmm`` and a dozen small operations per token step, its gradient scattered entry by
entry), ``partition`` the fast path of :mod:`hiddenstate.lm.scan` that a Brown model runs
(blocks gathered for the whole window, a few operations per step, whole blocks added with
one ``index_add_``). ``ops`` counts the top-level ATen operations of one step that are not
views (on a GPU each is at least one kernel launch), from ``torch.profiler``; ms per step
is the mean over ``--steps`` steps. Ratio: general ops (or ms) over that line's.

Ratios are tokens/s of hiddenstate over the other. No GPU was available for this task;
the same code runs with ``device="cuda"``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = next((p / "shared" / "data" for p in (REPO.parent, REPO.parent.parent)
             if (p / "shared" / "data").is_dir()), REPO.parent / "shared" / "data")


def _setup(k: int):
    import torch
    torch.set_num_threads(1)
    sys.path.insert(0, str(REPO / "src"))
    from hiddenstate.lm import load_corpus, read_brown_paths
    c = load_corpus("ptb", DATA)
    wc = read_brown_paths(DATA / "brown-clusters" / "lm-128" / "paths").word_cluster(
        c["vocabulary"])
    return torch, c, wc


def measure_ours(k: int, steps: int, dense: bool) -> dict:
    torch, c, wc = _setup(k)
    from hiddenstate.lm import BlockedHMMLM
    if dense:
        m = BlockedHMMLM(constraint="dense", n_states=k, states_per_cluster=k, batch_size=4,
                         progress=False)
    else:
        m = BlockedHMMLM(states_per_cluster=k, state_dropout=k // 2, batch_size=64,
                         progress=False)
    m.initialize(c["vocabulary"], wc)
    m._state = m._new_state()
    return time_torch_steps(m, c["train"], steps)


def time_torch_steps(m, train, steps: int) -> dict:
    """Tokens/s of ``m``'s torch training step (``m._state`` ready) on the token ids
    ``train``: one untimed warm-up batch, then the mean over ``steps`` batches of
    ``m.batch_size`` x 32 tokens."""
    from hiddenstate.lm.data import sentence_streams
    tokens, mask = sentence_streams(train, m.eos_id_, m.batch_size)
    m._step(tokens, mask, 0, len(train))
    t0 = time.perf_counter()
    for i in range(1, steps + 1):
        m._step(tokens, mask, 32 * i, len(train))
    dt = (time.perf_counter() - t0) / steps
    return {"K": m.n_states_, "tok_s": m.batch_size * 32 / dt, "step_s": dt}


def measure_reference(k: int, steps: int) -> dict:
    """The gather-and-scan recipe, transcribed from the paper (see the module docstring)."""
    _, c, wc = _setup(k)
    return reference_step_rate(c, wc, k, steps)


def reference_step_rate(c, wc, k: int, steps: int, B: int = 64, T: int = 32,
                        device: str = "cpu", sync=lambda: None) -> dict:
    """Tokens/s of the reference recipe in plain PyTorch on ``device`` (full K x K and
    K x V logits, dropped states masked, log-softmax over all K, the blocks of every token
    pair gathered, a log-space scan, autograd), ``steps`` steps of ``B`` x ``T`` after a
    warm-up; also what ``benchmarks/gpu_lm.py`` runs on a GPU."""
    import torch

    from hiddenstate.lm.data import sentence_streams
    V = len(c["vocabulary"])
    eos = c["vocabulary"].id_of("<eos>")
    C = int(wc.max()) + 1
    K = C * k
    keep = k // 2
    g = torch.Generator(device=device).manual_seed(0)
    start = torch.nn.Parameter(torch.randn(K, generator=g, device=device))
    trans = torch.nn.Parameter(torch.randn(K, K, generator=g, device=device))
    emit = torch.nn.Parameter(torch.randn(K, V, generator=g, device=device))
    wct = torch.as_tensor(wc, device=device)
    emit_mask = (torch.arange(K, device=device) // k)[:, None] != wct[None, :]  # (K, V)
    word_states = wct[:, None] * k + torch.arange(k, device=device)[None, :]  # (V, k)
    opt = torch.optim.AdamW([start, trans, emit], lr=0.01)
    tokens, _ = sentence_streams(c["train"], eos, B)
    tokens = torch.as_tensor(tokens, device=device)

    def step(t0):
        x = tokens[:, t0:t0 + T]
        keep_cols = torch.rand(C, k, generator=g, device=device).argsort(1)[:, :keep]
        drop = torch.ones(C, k, dtype=torch.bool, device=device)
        drop.scatter_(1, keep_cols, False)
        drop = drop.reshape(-1)
        lt = torch.log_softmax(trans.masked_fill(drop[None, :], -float("inf")), dim=1)
        ls = torch.log_softmax(start.masked_fill(drop, -float("inf")), dim=0)
        le = torch.log_softmax(emit.masked_fill(emit_mask, -float("inf")), dim=1)  # (K, V)
        s = word_states[x]  # (B, T, k)
        e = le[s, x[:, :, None]].masked_fill(drop[s], -float("inf"))  # (B, T, k)
        blocks = lt[s[:, :-1, :, None], s[:, 1:, None, :]]  # (B, T-1, k, k)
        reset = x[:, :-1] == eos
        blocks = torch.where(reset[:, :, None, None], ls[s[:, 1:]][:, :, None, :], blocks)
        a = ls[s[:, 0]] + e[:, 0]
        for t in range(1, x.shape[1]):
            a = torch.logsumexp(a[:, :, None] + blocks[:, t - 1], dim=1) + e[:, t]
        loss = -torch.logsumexp(a, dim=1).sum() / x.numel()
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_([start, trans, emit], 5.0)
        opt.step()

    step(0)
    sync()
    t0 = time.perf_counter()
    for i in range(1, steps + 1):
        step(T * i)
    sync()
    dt = (time.perf_counter() - t0) / steps
    return {"K": K, "batch": B, "tok_s": B * T / dt, "step_s": dt}


def measure_em(kind: str, k: int, steps: int, n_tokens: int) -> dict:
    """E-step tokens/s of batch EM: the numba kernel or the torch recursion (module docs)."""
    torch, c, wc = _setup(k)  # one torch thread (faster than two on this shared machine)
    from hiddenstate.lm import BlockedHMMLM
    from hiddenstate.lm.exact import SentenceLayout, dropout_counts, exact_counts
    m = BlockedHMMLM(states_per_cluster=k, learn="em", batch_size=64, progress=False,
                     state_dropout=3 * k // 4 if kind == "em-dropout" else None)
    m.initialize(c["vocabulary"], wc)
    if kind == "em-dropout":
        cs = m.constraints_
        layout = SentenceLayout.from_ids(c["train"][:n_tokens], m.eos_id_)
        order, keeps = m._dropout_draws(layout.n_sentences)
        warm = SentenceLayout.from_ids(c["train"][:200], m.eos_id_)
        dropout_counts(warm, cs.word_cluster, k, *m._probabilities(), keeps[:1])
        t0 = time.perf_counter()
        dropout_counts(layout.reordered(order), cs.word_cluster, k, *m._probabilities(),
                       keeps)
        dt = time.perf_counter() - t0
        return {"K": m.n_states_, "tok_s": layout.bounds[-1] / dt, "step_s": dt}
    if kind == "em-numba":
        ws = m.constraints_.word_states
        ids = c["train"][:n_tokens]
        exact_counts(SentenceLayout.from_ids(ids[:200], m.eos_id_), ws, *m._probabilities())
        t0 = time.perf_counter()
        exact_counts(SentenceLayout.from_ids(ids, m.eos_id_), ws, *m._probabilities())
        dt = time.perf_counter() - t0
        return {"K": m.n_states_, "tok_s": len(ids) / dt, "step_s": dt}
    # em-torch: the exact two-pass torch E-step a GPU runs (lm/scan.py), here on CPU
    ids = c["train"][:n_tokens]
    m._device_counts(SentenceLayout.from_ids(ids[:200], m.eos_id_), None, {})
    t0 = time.perf_counter()
    m._device_counts(SentenceLayout.from_ids(ids, m.eos_id_), None, {})
    dt = time.perf_counter() - t0
    return {"K": m.n_states_, "tok_s": len(ids) / dt, "step_s": dt}


def measure_m_step(kind: str, k: int, steps: int) -> dict:
    """Seconds per AdamW step of the neural batch-EM M-step (module docstring)."""
    torch, c, wc = _setup(k)
    torch.set_num_threads(2)
    from hiddenstate.lm import BlockedHMMLM
    m = BlockedHMMLM(states_per_cluster=k, parameterization="neural", learn="em",
                     em_m_steps=1, progress=False)
    m.initialize(c["vocabulary"], wc)
    if kind == "m-per-word":
        m.net_._slot = None  # the per-word emission logits of overlapping sets
    m._state = m._new_state()
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        shapes = [t.shape for t in m.net_(m.constraints_.all_states())]
    acc = {name: torch.rand(shape, generator=g, dtype=torch.float64)
           for name, shape in zip(("start", "trans", "emit"), shapes, strict=True)}
    m._m_step(acc)  # warm-up
    t0 = time.perf_counter()
    for _ in range(steps):
        m._m_step(acc)
    return {"K": m.n_states_, "step_s": (time.perf_counter() - t0) / steps}


#: ATen operations that only make views (no kernel on a GPU)
_VIEWS = {"aten::view", "aten::reshape", "aten::select", "aten::slice", "aten::expand",
          "aten::as_strided", "aten::unsqueeze", "aten::squeeze", "aten::transpose",
          "aten::permute", "aten::t", "aten::alias", "aten::detach", "aten::_unsafe_view",
          "aten::unbind", "aten::split", "aten::narrow", "aten::expand_as", "aten::view_as",
          "aten::lift_fresh", "aten::_reshape_alias", "aten::numpy_T", "aten::detach_",
          "aten::resolve_conj", "aten::resolve_neg", "aten::result_type", "aten::is_nonzero",
          "aten::item", "aten::_local_scalar_dense", "aten::empty", "aten::empty_like",
          "aten::empty_strided", "aten::set_", "aten::to", "aten::_to_copy"}


def count_ops(prof) -> int:
    """Top-level ATen operations that are not views, in a ``torch.profiler`` trace."""
    def nested(e):
        q = e.cpu_parent
        while q is not None:
            if q.name.startswith("aten::"):
                return True
            q = q.cpu_parent
        return False
    return sum(1 for e in prof.events() if e.name.startswith("aten::")
               and e.name not in _VIEWS and not nested(e))


def measure_launches(kind: str, k: int, steps: int) -> dict:
    """Operations and milliseconds per gradient step (module docstring); ``kind`` is
    ``<general|partition>-<scalar|neural>``."""
    torch, c, wc = _setup(k)
    from torch.profiler import ProfilerActivity, profile

    from hiddenstate.lm import BlockedHMMLM
    from hiddenstate.lm.data import sentence_streams
    impl, param = kind.split("-")
    m = BlockedHMMLM(states_per_cluster=k, state_dropout=k // 2, batch_size=64,
                     parameterization=param, progress=False)
    m.initialize(c["vocabulary"], wc)
    if impl == "general":
        m._wc = None  # the recursion of BlockedForward, as before the partition path
    m._state = m._new_state()
    tokens, mask = sentence_streams(c["train"], m.eos_id_, m.batch_size)
    m._step(tokens, mask, 0, len(c["train"]))
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        m._step(tokens, mask, 32, len(c["train"]))
    t0 = time.perf_counter()
    for i in range(2, steps + 2):
        m._step(tokens, mask, 32 * i, len(c["train"]))
    dt = (time.perf_counter() - t0) / steps
    return {"K": m.n_states_, "ops": count_ops(prof), "step_s": dt,
            "tok_s": m.batch_size * 32 / dt}


def child(kind: str, k: int, steps: int, n_tokens: int = 0) -> None:
    if kind.startswith(("general-", "partition-")):
        out = measure_launches(kind, k, steps)
    elif kind.startswith("m-"):
        out = measure_m_step(kind, k, steps)
    elif kind.startswith("em-"):
        out = measure_em(kind, k, steps, n_tokens)
    elif kind == "reference":
        out = measure_reference(k, steps)
    else:
        out = measure_ours(k, steps, dense=kind == "dense")
    out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))


def run(kind: str, k: int, steps: int, timeout: float, n_tokens: int = 0) -> dict | None:
    cmd = [sys.executable, __file__, "--child", kind, str(k), str(steps), str(n_tokens)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"over {timeout:.0f} s"}
    if r.returncode != 0:
        return {"error": (r.stderr.strip().splitlines() or ["failed"])[-1][:80]}
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 12],
                    help="log2 of the states (k = 2^n / 128 per cluster)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--em", type=int, nargs="*", default=None,
                    help="instead: batch-EM E-step rows at these 2^n (default 10 12 14)")
    ap.add_argument("--em-tokens", type=int, default=200_000)
    ap.add_argument("--neural-m-step", type=int, nargs="*", default=None,
                    help="instead: neural batch-EM M-step rows at these 2^n (10 12 14)")
    ap.add_argument("--launches", type=int, nargs="*", default=None,
                    help="instead: operations and ms per gradient step, general against "
                         "partition recursion, at these 2^n (default 8 10 12)")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), int(args.child[2]), int(args.child[3]))
        return
    if not DATA.is_dir():
        sys.exit(f"{DATA} is absent: the benchmark needs shared/data (PTB, Brown clusters)")
    sys.path.insert(0, str(REPO / "benchmarks"))
    from _common import cpu_name
    if args.launches is not None:
        launch_rows(args.launches or [8, 10, 12], args.steps, args.timeout, cpu_name())
        return
    if args.neural_m_step is not None:
        m_step_rows(args.neural_m_step or [10, 12, 14], args.steps, args.timeout, cpu_name())
        return
    if args.em is not None:
        em_rows(args.em or [10, 12, 14], args.steps, args.timeout, args.em_tokens, cpu_name())
        return
    print(f"CPU: {cpu_name()}, 1 torch thread; no GPU available for this task.")
    print(f"{'2^n':>4} {'K':>6} {'impl':>11} {'tok/s':>9} {'s/step':>8} {'peak MB':>8} "
          f"{'ours/that':>9}")
    for n in args.sizes:
        k = 2 ** n // 128
        rows = {"hiddenstate": run("ours", k, args.steps, args.timeout)}
        if n <= 12:
            rows["reference"] = run("reference", k, args.steps, args.timeout)
        else:  # K x V and K x K float32 tables, gradients, AdamW moments, masked copies
            gb = 7 * 4 * (129 * k) * (129 * k + 10000) / 2**30
            rows["reference"] = {"error": f"not run: needs about {gb:.0f} GB on this shared "
                                          "23 GB machine"}
        if n <= 10:
            rows["dense"] = run("dense", 2 ** n, 1, args.timeout)
        print_rows(n, rows, "hiddenstate", 11, 3, 9)


def em_rows(sizes: list[int], steps: int, timeout: float, n_tokens: int, cpu: str) -> None:
    print(f"CPU: {cpu}; batch-EM E-step, numba 2 threads, torch 1 thread; no GPU available.")
    print(f"{'2^n':>4} {'K':>6} {'impl':>10} {'tok/s':>9} {'seconds':>8} {'peak MB':>8} "
          f"{'numba/that':>11}")
    for n in sizes:
        k = 2 ** n // 128
        rows = {name: run(name, k, steps, timeout, n_tokens)
                for name in ("em-numba", "em-torch", "em-dropout")}
        print_rows(n, rows, "em-numba", 10, 2, 11)


def launch_rows(sizes: list[int], steps: int, timeout: float, cpu: str) -> None:
    print(f"CPU: {cpu}; gradient step, dropout k/2, batch 64 x 32, 1 torch thread.")
    print(f"{'2^n':>4} {'K':>6} {'param':>7} {'impl':>10} {'ops':>6} {'ms/step':>8} "
          f"{'tok/s':>8} {'ops ratio':>9} {'ms ratio':>8}")
    for n in sizes:
        k = 2 ** n // 128
        for param in ("scalar", "neural"):
            rows = {impl: run(f"{impl}-{param}", k, steps, timeout)
                    for impl in ("general", "partition")}
            ref = rows["general"]
            for impl, r in rows.items():
                if "error" in r:
                    print(f"{n:>4} {'':>6} {param:>7} {impl:>10} {r['error']}")
                    continue
                print(f"{n:>4} {r['K']:>6} {param:>7} {impl:>10} {r['ops']:>6} "
                      f"{r['step_s'] * 1e3:>8.1f} {r['tok_s']:>8.0f} "
                      f"{ref.get('ops', float('nan')) / r['ops']:>9.2f} "
                      f"{ref.get('step_s', float('nan')) / r['step_s']:>8.2f}", flush=True)


def m_step_rows(sizes: list[int], steps: int, timeout: float, cpu: str) -> None:
    print(f"CPU: {cpu}; neural batch-EM M-step, torch 2 threads; no GPU available.")
    print(f"{'2^n':>4} {'K':>6} {'impl':>11} {'s/step':>8} {'peak MB':>8} "
          f"{'per-word/that':>14}")
    for n in sizes:
        k = 2 ** n // 128
        rows = {name: run(f"m-{name}", k, steps, timeout)
                for name in ("per-cluster", "per-word")}
        word = rows["per-word"].get("step_s", float("nan"))
        for name, r in rows.items():
            if "error" in r:
                print(f"{n:>4} {'':>6} {name:>11} {r['error']}")
                continue
            print(f"{n:>4} {r['K']:>6} {name:>11} {r['step_s']:>8.2f} {r['peak_mb']:>8.0f} "
                  f"{word / r['step_s']:>14.2f}", flush=True)


def print_rows(n: int, rows: dict, ours_name: str, name_w: int, digits: int,
               ratio_w: int) -> None:
    """One table line per implementation at 2^n states: tokens/s, seconds per step, peak
    memory and the ratio of ``rows[ours_name]``'s tokens/s to that line's."""
    ours = rows[ours_name]
    for name, r in rows.items():
        if "error" in r:
            print(f"{n:>4} {'':>6} {name:>{name_w}} {r['error']}")
            continue
        ratio = ours["tok_s"] / r["tok_s"] if "tok_s" in ours else float("nan")
        print(f"{n:>4} {r['K']:>6} {name:>{name_w}} {r['tok_s']:>9.0f} "
              f"{r['step_s']:>8.{digits}f} {r['peak_mb']:>8.0f} {ratio:>{ratio_w}.2f}",
              flush=True)


if __name__ == "__main__":
    main()
