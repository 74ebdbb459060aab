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

import copy
from collections.abc import Callable
from pathlib import Path

import numpy as np

from .._deprecation import keyword_only_after_first
from .._sklearn_base import BaseEstimator
from .._validation import (
    as_float_array,
    check_memory,
    check_number,
    check_positive_int,
    check_random_state,
    check_stochastic,
    make_rng,
)
from ..errors import InvalidInputError
from ..grammar import START, Grammar, Tree, from_cnf, normalise, read_trees, to_cnf
from ..grammar.diagnose import explain_zero
from ..kernels import cky
from ..learn import MODES, ConvergenceMonitor, Fitted, check_possible, fit_restarts, kbest_weights
from ..learn.gibbs_fit import (
    PosteriorSampling,
    check_learner_options,
    clear_gibbs,
    fit_gibbs,
    posterior_predictive,
)
from ..programs.problem import FlatSwitches, SwitchRows
from . import _learned

INITS = ("random", "uniform", "current")
_LEARNED = "r"
#: the Dirichlet concentration each mode uses when ``prior=None`` (1: flat, i.e. the
#: maximum-likelihood M-step; "em" always uses 1)
_DEFAULT_PRIORS = {"em": 1.0, "map": 1.0, "vb": 1.0, "vt": 1.0, "kvt": 1.0, "gibbs": 1.0}
#: bytes per chart cell (span, nonterminal) of each pass, for the memory check
_CELL_BYTES = {"inside-outside": 16, "viterbi": 16, "k-best": 40, "inside": 8}
_CHART_FIX = ("parse shorter sentences (split the long ones) or use a grammar with fewer "
              "nonterminals")


class _PCFGProblem(FlatSwitches):
    """The grammar as :func:`hiddenstate.learn.fit` sees it: the switches grouped by number
    of rules into Dirichlet blocks ``rules<m>`` (one row per left-hand side)."""

    def __init__(self, model: PCFG, g: Grammar, words: np.ndarray, offsets: np.ndarray,
                 theta: np.ndarray, prior: float):
        self.model, self.g, self.words, self.offsets = model, g, words, offsets
        self.n_observations = len(words)  # words of all sentences
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
        theta = self.flat(views)
        loglik, counts = self.model._inside_outside(self.g, theta, self.words, self.offsets,
                                                    True)
        _check_possible(loglik, explain=_explainer(self.g, theta, self.words, self.offsets))
        return float(loglik.sum()), self._stats(counts)

    def sample_counts(self, views: dict, rng) -> tuple[float, dict, np.ndarray]:
        """Gibbs sampling: one parse of every sentence drawn from its posterior (inside
        sampling, :func:`hiddenstate.kernels.cky.sample_parses`), the log joint
        :math:`\\log p(w, t \\mid \theta)` of the sentences and their parses, and the
        rule counts along them."""
        theta = self.flat(views)
        with np.errstate(divide="ignore"):
            logtheta = np.log(theta)
        args = self.g.kernel_args()
        n_sent = len(self.offsets) - 1
        logp = np.empty(n_sent)
        used = []
        for s in range(n_sent):
            w = self.words[self.offsets[s]:self.offsets[s + 1]]
            out = np.zeros((1, 2 * len(w), 4), dtype=np.int64)
            logp[s] = cky.sample_parses(logtheta, *args, w, rng.random((1, 2 * len(w))), out)
            if logp[s] > -np.inf:
                used.append(out[0, :, 3])
        _check_possible(logp)
        rules = np.concatenate(used)
        counts = np.bincount(rules, minlength=self.g.n_params).astype(np.float64)
        return float(logtheta[rules].sum()), self._stats(counts), rules

    def path_counts(self, views: dict, k: int) -> tuple[float, dict, np.ndarray]:
        theta = self.flat(views)
        with np.errstate(divide="ignore"):
            logtheta = np.log(theta)
        if k == 1:
            score, out = _viterbi(self.g, logtheta, self.words, self.offsets)
            _check_possible(score, explain=_explainer(self.g, theta, self.words,
                                                      self.offsets))
            counts = np.bincount(out[:, 3], minlength=self.g.n_params).astype(np.float64)
            return float(score.sum()), self._stats(counts), out
        counts = np.zeros(self.g.n_params)
        total = 0.0
        sig = []
        for s in range(len(self.offsets) - 1):
            w = self.words[self.offsets[s]:self.offsets[s + 1]]
            score, out, found = _kbest(self.g, logtheta, w, k, "k_best")
            _check_possible(score[:1], index=[s],
                            explain=_explainer(self.g, theta, self.words, self.offsets,
                                               first=s))
            weights, log_mass = kbest_weights(score[None, :found])
            for d in range(found):
                np.add.at(counts, out[d, :, 3], weights[0, d])
            total += float(log_mass[0])
            sig.append(out[:found].ravel())
        return total, self._stats(counts), np.concatenate(sig)


def _check_switches(g: Grammar, theta: np.ndarray, name: str) -> np.ndarray:
    """``theta`` (flat, of the right shape) if every switch is a probability vector, else an
    error naming the rule or the switch (one vectorised pass, however many switches)."""
    bad = np.flatnonzero(~np.isfinite(theta) | (theta < 0))
    if len(bad):
        p = int(bad[0])
        raise InvalidInputError(
            f"{name}: the probability of {g.param_lhs[p]} -> {' '.join(g.param_rhs[p])} is "
            f"{theta[p]}; probabilities are finite and >= 0 (set them with set_probs)")
    switches = g.switches()
    sums = np.add.reduceat(theta, np.array([lo for _, lo, _ in switches]))
    off = np.flatnonzero(np.abs(sums - 1.0) > 1e-8)
    if len(off):
        sw = switches[int(off[0])][0]
        raise InvalidInputError(
            f"{name}: the rules of {sw!r} sum to {sums[off[0]]:.6g}, not 1; normalise them "
            f"(set_probs({sw!r}, p / p.sum()))")
    return theta


#: what to do about a sentence no rule sequence derives (a missing rule)
_MISSING_RULE_FIX = (
    "add the rule, or read the grammar with a horizontal Markov order "
    "(from_treebank(..., markov=1 or 2): with markov=None a treebank grammar has a rule for "
    "each sequence of siblings it saw and no other)")
#: what to do about rules of probability zero
_SMOOTHING_FIX = "smooth the rule probabilities (learn='map' with prior > 1, or set_probs)"


def _check_possible(loglik, use: str | None = None, index=None, argument: str = "sentences",
                    structural: bool = False, explain=None) -> None:
    """The zero-probability rule (:func:`hiddenstate.learn.check_possible`) for sentences:
    while learning (``use`` None; ``structural``: no rule probabilities at all derive
    them), or for a method that needs their ``use`` (a parse, a posterior). ``explain(i)``:
    why sentence ``i`` (a position in ``loglik``) is impossible (the span and the missing
    rule, :func:`hiddenstate.grammar.diagnose.explain_zero`), said of the first one."""
    logp = np.asarray(loglik, dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(logp))
    why, cause = explain(int(bad[0])) if explain is not None and len(bad) else ("", "")
    it = "it" if len(bad) == 1 else "them"
    detail = "" if not why else f": {why}" if len(bad) == 1 else f"; the first: {why}"
    fix = {"zero": _SMOOTHING_FIX, "missing": _MISSING_RULE_FIX}.get(
        cause, f"{_SMOOTHING_FIX}, or {_MISSING_RULE_FIX}")
    if structural:
        check_possible(logp, "sentence", f"no rule sequence of the grammar derives {it}"
                       f"{detail}", f"check the sentence against the grammar: "
                       f"{_MISSING_RULE_FIX}", argument=argument, index=index,
                       given="whatever the rule probabilities")
    elif use is None:
        check_possible(logp, "sentence", f"no rule sequence derives {it} with non-zero "
                       f"probability{detail}", fix, argument=argument, index=index)
    else:
        check_possible(logp, "sentence", f"no rule sequence derives {it} with non-zero "
                       f"probability{detail}", f"{fix[0].upper()}{fix[1:]}.",
                       argument=argument, index=index, use=use)


def _explainer(g: Grammar, theta, words: np.ndarray, offsets: np.ndarray,
               tokens: list | None = None, first: int = 0):
    """``explain(i)`` for :func:`_check_possible`: why sentence ``first + i`` of the encoded
    ``words`` / ``offsets`` (its words as written: ``tokens``; None: the grammar's words) is
    impossible under ``theta`` (None: the rules alone)."""
    def explain(i: int) -> tuple[str, str]:
        s = first + i
        ids = words[offsets[s]:offsets[s + 1]]
        toks = [g.words[w] for w in ids] if tokens is None else tokens[s]
        return explain_zero(g, theta, ids, toks)

    return explain


def _viterbi(g: Grammar, logtheta, words, offsets) -> tuple[np.ndarray, np.ndarray]:
    score = np.empty(len(offsets) - 1)
    out = np.zeros((2 * len(words), 4), dtype=np.int64)
    cky.viterbi_parses(logtheta, *g.kernel_args(), words, offsets, score, out)
    return score, out


def _check_charts(g: Grammar, offsets: np.ndarray, kind: str, argument: str = "sentences",
                  k: int = 1, extra: float = 0.0) -> None:
    """:class:`~hiddenstate.errors.InsufficientMemoryError` before a pass whose chart of
    the longest sentence (``n (n + 1) N`` cells of ``_CELL_BYTES[kind]`` bytes, times ``k``
    for k-best) plus ``extra`` bytes would not fit in the available memory."""
    lengths = np.diff(offsets)
    s = int(np.argmax(lengths))
    n, N = int(lengths[s]), len(g.nonterminals)
    need = float(n) * (n + 1) * N * _CELL_BYTES[kind] * k + extra
    fix = {"k": "use a smaller k or a shorter sentence",
           "k_best": "use a smaller k_best or shorter sentences",
           "n_samples": "draw fewer samples per call"}.get(argument, _CHART_FIX)
    check_memory({argument: need},
                 f"the {kind} chart of sentence {s} ({n} words, {N} nonterminals"
                 + (f", k={k}" if k > 1 else "") + ")", {argument: fix})


def _kbest(g: Grammar, logtheta, w, k: int, argument: str = "k"):
    n = len(w)
    _check_charts(g, np.array([0, n]), "k-best", argument, k)
    score = np.empty(k)
    out = np.zeros((k, 2 * n, 4), dtype=np.int64)
    found = cky.kbest_parses(logtheta, *g.kernel_args(), w, k, score, out)
    return score, out, found


class PCFG(PosteriorSampling, BaseEstimator):
    r"""A probabilistic context-free grammar in Chomsky normal form (a scikit-learn estimator).

    Each left-hand side is a categorical switch over its right-hand sides, so the grammar
    is learned from sentences with any batch mode of :mod:`hiddenstate.learn` (Sato &
    Kubota, "Viterbi training in PRISM", sec. 4.1), through the CKY kernels of
    :mod:`hiddenstate.kernels.cky`.

    Parameters
    ----------
    rules : list of (str, tuple of str) or dict of str to list of tuple of str, default=None
        The rules, pairs ``(lhs, rhs)`` with ``rhs`` a word ``(w,)`` or two nonterminals
        ``(B, C)``, or a dict ``lhs -> [rhs, ...]``. Each left-hand side is a categorical
        switch over its right-hand sides, in the order given. None: set them later, or use
        :meth:`from_treebank`.
    start : str or list of str, default="S"
        The start nonterminal, or a list of root nonterminals (the start switch then
        learns which one a sentence starts from).
    learn : {"em", "map", "vb", "vt", "kvt", "gibbs"}, default="em"
        The learning mode (see ``docs/learning-modes.md``; ``"gibbs"``: posterior draws
        by inside sampling, ``docs/gibbs.md``).
    n_iter : int, default=100
        The most iterations of each restart.
    tol : float, default=1e-4
        EM / MAP / VB stop when the objective gains less than ``tol`` nats per word of the
        training sentences (``-inf``: never; VT and k-best VT stop when their parses stop
        changing).
    n_init : int, default=1
        Random restarts (``init="random"``); the run with the best final objective is
        kept, the earliest among equal ones (Sato & Kubota used 50).
    init : {"random", "uniform", "current"}, default="random"
        ``"random"`` (each switch drawn from a symmetric Dirichlet of concentration
        ``init_concentration``: large values give the paper's "random but almost uniform"
        starts), ``"uniform"`` or ``"current"`` (``theta_``: hand-set, read from trees or
        left by a previous fit).
    prior : float or None, default=None
        Dirichlet concentration of every switch for ``"map"``, ``"vb"``, ``"vt"``,
        ``"kvt"`` (PRISM's pseudo-count is ``prior - 1``); None: the mode's default,
        1.0 (flat). ``"map"``, ``"vt"`` and ``"kvt"`` need ``prior >= 1`` (below 1 the
        posterior density is unbounded at the edge of the simplex: no mode), ``"vb"``
        ``prior > 0``; ``"em"`` (maximum likelihood) takes no prior (None or 1.0).
    k_best : int, default=5
        Parses per sentence for ``learn="kvt"``.
    unknown_word : str or None, default=None
        The terminal that stands for words the grammar does not know (None: such a word
        is an error).
    init_concentration : float, default=1.0
        The concentration of the random starts (see ``init``).
    random_state : int, numpy.random.Generator or None, default=None
        The seed of the random starts (and of :meth:`sample` and :meth:`sample_parses`).
    verbose : bool, default=False
        Print the objective per iteration.
    learner_options : dict or None, default=None
        The options of ``learn="gibbs"`` (``n_samples``, ``burn_in``, ``thin``,
        ``n_chains``, ``n_jobs``, ``check_convergence``; see ``docs/gibbs.md``).

    Attributes
    ----------
    theta_ : ndarray of shape (n_params,)
        Flat rule probabilities: the start switch, then each left-hand side's rules
        (``probs_`` gives them by switch name). Before ``fit`` the model uses uniform
        probabilities, or those set with :meth:`set_probs`.
    posterior_ : dict of str to ndarray
        (``learn="vb"``) switch name -> Dirichlet concentrations.
    monitor_ : hiddenstate.learn.ConvergenceMonitor
        Objective per iteration and ``converged``.
    n_features_ : int
        Number of terminals (words) of the grammar.

    Examples
    --------
    >>> import hiddenstate as hs
    >>> rules = {"S": [("NP", "VP")], "NP": [("she",), ("fish",)],
    ...          "VP": [("V", "NP"), ("eats",)], "V": [("eats",)]}
    >>> sentences = [["she", "eats", "fish"], ["fish", "eats"], ["she", "eats"]]
    >>> model = hs.PCFG(rules, random_state=0).fit(sentences)
    >>> model.probs_["VP"]
    array([0.33333333, 0.66666667])
    >>> print(model.parse([["she", "eats", "fish"]])[0])
    (S (NP she) (VP (V eats) (NP fish)))
    """

    @keyword_only_after_first
    def __init__(self, rules=None, start="S", learn: str = "em", n_iter: int = 100,
                 tol: float = 1e-4, n_init: int = 1, init: str = "random",
                 prior: float | None = None,
                 k_best: int = 5, unknown_word: str | None = None,
                 init_concentration: float = 1.0, random_state=None, verbose: bool = False,
                 learner_options: dict | None = None):
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
        self.learner_options = learner_options

    # -- construction from a treebank -----------------------------------------------------------
    @classmethod
    def from_treebank(cls, trees, terminals: str = "words", markov: int | None = None,
                      min_count: int = 1, unknown_word: str = "<unk>", **params) -> PCFG:
        """Build the grammar of bracketed treebank trees, with their rule frequencies.

        ``theta_`` is the relative frequencies of the rules in the trees (the supervised
        estimate). Each tree is normalised (:func:`hiddenstate.grammar.normalise`: empty
        elements and function tags removed; ``terminals="tags"`` parses part-of-speech
        sequences), unary chains are collapsed and the tree is binarised (horizontal Markov
        order ``markov``). Words seen fewer than ``min_count`` times become ``unknown_word``
        (``min_count=1``: none; the model still maps words it never saw to ``unknown_word``
        only if the grammar has it).

        The grammar's size: with ``markov=None`` every sequence of siblings seen gets
        intermediate nonterminals of its own (the Penn Treebank sample's 3,914 trees give
        4,278 nonterminals; ``markov=2``, ``1``, ``0``: about 2,000, 740, 240), every chart
        grows with that number, and a sentence that needs a sequence never seen has no
        parse. ``markov=1`` or ``2`` is the usual choice (``docs/pcfg.md``).

        Parameters
        ----------
        trees : list of hiddenstate.grammar.Tree, or list of str or pathlib.Path
            The trees, or paths of bracketed (``.mrg``) files.
        terminals : {"words", "tags"}, default="words"
            The leaves of the grammar: the words, or the part-of-speech tags.
        markov : int or None, default=None
            The horizontal Markov order of the binarisation (None: unbounded).
        min_count : int, default=1
            Words seen fewer times become ``unknown_word``.
        unknown_word : str, default="<unk>"
            The terminal standing for rare (and unseen) words.
        **params
            The other constructor arguments (``learn``, ``random_state``, ...).

        Returns
        -------
        PCFG
            The model, its ``theta_`` set.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``trees`` is empty or not trees, or an argument is out of range.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> T = hs.grammar.Tree.fromstring
        >>> trees = [T("(S (NP (PRP she)) (VP (VBZ eats) (NP (NN fish))))"),
        ...          T("(S (NP (NN fish)) (VP (VBZ swims)))")]
        >>> model = hs.PCFG.from_treebank(trees)
        >>> model.probs_["S"]
        array([0.5, 0.5])
        >>> print(model.parse(["she eats fish"])[0])
        (S (NP (PRP she)) (VP (VBZ eats) (NP (NN fish))))
        """
        cnf, unk = cls.treebank_trees(trees, terminals, markov, min_count, unknown_word)
        g, counts = Grammar.from_trees(cnf)
        model = cls(rules=g.rule_list(), start=list(g.start), unknown_word=unk, **params)
        model.theta_ = _normalised(g, counts)
        return model

    @classmethod
    def treebank_trees(cls, trees, terminals: str = "words", markov: int | None = None,
                       min_count: int = 1, unknown_word: str = "<unk>"
                       ) -> tuple[list[Tree], str | None]:
        """Return the CNF trees :meth:`from_treebank` reads its grammar from.

        Parameters
        ----------
        trees : list of hiddenstate.grammar.Tree, or list of str or pathlib.Path
            The trees, or paths of bracketed (``.mrg``) files.
        terminals : {"words", "tags"}, default="words"
            The leaves of the grammar: the words, or the part-of-speech tags.
        markov : int or None, default=None
            The horizontal Markov order of the binarisation (None: unbounded).
        min_count : int, default=1
            Words seen fewer times become ``unknown_word``.
        unknown_word : str, default="<unk>"
            The terminal standing for rare words.

        Returns
        -------
        trees : list of hiddenstate.grammar.Tree
            The CNF trees, rare words replaced.
        unknown_word : str or None
            The unknown-word terminal they use (None if no word was rare).

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``unknown_word`` is not a non-empty string, or ``trees`` or ``min_count``
            is invalid.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> T = hs.grammar.Tree.fromstring
        >>> trees = [T("(S (NP (PRP she)) (VP (VBZ eats) (NP (NN fish))))"),
        ...          T("(S (NP (NN fish)) (VP (VBZ swims)))")]
        >>> cnf, unk = hs.PCFG.treebank_trees(trees, min_count=2)
        >>> print(cnf[1], unk)
        (S (NP+NN fish) (VP+VBZ <unk>)) <unk>
        """
        if not isinstance(unknown_word, str) or not unknown_word:
            raise InvalidInputError(
                f"unknown_word: expected a non-empty word (string), got {unknown_word!r:.60}")
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
        return cnf, unknown_word if has_unk else None

    @staticmethod
    def prepare_trees(trees, terminals: str = "words", markov: int | None = None) -> list[Tree]:
        """Return the normalised CNF trees (see :meth:`from_treebank`).

        This is also how to prepare gold trees for :func:`hiddenstate.metrics.tree_scores`
        (compare ``from_cnf`` of them).

        Parameters
        ----------
        trees : list of hiddenstate.grammar.Tree, or str, pathlib.Path or a list of them
            The trees, or paths of bracketed (``.mrg``) files.
        terminals : {"words", "tags"}, default="words"
            The leaves: the words, or the part-of-speech tags.
        markov : int or None, default=None
            The horizontal Markov order of the binarisation (None: unbounded).

        Returns
        -------
        list of hiddenstate.grammar.Tree
            The CNF trees (empty trees dropped).

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``trees`` is empty, not trees, or every tree is empty.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> T = hs.grammar.Tree.fromstring
        >>> print(hs.PCFG.prepare_trees([T("(S (NP (NN fish)) (VP (VBZ swims)))")])[0])
        (S (NP+NN fish) (VP+VBZ swims))
        """
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
        """Return the checked grammar (rebuilt when ``rules`` or ``start`` change).

        Returns
        -------
        hiddenstate.grammar.Grammar
            The grammar of ``rules`` and ``start``.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``rules`` is None or not a grammar in Chomsky normal form.
        """
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
        self._prior()
        check_number(self.init_concentration, "init_concentration", 0.0, strict=True)
        check_random_state(self.random_state)
        if self.init not in INITS:
            raise InvalidInputError(f"init: {self.init!r} is not one of {INITS}")
        if self.init != "random" and self.n_init != 1:
            raise InvalidInputError(
                f"n_init: restarts need random starting points; use init='random' or "
                f"n_init=1 with init={self.init!r}")
        check_learner_options(self)
        if self.unknown_word is not None and not isinstance(self.unknown_word, str):
            raise InvalidInputError(
                f"unknown_word: expected a word (string) or None, got {self.unknown_word!r:.60}")
        if self.unknown_word is not None and self.unknown_word not in g.word_index:
            raise InvalidInputError(
                f"unknown_word: {self.unknown_word!r} is not a terminal of the grammar; add "
                "lexical rules for it or set unknown_word=None")
        return g

    def _prior(self) -> float:
        """The Dirichlet concentration in force for ``learn`` (validated; see ``prior``)."""
        if self.prior is None:
            return _DEFAULT_PRIORS[self.learn]
        alpha = check_number(self.prior, "prior", 0.0, strict=True)
        if self.learn == "em":
            if alpha != 1.0:
                raise InvalidInputError(
                    "prior: priors are not used by learn='em' (maximum likelihood); use "
                    "learn='map', 'vb', 'vt' or 'kvt', or drop the prior")
        elif self.learn not in ("vb", "gibbs") and alpha < 1.0:
            raise InvalidInputError(
                f"prior: learn={self.learn!r} needs a Dirichlet concentration >= 1 (got "
                f"{alpha:g}): below 1 the posterior density is unbounded at the edge of the "
                "simplex and has no mode. Use >= 1, or learn='vb' for a sparse prior "
                "(0 < prior < 1)")
        return alpha

    # -- parameters -----------------------------------------------------------------------------
    def _theta(self, g: Grammar) -> np.ndarray:
        """The flat probabilities in use (validated): ``theta_`` or uniform."""
        theta = self.__dict__.get("theta_")
        if theta is None:
            return np.concatenate([np.full(m, 1.0 / m) for _, _, m in g.switches()])
        theta = as_float_array(theta, "theta_")
        if theta.shape != (g.n_params,):
            raise InvalidInputError(
                f"theta_: expected shape ({g.n_params},) (one entry per rule plus the start "
                f"switch), got {theta.shape}; set probabilities with set_probs")
        return _check_switches(g, theta, "theta_")

    @property
    def probs_(self) -> dict:
        """Rule probabilities by switch, ``{lhs: probabilities of its rules in order}``.

        ``"<start>"`` holds the probabilities of the start nonterminals.
        """
        g = self.grammar()
        theta = self._theta(g)
        return {name: theta[lo:lo + m].copy() for name, lo, m in g.switches()}

    def set_probs(self, lhs: str, probs) -> None:
        """Set the probabilities of the rules of ``lhs`` by hand; validated and used at once.

        Parameters
        ----------
        lhs : str
            A nonterminal with rules, or ``"<start>"`` for the start switch.
        probs : array-like of shape (n_rules,)
            A probability vector over the rules of ``lhs``, in their order.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``lhs`` has no rules, or ``probs`` is not a probability vector of that
            length.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> rules = {"S": [("NP", "VP")], "NP": [("she",), ("fish",)],
        ...          "VP": [("V", "NP"), ("eats",)], "V": [("eats",)]}
        >>> sentences = [["she", "eats", "fish"], ["fish", "eats"], ["she", "eats"]]
        >>> model = hs.PCFG(rules, random_state=0).fit(sentences)
        >>> model.set_probs("NP", [0.9, 0.1])
        >>> model.rule_probs()[("NP", ("she",))]
        0.9
        """
        g = self.grammar()
        spans = {name: (lo, m) for name, lo, m in g.switches()}
        if not isinstance(lhs, str) or lhs not in spans:
            raise InvalidInputError(
                f"lhs: {lhs!r:.60} is not a nonterminal with rules (or {START!r}); the "
                f"nonterminals are {g.nonterminals[:8]}{' ...' if len(g.nonterminals) > 8 else ''}")
        lo, m = spans[lhs]
        theta = self._theta(g).copy()
        theta[lo:lo + m] = check_stochastic(probs, (m,), f"probs of {lhs!r}")
        self.theta_ = theta

    def rule_probs(self) -> dict:
        """Return the probability of every rule (a readable form of ``theta_``).

        Returns
        -------
        dict of (str, tuple of str) to float
            ``{(lhs, rhs): probability}``.
        """
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
            elif isinstance(sent, (set, frozenset, dict)):
                raise InvalidInputError(
                    f"{name}: sentence {s} is a {type(sent).__name__}, which has no word "
                    "order; pass a list of words")
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
        """Learn the rule probabilities from sentences with the mode chosen by ``learn``.

        Parameters
        ----------
        sentences : list of list of str
            The sentences: lists of words (a string is split at white space; a
            :class:`~hiddenstate.grammar.Tree` stands for its leaves).
        callback : callable or None, default=None
            ``callback(iteration, objective)`` after every iteration.

        Returns
        -------
        PCFG
            The fitted model (``theta_``, ``monitor_``, ``posterior_``).

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a sentence is empty, has a word the grammar lacks (and no
            ``unknown_word``), or no rule sequence of the grammar derives it.
        hiddenstate.errors.InsufficientMemoryError
            If the chart of the longest sentence would not fit in memory.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> rules = {"S": [("NP", "VP")], "NP": [("she",), ("fish",)],
        ...          "VP": [("V", "NP"), ("eats",)], "V": [("eats",)]}
        >>> sentences = [["she", "eats", "fish"], ["fish", "eats"], ["she", "eats"]]
        >>> model = hs.PCFG(rules, random_state=0).fit(sentences)
        >>> model.monitor_.converged
        True
        """
        g = self._check_hyper()
        words, offsets, tokens = self._encode(g, sentences)
        if self.learn == "kvt":
            _check_charts(g, offsets, "k-best", "k_best", self.k_best)
        else:
            _check_charts(g, offsets, "viterbi" if self.learn == "vt" else "inside-outside")
        theta = self._theta(g)
        # a sentence no parse derives (whatever the probabilities) is an input error
        _check_possible(self._inside_outside(g, (theta > 0) + 0.5 * (theta == 0), words,
                                             offsets, False)[0], structural=True,
                        explain=_explainer(g, None, words, offsets, tokens))
        prior = self._prior()
        problem = _PCFGProblem(self, g, words, offsets, theta, prior)
        best = self._best_restart(problem, theta, _LEARNED, callback)
        self.theta_ = problem.flat(best.params)
        self.posterior_ = {}
        if best.posterior is not None:
            for name, q in best.posterior.items():
                for row, lo in zip(q, problem.index[name][:, 0], strict=True):
                    self.posterior_[g.param_lhs[int(lo)]] = np.asarray(row, dtype=np.float64)
        self.monitor_ = best.monitor
        self.n_features_ = len(g.words)
        _learned.mark_own(self, ["theta_"])
        return self

    def _best_restart(self, problem, theta: np.ndarray, which: str, callback):
        """:func:`~hiddenstate.learn.fit_restarts` from :meth:`_start_point` (shared with
        :class:`~hiddenstate.PLCG`): the run with the best final objective; with
        ``learn="gibbs"`` the posterior draws (``posterior_samples_``: ``theta_``) and
        their mean. Probabilities set by hand (``theta_``, ``set_probs``,
        ``from_treebank``) that ``init`` will not start from get a
        :class:`~hiddenstate.errors.ParameterOverwriteWarning`."""
        if self.init != "current":
            _learned.warn_replaced(
                self, ["theta_"], "init",
                f"init={self.init!r} starts from {self.init} rule probabilities: pass "
                "init='current' to start from the values you set")
        rng = make_rng(self.random_state)
        clear_gibbs(self)
        if self.learn == "gibbs":
            result = fit_gibbs(self, problem, lambda _: self._start_point(problem, theta, rng),
                               which, rng, lambda d: {"theta_": problem.flat(d)}, callback)
            return Fitted(result.mean, None, self.monitor_)
        return fit_restarts(problem, self.learn,
                            lambda _: self._start_point(problem, theta, rng),
                            n_init=self.n_init, n_iter=self.n_iter, tol=self.tol,
                            which=which, k_best=self.k_best, verbose=self.verbose,
                            callback=callback)

    def _gibbs_assign(self, draw: dict) -> None:
        """Set ``theta_`` to one draw of ``posterior_samples_``."""
        self.theta_ = draw["theta_"]

    # -- inference ------------------------------------------------------------------------------
    @posterior_predictive
    def score_samples(self, sentences) -> np.ndarray:
        """Return log P(sentence) of every sentence (the inside probability).

        After ``learn="gibbs"``: the posterior predictive, the log of the average over the
        draws (see :mod:`hiddenstate.learn.gibbs_fit`).

        Parameters
        ----------
        sentences : list of list of str
            The sentences: lists of words (a string is split at white space; a
            :class:`~hiddenstate.grammar.Tree` stands for its leaves).

        Returns
        -------
        ndarray of shape (n_sentences,)
            The log-probabilities; ``-inf`` where no parse has non-zero probability.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> rules = {"S": [("NP", "VP")], "NP": [("she",), ("fish",)],
        ...          "VP": [("V", "NP"), ("eats",)], "V": [("eats",)]}
        >>> sentences = [["she", "eats", "fish"], ["fish", "eats"], ["she", "eats"]]
        >>> model = hs.PCFG(rules, random_state=0).fit(sentences)
        >>> model.score_samples([["she", "eats", "fish"], ["fish", "eats"]]).round(4)
        array([-2.4849, -1.0986])
        """
        g = self._check_hyper()
        words, offsets, _ = self._encode(g, sentences)
        _check_charts(g, offsets, "inside")
        return self._inside_outside(g, self._theta(g), words, offsets, False)[0]

    def score(self, sentences) -> float:
        """Return the total log-likelihood, the sum of :meth:`score_samples`.

        Parameters
        ----------
        sentences : list of list of str
            The sentences: lists of words (a string is split at white space; a
            :class:`~hiddenstate.grammar.Tree` stands for its leaves).

        Returns
        -------
        float
            The sum of the sentences' log-probabilities.
        """
        return float(self.score_samples(sentences).sum())

    def expected_counts(self, sentences) -> dict:
        """Return the expected number of uses of every rule given the sentences.

        Parameters
        ----------
        sentences : list of list of str
            The sentences: lists of words (a string is split at white space; a
            :class:`~hiddenstate.grammar.Tree` stands for its leaves).

        Returns
        -------
        dict of (str, tuple of str) to float
            ``{(lhs, rhs): count}`` (``("<start>", (A,))`` for the root).

        Raises
        ------
        hiddenstate.errors.ZeroProbabilityError
            If a sentence has no parse of non-zero probability.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> rules = {"S": [("NP", "VP")], "NP": [("she",), ("fish",)],
        ...          "VP": [("V", "NP"), ("eats",)], "V": [("eats",)]}
        >>> sentences = [["she", "eats", "fish"], ["fish", "eats"], ["she", "eats"]]
        >>> model = hs.PCFG(rules, random_state=0).fit(sentences)
        >>> model.expected_counts(sentences)[("VP", ("eats",))]
        2.0
        """
        g = self._check_hyper()
        words, offsets, tokens = self._encode(g, sentences)
        _check_charts(g, offsets, "inside-outside")
        theta = self._theta(g)
        loglik, counts = self._inside_outside(g, theta, words, offsets, True)
        _check_possible(loglik, "posterior (expected rule counts)",
                        explain=_explainer(g, theta, words, offsets, tokens))
        return {(g.param_lhs[p], g.param_rhs[p]): float(counts[p]) for p in range(g.n_params)}

    def _logtheta(self, g: Grammar) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.log(self._theta(g))

    def parse(self, sentences, cnf: bool = False, return_logprob: bool = False,
              errors: str = "raise"):
        """Return the most probable parse of every sentence (CKY-Viterbi).

        Parameters
        ----------
        sentences : list of list of str
            The sentences: lists of words (a string is split at white space; a
            :class:`~hiddenstate.grammar.Tree` stands for its leaves).
        cnf : bool, default=False
            Keep the parses in Chomsky normal form (False: binarisation and collapsed
            unary chains undone).
        return_logprob : bool, default=False
            Also return the parses' log-probabilities.
        errors : {"raise", "none"}, default="raise"
            A sentence without a parse of non-zero probability raises
            :class:`~hiddenstate.errors.ZeroProbabilityError` (``"raise"``) or gets
            ``None`` and log-probability ``-inf`` (``"none"``).

        Returns
        -------
        trees : list of hiddenstate.grammar.Tree or None
            The best parse of each sentence.
        logprob : ndarray of shape (n_sentences,)
            Their log-probabilities (only with ``return_logprob``).

        Raises
        ------
        hiddenstate.errors.ZeroProbabilityError
            If ``errors="raise"`` and a sentence has no parse of non-zero probability.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> rules = {"S": [("NP", "VP")], "NP": [("she",), ("fish",)],
        ...          "VP": [("V", "NP"), ("eats",)], "V": [("eats",)]}
        >>> sentences = [["she", "eats", "fish"], ["fish", "eats"], ["she", "eats"]]
        >>> model = hs.PCFG(rules, random_state=0).fit(sentences)
        >>> trees, logprob = model.parse([["fish", "eats"]], return_logprob=True)
        >>> print(trees[0], logprob.round(4))
        (S (NP fish) (VP eats)) [-1.0986]
        """
        if errors not in ("raise", "none"):
            raise InvalidInputError(f"errors: expected 'raise' or 'none', got {errors!r}")
        g = self._check_hyper()
        words, offsets, tokens = self._encode(g, sentences)
        _check_charts(g, offsets, "viterbi")
        score, out = _viterbi(g, self._logtheta(g), words, offsets)
        if errors == "raise":
            _check_possible(score, "parse",
                            explain=_explainer(g, self._theta(g), words, offsets, tokens))
        trees = []
        for s, toks in enumerate(tokens):
            if score[s] == -np.inf:
                trees.append(None)
                continue
            t = g.tree(out[2 * offsets[s]:2 * offsets[s + 1]], toks)
            trees.append(t if cnf else from_cnf(t))
        return (trees, score) if return_logprob else trees

    def parse_k_best(self, sentence, k: int = 5, cnf: bool = False) -> list[tuple[float, Tree]]:
        """Return the ``k`` most probable parses of one sentence, best first.

        Parameters
        ----------
        sentence : list of str
            One sentence.
        k : int, default=5
            The number of parses (fewer if the sentence has fewer).
        cnf : bool, default=False
            Keep the parses in Chomsky normal form.

        Returns
        -------
        list of (float, hiddenstate.grammar.Tree)
            ``(log-probability, tree)`` pairs, best first.

        Raises
        ------
        hiddenstate.errors.ZeroProbabilityError
            If the sentence has no parse of non-zero probability.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> rules = {"S": [("NP", "VP")], "NP": [("she",), ("fish",)],
        ...          "VP": [("V", "NP"), ("eats",)], "V": [("eats",)]}
        >>> sentences = [["she", "eats", "fish"], ["fish", "eats"], ["she", "eats"]]
        >>> model = hs.PCFG(rules, random_state=0).fit(sentences)
        >>> [(round(lp, 4), str(t)) for lp, t in model.parse_k_best(["fish", "eats"], k=2)]
        [(-1.0986, '(S (NP fish) (VP eats))')]
        """
        k = check_positive_int(k, "k")
        g = self._check_hyper()
        words, offsets, tokens = self._encode(g, [sentence], "sentence")
        score, out, found = _kbest(g, self._logtheta(g), words, k)
        _check_possible(score[:1], "parse", argument="sentence",
                        explain=_explainer(g, self._theta(g), words, offsets, tokens))
        return [(float(score[d]), (lambda t: t if cnf else from_cnf(t))(
            g.tree(out[d], tokens[0]))) for d in range(found)]

    def predict_proba(self, sentences) -> list[np.ndarray]:
        """Return the posterior span marginals of every sentence.

        Parameters
        ----------
        sentences : list of list of str
            The sentences: lists of words (a string is split at white space; a
            :class:`~hiddenstate.grammar.Tree` stands for its leaves).

        Returns
        -------
        list of ndarray of shape (n, n + 1, n_nonterminals)
            For a sentence of ``n`` words, ``[i, j, A]`` is P(A spans words i..j-1 |
            sentence) (nonterminals in ``grammar().nonterminals`` order; CNF labels).

        Raises
        ------
        hiddenstate.errors.ZeroProbabilityError
            If a sentence has no parse of non-zero probability.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> rules = {"S": [("NP", "VP")], "NP": [("she",), ("fish",)],
        ...          "VP": [("V", "NP"), ("eats",)], "V": [("eats",)]}
        >>> sentences = [["she", "eats", "fish"], ["fish", "eats"], ["she", "eats"]]
        >>> model = hs.PCFG(rules, random_state=0).fit(sentences)
        >>> mu = model.predict_proba([["fish", "eats"]])[0]
        >>> mu.shape, float(mu[1, 2, model.grammar().nonterminals.index("VP")])
        ((2, 3, 4), 1.0)
        """
        g = self._check_hyper()
        words, offsets, tokens = self._encode(g, sentences)
        lengths = np.diff(offsets).astype(np.float64)
        _check_charts(g, offsets, "inside-outside",
                      extra=float(np.sum(lengths * (lengths + 1))) * len(g.nonterminals) * 8)
        logtheta = self._logtheta(g)
        out, logps = [], np.empty(len(offsets) - 1)
        for s in range(len(offsets) - 1):
            logps[s], mu = cky.span_posteriors(logtheta, *g.kernel_args(),
                                               words[offsets[s]:offsets[s + 1]])
            out.append(mu)
        _check_possible(logps, "posterior (span marginals)",
                        explain=_explainer(g, self._theta(g), words, offsets, tokens))
        return out

    def sample_parses(self, sentence, n_samples: int = 1, random_state=None,
                      cnf: bool = False) -> list[Tree]:
        """Draw parses of one sentence from their posterior given it.

        Parameters
        ----------
        sentence : list of str
            One sentence.
        n_samples : int, default=1
            The number of parses.
        random_state : int, numpy.random.Generator or None, default=None
            The seed (None: the estimator's ``random_state``).
        cnf : bool, default=False
            Keep the parses in Chomsky normal form.

        Returns
        -------
        list of hiddenstate.grammar.Tree
            ``n_samples`` parses.

        Raises
        ------
        hiddenstate.errors.ZeroProbabilityError
            If the sentence has no parse of non-zero probability.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> rules = {"S": [("NP", "VP")], "NP": [("she",), ("fish",)],
        ...          "VP": [("V", "NP"), ("eats",)], "V": [("eats",)]}
        >>> sentences = [["she", "eats", "fish"], ["fish", "eats"], ["she", "eats"]]
        >>> model = hs.PCFG(rules, random_state=0).fit(sentences)
        >>> print(model.sample_parses(["she", "eats", "fish"], random_state=0)[0])
        (S (NP she) (VP (V eats) (NP fish)))
        """
        n_samples = check_positive_int(n_samples, "n_samples")
        g = self._check_hyper()
        words, offsets, tokens = self._encode(g, [sentence], "sentence")
        _check_charts(g, offsets, "inside", "n_samples" if n_samples > 1 else "sentence",
                      extra=n_samples * 2.0 * len(words) * 5 * 8)
        rng = make_rng(self.random_state if random_state is None else random_state)
        out = np.zeros((n_samples, 2 * len(words), 4), dtype=np.int64)
        logp = cky.sample_parses(self._logtheta(g), *g.kernel_args(), words,
                                 rng.random((n_samples, 2 * len(words))), out)
        _check_possible(np.array([logp]), "posterior sample of parses", argument="sentence",
                        explain=_explainer(g, self._theta(g), words, offsets, tokens))
        trees = [g.tree(out[d], tokens[0]) for d in range(n_samples)]
        return trees if cnf else [from_cnf(t) for t in trees]

    def sample(self, n_samples: int = 1, random_state=None, max_words: int = 1000,
               cnf: bool = False) -> list[tuple[list[str], Tree]]:
        """Generate sentences top-down from the grammar, with their parse trees.

        A derivation is abandoned and drawn again as soon as it is sure to exceed
        ``max_words`` words (every open nonterminal will still yield at least one word), so
        each try costs at most about ``2 max_words`` rule draws; after 100 tries in a row
        the call raises an :class:`~hiddenstate.errors.InvalidInputError` naming
        ``max_words``. Before drawing, a grammar whose derivations are infinitely long on
        average is refused (see :func:`_expected_nodes`): sampling it would not end, or
        would only return the rare short derivations. A call whose trees would not fit in
        memory (:data:`SAMPLE_NODE_BYTES` per expected node) raises
        :class:`~hiddenstate.errors.InsufficientMemoryError` naming ``n_samples`` before
        drawing.

        Parameters
        ----------
        n_samples : int, default=1
            The number of sentences.
        random_state : int, numpy.random.Generator or None, default=None
            The seed (None: the estimator's ``random_state``).
        max_words : int, default=1000
            The longest sentence drawn.
        cnf : bool, default=False
            Keep the trees in Chomsky normal form.

        Returns
        -------
        list of (list of str, hiddenstate.grammar.Tree)
            ``(words, tree)`` of each sentence.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the derivations are infinitely long on average, or 100 in a row exceed
            ``max_words``.
        hiddenstate.errors.InsufficientMemoryError
            If the trees would not fit in memory.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> rules = {"S": [("NP", "VP")], "NP": [("she",), ("fish",)],
        ...          "VP": [("V", "NP"), ("eats",)], "V": [("eats",)]}
        >>> sentences = [["she", "eats", "fish"], ["fish", "eats"], ["she", "eats"]]
        >>> model = hs.PCFG(rules, random_state=0).fit(sentences)
        >>> [words for words, tree in model.sample(2, random_state=1)]
        [['she', 'eats'], ['fish', 'eats']]
        """
        n_samples = check_positive_int(n_samples, "n_samples")
        max_words = check_positive_int(max_words, "max_words")
        g = self._check_hyper()
        theta = self._theta(g)
        nodes = _check_terminates(g, theta)
        check_memory({"n_samples": n_samples * SAMPLE_NODE_BYTES
                      * (2.0 + min(nodes, 2.0 * max_words))},
                     f"sample(n_samples={n_samples}) of derivations with {nodes:.3g} "
                     "nonterminal nodes on average")
        rng = make_rng(self.random_state if random_state is None else random_state)
        cdf = {name: np.cumsum(theta[lo:lo + m]) for name, lo, m in g.switches()}

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
                else:
                    node.children = [Tree(rhs[0], []), Tree(rhs[1], [])]
                    stack.extend(reversed(node.children))
                if n_words + len(stack) > max_words:  # each open node adds >= 1 word
                    return None
            return root

        return self._draw_sentences(derive, n_samples, max_words, cnf)

    @staticmethod
    def _draw_sentences(derive, n_samples: int, max_words: int, cnf: bool):
        """``n_samples`` (words, tree) from ``derive()`` (None: longer than ``max_words``,
        drawn again, at most 100 times in a row)."""
        out = []
        for _ in range(n_samples):
            for _ in range(100):
                t = derive()
                if t is not None:
                    break
            else:
                raise InvalidInputError(
                    f"max_words: 100 derivations in a row were longer than {max_words} words;"
                    " raise max_words, or lower the probabilities of the recursive rules")
            out.append((t.leaves(), t if cnf else from_cnf(t)))
        return out

    # -- persistence ----------------------------------------------------------------------------
    def learned_arrays(self) -> dict[str, np.ndarray]:
        """Return the arrays :meth:`save` writes: ``theta_``.

        Returns
        -------
        dict of str to ndarray
            ``{"theta_": theta_}``.
        """
        return {"theta_": self._theta(self.grammar())}

    def learned_scalars(self) -> dict:
        """Return the scalars :meth:`save` writes: none.

        Returns
        -------
        dict
            An empty dict.
        """
        return {}

    def set_learned(self, arrays: dict, scalars: dict) -> None:
        """Restore what :meth:`learned_arrays` and :meth:`learned_scalars` returned.

        Parameters
        ----------
        arrays : dict of str to ndarray
            ``{"theta_": ...}``.
        scalars : dict
            Empty.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``arrays`` holds anything but ``theta_``, or ``scalars`` is not empty.
        """
        if set(arrays) != {"theta_"} or scalars:
            raise InvalidInputError(
                f"arrays: a saved {type(self).__name__} holds exactly 'theta_'")
        self.theta_ = np.asarray(arrays["theta_"], dtype=np.float64)
        _learned.mark_own(self, ["theta_"])  # a fit's values

    def _check_learned(self) -> None:
        self._theta(self._check_hyper())

    def save(self, path) -> None:
        """Save to a directory (``model.json`` with the rules + ``arrays.npz``; no pickle).

        Read it back with :func:`hiddenstate.load`. Hand-set probabilities are validated.

        Parameters
        ----------
        path : str or pathlib.Path
            The directory.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the grammar or the probabilities are invalid.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> rules = {"S": [("NP", "VP")], "NP": [("she",), ("fish",)],
        ...          "VP": [("V", "NP"), ("eats",)], "V": [("eats",)]}
        >>> sentences = [["she", "eats", "fish"], ["fish", "eats"], ["she", "eats"]]
        >>> model = hs.PCFG(rules, random_state=0).fit(sentences)
        >>> model.save("pcfg_model")
        >>> hs.load("pcfg_model").probs_["VP"]
        array([0.33333333, 0.66666667])
        """
        from ._saving import save

        g = self._check_hyper()
        # the file holds the grammar's canonical form (rules as a list, start as a list);
        # the model itself keeps its parameters as given (get_params is unchanged)
        saved = copy.copy(self)
        saved.theta_ = self._theta(g)
        saved.rules = g.rule_list()
        saved.start = list(g.start)
        saved.n_features_ = len(g.words)
        if not hasattr(saved, "monitor_"):
            saved.monitor_ = ConvergenceMonitor(self.tol, self.n_iter, self.verbose)
        save(saved, path)


#: bytes per node of a sampled derivation: a :class:`~hiddenstate.grammar.Tree` (slots)
#: with its list of children, and the node's share of the word list (the memory estimate
#: of :meth:`PCFG.sample`)
SAMPLE_NODE_BYTES = 160.0


def _expected_nodes(g: Grammar, theta: np.ndarray):
    r"""``(x, M, keep)``: the expected number of nonterminal nodes of a derivation from each
    nonterminal reachable from the start symbols (``inf`` everywhere when it is infinite),
    the expected-children matrix among them (sparse) and their indices.

    A PCFG derives top-down as a multi-type branching process (Harris 1963; Booth &
    Thompson 1973): :math:`M_{AB} = \sum_{A \to \beta} \theta_{A\to\beta}\,
    \#_B(\beta)` is the expected number of children labelled :math:`B` of a node labelled
    :math:`A`, and the expected sizes :math:`x = \sum_k M^k \mathbf{1}` are finite if and
    only if the spectral radius :math:`\rho(M) < 1`, in which case :math:`(I - M) x =
    \mathbf{1}`. For a non-negative :math:`M`, :math:`I - M` is a non-singular M-matrix
    (:math:`\rho < 1`) exactly when that system has a solution :math:`x \ge 0`, so one
    sparse solve decides it, whatever the number of nonterminals. At :math:`\rho = 1`
    (critical: ``S -> S S | a`` with probabilities 1/2) derivations end with probability
    one but their expected size is infinite; above 1 some never end. Maximum-likelihood
    estimates, from trees or by EM, always have :math:`\rho < 1` (Chi 1999)."""
    import warnings

    import scipy.sparse as sp
    from scipy.sparse.linalg import spsolve

    N = len(g.nonterminals)
    left = np.repeat(np.arange(N), np.diff(g.bl_ptr))
    live = theta[g.b_param] > 0
    rows = np.tile(g.b_lhs[live], 2)
    cols = np.concatenate((left[live], g.b_right[live]))
    w = np.tile(theta[g.b_param][live], 2)
    M = sp.csr_matrix((w, (rows, cols)), shape=(N, N))  # duplicates add up
    roots = g.root_nt[theta[g.root_param] > 0]
    seen = np.zeros(N, dtype=bool)
    seen[roots] = True
    frontier = roots
    while len(frontier):
        nxt = np.unique(M[frontier].indices)
        frontier = nxt[~seen[nxt]]
        seen[frontier] = True
    keep = np.flatnonzero(seen)
    M = M[keep][:, keep].tocsc()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a singular system is a verdict, not a problem
        x = np.atleast_1d(spsolve(sp.identity(len(keep), format="csc") - M,
                                  np.ones(len(keep))))
    if not np.all(np.isfinite(x)) or np.any(x < 1.0 - 1e-9 * np.abs(x).max()):
        x = np.full(len(keep), np.inf)
    return x, M, keep


def _check_terminates(g: Grammar, theta: np.ndarray) -> float:
    """The expected number of nonterminal nodes of a derivation from the start symbols
    (see :func:`_expected_nodes`); InvalidInputError when it is infinite, naming the
    spectral radius and the most prolific nonterminals."""
    x, M, keep = _expected_nodes(g, theta)
    if np.all(np.isfinite(x)):
        p = theta[g.root_param]
        live = p > 0
        return float(p[live] @ x[np.searchsorted(keep, g.root_nt[live])] / p[live].sum())
    rho = (f" has spectral radius {np.abs(np.linalg.eigvals(M.toarray())).max():.4g} >= 1"
           if len(keep) <= 2000 else " has spectral radius >= 1")
    rows = np.asarray(M.sum(axis=1)).ravel()
    top = np.argsort(-rows, kind="stable")[:3]
    shown = ", ".join(f"{g.nonterminals[keep[i]]} {rows[i]:.3g}" for i in top if rows[i] >= 1)
    raise InvalidInputError(
        f"theta_: the grammar's derivations are infinitely long on average (the matrix of "
        f"expected nonterminal children per nonterminal{rho}; expected nonterminal children "
        f"of {shown}), "
        "so sampling would not end; lower the probabilities of the recursive rules with "
        "set_probs, or fit the grammar to sentences")


def _normalised(g: Grammar, counts: dict) -> np.ndarray:
    theta = np.empty(g.n_params)
    for name, lo, m in g.switches():
        c = counts[name]
        theta[lo:lo + m] = c / c.sum()
    return theta


def _replace_leaves(tree: Tree, rare: set, unk: str) -> None:
    stack = [tree]
    while stack:
        node = stack.pop()
        for i, c in enumerate(node.children):
            if isinstance(c, str):
                if c in rare:
                    node.children[i] = unk
            else:
                stack.append(c)
