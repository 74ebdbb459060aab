r"""Probabilistic context-free grammars in Chomsky normal form: :class:`PCFG`.

A PCFG is a program of categorical switches, one per left-hand side (PRISM's
``values('A', [...])``; Sato & Kubota, "Viterbi training in PRISM", sec. 4.1): so every batch
learning mode of :mod:`hiddenstate.learn.batch` applies to it, through the specialised CKY
kernels of :mod:`hiddenstate.kernels.cky` (inside-outside for EM / MAP / VB, CKY-Viterbi for
VT, k-best CKY for k-best VT). The kernels give the same numbers as the grammar written as a
program on the explanation-graph engine (:func:`hiddenstate.programs.grammar_program`),
only faster (see ``benchmarks/bench_pcfg.py``).

**Unknown words.** A word the grammar has no lexical rule for is replaced by
``unknown_word`` when that is set (a terminal of the grammar; :meth:`PCFG.from_treebank`
makes one from the words seen fewer than ``min_count`` times in its trees), and is an
:class:`~hiddenstate.errors.InvalidInputError` naming the word otherwise. Parses always
show the sentence's own words.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
from sklearn.base import BaseEstimator

from .._validation import check_number, check_positive_int, check_stochastic, make_rng
from ..errors import InvalidInputError, ZeroProbabilityError
from ..grammar import START, Grammar, Tree, from_cnf, normalise, read_trees, to_cnf
from ..kernels import cky
from ..learn import MODES, ConvergenceMonitor
from ..learn import fit as fit_mode
from ..programs.problem import FlatSwitches, SwitchRows

INITS = ("random", "uniform", "current")
_LEARNED = "r"
_KBEST_BYTES = 2 * 2**30


class _PCFGProblem(FlatSwitches):
    """The grammar as :func:`hiddenstate.learn.fit` sees it: the switches grouped by number
    of rules into Dirichlet blocks ``rules<m>`` (one row per left-hand side)."""

    def __init__(self, model: PCFG, g: Grammar, words: np.ndarray, offsets: np.ndarray,
                 theta: np.ndarray, prior: float):
        self.model, self.g, self.words, self.offsets = model, g, words, offsets
        self.base = theta
        groups: dict[int, list[int]] = {}
        for _, lo, m in g.switches():
            groups.setdefault(m, []).append(lo)
        self.blocks, self.letters, self.index, self.n_virtual = {}, {}, {}, {}
        for m, los in sorted(groups.items()):
            name = f"rules{m}"
            self.blocks[name] = SwitchRows(name, _LEARNED, prior)
            self.letters[name] = _LEARNED
            self.index[name] = np.asarray(los, dtype=np.int64)[:, None] + np.arange(m)
            self.n_virtual[name] = 1.0

    def _stats(self, counts: np.ndarray) -> dict:
        return {name: counts[idx] for name, idx in self.index.items()}

    def set_start(self, views: dict) -> None:
        """VB's q(theta) is centred on the start as if each switch had been used as often
        as the switches of its block are on average there."""
        _, counts = self.model._inside_outside(self.g, self.flat(views), self.words,
                                               self.offsets, True)
        for name, idx in self.index.items():
            self.n_virtual[name] = max(float(counts[idx].sum()) / len(idx), 1.0)

    def expected_counts(self, views: dict) -> tuple[float, dict]:
        loglik, counts = self.model._inside_outside(self.g, self.flat(views), self.words,
                                                    self.offsets, True)
        _check_possible(loglik)
        return float(loglik.sum()), self._stats(counts)

    def path_counts(self, views: dict, k: int) -> tuple[float, dict, np.ndarray]:
        theta = self.flat(views)
        with np.errstate(divide="ignore"):
            logtheta = np.log(theta)
        if k == 1:
            score, out = _viterbi(self.g, logtheta, self.words, self.offsets)
            _check_possible(score)
            counts = np.bincount(out[:, 3], minlength=self.g.n_params).astype(np.float64)
            return float(score.sum()), self._stats(counts), out
        counts = np.zeros(self.g.n_params)
        total = 0.0
        sig = []
        for s in range(len(self.offsets) - 1):
            w = self.words[self.offsets[s]:self.offsets[s + 1]]
            score, out, found = _kbest(self.g, logtheta, w, k)
            _check_possible(score[:1], s)
            top = score[:found]
            weights = np.exp(top - top[0])
            mass = weights.sum()
            for d in range(found):
                np.add.at(counts, out[d, :, 3], weights[d] / mass)
            total += float(top[0] + np.log(mass))
            sig.append(out[:found].ravel())
        return total, self._stats(counts), np.concatenate(sig)


def _check_possible(loglik: np.ndarray, offset: int = 0) -> None:
    bad = np.flatnonzero(~np.isfinite(loglik))
    if len(bad):
        raise ZeroProbabilityError(
            f"sentences: sentence {offset + int(bad[0])} has no parse of non-zero probability "
            "under the current rule probabilities (no rule sequence derives it); check the "
            "sentence against the grammar, or smooth the probabilities (learn='map')")


def _viterbi(g: Grammar, logtheta, words, offsets) -> tuple[np.ndarray, np.ndarray]:
    score = np.empty(len(offsets) - 1)
    out = np.zeros((2 * len(words), 4), dtype=np.int64)
    cky.viterbi_parses(logtheta, *g.kernel_args(), words, offsets, score, out)
    return score, out


def _kbest(g: Grammar, logtheta, w, k: int):
    n = len(w)
    need = n * (n + 1) * len(g.nonterminals) * k * 40
    if need > _KBEST_BYTES:
        raise InvalidInputError(
            f"k: the {k} best parses of a {n}-word sentence with {len(g.nonterminals)} "
            f"nonterminals need {need / 2**30:.1f} GiB; use a smaller k")
    score = np.empty(k)
    out = np.zeros((k, 2 * n, 4), dtype=np.int64)
    found = cky.kbest_parses(logtheta, *g.kernel_args(), w, k, score, out)
    return score, out, found


class PCFG(BaseEstimator):
    r"""A probabilistic context-free grammar in Chomsky normal form, a scikit-learn style
    estimator learned from sentences with any batch mode.

    Parameters
    ----------
    rules : the rules, pairs ``(lhs, rhs)`` with ``rhs`` a word ``(w,)`` or two
        nonterminals ``(B, C)``, or a dict ``lhs -> [rhs, ...]``. Each left-hand side is a
        categorical switch over its right-hand sides, in the order given.
    start : the start nonterminal, or a list of root nonterminals (the start switch then
        learns which one a sentence starts from).
    learn : ``"em"``, ``"map"``, ``"vb"``, ``"vt"`` or ``"kvt"`` (see
        ``docs/learning-modes.md``).
    n_iter, tol : iteration limit; EM / MAP / VB stop when the objective gains less than
        ``tol`` (VT and k-best VT stop when their parses stop changing).
    n_init : random restarts (``init="random"``); the run with the best final objective is
        kept (Sato & Kubota used 50).
    init : ``"random"`` (each switch drawn from a symmetric Dirichlet of concentration
        ``init_concentration``: large values give the paper's "random but almost uniform"
        starts), ``"uniform"`` or ``"current"`` (``theta_``: hand-set, read from trees or
        left by a previous fit).
    prior : Dirichlet concentration of every switch for ``"map"``, ``"vb"``, ``"vt"``,
        ``"kvt"`` (``"em"`` ignores it). PRISM's pseudo-count is ``prior - 1``.
    k_best : parses per sentence for ``learn="kvt"``.
    unknown_word : the terminal that stands for words the grammar does not know (None:
        such a word is an error).
    init_concentration : see ``init``.
    random_state, verbose : seed (int, Generator or None); print the objective per
        iteration.

    Attributes
    ----------
    theta_ : flat rule probabilities: the start switch, then each left-hand side's rules
        (``probs_`` gives them by switch name). Before ``fit`` the model uses uniform
        probabilities, or those set with :meth:`set_probs`.
    posterior_ : (``learn="vb"``) dict switch name -> Dirichlet concentrations.
    monitor_ : objective per iteration and ``converged``.
    n_features_ : number of terminals (words) of the grammar.
    """

    def __init__(self, rules=None, start="S", learn: str = "em", n_iter: int = 100,
                 tol: float = 1e-4, n_init: int = 1, init: str = "random", prior: float = 1.0,
                 k_best: int = 5, unknown_word: str | None = None,
                 init_concentration: float = 1.0, random_state=None, verbose: bool = False):
        self.rules = rules
        self.start = start
        self.learn = learn
        self.n_iter = n_iter
        self.tol = tol
        self.n_init = n_init
        self.init = init
        self.prior = prior
        self.k_best = k_best
        self.unknown_word = unknown_word
        self.init_concentration = init_concentration
        self.random_state = random_state
        self.verbose = verbose

    # -- construction from a treebank -----------------------------------------------------------
    @classmethod
    def from_treebank(cls, trees, terminals: str = "words", markov: int | None = None,
                      min_count: int = 1, unknown_word: str = "<unk>", **params) -> PCFG:
        """The grammar of bracketed treebank trees (Tree objects or ``.mrg`` paths), with
        ``theta_`` the relative frequencies of its rules in them (the supervised estimate).

        Each tree is normalised (:func:`hiddenstate.grammar.normalise`: empty elements and
        function tags removed; ``terminals="tags"`` parses part-of-speech sequences), unary
        chains are collapsed and the tree is binarised (horizontal Markov order
        ``markov``). Words seen fewer than ``min_count`` times become ``unknown_word``
        (``min_count=1``: none; the model still maps words it never saw to ``unknown_word``
        only if the grammar has it)."""
        cnf = cls.prepare_trees(trees, terminals, markov)
        min_count = check_positive_int(min_count, "min_count")
        has_unk = False
        if min_count > 1:
            freq: dict[str, int] = {}
            for t in cnf:
                for w in t.leaves():
                    freq[w] = freq.get(w, 0) + 1
            rare = {w for w, c in freq.items() if c < min_count}
            has_unk = bool(rare)
            for t in cnf:
                _replace_leaves(t, rare, unknown_word)
        g, counts = Grammar.from_trees(cnf)
        model = cls(rules=g.rule_list(), start=list(g.start),
                    unknown_word=unknown_word if has_unk else None, **params)
        model.theta_ = _normalised(g, counts)
        return model

    @staticmethod
    def prepare_trees(trees, terminals: str = "words", markov: int | None = None) -> list[Tree]:
        """Normalised CNF trees (see :meth:`from_treebank`); also how to prepare gold trees
        for :func:`hiddenstate.metrics.tree_scores` (compare ``from_cnf`` of them)."""
        if isinstance(trees, (str, Path)) or (isinstance(trees, list) and trees
                                              and isinstance(trees[0], (str, Path))):
            trees = read_trees(trees)
        trees = list(trees)
        if not trees or not all(isinstance(t, Tree) for t in trees):
            raise InvalidInputError(
                "trees: expected a non-empty list of hiddenstate.grammar.Tree or paths of "
                "bracketed files")
        if markov is not None:
            markov = check_positive_int(markov, "markov", minimum=0)
        out = []
        for t in trees:
            t = normalise(t, terminals)
            if t is not None:
                out.append(to_cnf(t, markov))
        if not out:
            raise InvalidInputError("trees: every tree was empty after removing -NONE-")
        return out

    # -- configuration --------------------------------------------------------------------------
    def grammar(self) -> Grammar:
        """The checked grammar (rebuilt when ``rules`` or ``start`` change)."""
        key = repr((self.rules, self.start))
        cached = self.__dict__.get("_grammar_cache")
        if cached is None or cached[0] != key:
            if self.rules is None:
                raise InvalidInputError(
                    "rules: None; give the grammar's rules or use PCFG.from_treebank")
            g = Grammar.from_rules(self.rules, self.start)
            self._grammar_cache = cached = (key, g)
        return cached[1]

    def _check_hyper(self) -> Grammar:
        g = self.grammar()
        if self.learn not in MODES:
            raise InvalidInputError(f"learn: {self.learn!r} is not one of {MODES}")
        check_positive_int(self.n_iter, "n_iter")
        check_positive_int(self.n_init, "n_init")
        check_positive_int(self.k_best, "k_best")
        check_number(self.tol, "tol", finite=False)
        check_number(self.prior, "prior", 0.0, strict=True)
        check_number(self.init_concentration, "init_concentration", 0.0, strict=True)
        if self.init not in INITS:
            raise InvalidInputError(f"init: {self.init!r} is not one of {INITS}")
        if self.init != "random" and self.n_init != 1:
            raise InvalidInputError(
                f"n_init: restarts need random starting points; use init='random' or "
                f"n_init=1 with init={self.init!r}")
        if self.unknown_word is not None and self.unknown_word not in g.word_index:
            raise InvalidInputError(
                f"unknown_word: {self.unknown_word!r} is not a terminal of the grammar; add "
                "lexical rules for it or set unknown_word=None")
        return g

    # -- parameters -----------------------------------------------------------------------------
    def _theta(self, g: Grammar) -> np.ndarray:
        """The flat probabilities in use (validated): ``theta_`` or uniform."""
        theta = self.__dict__.get("theta_")
        if theta is None:
            return np.concatenate([np.full(m, 1.0 / m) for _, _, m in g.switches()])
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != (g.n_params,):
            raise InvalidInputError(
                f"theta_: expected shape ({g.n_params},) (one entry per rule plus the start "
                f"switch), got {theta.shape}; set probabilities with set_probs")
        for name, lo, m in g.switches():
            check_stochastic(theta[lo:lo + m], (m,), f"theta_ (rules of {name!r})")
        return theta

    @property
    def probs_(self) -> dict:
        """Rule probabilities by switch: ``{lhs: probabilities of its rules in order}``
        and ``{"<start>": probabilities of the start nonterminals}``."""
        g = self.grammar()
        theta = self._theta(g)
        return {name: theta[lo:lo + m].copy() for name, lo, m in g.switches()}

    def set_probs(self, lhs: str, probs) -> None:
        """Set the probabilities of the rules of ``lhs`` (``"<start>"``: the start switch)
        by hand; validated and used at once."""
        g = self.grammar()
        spans = {name: (lo, m) for name, lo, m in g.switches()}
        if lhs not in spans:
            raise InvalidInputError(
                f"lhs: {lhs!r} is not a nonterminal with rules (or {START!r})")
        lo, m = spans[lhs]
        theta = self._theta(g).copy()
        theta[lo:lo + m] = check_stochastic(probs, (m,), f"probs of {lhs!r}")
        self.theta_ = theta

    def rule_probs(self) -> dict:
        """``{(lhs, rhs): probability}`` for every rule (readable form of ``theta_``)."""
        g = self.grammar()
        theta = self._theta(g)
        return {(g.param_lhs[p], g.param_rhs[p]): float(theta[p])
                for p in range(len(g.start), g.n_params)}

    # -- data -----------------------------------------------------------------------------------
    def _encode(self, g: Grammar, sentences, name: str = "sentences"):
        """``(word ids, offsets, token lists)``; unknown words mapped or rejected."""
        if isinstance(sentences, str):
            raise InvalidInputError(
                f"{name}: expected a list of sentences (each a list of words), got a string; "
                "wrap one sentence as [sentence.split()]")
        try:
            sents = list(sentences)
        except TypeError as exc:
            raise InvalidInputError(f"{name}: expected a list of sentences") from exc
        if not sents:
            raise InvalidInputError(f"{name}: empty; pass at least one sentence")
        unk = None if self.unknown_word is None else g.word_index[self.unknown_word]
        ids, offsets, tokens = [], [0], []
        for s, sent in enumerate(sents):
            if isinstance(sent, str):
                sent = sent.split()
            elif isinstance(sent, Tree):
                sent = sent.leaves()
            try:
                sent = list(sent)
            except TypeError as exc:
                raise InvalidInputError(
                    f"{name}: sentence {s} is not a list of words") from exc
            if not sent:
                raise InvalidInputError(f"{name}: sentence {s} is empty")
            for t, word in enumerate(sent):
                if not isinstance(word, str):
                    raise InvalidInputError(
                        f"{name}: sentence {s}, word {t} is {word!r}, not a string")
                i = g.word_index.get(word, unk)
                if i is None:
                    raise InvalidInputError(
                        f"{name}: sentence {s} has the word {word!r}, which no rule of the "
                        "grammar derives; add a lexical rule for it or set unknown_word")
                ids.append(i)
            offsets.append(len(ids))
            tokens.append(sent)
        return (np.asarray(ids, dtype=np.int64), np.asarray(offsets, dtype=np.int64), tokens)

    def _inside_outside(self, g: Grammar, theta, words, offsets, want_counts: bool):
        loglik = np.empty(len(offsets) - 1)
        counts = np.zeros(g.n_params)
        with np.errstate(divide="ignore"):
            logtheta = np.log(theta)
        cky.inside_outside(logtheta, *g.kernel_args(), words, offsets, want_counts, loglik,
                           counts)
        return loglik, counts

    # -- fitting --------------------------------------------------------------------------------
    def _start_point(self, problem: _PCFGProblem, theta: np.ndarray, rng) -> dict:
        views = problem.views(theta)
        if self.init == "current":
            return views
        for name, v in views.items():
            if self.init == "uniform" or v.shape[1] == 1:
                views[name] = np.full(v.shape, 1.0 / v.shape[1])
            else:
                x = rng.gamma(self.init_concentration, size=v.shape)
                views[name] = x / x.sum(axis=1, keepdims=True)
        return views

    def fit(self, sentences, callback: Callable[[int, float], None] | None = None):
        """Learn the rule probabilities from sentences (lists of words) with the mode chosen
        by ``learn``; ``callback(iteration, objective)`` after every iteration."""
        g = self._check_hyper()
        words, offsets, _ = self._encode(g, sentences)
        theta = self._theta(g)
        # a sentence no parse derives (whatever the probabilities) is an input error
        _check_possible(self._inside_outside(g, (theta > 0) + 0.5 * (theta == 0), words,
                                             offsets, False)[0])
        prior = 1.0 if self.learn == "em" else float(self.prior)
        problem = _PCFGProblem(self, g, words, offsets, theta, prior)
        rng = make_rng(self.random_state)
        best = None
        for _ in range(self.n_init):
            views = self._start_point(problem, theta, rng)
            if self.learn == "vb":
                problem.set_start(views)
            tol = -np.inf if self.learn in ("vt", "kvt") else self.tol
            result = fit_mode(problem, self.learn, views,
                              ConvergenceMonitor(tol, self.n_iter, self.verbose), _LEARNED,
                              self.k_best, callback)
            if best is None or result.monitor.history[-1] > best.monitor.history[-1]:
                best = result
        self.theta_ = problem.flat(best.params)
        self.posterior_ = {}
        if best.posterior is not None:
            for name, q in best.posterior.items():
                for row, lo in zip(q, problem.index[name][:, 0], strict=True):
                    self.posterior_[g.param_lhs[int(lo)]] = np.asarray(row, dtype=np.float64)
        self.monitor_ = best.monitor
        self.n_features_ = len(g.words)
        return self

    # -- inference ------------------------------------------------------------------------------
    def score_samples(self, sentences) -> np.ndarray:
        """log P(sentence) of every sentence (``-inf`` where no parse has non-zero
        probability)."""
        g = self._check_hyper()
        words, offsets, _ = self._encode(g, sentences)
        return self._inside_outside(g, self._theta(g), words, offsets, False)[0]

    def score(self, sentences) -> float:
        """Sum of :meth:`score_samples`."""
        return float(self.score_samples(sentences).sum())

    def expected_counts(self, sentences) -> dict:
        """Expected number of uses of every rule given the sentences: ``{(lhs, rhs):
        count}`` (``("<start>", (A,))`` for the root)."""
        g = self._check_hyper()
        words, offsets, _ = self._encode(g, sentences)
        loglik, counts = self._inside_outside(g, self._theta(g), words, offsets, True)
        _check_possible(loglik)
        return {(g.param_lhs[p], g.param_rhs[p]): float(counts[p]) for p in range(g.n_params)}

    def _logtheta(self, g: Grammar) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.log(self._theta(g))

    def parse(self, sentences, cnf: bool = False, return_logprob: bool = False,
              errors: str = "raise"):
        """The most probable parse of every sentence (CKY-Viterbi): a list of
        :class:`~hiddenstate.grammar.Tree`; binarisation and collapsed unary chains undone
        unless ``cnf``. ``return_logprob``: also the parses' log-probabilities. A sentence
        without a parse of non-zero probability raises
        :class:`~hiddenstate.errors.ZeroProbabilityError` (``errors="raise"``) or gets
        ``None`` and log-probability ``-inf`` (``errors="none"``)."""
        if errors not in ("raise", "none"):
            raise InvalidInputError(f"errors: expected 'raise' or 'none', got {errors!r}")
        g = self._check_hyper()
        words, offsets, tokens = self._encode(g, sentences)
        score, out = _viterbi(g, self._logtheta(g), words, offsets)
        if errors == "raise":
            _check_possible(score)
        trees = []
        for s, toks in enumerate(tokens):
            if score[s] == -np.inf:
                trees.append(None)
                continue
            t = g.tree(out[2 * offsets[s]:2 * offsets[s + 1]], toks)
            trees.append(t if cnf else from_cnf(t))
        return (trees, score) if return_logprob else trees

    def parse_k_best(self, sentence, k: int = 5, cnf: bool = False) -> list[tuple[float, Tree]]:
        """The ``k`` most probable parses of one sentence (fewer if it has fewer), best
        first, as ``(log-probability, tree)``."""
        k = check_positive_int(k, "k")
        g = self._check_hyper()
        words, _, tokens = self._encode(g, [sentence], "sentence")
        score, out, found = _kbest(g, self._logtheta(g), words, k)
        _check_possible(score[:1])
        return [(float(score[d]), (lambda t: t if cnf else from_cnf(t))(
            g.tree(out[d], tokens[0]))) for d in range(found)]

    def predict_proba(self, sentences) -> list[np.ndarray]:
        """Posterior span marginals: for each sentence of ``n`` words an array ``(n, n + 1,
        n_nonterminals)`` whose ``[i, j, A]`` is P(A spans words i..j-1 | sentence)
        (nonterminals in ``grammar().nonterminals`` order; CNF labels)."""
        g = self._check_hyper()
        words, offsets, _ = self._encode(g, sentences)
        logtheta = self._logtheta(g)
        out = []
        for s in range(len(offsets) - 1):
            logp, mu = cky.span_posteriors(logtheta, *g.kernel_args(),
                                           words[offsets[s]:offsets[s + 1]])
            _check_possible(np.array([logp]), s)
            out.append(mu)
        return out

    def sample_parses(self, sentence, n_samples: int = 1, random_state=None,
                      cnf: bool = False) -> list[Tree]:
        """Parses of one sentence drawn from their posterior given it."""
        n_samples = check_positive_int(n_samples, "n_samples")
        g = self._check_hyper()
        words, _, tokens = self._encode(g, [sentence], "sentence")
        rng = make_rng(random_state)
        out = np.zeros((n_samples, 2 * len(words), 4), dtype=np.int64)
        logp = cky.sample_parses(self._logtheta(g), *g.kernel_args(), words,
                                 rng.random((n_samples, 2 * len(words))), out)
        _check_possible(np.array([logp]))
        trees = [g.tree(out[d], tokens[0]) for d in range(n_samples)]
        return trees if cnf else [from_cnf(t) for t in trees]

    def sample(self, n_samples: int = 1, random_state=None, max_words: int = 1000,
               cnf: bool = False) -> list[tuple[list[str], Tree]]:
        """Sentences generated top-down from the grammar, with their parse trees. A
        derivation longer than ``max_words`` words is drawn again (a grammar whose
        derivations do not terminate with probability one raises after 100 tries)."""
        n_samples = check_positive_int(n_samples, "n_samples")
        max_words = check_positive_int(max_words, "max_words")
        g = self._check_hyper()
        theta = self._theta(g)
        rng = make_rng(random_state)
        spans = {name: (lo, m) for name, lo, m in g.switches()}
        cdf = {name: np.cumsum(theta[lo:lo + m]) for name, (lo, m) in spans.items()}

        def draw(name):
            c = cdf[name]
            return min(int(np.searchsorted(c, rng.random() * c[-1], side="right")),
                       len(c) - 1)

        def derive():
            root = Tree(g.start[draw(START)], [])
            stack, n_words = [root], 0
            while stack:
                node = stack.pop()
                rhs = g.rules[node.label][draw(node.label)]
                if len(rhs) == 1:
                    node.children = [rhs[0]]
                    n_words += 1
                    if n_words > max_words:
                        return None
                else:
                    node.children = [Tree(rhs[0], []), Tree(rhs[1], [])]
                    stack.extend(reversed(node.children))
            return root

        out = []
        for _ in range(n_samples):
            for _ in range(100):
                t = derive()
                if t is not None:
                    break
            else:
                raise InvalidInputError(
                    f"max_words: 100 derivations in a row were longer than {max_words} words;"
                    " the grammar may not terminate with probability one")
            out.append((t.leaves(), t if cnf else from_cnf(t)))
        return out

    # -- persistence ----------------------------------------------------------------------------
    def learned_arrays(self) -> dict[str, np.ndarray]:
        """What :meth:`save` writes: ``theta_``."""
        return {"theta_": self._theta(self.grammar())}

    def learned_scalars(self) -> dict:
        return {}

    def set_learned(self, arrays: dict, scalars: dict) -> None:
        if set(arrays) != {"theta_"} or scalars:
            raise InvalidInputError("arrays: a saved PCFG holds exactly 'theta_'")
        self.theta_ = np.asarray(arrays["theta_"], dtype=np.float64)

    def _check_learned(self) -> None:
        self._theta(self._check_hyper())

    def save(self, path) -> None:
        """Save to a directory (``model.json`` with the rules + ``arrays.npz``; no pickle);
        read back with :func:`hiddenstate.load`. Hand-set probabilities are validated."""
        from ._saving import save

        g = self._check_hyper()
        self.theta_ = self._theta(g)
        self.rules = g.rule_list()
        self.start = list(g.start)
        self.n_features_ = len(g.words)
        if not hasattr(self, "monitor_"):
            self.monitor_ = ConvergenceMonitor(self.tol, self.n_iter, self.verbose)
        save(self, path)


def _normalised(g: Grammar, counts: dict) -> np.ndarray:
    theta = np.empty(g.n_params)
    for name, lo, m in g.switches():
        c = counts[name]
        theta[lo:lo + m] = c / c.sum()
    return theta


def _replace_leaves(tree: Tree, rare: set, unk: str) -> None:
    for i, c in enumerate(tree.children):
        if isinstance(c, str):
            if c in rare:
                tree.children[i] = unk
        else:
            _replace_leaves(c, rare, unk)

