"""PROPS personalisation (Wojnowicz & Zhao, "PROPS: Probabilistic personalization of
black-box sequence models", experiment 2): a reference language model trained on one
corpus, personalised on the first 2,000 words of another.

    .venv/bin/python experiments/props_personalization.py            # full run (see README)
    .venv/bin/python experiments/props_personalization.py --quick    # smoke run, < 1 minute
    .venv/bin/python experiments/props_personalization.py --data-dir /path/to/data

Reference corpus: WikiText-2 train (``<data-dir>/wikitext-2/wiki.train.tokens``); target
stream: Penn Treebank, ``<data-dir>/ptb/ptb.train.txt`` from its first line. WikiText-2 is
normalised to the conventions of Mikolov's PTB (lower case, no punctuation, numbers as
``N``; see :func:`normalise_wikitext_line`) and split into sentences; one vocabulary, the
``--vocab-size`` most frequent WikiText-2 train tokens (``<unk>`` included, id 0), serves
both corpora. Every sentence is a sequence: each source restarts from its
beginning-of-sequence context, and the HMM filters restart from ``startprob_``.

Sources (black boxes, never updated): an interpolated Kneser-Ney 3-gram and an LSTM
language model, both trained on the normalised WikiText-2 train sentences. Their training
and WikiText-2 validation perplexities are reported.

Models, each with online EM (the library's defaults: step ``t**-0.6``, 20 warm-up
observations, default priors) and ``--seeds`` initialisations:

- PROPS, K = 3: the source (K_s = 1) and K_p = 2 learned perturbation states;
- a plain streaming HMM, K = 3, learned from the target words alone (it does not use the
  source, so it is the same model in both source groups);
- the black box alone;
- PROPS and the HMM again with Polyak-Ruppert averaging (``averaging=True``), frozen only.

Protocol: personalise on the first ``--adapt`` (2,000) target words (``fit``), then score
the next ``--eval`` (20,000) words (a) with the model frozen (``token_scores`` /
``score_tokens`` on the 22,000 words, the last 20,000 kept, so the sentence cut at word
2,000 is scored in one piece) and (b) prequentially: ``partial_fit(..., continues=True)``
on the 20,000 words, each word predicted before the model learns from it
(``stream_log_prob_``). Reported: mean predictive probability mean_t P(y_t | y_<t) (the
paper's measure), perplexity exp(-mean_t log P(y_t | y_<t)), and for PROPS the mean
filtered probability of the perturbation states.

Outputs ``experiments/out/props_personalization.md`` and ``.png``. Trained sources and the
vocabulary are cached under ``experiments/out/props_personalization_cache/`` (keyed by
their settings), so a rerun skips training; ``--retrain`` ignores the cache.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import DEFAULT_DATA_DIR, REPO, markdown_table  # noqa: E402

import hiddenstate as hs  # noqa: E402
from hiddenstate.sources import KneserNeySource, Source, load_source, sequence_log_probs  # noqa: E402
from hiddenstate.textio import Vocabulary  # noqa: E402

OUT = REPO / "experiments" / "out"
CACHE = OUT / "props_personalization_cache"
#: the paper's numbers (Trump tweets, W = 13,711; Wikipedia LSTM)
PAPER = {"PROPS": 0.01, "HMM": 0.004, "uniform": 7.2e-5}
#: PTB keeps these punctuation tokens (``$ 's & ' #``); every other token without a letter
#: or digit is dropped from WikiText-2
_KEEP_PUNCT = {"$", "&", "'", "#", "%"}
_NUMBER = re.compile(r"^[+-]?\d[\d,.:/]*$")
_SENTENCE_END = {".", "?", "!"}
_ALNUM = re.compile(r"[0-9a-z]")


# -- settings --------------------------------------------------------------------------------
@dataclass(frozen=True)
class LSTMSettings:
    """Hyper-parameters of the LSTM source (see :class:`hiddenstate.sources.LSTMSource`)."""

    embedding_dim: int = 64
    hidden_dim: int = 128
    epochs: int = 1
    batch_size: int = 32
    bptt: int = 64
    lr: float = 3e-3
    dropout: float = 0.0
    random_state: int = 0


@dataclass(frozen=True)
class Settings:
    """Everything that defines a run (the cache keys come from here)."""

    vocab_size: int = 10_000
    n_adapt: int = 2_000
    n_eval: int = 20_000
    seeds: tuple[int, ...] = (0, 1, 2)
    #: WikiText-2 train tokens read (None: all); the quick run reads a slice
    wiki_limit: int | None = None
    order: int = 3
    lstm: LSTMSettings | None = field(default_factory=LSTMSettings)
    threads: int = 1

    def key(self, what: str) -> str:
        """Cache name of the vocabulary or a source trained under these settings."""
        base = f"w{self.vocab_size}-wiki{self.wiki_limit or 'all'}"
        if what == "vocab":
            return f"vocab-{base}"
        if what == "ngram":
            return f"kn{self.order}-{base}"
        s = self.lstm
        return (f"lstm-e{s.embedding_dim}-h{s.hidden_dim}-ep{s.epochs}-b{s.batch_size}"
                f"-t{s.bptt}-lr{s.lr:g}-d{s.dropout:g}-s{s.random_state}-{base}")


# -- data ------------------------------------------------------------------------------------
def normalise_wikitext_line(line: str) -> list[list[str]]:
    """One WikiText-2 line as PTB-like sentences (lists of tokens).

    Mikolov's PTB is lower case, has no punctuation but ``$ 's & ' #``, and writes every
    number as ``N``. So: headings (`` = Title = ``) are skipped; WikiText's split numbers
    and hyphenations are glued back (``1 @,@ 000`` -> ``1000``, ``3 @.@ 5`` -> ``3.5``,
    ``role @-@ playing`` -> ``role-playing``); tokens are lower-cased; the line is cut into
    sentences after ``.``, ``?`` and ``!``; numbers become ``N``; tokens with no letter or
    digit are dropped (except those PTB keeps). WikiText's ``<unk>`` stays ``<unk>``.
    """
    text = line.strip()
    if not text or text.startswith("="):
        return []
    text = text.replace(" @,@ ", "").replace(" @.@ ", ".").replace(" @-@ ", "-")
    sentences: list[list[str]] = []
    current: list[str] = []
    for tok in text.lower().split():
        if tok in _SENTENCE_END:
            if current:
                sentences.append(current)
            current = []
        elif tok == "<unk>" or tok in _KEEP_PUNCT:
            current.append(tok)
        elif _NUMBER.match(tok):
            current.append("N")
        elif _ALNUM.search(tok):
            current.append(tok)
    if current:
        sentences.append(current)
    return sentences


def _require(path: Path, what: str) -> Path:
    if not path.is_file():
        raise SystemExit(
            f"{what} not found: {path} does not exist. Put the data under <data-dir> "
            f"(wikitext-2/wiki.{{train,valid}}.tokens and ptb/ptb.train.txt) and pass "
            f"--data-dir <data-dir> (default: {DEFAULT_DATA_DIR}).")
    return path


def read_wikitext(path: Path, limit: int | None = None) -> list[list[str]]:
    """Normalised WikiText-2 sentences (at most about ``limit`` tokens)."""
    out: list[list[str]] = []
    n = 0
    with open(_require(path, "WikiText-2"), encoding="utf-8") as f:
        for line in f:
            for sent in normalise_wikitext_line(line):
                out.append(sent)
                n += len(sent)
            if limit is not None and n >= limit:
                break
    return out


def read_ptb(path: Path, n_words: int | None = None) -> list[list[str]]:
    """PTB sentences from the start of the file until ``n_words`` words are read."""
    out: list[list[str]] = []
    n = 0
    with open(_require(path, "Penn Treebank"), encoding="utf-8") as f:
        for line in f:
            words = line.split()
            if words:
                out.append(words)
                n += len(words)
                if n_words is not None and n >= n_words:
                    break
    return out


def encode(sentences: Iterable[list[str]], vocab: Vocabulary) -> tuple[np.ndarray, np.ndarray]:
    """``(X, lengths)``: 1-D symbol ids of the concatenated sentences and their lengths."""
    sentences = [s for s in sentences if s]
    X = vocab.encode(t for s in sentences for t in s)
    return X, np.array([len(s) for s in sentences], dtype=np.int64)


def cut_lengths(lengths: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, bool]:
    """Lengths of the first ``n`` tokens and of the rest, and whether the cut falls inside
    a sentence (then the rest's first sequence continues the head's last one)."""
    ends = np.cumsum(lengths)
    i = int(np.searchsorted(ends, n, side="left"))  # sentence holding token n - 1
    head = lengths[:i + 1].copy()
    head[-1] -= ends[i] - n
    tail = lengths[i:].copy()
    tail[0] = ends[i] - n
    return head[head > 0], tail[tail > 0], bool(ends[i] != n)


# -- sources ---------------------------------------------------------------------------------
def perplexity(log_p: np.ndarray) -> float:
    return float(np.exp(-np.mean(log_p)))


def get_vocabulary(settings: Settings, train: list[list[str]], retrain: bool) -> Vocabulary:
    """The shared vocabulary (cached)."""
    path = CACHE / f"{settings.key('vocab')}.json"
    if path.is_file() and not retrain:
        return Vocabulary.load(path)
    vocab = Vocabulary.build(train, max_size=settings.vocab_size)
    CACHE.mkdir(parents=True, exist_ok=True)
    vocab.save(path)
    return vocab


def get_source(name: str, settings: Settings, vocab: Vocabulary, train, valid,
               retrain: bool) -> tuple[Source, dict]:
    """A trained source and its report (training time, train/valid perplexity), trained on
    ``train`` = (X, lengths) or loaded from the cache."""
    key = settings.key(name)
    path, info_path = CACHE / key, CACHE / f"{key}.info.json"
    if path.is_dir() and info_path.is_file() and not retrain:
        print(f"  {name}: loading the cached source {path.name}", flush=True)
        return load_source(path), json.loads(info_path.read_text())
    (X, L), (Xv, Lv) = train, valid
    t0 = time.perf_counter()
    if name == "ngram":
        print(f"  {name}: counting {settings.order}-grams of {len(X):,} tokens", flush=True)
        src = KneserNeySource(order=settings.order).fit(X, L, vocabulary=vocab)
        fit_s = time.perf_counter() - t0
        train_ppl = perplexity(sequence_log_probs(src, X, L))
        setting = (f"interpolated Kneser-Ney, order {settings.order}, discounts "
                   f"{', '.join(f'{d:.3f}' for d in src.discounts_)} (estimated per order)")
        train_note = "in-sample"
    else:
        from hiddenstate.sources import LSTMSource

        s = settings.lstm
        print(f"  {name}: training on {len(X):,} tokens ({s})", flush=True)
        src = LSTMSource(embedding_dim=s.embedding_dim, hidden_dim=s.hidden_dim,
                         epochs=s.epochs, batch_size=s.batch_size, bptt=s.bptt, lr=s.lr,
                         dropout=s.dropout, random_state=s.random_state, verbose=True)
        src.fit(X, L, vocabulary=vocab)
        fit_s = time.perf_counter() - t0
        train_ppl = float(np.exp(src.training_loss_[-1]))
        setting = (f"1-layer LSTM, embedding {s.embedding_dim}, hidden {s.hidden_dim}, "
                   f"{s.epochs} epoch(s), Adam lr {s.lr:g}, batch {s.batch_size} lanes, BPTT "
                   f"{s.bptt}, dropout {s.dropout:g}, clip 1, seed {s.random_state}")
        train_note = "mean loss during the last epoch"
    t1 = time.perf_counter()
    valid_ppl = perplexity(sequence_log_probs(src, Xv, Lv))
    info = {"setting": setting, "train_tokens": int(len(X)), "train_seconds": fit_s,
            "train_ppl": train_ppl, "train_note": train_note, "valid_ppl": valid_ppl,
            "valid_tokens": int(len(Xv)), "valid_seconds": time.perf_counter() - t1,
            "threads": settings.threads}
    CACHE.mkdir(parents=True, exist_ok=True)
    src.save(path)
    info_path.write_text(json.dumps(info, indent=2))
    return src, info


# -- personalisation -------------------------------------------------------------------------
@dataclass
class Run:
    """Per-token log-probabilities of one model on the target stream."""

    #: prequential log P(y_t | y_<t) on all adapt + eval words (learning throughout)
    stream: np.ndarray
    #: frozen after the adaptation words, on the eval words
    frozen: np.ndarray
    #: the same frozen model on the adaptation words themselves (in-sample)
    in_sample: np.ndarray
    #: mean filtered P(perturbation states) on the eval words, frozen (PROPS only)
    p_perturbation: float = float("nan")
    seconds: float = 0.0


def run_model(model, X: np.ndarray, lengths: np.ndarray, n_adapt: int) -> Run:
    """Personalise ``model`` on the first ``n_adapt`` words, score the rest frozen, then
    continue learning through the rest (prequential)."""
    t0 = time.perf_counter()
    head, tail, inside = cut_lengths(lengths, n_adapt)
    model.fit(X[:n_adapt], head)
    adapt_stream = model.stream_log_prob_.copy()
    p_pert = float("nan")
    if isinstance(model, hs.PROPS):
        scores = model.token_scores(X, lengths)
        frozen = scores.log_prob
        p_pert = float(scores.filtered[n_adapt:, model.n_sources:].sum(axis=1).mean())
    else:
        frozen = model.score_tokens(X, lengths)
    model.partial_fit(X[n_adapt:], tail, continues=inside)
    stream = np.concatenate([adapt_stream, model.stream_log_prob_])
    return Run(stream, frozen[n_adapt:], frozen[:n_adapt], p_pert, time.perf_counter() - t0)


#: the personalised models: key -> (label, PROPS?, online-EM options). The main
#: comparison uses the learner's defaults; the "averaged" variants add Polyak-Ruppert
#: averaging of the iterates (``averaging=True``). Online EM predicts each word of the
#: stream with its running iterate, not the average, so an averaged model's prequential
#: log-probabilities are those of the plain one: only its frozen scores are reported.
MODELS = {
    "hmm": ("HMM (K=3)", False, {}),
    "hmm_avg": ("HMM (K=3), averaged", False, {"averaging": True}),
    "props": ("PROPS (K_s=1, K_p=2)", True, {}),
    "props_avg": ("PROPS (K_s=1, K_p=2), averaged", True, {"averaging": True}),
}


def _averaged(key: str) -> bool:
    return bool(MODELS.get(key, ("", False, {}))[2].get("averaging"))


def make_model(key: str, source: Source, seed: int):
    """A fresh PROPS (K_s = 1, K_p = 2) or HMM (K = 3) learning by online EM."""
    _, is_props, options = MODELS[key]
    if is_props:
        return hs.PROPS([source], n_perturbation_states=2, learn="online-em",
                        random_state=seed, learner_options=options or None)
    return hs.HMM(n_states=3, learn="online-em", n_features=int(source.n_symbols),
                  random_state=seed, learner_options=options or None)


def summarise(runs: list[Run], n_adapt: int, known: np.ndarray) -> dict:
    """Frozen and prequential statistics of the runs (one per seed) of one model."""
    out = {"frozen": stats([r.frozen for r in runs], known),
           "stream": stats([r.stream[n_adapt:] for r in runs], known),
           "in_sample": float(np.mean([perplexity(r.in_sample) for r in runs])),
           "seconds": float(np.mean([r.seconds for r in runs]))}
    if not np.isnan(runs[0].p_perturbation):
        out["p_perturbation"] = float(np.mean([r.p_perturbation for r in runs]))
    return out


# -- summaries -------------------------------------------------------------------------------
def stats(log_ps: list[np.ndarray], known: np.ndarray) -> dict:
    """Mean predictive probability (all words, and the words other than ``<unk>``: the
    mask ``known``) and perplexity of each run: mean and sd over runs."""
    mpp = np.array([np.mean(np.exp(lp)) for lp in log_ps])
    mpp_known = np.array([np.mean(np.exp(lp[known])) for lp in log_ps])
    ppl = np.array([perplexity(lp) for lp in log_ps])

    def sd(a: np.ndarray) -> float:
        return float(a.std(ddof=1)) if len(a) > 1 else 0.0

    return {"mpp": float(mpp.mean()), "mpp_sd": sd(mpp), "mpp_known": float(mpp_known.mean()),
            "mpp_known_sd": sd(mpp_known), "ppl": float(ppl.mean()), "ppl_sd": sd(ppl),
            "mpp_all": mpp.tolist(), "ppl_all": ppl.tolist()}


def fmt(mean: float, sd: float, digits: int = 4) -> str:
    return f"{mean:.{digits}g} ± {sd:.1g}" if sd > 0 else f"{mean:.{digits}g}"


def results_rows(results: dict) -> list[list]:
    rows = []
    for src_name, res in results.items():
        models = [("black box alone", "blackbox")] + [(v[0], k) for k, v in MODELS.items()]
        for label, key in models:
            for mode in ("frozen", "stream"):
                if mode not in res[key] or (mode == "stream" and _averaged(key)):
                    continue
                s = res[key][mode]
                how = "fixed" if key == "blackbox" else (
                    "frozen" if mode == "frozen" else "prequential")
                rows.append([src_name, label, how, fmt(s["mpp"], s["mpp_sd"]),
                             fmt(s["mpp_known"], s["mpp_known_sd"]),
                             fmt(s["ppl"], s["ppl_sd"])])
    return rows


def plot(results: dict, curves: dict, n_adapt: int, path: Path) -> None:
    """Top: mean predictive probability per model and source (bars), running mean of the
    log-probability over the whole stream (one panel per source). Bottom: perplexity (bars,
    log scale), and the running means minus the black box's (zoomed on PROPS)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(results)
    n_src = len(names)
    fig, axes = plt.subplots(2, 1 + n_src, figsize=(5.5 * (1 + n_src), 8.4), squeeze=False)
    bars = [("black box", "blackbox", "frozen", "0.5"), ("HMM frozen", "hmm", "frozen", "C0"),
            ("HMM preq.", "hmm", "stream", "#9ecae1"),
            ("PROPS frozen", "props", "frozen", "C3"),
            ("PROPS preq.", "props", "stream", "#fc9272"),
            ("PROPS avg. frozen", "props_avg", "frozen", "C1")]
    width = 0.8 / len(bars)
    for ax, measure, title in ((axes[0, 0], "mpp", "mean predictive probability"),
                               (axes[1, 0], "ppl", "perplexity")):
        for j, (label, key, mode, color) in enumerate(bars):
            xs = np.arange(n_src) + (j - (len(bars) - 1) / 2) * width
            ys = [results[s][key][mode][measure] for s in names]
            es = [results[s][key][mode][measure + "_sd"] for s in names]
            ax.bar(xs, ys, width, yerr=es, color=color, label=label, capsize=2)
        ax.set_xticks(np.arange(n_src), names)
        ax.set_title(f"{title} on the evaluation words (± sd over seeds)", fontsize=10)
    ax = axes[0, 0]
    for y, label, ls in ((PAPER["PROPS"], "paper: PROPS", "--"),
                         (PAPER["HMM"], "paper: HMM", ":")):
        ax.axhline(y, color="k", ls=ls, lw=0.8)
        ax.text(n_src - 0.5, y, label, va="bottom", ha="right", fontsize=7)
    ax.set_ylabel("mean P(y_t | y_<t)")
    ax.legend(fontsize=7, loc="center right")
    axes[1, 0].set_yscale("log")
    axes[1, 0].set_ylabel("exp(-mean log P(y_t | y_<t))")
    lines = [("hmm", "C0", "HMM"), ("props", "C3", "PROPS"),
             ("props_avg", "C1", "PROPS averaged")]
    for col, name in enumerate(names, start=1):
        c = curves[name]
        t = np.arange(1, len(c["blackbox"]) + 1)
        base = np.cumsum(c["blackbox"]) / t
        tf = np.arange(1, len(c["props"]["frozen"]) + 1)
        base_f = np.cumsum(c["blackbox"][n_adapt:]) / tf
        for row, ax in enumerate(axes[:, col]):
            rel = row == 1
            ax.plot(t, base - base * rel, color="0.4", label="black box")
            for key, color, label in lines:
                if rel and key.startswith("hmm"):
                    continue
                if not _averaged(key):
                    run = np.cumsum(c[key]["stream"]) / t
                    ax.plot(t, run - base * rel, color=color, label=f"{label} prequential")
                run_f = np.cumsum(c[key]["frozen"]) / tf
                ax.plot(n_adapt + tf, run_f - base_f * rel, color=color, ls="--",
                        label=f"{label} frozen (from word {n_adapt + 1:,})")
            ax.axvline(n_adapt, color="k", lw=0.6)
            ax.set_xscale("log")
            ax.set_xlabel("target word t (PTB)")
        axes[0, col].set_ylabel("running mean of log P(y_s | y_<s), s <= t")
        axes[0, col].set_title(f"source: {name} (mean over seeds)", fontsize=10)
        axes[0, col].legend(fontsize=7, loc="lower left")
        axes[1, col].set_ylabel("the same minus the black box's (nats)")
        axes[1, col].set_title(f"source: {name}: PROPS against its black box", fontsize=10)
        axes[1, col].legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# -- main ------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: a WikiText-2 slice, the n-gram only, 2 seeds, "
                         "2,000 + 5,000 words (< 1 minute)")
    ap.add_argument("--adapt", type=int, default=2_000, help="personalisation words")
    ap.add_argument("--eval", type=int, default=20_000, help="evaluation words")
    ap.add_argument("--seeds", type=int, default=3, help="initialisations of PROPS / HMM")
    ap.add_argument("--vocab-size", type=int, default=10_000)
    ap.add_argument("--no-lstm", action="store_true", help="the n-gram source only")
    ap.add_argument("--lstm-epochs", type=int, default=1)
    ap.add_argument("--lstm-hidden", type=int, default=128)
    ap.add_argument("--lstm-embedding", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    ap.add_argument("--retrain", action="store_true", help="ignore the cached sources")
    args = ap.parse_args(argv)

    lstm = None if (args.no_lstm or args.quick) else LSTMSettings(
        embedding_dim=args.lstm_embedding, hidden_dim=args.lstm_hidden, epochs=args.lstm_epochs)
    settings = Settings(vocab_size=args.vocab_size, n_adapt=args.adapt,
                        n_eval=5_000 if args.quick else args.eval,
                        seeds=tuple(range(2 if args.quick else args.seeds)),
                        wiki_limit=200_000 if args.quick else None, lstm=lstm,
                        threads=args.threads)
    if lstm is not None:
        import torch

        torch.set_num_threads(settings.threads)
    t_start = time.perf_counter()
    wiki_dir, ptb_dir = args.data_dir / "wikitext-2", args.data_dir / "ptb"
    print("reading WikiText-2 and PTB", flush=True)
    wiki_train = read_wikitext(wiki_dir / "wiki.train.tokens", settings.wiki_limit)
    wiki_valid = read_wikitext(wiki_dir / "wiki.valid.tokens",
                               None if settings.wiki_limit is None else settings.wiki_limit // 4)
    n_target = settings.n_adapt + settings.n_eval
    ptb = read_ptb(ptb_dir / "ptb.train.txt", n_target)
    ptb_all = read_ptb(ptb_dir / "ptb.train.txt")
    vocab = get_vocabulary(settings, wiki_train, args.retrain)
    W = len(vocab)
    train = encode(wiki_train, vocab)
    valid = encode(wiki_valid, vocab)
    X, lengths = encode(ptb, vocab)
    X, lengths = X[:n_target], cut_lengths(lengths, n_target)[0]
    cut_inside = cut_lengths(lengths, settings.n_adapt)[2]
    # out-of-vocabulary rates: PTB's own <unk> vs PTB words missing from the vocabulary
    flat = [w for s in ptb_all for w in s]
    ptb_unk = float(np.mean([w == "<unk>" for w in flat]))
    oov_all = float(np.mean(vocab.encode(flat) == 0))
    oov_stream = float(np.mean(X == 0))
    data_s = time.perf_counter() - t_start
    print(f"  vocabulary {W:,}; WikiText-2 train {len(train[0]):,} tokens in "
          f"{len(train[1]):,} sentences; PTB stream {len(X):,} words, OOV {oov_stream:.1%} "
          f"({data_s:.0f} s)", flush=True)

    names = ["ngram"] + (["lstm"] if lstm is not None else [])
    sources, infos = {}, {}
    for name in names:
        sources[name], infos[name] = get_source(name, settings, vocab, train, valid,
                                                args.retrain)

    t_exp = time.perf_counter()
    n_adapt = settings.n_adapt
    known = X[n_adapt:] != vocab.unk_id
    first = next(iter(sources.values()))
    hmms = {}
    for key in ("hmm", "hmm_avg"):  # the HMM ignores the source: run once, shown per source
        print(MODELS[key][0], flush=True)
        hmms[key] = [run_model(make_model(key, first, seed), X, lengths, n_adapt)
                     for seed in settings.seeds]
    results, curves, frequent = {}, {}, {}
    for name, src in sources.items():
        blackbox = sequence_log_probs(src, X, lengths)
        runs = dict(hmms)
        for key in ("props", "props_avg"):
            print(f"{MODELS[key][0]} with the {name} source", flush=True)
            runs[key] = [run_model(make_model(key, src, seed), X, lengths, n_adapt)
                         for seed in settings.seeds]
        results[name] = {"blackbox": {"frozen": stats([blackbox[n_adapt:]], known),
                                      "in_sample": perplexity(blackbox[:n_adapt])}}
        results[name].update({key: summarise(r, n_adapt, known) for key, r in runs.items()})
        y_eval, bb_eval = X[n_adapt:], np.exp(blackbox[n_adapt:])
        frequent[name] = {tok: (float(np.mean(y_eval == vocab.id_of(tok))),
                                float(bb_eval[y_eval == vocab.id_of(tok)].mean()))
                          for tok in ("<unk>", "N")}
        curves[name] = {"blackbox": blackbox}
        curves[name].update({key: {"stream": np.mean([x.stream for x in r], axis=0),
                                   "frozen": np.mean([x.frozen for x in r], axis=0)}
                             for key, r in runs.items()})
        for key, res in results[name].items():
            for mode in ("frozen", "stream"):
                if mode in res:
                    print(f"  {key:9s} {mode:6s} mean P {res[mode]['mpp']:.5f} "
                          f"ppl {res[mode]['ppl']:.1f}", flush=True)
    exp_s = time.perf_counter() - t_exp

    OUT.mkdir(parents=True, exist_ok=True)
    png = OUT / "props_personalization.png"
    plot(results, curves, n_adapt, png)
    md = report(settings, args, infos, results, W,
                {"ptb_unk": ptb_unk, "oov_all": oov_all, "oov_stream": oov_stream,
                 "wiki_train_tokens": len(train[0]), "wiki_train_sentences": len(train[1]),
                 "wiki_valid_tokens": len(valid[0]), "ptb_sentences": len(lengths),
                 "cut_inside": cut_inside, "frequent": frequent},
                {"data": data_s, "experiment": exp_s,
                 "total": time.perf_counter() - t_start})
    (OUT / "props_personalization.md").write_text(md)
    (OUT / "props_personalization.json").write_text(json.dumps(
        {"settings": asdict(settings), "sources": infos, "results": results}, indent=1))
    print(f"wrote {OUT / 'props_personalization.md'} and {png.name} "
          f"({time.perf_counter() - t_start:.0f} s)")


def report(settings: Settings, args, infos: dict, results: dict, W: int,
           data: dict, seconds: dict) -> str:
    """The markdown report: settings, source table, results, comparison with the paper."""
    n_adapt, n_eval = settings.n_adapt, settings.n_eval
    lines = ["# PROPS personalisation: WikiText-2 sources, Penn Treebank target", ""]
    if args.quick:
        lines += ["**Quick run** (smoke test: a WikiText-2 slice, n-gram only, fewer words "
                  "and seeds); the numbers are not the experiment's.", ""]
    lines += [
        "## Setting", "",
        f"- Reference corpus: WikiText-2 train, normalised to PTB's conventions (lower case, "
        f"numbers -> `N`, punctuation dropped but `$ & ' # %`, cut into sentences): "
        f"{data['wiki_train_tokens']:,} tokens in {data['wiki_train_sentences']:,} sentences"
        + (f" (the first ~{settings.wiki_limit:,} tokens)" if settings.wiki_limit else "")
        + f"; validation: WikiText-2 valid, {data['wiki_valid_tokens']:,} tokens.",
        f"- Vocabulary: the {W - 1:,} most frequent WikiText-2 train tokens + `<unk>` "
        f"(W = {W:,}), shared by the sources, PROPS and the HMM.",
        f"- Target stream: PTB (`ptb.train.txt` from its first line; Mikolov's "
        f"preprocessing), sentences as sequences: {n_adapt:,} personalisation words then "
        f"{n_eval:,} evaluation words ({data['ptb_sentences']:,} sentences; "
        + (f"the sentence at word {n_adapt:,} is cut, and continued with `continues=True`)."
           if data["cut_inside"] else f"word {n_adapt:,} ends a sentence)."),
        f"- Out of vocabulary: {data['oov_stream']:.2%} of the {n_adapt + n_eval:,} target "
        f"words map to `<unk>` ({data['oov_all']:.2%} of all of ptb.train.txt, of which "
        f"{data['ptb_unk']:.2%} are PTB's own `<unk>` tokens).",
        f"- PROPS: K = 3 (K_s = 1 source state, K_p = 2 perturbation states); HMM: K = 3; "
        f"both `learn=\"online-em\"` with the library's defaults (step t^-0.6, 20 warm-up "
        f"words, default priors, `startprob_` fixed uniform), seeds "
        f"{', '.join(map(str, settings.seeds))} for the initialisation; mean ± sd over "
        f"seeds. The HMM does not use a source: its rows are the same in both groups.",
        "- Measures on the evaluation words: mean predictive probability "
        "mean_t P(y_t | y_<t) (the paper's measure) and perplexity "
        "exp(-mean_t log P(y_t | y_<t)). *Frozen*: parameters fixed after the "
        f"{n_adapt:,} personalisation words. *Prequential*: `partial_fit` continues "
        "through the evaluation words, each predicted before it is learned "
        "(`stream_log_prob_`). Uniform guessing: 1/W = "
        f"{1 / W:.1e}.", "",
        "## Sources", "",
    ]
    rows = [[name, info["setting"], f"{info['train_tokens']:,}",
             f"{info['train_seconds']:.0f} s", f"{info['train_ppl']:.1f} ({info['train_note']})",
             f"{info['valid_ppl']:.1f}"] for name, info in infos.items()]
    lines += [markdown_table(["source", "setting", "training tokens", "training time",
                              "training perplexity", "WikiText-2 valid perplexity"], rows), "",
              f"Torch threads: {settings.threads}. Training times are on a shared 2-core "
              "machine.", "",
              "## Results", "",
              f"Evaluation words {n_adapt + 1:,}..{n_adapt + n_eval:,} of the PTB stream.", "",
              markdown_table(["source", "model", "mode", r"mean P(y_t \| y_<t)",
                                             r"same, words other than `<unk>`",
                                             "perplexity"],
                             results_rows(results)), ""]
    for name, res in results.items():
        lines.append(
            f"- {name}: mean filtered probability of the perturbation states on the "
            f"evaluation words (frozen): PROPS {res['props']['p_perturbation']:.2f}, averaged "
            f"{res['props_avg']['p_perturbation']:.2f}. In-sample perplexity of the frozen "
            f"models on the {n_adapt:,} personalisation words themselves: black box "
            f"{res['blackbox']['in_sample']:.1f}, "
            + ", ".join(f"{MODELS[k][0]} {res[k]['in_sample']:.1f}" for k in MODELS) + ".")
    for name, freq in data["frequent"].items():
        lines.append(f"- {name}: " + "; ".join(
            f"`{tok}` is {share:.1%} of the evaluation words, with mean P {mp:.3f} under "
            f"the black box" for tok, (share, mp) in freq.items())
            + ": these two symbols carry much of every model's mean predictive probability.")
    first = next(iter(results.values()))
    lines += ["", "Seconds per seed (fit on the personalisation words, frozen scoring of all "
              f"{n_adapt + n_eval:,} words, prequential pass): "
              + ", ".join(f"{MODELS[k][0]} {first[k]['seconds']:.1f} s" for k in ("hmm",))
              + ", " + ", ".join(f"PROPS ({name}) {res['props']['seconds']:.1f} s"
                                 for name, res in results.items()) + ".", "",
              "## Comparison with the paper", "", *paper_comparison(results), "",
              f"Run time: data {seconds['data']:.0f} s, PROPS/HMM runs "
              f"{seconds['experiment']:.0f} s, total {seconds['total']:.0f} s "
              "(sources from the cache when present).", "",
              "![figure](props_personalization.png)", ""]
    return "\n".join(lines)


def paper_comparison(results: dict) -> list[str]:
    """Does PROPS beat both baselines, by how much, and which numbers match the paper."""
    out = [f"The paper (Trump tweets, W = 13,711, a Wikipedia LSTM) reports a mean predictive "
           f"probability of {PAPER['PROPS']} for PROPS against {PAPER['HMM']} for a streaming "
           f"HMM, each personalised on 2,000 words (uniform guessing {PAPER['uniform']:.1e}); "
           "it gives no number for the black box alone.", ""]
    for name, res in results.items():
        for key, hmm_key in (("props", "hmm"), ("props_avg", "hmm_avg")):
            for mode, label in (("frozen", "frozen"), ("stream", "prequential")):
                if mode == "stream" and _averaged(key):
                    continue
                out.append(f"- {name}, {MODELS[key][0]}, {label}: "
                           + _versus(res[key][mode], res[hmm_key][mode],
                                     res["blackbox"]["frozen"]))
    paper_ratio = PAPER["PROPS"] / PAPER["HMM"]
    out += ["", f"Which numbers match the paper (\"matches\": within a factor {MATCH} of it):", ""]
    for name, res in results.items():
        for mode, label in (("frozen", "frozen"), ("stream", "prequential")):
            p, h = res["props"][mode]["mpp"], res["hmm"][mode]["mpp"]
            out.append(
                f"- {name}, {label}: PROPS/HMM ratio {p / h:.1f} vs the paper's "
                f"{paper_ratio:.1f} ({_match(p / h, paper_ratio)}); PROPS {p:.4f} vs "
                f"{PAPER['PROPS']} ({_match(p, PAPER['PROPS'])}); HMM {h:.4f} vs "
                f"{PAPER['HMM']} ({_match(h, PAPER['HMM'])}).")
    return out


#: two numbers "match" when their ratio is within this factor
MATCH = 1.5


def _versus(p: dict, h: dict, b: dict) -> str:
    """PROPS against the HMM and the black box: mean predictive probability and perplexity."""
    beats = p["mpp"] > max(h["mpp"], b["mpp"]) and p["ppl"] < min(h["ppl"], b["ppl"])
    return (f"mean P {p['mpp']:.4f} vs HMM {h['mpp']:.4f} (x{p['mpp'] / h['mpp']:.2f}) and "
            f"black box {b['mpp']:.4f} ({p['mpp'] / b['mpp'] - 1:+.1%}); perplexity "
            f"{p['ppl']:.1f} vs HMM {h['ppl']:.0f} and black box {b['ppl']:.1f} "
            f"({p['ppl'] / b['ppl'] - 1:+.1%}): "
            + ("**beats both**." if beats else "**does not beat both**."))


def _match(ours: float, paper: float) -> str:
    r = ours / paper
    return "matches" if 1 / MATCH <= r <= MATCH else f"{r:.1f}x the paper's"


if __name__ == "__main__":
    main()
