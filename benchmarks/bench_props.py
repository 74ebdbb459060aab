"""PROPS online-EM training throughput (words/s), split into source time and online-EM time.

    .venv/bin/python benchmarks/bench_props.py                 # ~2-3 minutes
    .venv/bin/python benchmarks/bench_props.py --words 5000 --repeats 1   # smoke run

Stream: the first ``--words`` (20,000) tokens of Penn Treebank (``<data-dir>/ptb/
ptb.train.txt``, ``<eos>`` after every sentence, Mikolov's convention) as **one sequence**,
W = 10,000 (PTB's 9,999 types with ``<unk>``, plus ``<eos>``). Without the data file the
stream is synthetic: Zipf(1) text over 10,000 symbols (a line says so).

Sources, W = 10,000:

- an interpolated Kneser-Ney 3-gram counted on all of ptb.train.txt (sentences);
- an LSTM language model, embedding 64, hidden 128, one layer, with its random
  initialisation (``epochs=0``): the cost of a forward pass does not depend on the weights.

For each source it times (best of ``--repeats`` after an untimed warm-up):

- ``log_probs``: the source's own (batched / vectorised) ``log_probs`` of the stream;
- step loop: the protocol's ``reset``/``step`` loop (``Source.log_probs``, the default a
  source without a batched path gets: one full predictive distribution per word);
- ``PROPS.fit``: PROPS (K_s = 1, K_p = 2, ``learn="online-em"``) on the stream, the time in
  the source (``PROPS._source_columns``, wrapped with a timer) and the rest (the online-EM
  update, validation, set-up);

and the plain HMM (K = 3, online EM) on the same words as a reference. The table gives
words/s of ``PROPS.fit`` as the library runs it, and of the two combinations "batched
source + online EM" and "step loop + online EM" (source time measured alone plus the
online-EM time measured inside ``fit``). One thread for numba and torch (``--threads``).

Missing words (``--missing``, default 0.1): the same stream with that fraction of the words
replaced by the missing marker (-1, positions drawn with a fixed seed); ``PROPS.fit`` and the
batched ``log_probs`` are timed on it, in alternation with the complete stream, and
reported as a ratio to the complete stream's time (the sources then predict past each
hole: Kneser-Ney backs off, vectorised; the LSTM feeds the expected embedding, which needs
its prediction at the hole: one decoder row per hole, the batched pass cut there).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from _common import best_time, cpu_name  # noqa: E402

import hiddenstate as hs  # noqa: E402
from hiddenstate.sources import KneserNeySource, Source  # noqa: E402
from hiddenstate.textio import Vocabulary  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA_DIR = REPO.parent / "shared" / "data"
W = 10_000


def load_stream(data_dir: Path, n_words: int) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                       Vocabulary | None, str]:
    """``(stream, X_train, lengths_train, vocabulary, description)``: the benchmark stream
    and the n-gram's training text (PTB, or synthetic Zipf text when PTB is absent)."""
    path = data_dir / "ptb" / "ptb.train.txt"
    if not path.is_file():
        rng = np.random.default_rng(0)
        p = 1.0 / np.arange(1, W + 1)
        p /= p.sum()
        X = rng.choice(W, size=n_words + 500_000, p=p)
        lengths = np.full((len(X) - n_words) // 25, 25)
        train = X[n_words:n_words + lengths.sum()]
        return (X[:n_words], train, lengths, None,
                f"synthetic Zipf(1) text over {W:,} symbols ({path} not found)")
    sents = [line.split() + ["<eos>"] for line in path.read_text().splitlines() if line.split()]
    vocab = Vocabulary.build(sents, max_size=W)
    X = vocab.encode(t for s in sents for t in s)
    lengths = np.array([len(s) for s in sents])
    return (X[:n_words], X, lengths, vocab,
            f"Penn Treebank ptb.train.txt, first {n_words:,} tokens as one sequence")


def time_props_fit(source: Source, y: np.ndarray, repeats: int) -> tuple[float, float]:
    """Best ``(total, in source)`` seconds of ``PROPS.fit`` on the stream ``y``."""
    best = (np.inf, np.inf)
    for r in range(repeats + 1):
        model = hs.PROPS([source], n_perturbation_states=2, learn="online-em", random_state=0)
        spent = [0.0]
        inner = model._source_columns

        def timed(*args, _inner=inner, _spent=spent, **kwargs):
            t0 = time.perf_counter()
            try:
                return _inner(*args, **kwargs)
            finally:
                _spent[0] += time.perf_counter() - t0

        model._source_columns = timed  # instance attribute: PROPS calls self._source_columns
        t0 = time.perf_counter()
        model.fit(y)
        total = time.perf_counter() - t0
        if r and total < best[0]:  # r = 0: warm-up
            best = (total, spent[0])
    return best


def bench_source(name: str, source: Source, y: np.ndarray, repeats: int) -> dict:
    print(f"  {name}: log_probs", flush=True)
    batched = best_time(lambda: source.log_probs(y), repeats)[0]
    print(f"  {name}: reset/step loop", flush=True)
    step = best_time(lambda: Source.log_probs(source, y), max(1, repeats - 1))[0]
    print(f"  {name}: PROPS.fit", flush=True)
    total, in_source = time_props_fit(source, y, repeats)
    return {"batched": batched, "step": step, "fit": total, "fit_source": in_source,
            "em": total - in_source}


def table(results: dict, hmm_seconds: float, n: int) -> str:
    rows = ["| model | source computed by | words/s | source (s) | online EM + rest (s) "
            "| fraction in source |", "|---|---|---:|---:|---:|---:|"]

    def row(model: str, how: str, src: float, em: float) -> None:
        total = src + em
        rows.append(f"| {model} | {how} | {n / total:,.0f} | {src:.3f} | {em:.3f} "
                    f"| {src / total:.1%} |")

    for name, r in results.items():
        row(f"PROPS + {name}", "`PROPS.fit` (as the library runs it)", r["fit_source"], r["em"])
        row(f"PROPS + {name}", "batched `log_probs` + online EM", r["batched"], r["em"])
        row(f"PROPS + {name}", "`reset`/`step` loop + online EM", r["step"], r["em"])
    rows.append(f"| HMM (K=3) | - | {n / hmm_seconds:,.0f} | - | {hmm_seconds:.3f} | 0% |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    ap.add_argument("--words", type=int, default=20_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="numba and torch threads")
    ap.add_argument("--no-lstm", action="store_true")
    ap.add_argument("--missing", type=float, default=0.1,
                    help="fraction of missing words in the second run (0: skip it)")
    args = ap.parse_args(argv)

    from hiddenstate import threads

    threads.set_num_threads(args.threads)
    y, X_train, lengths, vocab, what = load_stream(args.data_dir, args.words)
    print(f"stream: {what}", flush=True)
    sources: dict[str, Source] = {}
    t0 = time.perf_counter()
    sources["KN 3-gram"] = KneserNeySource(order=3).fit(X_train, lengths, n_symbols=W,
                                                         vocabulary=vocab)
    print(f"  KN 3-gram counted on {len(X_train):,} tokens in "
          f"{time.perf_counter() - t0:.1f} s", flush=True)
    if not args.no_lstm:
        import torch

        from hiddenstate.sources import LSTMSource

        torch.set_num_threads(args.threads)
        sources["LSTM 64/128"] = LSTMSource(n_symbols=None if vocab else W, embedding_dim=64,
                                            hidden_dim=128, epochs=0).fit(
            X_train[:1000], vocabulary=vocab)
    results = {name: bench_source(name, src, y, args.repeats) for name, src in sources.items()}
    holed = {}
    if args.missing > 0:
        y_holed = y.copy()
        y_holed[np.random.default_rng(0).random(len(y)) < args.missing] = -1
        for name, src in sources.items():
            print(f"  {name}: with {args.missing:.0%} missing", flush=True)
            # complete and holed stream timed in alternation (a shared machine's load
            # drifts), best of each
            best = {key: np.inf for key in ("batched", "fit", "batched_ref", "fit_ref")}
            for _ in range(args.repeats):
                for suffix, data in (("", y_holed), ("_ref", y)):
                    best["batched" + suffix] = min(best["batched" + suffix], best_time(
                        lambda s=src, d=data: s.log_probs(d), 1)[0])
                    best["fit" + suffix] = min(best["fit" + suffix],
                                               time_props_fit(src, data, 1)[0])
            holed[name] = best
    print("  HMM online EM", flush=True)
    hmm_seconds = best_time(lambda: hs.HMM(3, learn="online-em", n_features=W,
                                           random_state=0).fit(y), args.repeats)[0]

    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    print(f"\n{cpu_name()} ({os.cpu_count()} cores), {args.threads} thread(s); hiddenstate "
          f"{hs.__version__}, numpy {np.__version__}, python {sys.version.split()[0]}; "
          f"load average {' '.join(load)}")
    print(f"{what}; W = {W:,}; K = 3 (PROPS: K_s = 1, K_p = 2); best of {args.repeats}\n")
    print(table(results, hmm_seconds, len(y)))
    print("\nsource alone (words/s): " + "; ".join(
        f"{name}: batched log_probs {len(y) / r['batched']:,.0f}, reset/step loop "
        f"{len(y) / r['step']:,.0f}" for name, r in results.items()))
    if holed:
        print(f"\nwith {args.missing:.0%} of the words missing, time / time on the complete "
              "stream: " + "; ".join(
                  f"{name}: PROPS.fit {h['fit'] / h['fit_ref']:.2f}, batched "
                  f"log_probs {h['batched'] / h['batched_ref']:.2f}"
                  for name, h in holed.items()))


if __name__ == "__main__":
    main()
