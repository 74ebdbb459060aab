"""Defaults chosen on a panel of real-data tasks (and the synthetic recovery cases), each
candidate default against hmmlearn 0.3.3's defaults on the same data, several seeds.

    NUMBA_NUM_THREADS=1 .venv/bin/python experiments/defaults_panel.py           # full
    NUMBA_NUM_THREADS=1 .venv/bin/python experiments/defaults_panel.py --quick   # smoke run
    .venv/bin/python experiments/defaults_panel.py --data-dir /path/to/data

Writes ``experiments/out/defaults_panel/defaults_panel.md`` (every table, the choice made
for each default and why, and per task whether ``hs.HMM``'s defaults are at least as good as
hmmlearn's, mean over the seeds), ``defaults_panel.png`` and ``results.json`` (every run).
hmmlearn's runs are cached in ``hmmlearn_cache.json`` beside them (they dominate the cost
and do not depend on this library); ``--no-cache`` recomputes them.

Tasks (real data first):

- **pos45 / pos17**: unsupervised part-of-speech induction on the Penn Treebank sample
  (``<data-dir>/ptb-sample-treebank``: 3,914 sentences, 94,084 tokens without the -NONE-
  traces, 11,968 word types, case kept), K = 45 (the PTB tags) and K = 17 (the UPOS classes
  of ``_common.upos``); EM for a fixed budget of ``n_iter`` iterations; the Viterbi path of
  the training text scored by many-to-one and one-to-one (Hungarian) accuracy.
- **lm**: held-out log-likelihood per token on PTB (``<data-dir>/ptb``): the first
  sentences of ptb.train (about 66k tokens with ``</s>``), evaluated on the first 1,000
  sentences of ptb.valid; every training word kept, validation words unseen in training
  become ``<unk>``; K = 32.
- **gauss**: Google's daily stock prices 2004-08-19 .. 2008-10-14 (matplotlib's bundled
  sample data ``goog.npz``, from Yahoo Finance; 1,046 trading days): 2-D observations
  (100 x daily log return of the adjusted close, 100 x log of the high/low range, a
  volatility proxy), K = 3 diagonal Gaussians (volatility regimes, as in Hamilton-style
  regime switching); trained on the first 800 days, held-out log-likelihood per day on
  the remaining 246 (which include the 2008 crash).
- **poisson**: tokens per sentence of ptb.train in document order (a real count series
  with topic/article regimes), K = 3 Poisson states; trained on the first 3,000 sentences,
  held-out log-likelihood per sentence on the next 1,000.
- **synthetic**: (a) the sticky 2-state teacher of ``docs/streaming.md``
  (A = [[.95, .05], [.1, .9]]), one sequence of 50,000 (the case the sticky default was
  chosen on); (b) a sticky K = 5 teacher (self-transition 0.8, categorical, 20 symbols,
  Dirichlet(0.3) emissions; ``vt_vs_em.py``'s), 50 x 200; (c) a non-sticky K = 5 teacher
  (Dirichlet(1) transition rows, otherwise as (b)). Score: training log-likelihood per
  observation minus the teacher's (0 = as good as the truth), accuracy of the Viterbi path
  (one-to-one) and "recovered": every transition probability within 0.05 (a) or 0.1 (b, c)
  of the teacher's after matching states (Hungarian on the decoded vs true path).

Candidates (5 seeds, 2 in ``--quick``; ``--candidate-seeds`` for the secondary ones):

- transition (and start) initialisation: ``library`` (the library's default: lambda I +
  (1 - lambda)/K with lambda = rho_2/rho_1 from the data's autocorrelations, see
  ``hiddenstate.models.hmm.persistence``; flat on text), ``sticky`` (0.5 I + 0.5
  Dirichlet(10) rows: the default before this panel), ``flat`` (every row 1/K; on tasks
  where the library's lambda is 0 its fits are the library's, so they are copied, not
  rerun), ``dir10`` (Dirichlet(10) rows, near uniform; the default before ``sticky``),
  ``hmmlearn`` (Dirichlet(1/K) start and rows, hmmlearn's); start uniform except for
  ``hmmlearn``; emissions the library's. Dirichlet(1) rows were tried in the quick runs
  and lost to ``dir10`` and ``flat`` on every text task;
- categorical emission initialisation (the library's transitions): ``dir1`` (Dirichlet(1)
  rows, the library's), ``freq`` (unigram frequencies times independent Gamma(1) noise, as
  POS-induction papers perturb the unigram), ``rand`` (hmmlearn's uniform(0, 1) rows,
  normalised);
- ``lmmap``: the ``library`` and ``sticky`` starts on lm with ``learn="map"`` and
  Dirichlet(1.1) rows (does the gap between the two starts on held-out text survive
  smoothing?);
- variational Bayes priors (gauss, pos17): the Dirichlet concentrations 1 (the default
  before this panel), 0.1, 1e-3 and the library's (1/K start/transitions, 1/W emissions:
  hmmlearn's variational defaults), against hmmlearn's VariationalGaussianHMM /
  VariationalCategoricalHMM defaults; states used (distinct states on the Viterbi path)
  tells whether a prior prunes states;
- streaming learners, one pass (``--stream-seeds``, default 3): the transition start
  (sticky vs flat) for online EM and Baum-Welch online, online EM's ``step_exponent``
  (0.6, 0.7, 0.8, 1.0; ``step_scale`` 1, ``warmup`` 20), Baum-Welch online's ``eta``
  (0.005, 0.01, 0.05) and Baldi-Chauvin's ``eta`` (0.05, 0.2, 1; ``lam`` = 1), on lm with
  K = 16 (online EM costs K^4 per observation) and synthetic (a) (online EM only);
- Viterbi training (section ``vt``; ``--vt-seeds``, default 3, ``--vt-pos45-seeds`` 2):
  one change at a time from the library's VT defaults (the transition starts above,
  unigram-frequency emissions, Dirichlet emission/transition priors 1.1, 1.5 and 2, EM's
  ``tol`` rule instead of VT's stop, ``n_init=5``); VT started from 20 or 50 iterations of
  the library's EM, and of MAP under Dirichlet(1.5) priors kept for VT (does smoothing keep
  what the EM start gains?); EM alone; hmmlearn's EM with its defaults (it has no VT).

hmmlearn runs with its default initialisation and the same ``n_iter`` and ``tol`` as ours;
its EM uses ``implementation="scaling"`` (the same EM as its default "log"
implementation up to rounding, 15x faster here; its VB keeps "log", since "scaling"
underflows there). Its learned parameters are evaluated by
our scorer and Viterbi decoder (tested equal to hmmlearn's). GaussianHMM keeps its own
default ``covars_prior=1e-2`` M-step regulariser (ours is plain maximum likelihood).
The library's current default is the row ``library``; the script checks it is at least as
good as hmmlearn on every batch task.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    DEFAULT_DATA_DIR,
    REPO,
    load_ptb,
    load_treebank,
    markdown_table,
    upos,
)

from hiddenstate import HMM, HiddenStateError  # noqa: E402
from hiddenstate.metrics import tagging_accuracy  # noqa: E402
from hiddenstate.models.hmm import persistence  # noqa: E402

OUT = REPO / "experiments" / "out" / "defaults_panel"
TOL = 1e-4
TRANS_CANDIDATES = ("sticky", "flat", "dir10", "hmmlearn")
#: ties: a mean within this of hmmlearn's counts as "at least as good" (nats per obs)
TIE = {"heldout": 1e-4, "train": 1e-4, "dll": 1e-4}
EMIS_CANDIDATES = ("freq", "rand")
_FAMILY_LETTERS = {"categorical": "e", "gaussian": "mc", "poisson": "l"}


# -- tasks -----------------------------------------------------------------------------------
@dataclass
class Task:
    name: str
    emission: str
    K: int
    X: np.ndarray
    lengths: list[int]
    n_iter: int
    what: str
    X_eval: np.ndarray | None = None        # held-out data (None: score the training data)
    lengths_eval: list[int] | None = None
    tags: np.ndarray | None = None          # gold tags of the training tokens (POS)
    teacher: HMM | None = None              # synthetic: the generating model
    states: np.ndarray | None = None        # synthetic: the true path
    n_features: int | None = None
    kind: str = "real"                      # "real" | "synthetic"
    primary: tuple[str, ...] = ()           # metrics compared with hmmlearn (higher is better)
    recover_tol: float = 0.05               # synthetic: "recovered" if every |A - A*| < this


def pos_tasks(data_dir: Path, quick: bool) -> list[Task]:
    sents = load_treebank(data_dir)
    if quick:
        sents = sents[:600]
    counts = Counter(w for s in sents for w, _ in s)
    index = {w: i for i, (w, _) in enumerate(counts.most_common())}
    X = np.array([index[w] for s in sents for w, _ in s], dtype=np.int64)
    lengths = [len(s) for s in sents]
    fine = np.array([t for s in sents for _, t in s])
    coarse = np.array([upos(w, t) for s in sents for w, t in s])
    n_iter = 20 if quick else 100
    out = []
    for K, tags, label in ((45, fine, "PTB tags"), (17, coarse, "UPOS")):
        out.append(Task(f"pos{K}", "categorical", K, X, lengths, n_iter,
                        f"POS induction, {len(X)} tokens, W = {len(index)}, K = {K} "
                        f"({label}), EM {n_iter} iterations",
                        tags=tags, n_features=len(index),
                        primary=("m2o", "o2o")))
    return out


def lm_task(data_dir: Path, quick: bool, K: int = 32) -> Task:
    n_train, n_valid = (400, 200) if quick else (3000, 1000)
    c = load_ptb(data_dir, n_train, n_valid, vocab_size=10**6)
    n_iter = 20 if quick else 100
    return Task(f"lm{K}", "categorical", K, c.X_train, c.lengths_train, n_iter,
                f"PTB held-out LM: {len(c.X_train)} training tokens, {len(c.X_valid)} "
                f"held-out ({100 * c.unk_rate_valid:.1f}% <unk>), W = {len(c.vocab)}, "
                f"K = {K}, EM {n_iter} iterations",
                X_eval=c.X_valid, lengths_eval=c.lengths_valid, n_features=len(c.vocab),
                primary=("heldout",))


def gauss_task(quick: bool) -> Task:
    from matplotlib import cbook

    d = cbook.get_sample_data("goog.npz")["price_data"]
    ret = 100 * np.diff(np.log(d["adj_close"]))
    rng_ = 100 * np.log(d["high"][1:] / d["low"][1:])
    Y = np.column_stack([ret, rng_])
    n = 800
    return Task("gauss", "gaussian", 3, Y[:n], [n], 100,
                f"Google daily 2004-2008 (matplotlib sample data): (log return, log range) "
                f"x 100, K = 3 diag, {n} training days, {len(Y) - n} held-out",
                X_eval=Y[n:], lengths_eval=[len(Y) - n], primary=("heldout",))


def poisson_task(data_dir: Path, quick: bool) -> Task:
    path = Path(data_dir) / "ptb" / "ptb.train.txt"
    if not path.is_file():
        raise SystemExit(f"{path} not found; pass --data-dir")
    with open(path, encoding="utf-8") as f:
        lens = [len(line.split()) for line in f if line.split()]
    y = np.array(lens[:4000], dtype=np.int64)[:, None]
    return Task("poisson", "poisson", 3, y[:3000], [3000], 100,
                "PTB tokens per sentence (ptb.train, document order), K = 3 Poisson, "
                "3000 training sentences, 1000 held-out",
                X_eval=y[3000:], lengths_eval=[1000], primary=("heldout",))


def _teacher(K, W, A, rng) -> HMM:
    h = HMM(K, n_features=W, init_params="")
    h.startprob_ = np.full(K, 1.0 / K)
    h.transmat_ = A
    h.emissionprob_ = rng.dirichlet(np.full(W, 0.3), size=K)
    h.n_features_ = W
    return h


def synthetic_tasks(quick: bool) -> list[Task]:
    out = []
    t = HMM(2, init_params="")
    t.startprob_ = np.array([0.5, 0.5])
    t.transmat_ = np.array([[0.95, 0.05], [0.1, 0.9]])
    t.emissionprob_ = np.array([[0.7, 0.2, 0.1], [0.05, 0.15, 0.8]])
    t.n_features_ = 3
    T = 10_000 if quick else 50_000
    X, Z = t.sample(T, random_state=0)
    out.append(Task("syn-sticky2", "categorical", 2, X, [T], 100,
                    f"sticky 2-state teacher (docs/streaming.md), one sequence of {T}",
                    teacher=t, states=Z, n_features=3, kind="synthetic",
                    primary=("dll",)))
    for name, sticky in (("syn-sticky5", True), ("syn-mixing5", False)):
        rng = np.random.default_rng(11 if sticky else 12)
        K, W = 5, 20
        if sticky:
            off = rng.dirichlet(np.ones(K - 1), size=K) * 0.2
            A = np.zeros((K, K))
            for k in range(K):
                A[k, np.arange(K) != k] = off[k]
                A[k, k] = 0.8
        else:
            A = rng.dirichlet(np.ones(K), size=K)
        teacher = _teacher(K, W, A, rng)
        draws = [teacher.sample(200, random_state=rng) for _ in range(50)]
        X = np.concatenate([d[0] for d in draws])
        Z = np.concatenate([d[1] for d in draws])
        out.append(Task(name, "categorical", K, X, [200] * 50, 100,
                        f"{'sticky (self 0.8)' if sticky else 'non-sticky (Dirichlet(1) rows)'}"
                        f" K = 5 teacher, 20 symbols, 50 x 200",
                        teacher=teacher, states=Z, n_features=W, kind="synthetic",
                        primary=("dll",), recover_tol=0.1))
    return out


# -- initialisations ---------------------------------------------------------------------------
def init_transitions(name: str, K: int, rng: np.random.Generator):
    start = np.full(K, 1.0 / K)
    if name == "sticky":
        A = 0.5 * np.eye(K) + 0.5 * rng.dirichlet(np.full(K, 10.0), size=K)
    elif name == "flat":
        A = np.full((K, K), 1.0 / K)
    elif name == "dir1":
        A = rng.dirichlet(np.ones(K), size=K)
    elif name == "dir10":
        A = rng.dirichlet(np.full(K, 10.0), size=K)
    elif name == "hmmlearn":
        start = rng.dirichlet(np.full(K, 1.0 / K))
        A = rng.dirichlet(np.full(K, 1.0 / K), size=K)
    else:
        raise ValueError(name)
    return start, A


def init_emissions(name: str, K: int, W: int, X: np.ndarray, rng: np.random.Generator):
    if name == "dir1":
        return rng.dirichlet(np.ones(W), size=K)
    if name == "freq":
        f = np.bincount(X.ravel(), minlength=W) + 1.0
        B = f[None, :] * rng.gamma(1.0, size=(K, W))
        return B / B.sum(axis=1, keepdims=True)
    if name == "rand":
        B = rng.random((K, W))
        return B / B.sum(axis=1, keepdims=True)
    raise ValueError(name)


@dataclass(frozen=True)
class Init:
    """``trans``/``emis`` None: leave that block to the library's own default."""
    trans: str | None = None
    emis: str | None = None

    @property
    def label(self) -> str:
        if self.trans is None and self.emis is None:
            return "library"
        return "+".join(x for x in (self.trans or "lib", self.emis) if x)


def make_model(task: Task, init: Init, seed: int, learn: str = "em", **kw) -> HMM:
    """An unfitted ``HMM`` for ``task`` whose initial parameters follow ``init``."""
    letters = _FAMILY_LETTERS[task.emission]
    init_params = ("" if init.trans else "st") + ("" if init.emis else letters)
    # TOL is absolute, as hmmlearn's; the library's tol is per observation
    extra = ({"n_iter": task.n_iter, "tol": TOL / len(task.X)} if learn not in STREAMING
             else {})
    m = HMM(task.K, emission=task.emission, n_features=task.n_features, learn=learn,
            random_state=seed, init_params=init_params, **extra, **kw)
    rng = np.random.default_rng([seed, 2024])
    if init.trans:
        m.startprob_, m.transmat_ = init_transitions(init.trans, task.K, rng)
    if init.emis:
        m.emissionprob_ = init_emissions(init.emis, task.K, task.n_features, task.X, rng)
    return m


STREAMING = ("online-em", "bwo", "baldi-chauvin")


# -- Viterbi training ------------------------------------------------------------------------
#: the candidates of the Viterbi-training section, one change at a time from the library's
#: VT defaults (``library``): initialisation, priors, stop rule, restarts
VT_INITS = {"init sticky": Init(trans="sticky"), "init dir1 rows": Init(trans="dir1"),
            "init hmmlearn": Init(trans="hmmlearn"), "init freq emissions": Init(emis="freq")}
VT_PRIORS = {"emission prior 1.1": dict(emissionprob_prior=1.1),
             "emission prior 1.5": dict(emissionprob_prior=1.5),
             "emission prior 2": dict(emissionprob_prior=2.0),
             "transition prior 2": dict(transmat_prior=2.0),
             "priors 2": dict(startprob_prior=2.0, transmat_prior=2.0, emissionprob_prior=2.0)}
#: EM iterations before Viterbi training in the ``EM then VT`` rows
VT_WARM = (20, 50)
#: priors tried with the EM start
VT_COMBOS = {"emission prior 1.5": dict(emissionprob_prior=1.5),
             "priors 1.5": dict(startprob_prior=1.5, transmat_prior=1.5,
                                emissionprob_prior=1.5)}


class EMThenVT:
    """Viterbi training started from ``n_em`` EM iterations of the library's EM (its
    defaults and start; with priors ``vt``, MAP iterations under the same priors): the
    fitted VT model's methods, ``monitor_`` of the VT part."""

    def __init__(self, task: Task, seed: int, n_em: int, **vt):
        self.task, self.seed, self.n_em, self.vt = task, seed, n_em, vt
        self.learn = "vt"

    def fit(self, X, lengths):
        em = make_model(self.task, Init(), self.seed, learn="map" if self.vt else "em",
                        **self.vt)
        em.set_params(n_iter=self.n_em, tol=-np.inf)
        em.fit(X, lengths)
        vt = HMM(self.task.K, emission=self.task.emission, n_features=self.task.n_features,
                 learn="vt", init_params="", n_iter=self.task.n_iter, tol=TOL / len(X),
                 random_state=self.seed, **self.vt)
        vt.startprob_, vt.transmat_ = em.startprob_, em.transmat_
        for key, value in em.emission_params().items():
            setattr(vt, "_covars_" if key == "covars" else key + "_", value)
        vt.n_features_ = em.n_features_
        self.model = vt.fit(X, lengths)
        return self

    def __getattr__(self, name):
        if "model" not in self.__dict__:
            raise AttributeError(name)
        return getattr(self.__dict__["model"], name)


class VTStoppedByTol:
    """The library's VT run stopped by EM's rule (an iteration gaining less than ``tol``)
    instead of VT's (the Viterbi paths repeat or the objective stalls): the run is replayed
    with ``n_iter`` cut where the absolute-tol rule would have stopped it (the same
    deterministic run up to there)."""

    def __init__(self, task: Task, seed: int):
        self.task, self.seed, self.learn = task, seed, "vt"

    def fit(self, X, lengths):
        from _common import iterations_at

        full = make_model(self.task, Init(), self.seed, learn="vt").fit(X, lengths)
        n = iterations_at(full.monitor_.history, TOL)
        if n < len(full.monitor_.history):
            full = make_model(self.task, Init(), self.seed, learn="vt").set_params(n_iter=n)
            full.fit(X, lengths)
        self.model = full
        return self

    def __getattr__(self, name):
        if "model" not in self.__dict__:
            raise AttributeError(name)
        return getattr(self.__dict__["model"], name)


def vt_candidates(task: Task) -> dict:
    """Label -> make(seed) of every Viterbi-training candidate that applies to ``task``."""
    cat = task.emission == "categorical"
    out = {"library": lambda s: make_model(task, Init(), s, learn="vt")}
    for label, init in VT_INITS.items():
        if init.emis is None or cat:
            out[label] = lambda s, init=init: make_model(task, init, s, learn="vt")
    for label, kw in VT_PRIORS.items():
        if cat or "emissionprob_prior" not in kw:
            kw = {k: v for k, v in kw.items() if cat or k != "emissionprob_prior"}
            out[label] = lambda s, kw=kw: make_model(task, Init(), s, learn="vt", **kw)
    out["stop: tol (EM's rule)"] = lambda s: VTStoppedByTol(task, s)
    out["n_init 5"] = lambda s: make_model(task, Init(), s, learn="vt", n_init=5)
    for n_em in VT_WARM:
        out[f"EM {n_em} then VT"] = lambda s, n_em=n_em: EMThenVT(task, s, n_em)
    # the EM start with VT's smoothing: does a prior keep what the EM start gains?
    for label, kw in VT_COMBOS.items():
        if cat or "emissionprob_prior" not in kw:
            kw = {k: v for k, v in kw.items() if cat or k != "emissionprob_prior"}
            for n_em in VT_WARM:
                out[f"EM {n_em} then VT, {label}"] = \
                    lambda s, n_em=n_em, kw=kw: EMThenVT(task, s, n_em, **kw)
    out["EM (library default)"] = lambda s: make_model(task, Init(), s, learn="em")
    return out


# -- hmmlearn ----------------------------------------------------------------------------------
def fit_hmmlearn(task: Task, seed: int, vb: bool = False) -> HMM:
    """hmmlearn with its default initialisation (and priors), our n_iter/tol; returned as
    an ``HMM`` with hmmlearn's learned parameters."""
    from hmmlearn import hmm as hl
    from hmmlearn import vhmm

    # scaling is 15x faster than hmmlearn's default "log" for EM; its VB underflows with
    # the default (sparse) posterior initialisation on a large vocabulary, so VB keeps "log"
    common = dict(n_iter=task.n_iter, tol=TOL, random_state=seed,
                  implementation="log" if vb else "scaling")
    if vb and task.emission == "gaussian":
        model = vhmm.VariationalGaussianHMM(task.K, covariance_type="diag", **common)
    elif vb:
        model = vhmm.VariationalCategoricalHMM(task.K, n_features=task.n_features, **common)
    elif task.emission == "categorical":
        model = hl.CategoricalHMM(task.K, n_features=task.n_features, **common)
    elif task.emission == "gaussian":
        model = hl.GaussianHMM(task.K, covariance_type="diag", **common)
    else:
        model = hl.PoissonHMM(task.K, **common)
    X = task.X if task.X.ndim == 2 else task.X[:, None]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, task.lengths)
    m = HMM(task.K, emission=task.emission, init_params="")
    m.startprob_ = model.startprob_
    m.transmat_ = model.transmat_
    if task.emission == "categorical":
        m.emissionprob_ = model.emissionprob_
        m.n_features_ = task.n_features
    elif task.emission == "gaussian":
        m.means_ = model.means_
        m.covars_ = model._covars_
        m.n_features_ = X.shape[1]
    else:
        m.lambdas_ = model.lambdas_
        m.n_features_ = X.shape[1]
    m.iterations_ = len(model.monitor_.history)
    return m


# -- scores ------------------------------------------------------------------------------------
def used_states(m: HMM, task: Task) -> int:
    return int(len(np.unique(m.predict(task.X, task.lengths))))


def evaluate(m: HMM, task: Task) -> dict:
    n = len(task.X)
    out = {"train": m.score(task.X, task.lengths) / n}
    if task.X_eval is not None:
        out["heldout"] = m.score(task.X_eval, task.lengths_eval) / len(task.X_eval)
    if task.tags is not None or task.states is not None:
        path = m.predict(task.X, task.lengths)
        out["used"] = int(len(np.unique(path)))
    if task.tags is not None:
        out["m2o"] = tagging_accuracy(task.tags, path, "many-to-one")
        out["o2o"] = tagging_accuracy(task.tags, path, "one-to-one")
    if task.states is not None:
        out["dll"] = out["train"] - task.teacher.score(task.X, task.lengths) / n
        out["o2o"] = tagging_accuracy(task.states, path, "one-to-one")
        out["recovered"] = float(_recovered(m, task, path))
    return out


def _recovered(m: HMM, task: Task, path: np.ndarray) -> bool:
    from scipy.optimize import linear_sum_assignment

    K = task.K
    C = np.zeros((K, K))
    np.add.at(C, (task.states, path), 1)
    rows, cols = linear_sum_assignment(C, maximize=True)
    perm = np.empty(K, dtype=np.int64)
    perm[rows] = cols                       # true state r <-> learned state perm[r]
    A = m.transmat_[np.ix_(perm, perm)]
    return bool(np.max(np.abs(A - task.teacher.transmat_)) < task.recover_tol)


# -- running -----------------------------------------------------------------------------------
@dataclass
class Results:
    runs: list[dict] = field(default_factory=list)
    on_change: object = None            # called after each candidate's seeds (saves)

    def add(self, **row):
        self.runs.append(row)

    def has(self, section, task, cand, seed) -> bool:
        return bool(self.select(section=section, task=task, cand=cand, seed=seed))

    def select(self, **where) -> list[dict]:
        return [r for r in self.runs if all(r.get(k) == v for k, v in where.items())]

    def mean(self, metric: str, **where) -> tuple[float, float, int]:
        vals = [r[metric] for r in self.select(**where) if metric in r]
        if not vals:
            return float("nan"), float("nan"), 0
        return float(np.mean(vals)), float(np.std(vals)), len(vals)


def run_hs(res: Results, task: Task, section: str, label: str, seeds, make, quiet=False):
    for seed in seeds:
        if res.has(section, task.name, label, seed):     # --resume: already measured
            continue
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = make(seed)
            try:
                m.fit(task.X, task.lengths)
                scores = {**evaluate(m, task), "failed": 0.0}
            except HiddenStateError as err:     # e.g. a one-pass learner zeroed a word
                print(f"  {label} seed {seed}: {type(err).__name__}: {err}", flush=True)
                scores = {**{k: float("nan") for k in (*task.primary, "train")},
                          "failed": 1.0}
        row = {"section": section, "task": task.name, "cand": label, "seed": seed,
               "seconds": time.perf_counter() - t0, **scores}
        if hasattr(m, "monitor_") and m.learn not in STREAMING and not scores["failed"]:
            row["iterations"] = len(m.monitor_.history)
        res.add(**row)
        if res.on_change:
            res.on_change()
        if not quiet:
            print(f"  {section:10s} {task.name:12s} {label:28s} seed {seed}: "
                  + " ".join(f"{k}={v:.4g}" for k, v in row.items()
                             if k in ("m2o", "o2o", "heldout", "dll", "used", "train",
                                      "seconds")), flush=True)


def run_hmmlearn(res: Results, task: Task, section: str, seeds, cache: dict, vb=False):
    if cache.get("_path") and Path(cache["_path"]).is_file():   # another run may have added
        cache.update({k: v for k, v in json.loads(Path(cache["_path"]).read_text()).items()
                      if k not in cache})
    for seed in seeds:
        key = f"{task.name}|{task.what}|{'vb' if vb else 'em'}|{seed}"
        if res.has(section, task.name, "hmmlearn-default", seed) or (
                key not in cache and cache.get("_cached_only")):
            continue
        if key not in cache:
            t0 = time.perf_counter()
            m = fit_hmmlearn(task, seed, vb=vb)
            finite = all(np.isfinite(v).all() for v in m.learned_arrays().values())
            cache[key] = {"seconds": time.perf_counter() - t0, "iterations": m.iterations_,
                          **(evaluate(m, task) if finite else
                             {k: float("nan") for k in (*task.primary, "train")}),
                          "failed": float(not finite)}
        row = {"section": section, "task": task.name, "cand": "hmmlearn-default",
               "seed": seed, **cache[key]}
        res.add(**row)
        print(f"  {section:10s} {task.name:12s} {'hmmlearn-default':28s} seed {seed}: "
              + " ".join(f"{k}={v:.4g}" for k, v in row.items()
                         if k in ("m2o", "o2o", "heldout", "dll", "used", "train", "seconds")),
              flush=True)


def score_of(res: Results, task: Task, section: str, cand: str) -> dict[str, float]:
    return {m: res.mean(m, section=section, task=task.name, cand=cand)[0] for m in task.primary}


def beats(res, task, section, cand, ref="hmmlearn-default", ref_section=None) -> bool:
    """Mean over seeds of every primary metric >= the reference's."""
    a = score_of(res, task, section, cand)
    b = score_of(res, task, ref_section or section, ref)
    return all(a[m] >= b[m] - TIE.get(m, 0.0) or np.isnan(b[m]) for m in task.primary)


# -- choosing ----------------------------------------------------------------------------------
def choose(res: Results, tasks: list[Task], section: str, cands: list[str],
           incumbent: str) -> tuple[str, list[str]]:
    """The candidate that (1) is >= hmmlearn's defaults on every real task, (2) is not
    worse than ``incumbent`` on the synthetic recovery cases (recovered count and mean
    log-likelihood gap to the teacher within 1e-3 nats/obs), and (3) among those, has the
    best mean rank over all tasks' primary metrics. Returns it and the reasons."""
    why = []
    eligible = []
    for c in cands:
        fails = [t.name for t in tasks if t.kind == "real" and not beats(res, t, section, c)]
        worse = []
        for t in tasks:
            if t.kind != "synthetic":
                continue
            rc = res.mean("recovered", section=section, task=t.name, cand=c)[0]
            ri = res.mean("recovered", section=section, task=t.name, cand=incumbent)[0]
            dc = res.mean("dll", section=section, task=t.name, cand=c)[0]
            di = res.mean("dll", section=section, task=t.name, cand=incumbent)[0]
            if rc < ri or dc < di - 1e-3:
                worse.append(f"{t.name} (recovered {rc:.2f} vs {ri:.2f}, "
                             f"dll {dc:.4f} vs {di:.4f})")
        if fails:
            why.append(f"`{c}`: below hmmlearn on {', '.join(fails)}")
        if worse:
            why.append(f"`{c}`: worse than `{incumbent}` on {'; '.join(worse)}")
        if not fails and not worse:
            eligible.append(c)
    pool = eligible or cands
    ranks = {c: [] for c in pool}
    for t in tasks:
        for metric in t.primary:
            vals = {c: res.mean(metric, section=section, task=t.name, cand=c)[0] for c in pool}
            order = sorted(pool, key=lambda c: -vals[c])
            for i, c in enumerate(order):
                ranks[c].append(i + 1)
    mean_rank = {c: float(np.mean(r)) for c, r in ranks.items()}
    best = min(pool, key=lambda c: mean_rank[c])
    why.append("eligible (>= hmmlearn on every real task, synthetic recovery not worse): "
               + (", ".join(f"`{c}`" for c in eligible) or "none; ranked all"))
    why.append("mean rank over all tasks and metrics: "
               + ", ".join(f"`{c}` {mean_rank[c]:.2f}" for c in sorted(pool,
                                                                 key=mean_rank.get)))
    return best, why


# -- report ------------------------------------------------------------------------------------
def fmt(res: Results, metric: str, **where) -> str:
    mu, sd, n = res.mean(metric, **where)
    if n == 0:
        return "-"
    if metric in ("used", "iterations"):
        return f"{mu:.1f}"
    if metric in ("m2o", "o2o", "recovered", "failed"):
        return f"{mu:.3f} ± {sd:.3f}"
    return f"{mu:.4f} ± {sd:.4f}"


METRIC_NAMES = {"m2o": "many-to-one", "o2o": "one-to-one", "heldout": "held-out LL/obs",
                "train": "train LL/obs", "dll": "LL/obs − teacher", "used": "states used",
                "recovered": "recovered", "seconds": "seconds", "iterations": "iterations",
                "failed": "NaN parameters (share of seeds)"}


def section_table(res: Results, tasks: list[Task], section: str, cands: list[str],
                  metrics_for, ref_section=None) -> str:
    lines = []
    for t in tasks:
        ms = metrics_for(t)
        rows = []
        for c in cands:
            sec = ref_section if (c == "hmmlearn-default" and ref_section) else section
            if not res.select(section=sec, task=t.name, cand=c):
                continue
            mark = ""
            if c != "hmmlearn-default" and t.primary and res.select(
                    section=ref_section or section, task=t.name, cand="hmmlearn-default"):
                mark = " ≥" if beats(res, t, section, c, ref_section=ref_section) else " <"
            n = len(res.select(section=sec, task=t.name, cand=c))
            rows.append([f"{c}{mark} ({n})"] + [fmt(res, m, section=sec, task=t.name, cand=c)
                                               for m in ms])
        if rows:
            lines += [f"**{t.name}**: {t.what}", "",
                      markdown_table(["candidate"] + [METRIC_NAMES[m] for m in ms], rows), ""]
    return "\n".join(lines)


def plot(res: Results, tasks: list[Task], cands: list[str], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(t, m) for t in tasks for m in t.primary]
    ncol = 4
    nrow = (len(panels) + ncol - 1) // ncol
    fig, axes = plt.subplots(nrow, ncol, figsize=(4 * ncol, 3 * nrow), squeeze=False)
    names = cands + ["hmmlearn-default"]
    for ax, (t, m) in zip(axes.ravel(), panels, strict=False):
        for i, c in enumerate(names):
            vals = [r[m] for r in res.select(section="init", task=t.name, cand=c) if m in r]
            ax.scatter(np.full(len(vals), i), vals, s=12,
                       color="C3" if c == "hmmlearn-default" else "C0")
            if vals:
                ax.hlines(np.mean(vals), i - 0.3, i + 0.3, color="k")
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, rotation=60, ha="right", fontsize=7)
        ax.set_title(f"{t.name}: {METRIC_NAMES[m]}", fontsize=9)
    for ax in axes.ravel()[len(panels):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# -- main --------------------------------------------------------------------------------------
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small data, 2 seeds (minutes)")
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    ap.add_argument("--seeds", type=int, default=None)
    ap.add_argument("--no-cache", action="store_true", help="recompute hmmlearn's runs")
    ap.add_argument("--sections", default="init,emis,lmmap,vb,stream,vt",
                    help="comma-separated subset of init,emis,lmmap,vb,stream,vt")
    ap.add_argument("--vt-seeds", type=int, default=3,
                    help="seeds of the Viterbi-training section (the first ones of --seeds)")
    ap.add_argument("--vt-pos45-seeds", type=int, default=2,
                    help="seeds of the Viterbi-training section on pos45 (the slowest task)")
    ap.add_argument("--vt-tasks", default=None,
                    help="comma-separated tasks of the Viterbi-training section (default all)")
    ap.add_argument("--vt-hmmlearn-seeds", type=int, default=None,
                    help="seeds of hmmlearn's EM in the Viterbi-training section on the POS "
                         "and lm tasks (default --vt-seeds; its fits take minutes each)")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--hmmlearn-vb-seeds", type=int, default=3,
                    help="seeds of hmmlearn's VariationalCategoricalHMM (its 'log' forward-"
                         "backward costs minutes per fit)")
    ap.add_argument("--candidate-seeds", type=int, default=5,
                    help="seeds of the secondary candidates (dir10 and hmmlearn-style starts, "
                         "the emission starts, MAP on lm): the first ones of --seeds")
    ap.add_argument("--pos45-candidate-seeds", type=int, default=5,
                    help="seeds of the secondary starts on pos45 (its fits are the slowest)")
    ap.add_argument("--stream-seeds", type=int, default=3,
                    help="seeds of the streaming section (the first ones of --seeds)")
    ap.add_argument("--resume", action="store_true",
                    help="keep the runs of results.json and measure only what is missing")
    ap.add_argument("--hmmlearn-cached-only", action="store_true",
                    help="take hmmlearn's runs from the cache only (skip the others)")
    ap.add_argument("--skip-pos45-emis", action="store_true",
                    help="leave pos45 out of the emission-initialisation section")
    args = ap.parse_args(argv)
    seeds = list(range(args.seeds or (2 if args.quick else 5)))
    cand_seeds = seeds[:args.candidate_seeds]
    sections = set(args.sections.split(","))
    out = args.out / ("quick" if args.quick else "")
    out.mkdir(parents=True, exist_ok=True)
    cache_path = out / "hmmlearn_cache.json"
    cache = {} if args.no_cache or not cache_path.is_file() else json.loads(
        cache_path.read_text())
    cache["_path"] = str(cache_path)
    cache["_cached_only"] = args.hmmlearn_cached_only
    started = time.perf_counter()

    pos45, pos17 = pos_tasks(args.data_dir, args.quick)
    lm = lm_task(args.data_dir, args.quick)
    real = [gauss_task(args.quick), poisson_task(args.data_dir, args.quick), pos17, lm, pos45]
    syn = synthetic_tasks(args.quick)
    tasks = syn + real
    res = Results()
    if args.resume and (out / "results.json").is_file():
        res.runs = json.loads((out / "results.json").read_text())
    report = ["# Defaults chosen on a panel of real-data tasks", "",
              f"Command: `NUMBA_NUM_THREADS=1 python experiments/defaults_panel.py"
              f"{' --quick' if args.quick else ''}`; seeds {seeds}; hmmlearn "
              f"{__import__('hmmlearn').__version__}. Each cell: mean ± standard deviation "
              "over the seeds (their number in brackets). `≥`/`<`: the mean of every "
              "primary metric of the task is / is not at least hmmlearn's defaults' (the row "
              "`hmmlearn-default`; ties within 1e-4 nats per observation count).", ""]

    def save():
        (out / "results.json").write_text(json.dumps(res.runs, indent=1))
        if cache_path.is_file():   # keep what a parallel run added
            cache.update({k: v for k, v in json.loads(cache_path.read_text()).items()
                          if k not in cache})
        cache_path.write_text(json.dumps({k: v for k, v in cache.items()
                                          if not k.startswith("_")},
                                         indent=1))
        (out / "defaults_panel.md").write_text("\n".join(report) + "\n")

    res.on_change = save

    # 1. transition initialisation (EM), against hmmlearn's defaults
    cands = ["library", *TRANS_CANDIDATES]
    chosen_trans = "library"
    if "init" in sections:
        print("== transition initialisation (EM) ==", flush=True)
        for t in tasks:
            run_hmmlearn(res, t, "init", seeds, cache)
            save()
            run_hs(res, t, "init", "library", seeds, lambda s, t=t: make_model(t, Init(), s))
            flat_start = persistence(t.X, t.emission == "categorical",
                                     np.concatenate([[0], np.cumsum(t.lengths)])) == 0.0
            for c in TRANS_CANDIDATES:
                if c == "flat" and flat_start:   # the library's start is flat here: same fits
                    for r in res.select(section="init", task=t.name, cand="library"):
                        if not res.has("init", t.name, "flat", r["seed"]):
                            res.add(**{**r, "cand": "flat"})
                    continue
                secondary = cand_seeds[:args.pos45_candidate_seeds] if t is pos45 else \
                    cand_seeds
                run_hs(res, t, "init", c, seeds if c in ("sticky", "flat") else secondary,
                       lambda s, t=t, c=c: make_model(t, Init(trans=c), s))
            save()
        chosen_trans, why = choose(res, tasks, "init", cands, "sticky")
        lib_ok = {t.name: beats(res, t, "init", "library") for t in real}
        report += ["## 1. Transition initialisation (EM)", "",
                   section_table(res, tasks, "init", ["hmmlearn-default", *cands],
                                 lambda t: [*t.primary, *(["train"] if "train" not in
                                                         t.primary else []),
                                            *(["recovered"] if t.kind == "synthetic"
                                              else [])]),
                   f"**Chosen: `{chosen_trans}`.**", "", *[f"- {w}" for w in why], "",
                   "**The library's current default (`library`) against hmmlearn's defaults "
                   "(mean over the seeds, every primary metric):**", "",
                   *[f"- {k}: {'hs.HMM ≥ hmmlearn' if v else 'hs.HMM < hmmlearn'}"
                     for k, v in lib_ok.items()], ""]
        plot(res, tasks, cands, out / "defaults_panel.png")
        save()

    # 2. categorical emission initialisation, with the chosen transitions
    cat_tasks = [t for t in tasks if t.emission == "categorical"]
    if "emis" in sections:
        print("== categorical emission initialisation (the library's transitions) ==",
              flush=True)
        cat_tasks = [t for t in cat_tasks if t is not pos45 or not args.skip_pos45_emis]
        for t in cat_tasks:
            for r in res.select(section="init", task=t.name):   # reuse: hmmlearn, library
                cand = "dir1" if r["cand"] == "library" else r["cand"]
                if r["cand"] in ("hmmlearn-default", "library") and not res.has(
                        "emis", t.name, cand, r["seed"]):
                    res.add(**{**r, "section": "emis", "cand": cand})
            if not res.select(section="emis", task=t.name, cand="dir1"):
                run_hmmlearn(res, t, "emis", seeds, cache)
                run_hs(res, t, "emis", "dir1", seeds, lambda s, t=t: make_model(t, Init(), s))
            for e in EMIS_CANDIDATES:
                run_hs(res, t, "emis", e, cand_seeds,
                       lambda s, t=t, e=e: make_model(t, Init(emis=e), s))
            save()
        chosen_emis, why = choose(res, cat_tasks, "emis", ["dir1", *EMIS_CANDIDATES], "dir1")
        report += ["## 2. Categorical emission initialisation (the library's transitions; "
                   "`dir1` is the library's emission default)",
                   "", section_table(res, cat_tasks, "emis",
                                     ["hmmlearn-default", "dir1", *EMIS_CANDIDATES],
                                     lambda t: [*t.primary, "train"]),
                   f"**Chosen: `{chosen_emis}`.**", "", *[f"- {w}" for w in why], ""]
        save()

    # 2b. held-out likelihood with smoothing: is the lm gap between starts EM's overfitting?
    if "lmmap" in sections:
        print("== lm: MAP (Dirichlet 1.1 rows) from the library's and the sticky start ==",
              flush=True)
        smooth = dict(startprob_prior=1.1, transmat_prior=1.1, emissionprob_prior=1.1)
        for label, init in (("library", Init()), ("sticky", Init(trans="sticky"))):
            run_hs(res, lm, "lmmap", label + ", MAP 1.1", cand_seeds,
                   lambda s, init=init: make_model(lm, init, s, learn="map", **smooth))
        save()
        report += ["## 2b. Held-out likelihood with smoothing (lm32, `learn=\"map\"`, "
                   "Dirichlet(1.1) rows)", "",
                   "EM is maximum likelihood: it gives zero probability to every word a state "
                   "did not emit in training, and held-out text pays for it. With the same "
                   "starts and pseudo-counts of 0.1:", "",
                   section_table(res, [lm], "lmmap", ["library, MAP 1.1", "sticky, MAP 1.1"],
                                 lambda t: ["heldout", "train"]), ""]
        save()

    # 3. variational Bayes priors (POS)
    if "vb" in sections:
        print("== variational Bayes priors ==", flush=True)
        vb_cands = {"library": {}, "prior 1": dict(startprob_prior=1.0, transmat_prior=1.0,
                                                   emissionprob_prior=1.0),
                    "prior 0.1": dict(startprob_prior=0.1, transmat_prior=0.1,
                                      emissionprob_prior=0.1),
                    "prior 1e-3": dict(startprob_prior=1e-3, transmat_prior=1e-3,
                                       emissionprob_prior=1e-3)}
        vb_tasks = [real[0], pos17, pos45] if args.quick else [real[0], pos17]
        for t in vb_tasks:
            vb_cands_t = {**vb_cands, "prior 1/K, 1/W": dict(
                startprob_prior=1 / t.K, transmat_prior=1 / t.K,
                emissionprob_prior=1 / (t.n_features or 1))}
            if t.emission != "categorical":
                vb_cands_t = {k: {n: v for n, v in kw.items() if n != "emissionprob_prior"}
                              for k, kw in vb_cands_t.items()}
            run_hmmlearn(res, t, "vb", seeds[:args.hmmlearn_vb_seeds], cache, vb=True)
            save()
            for label, kw in vb_cands_t.items():
                run_hs(res, t, "vb", label, seeds if label == "library" else cand_seeds,
                       lambda s, t=t, kw=kw: make_model(t, Init(), s, learn="vb", **kw))
            save()
        report += ["## 3. Variational Bayes priors (Dirichlet concentration of the start, "
                   "transition and, for pos17, emission rows; `library`: 0.01, 0.01, 1/W)", "",
                   "`states used`: distinct states on the Viterbi path of the training text "
                   "(a prior that prunes states leaves fewer than K). hmmlearn's "
                   "VariationalCategoricalHMM (its 'log' implementation; 'scaling' underflows) "
                   "ends with NaN parameters on pos17 (26 minutes for the one seed run).", "",
                   section_table(res, vb_tasks, "vb",
                                 ["hmmlearn-default", "library", "prior 1", "prior 0.1",
                                  "prior 1e-3", "prior 1/K, 1/W"],
                                 lambda t: [*t.primary, "used", "failed"]), ""]
        save()

    # 4. streaming step sizes (one pass)
    if "stream" in sections:
        print("== streaming learners ==", flush=True)
        lm16 = lm_task(args.data_dir, args.quick, K=16)
        oem = {f"exp {e}": dict(step_exponent=e) for e in (0.6, 0.7, 0.8, 1.0)}
        per_seq = {"bwo": {f"eta {e}": dict(eta=e) for e in (0.005, 0.01, 0.05)},
                   "baldi-chauvin": {f"eta {e}": dict(eta=e) for e in (0.05, 0.2, 1.0)}}
        stream_tasks = [lm16, syn[0]] if not args.quick else [lm16, pos17, syn[0]]
        seeds_s = seeds[:args.stream_seeds]
        init_rows = {"sticky": Init(trans="sticky"), "flat": Init(trans="flat")}
        for t in stream_tasks:
            for label, init in init_rows.items():
                for learn in ("online-em", "bwo"):
                    if (learn == "online-em" and t is pos17) or (learn == "bwo" and
                                                                 t.kind != "real"):
                        continue
                    run_hs(res, t, "stream", f"{learn} init {label}", seeds_s,
                           lambda s, t=t, init=init, learn=learn: make_model(t, init, s,
                                                                           learn=learn))
            for label, kw in oem.items():
                if t is pos17:
                    continue                  # K^4 per observation: minutes per pass
                run_hs(res, t, "stream", "online-em " + label, seeds_s,
                       lambda s, t=t, kw=kw: make_model(t, Init(), s, learn="online-em",
                                                        learner_options=kw))
            if t.kind == "real":
                for learn, options in per_seq.items():
                    for label, kw in options.items():
                        run_hs(res, t, "stream", f"{learn} {label}", seeds_s,
                               lambda s, t=t, kw=kw, learn=learn: make_model(
                                   t, Init(), s, learn=learn, learner_options=kw))
            save()
        names = [*(f"{learn} init {k}" for learn in ("online-em", "bwo") for k in init_rows),
                 *("online-em " + k for k in oem),
                 *(f"{learn} {k}" for learn, o in per_seq.items() for k in o)]
        report += ["## 4. Streaming learners, one pass (step sizes)", "",
                   "One pass over the training data, the library's initialisation; hmmlearn "
                   "has no streaming learner (compare with the batch EM rows above).", "",
                   section_table(res, stream_tasks, "stream", names,
                                 lambda t: [*t.primary, "failed", "seconds"]), ""]
        save()


    # 5. Viterbi training: its defaults on the same panel
    if "vt" in sections:
        print("== Viterbi training ==", flush=True)
        seeds_vt = seeds[:args.vt_seeds]
        wanted = None if args.vt_tasks is None else set(args.vt_tasks.split(","))
        vt_tasks = [t for t in tasks if wanted is None or t.name in wanted]
        cands_by_task = {t.name: vt_candidates(t) for t in vt_tasks}
        for t in vt_tasks:
            slow = t.name.startswith(("pos", "lm"))
            seeds_t = seeds_vt[:args.vt_pos45_seeds] if t is pos45 else seeds_vt
            hl_seeds = seeds_t[:args.vt_hmmlearn_seeds] if slow and \
                args.vt_hmmlearn_seeds is not None else seeds_t
            run_hmmlearn(res, t, "vt", hl_seeds, cache)
            save()
            for label, make in cands_by_task[t.name].items():
                run_hs(res, t, "vt", label, seeds_t, make)
            save()
        names = list(dict.fromkeys(c for cs in cands_by_task.values() for c in cs))
        default_cands = [c for c in names if not c.startswith(("EM ", "n_init"))]
        chosen_vt, why = choose(res, vt_tasks, "vt", default_cands, "library")
        report += ["## 5. Viterbi training (`learn=\"vt\"`): its defaults", "",
                   "One change at a time from the library's VT defaults (`library`): the "
                   "initialisation (transition rows as in section 1, unigram-frequency "
                   "emissions), the priors of VT's MAP M-step, the stop rule (VT's: the paths "
                   "repeat or the objective stalls; `stop: tol`: EM's absolute-tol rule on "
                   "the same run), restarts (`n_init 5`, the best final objective kept). "
                   "`EM n then VT`: VT started from n iterations of the library's EM; "
                   "`EM (library default)`: EM alone; hmmlearn has no Viterbi training, so "
                   "its row is its EM with its defaults. `iterations`: VT's.", "",
                   section_table(res, vt_tasks, "vt", ["hmmlearn-default", *names],
                                 lambda t: [*t.primary, *(["train"] if "train" not in
                                                         t.primary else []),
                                            *(["recovered"] if t.kind == "synthetic"
                                              else []), "iterations", "seconds"]),
                   f"**Best candidate by the section-1 rule (EM rows and restarts left out): "
                   f"`{chosen_vt}`.**", "", *[f"- {w}" for w in why], ""]
        save()

    report += [f"Time of this run: {time.perf_counter() - started:.0f} s.", ""]
    save()
    print("\n".join(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
