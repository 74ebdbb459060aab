r"""Probabilistic left-corner grammars: :class:`PLCG`.

A PLCG (Manning 1997; Sato & Kubota, "Viterbi training in PRISM", sec. 4.2) uses the rules
of a context-free grammar, like a :class:`~hiddenstate.PCFG`, but its probabilities belong
to the operations of a left-corner parser: *shift* (the first word of a goal), *projection*
(the rule built on a completed left corner, given the goal) and *attach* (whether a
completed goal category is the goal). Its switches and their meaning are described in
:mod:`hiddenstate.grammar.left_corner`; the model is the program of
:func:`hiddenstate.programs.left_corner.left_corner_program`, whose explanation graph is
built by the compiled :func:`hiddenstate.kernels.left_corner.build_graph` (the same graph as
the tabled search, tested) and run by the passes of
:mod:`hiddenstate.kernels.explanation_graph`. Every batch mode learns it through
:func:`hiddenstate.learn.fit`, exactly as the program engine does
(:class:`~hiddenstate.programs.problem.ProgramProblem`).

The rules are those of :class:`~hiddenstate.PCFG` (Chomsky normal form, a start switch over
the root nonterminals, the same ``unknown_word`` handling and treebank preparation), so a
PLCG and a PCFG with the same rules give non-zero probability to the same parse trees; the
probabilities differ (the PLCG conditions each rule on the goal it is built for and has
more parameters).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from sklearn.base import BaseEstimator

from .._validation import check_memory, check_positive_int, check_stochastic, make_rng
from ..errors import InvalidInputError, NotFittedError
from ..grammar import Grammar, Tree, from_cnf
from ..grammar.left_corner import LeftCorner
from ..kernels.left_corner import build_graph
from ..programs.graph import ExplanationGraph
from ..programs.left_corner import left_corner_program
from ..programs.problem import LEARNED, ProgramProblem
from .pcfg import PCFG, SAMPLE_NODE_BYTES, _check_possible


class _Names:
    """The ``goals`` of a built graph, for messages: its roots are the sentences, the other
    nodes are numbered."""

    def __init__(self, roots: np.ndarray, n_nodes: int):
        self.sentence = {int(r): s for s, r in enumerate(roots)}
        self.n_nodes = n_nodes

    def __getitem__(self, node: int):
        if not 0 <= node < self.n_nodes:
            raise IndexError(node)
        s = self.sentence.get(int(node))
        return _Name(f"sentences[{s}]" if s is not None else f"node {node}")

    def __len__(self) -> int:
        return self.n_nodes


class _Name(str):
    def __repr__(self) -> str:
        return str(self)


class PLCG(BaseEstimator):
    r"""A probabilistic left-corner grammar over the rules of a CNF grammar, a scikit-learn
    style estimator learned from sentences with any batch mode.

    Parameters
    ----------
    rules, start, unknown_word : the grammar, as for :class:`~hiddenstate.PCFG` (pairs
        ``(lhs, rhs)`` with ``rhs`` a word ``(w,)`` or two nonterminals; one start
        nonterminal or a list of root nonterminals).
    learn : ``"em"``, ``"map"``, ``"vb"``, ``"vt"`` or ``"kvt"`` (see
        ``docs/learning-modes.md``).
    n_iter, tol : iteration limit; EM / MAP / VB stop when the objective gains less than
        ``tol`` (VT and k-best VT stop when their derivations stop changing).
    n_init : random restarts (``init="random"``); the run with the best final objective is
        kept.
    init : ``"random"`` (each switch drawn from a symmetric Dirichlet of concentration
        ``init_concentration``), ``"uniform"`` or ``"current"`` (``theta_``).
    prior : Dirichlet concentration of every switch for ``"map"``, ``"vb"``, ``"vt"``,
        ``"kvt"`` (PRISM's pseudo-count is ``prior - 1``); ``None``: the mode's default, 1.0,
        and the same rules as :class:`~hiddenstate.PCFG` (``"em"`` takes no prior).
    k_best : derivations per sentence for ``learn="kvt"``.
    random_state, verbose : seed (int, Generator or None); print the objective per
        iteration.

    Attributes
    ----------
    theta_ : flat switch probabilities in the layout of :meth:`left_corner` (``probs_``
        gives them by switch name). Set by ``fit``, :meth:`set_probs` or
        :meth:`from_treebank`; before that, methods that need them raise
        :class:`~hiddenstate.errors.NotFittedError`.
    posterior_ : (``learn="vb"``) dict switch name -> Dirichlet concentrations.
    monitor_ : objective per iteration and ``converged``.
    n_features_ : number of terminals (words) of the grammar.
    """

    # the PCFG's: the hyper-parameters, the grammar and its checks, sentence encoding,
    # random restarts, treebank preparation, forward-sample redraws and persistence (theta_)
    __init__ = PCFG.__init__
    grammar = PCFG.grammar
    _check_hyper = PCFG._check_hyper
    _prior = PCFG._prior
    _encode = PCFG._encode
    _start_point = PCFG._start_point
    _best_restart = PCFG._best_restart
    prepare_trees = staticmethod(PCFG.prepare_trees)
    _draw_sentences = staticmethod(PCFG._draw_sentences)
    score = PCFG.score
    learned_arrays = PCFG.learned_arrays
    learned_scalars = PCFG.learned_scalars
    set_learned = PCFG.set_learned
    _check_learned = PCFG._check_learned
    save = PCFG.save

    # -- construction from a treebank -----------------------------------------------------------
    @classmethod
    def from_treebank(cls, trees, terminals: str = "words", markov: int | None = None,
                      min_count: int = 1, unknown_word: str = "<unk>", **params) -> PLCG:
        """The grammar of bracketed treebank trees (prepared as by
        :meth:`hiddenstate.PCFG.from_treebank`), with ``theta_`` the relative frequencies of
        the left-corner operations of their derivations (the supervised estimate); a switch
        no tree uses is uniform."""
        cnf, unk = PCFG.treebank_trees(trees, terminals, markov, min_count, unknown_word)
        g, _ = Grammar.from_trees(cnf)
        model = cls(rules=g.rule_list(), start=list(g.start), unknown_word=unk, **params)
        model.theta_ = model.counts_to_theta(model.tree_counts(cnf))
        return model

    def tree_counts(self, trees) -> np.ndarray:
        """How often each switch outcome (flat layout) is used by the left-corner
        derivations of CNF trees of the grammar."""
        lc = self.left_corner()
        counts = np.zeros(lc.n_params)
        for t in trees:
            np.add.at(counts, lc.derivation(t), 1.0)
        return counts

    def counts_to_theta(self, counts) -> np.ndarray:
        """Relative frequencies of flat counts within each switch (uniform where a switch has
        no count)."""
        lc = self.left_corner()
        counts = np.asarray(counts, dtype=np.float64)
        theta = np.empty(lc.n_params)
        for _, lo, m in lc.spans():
            c = counts[lo:lo + m]
            theta[lo:lo + m] = c / c.sum() if c.sum() > 0 else 1.0 / m
        return theta

    # -- configuration --------------------------------------------------------------------------
    def left_corner(self) -> LeftCorner:
        """The switches of the grammar's PLCG (rebuilt when ``rules`` or ``start`` change)."""
        g = self.grammar()
        cached = self.__dict__.get("_lc_cache")
        if cached is None or cached[0] is not g:
            self._lc_cache = cached = (g, LeftCorner(g))
        return cached[1]

    def to_program(self, prior=1.0):
        """The model as a program of :mod:`hiddenstate.programs` (its probabilities declared;
        uniform if none are set), for :class:`~hiddenstate.programs.ProgramModel`."""
        lc = self.left_corner()
        theta = self.__dict__.get("theta_")
        return left_corner_program(lc, None if theta is None else self._theta(), prior)

    def _program(self, lc: LeftCorner, prior: float):
        """The program whose switches (with Dirichlet concentration ``prior``) fit learns
        (cached: declaring thousands of switches takes a while)."""
        cached = self.__dict__.get("_program_cache")
        if cached is None or cached[0] is not lc or cached[1] != prior:
            self._program_cache = cached = (lc, prior, left_corner_program(lc, prior=prior))
        return cached[2]

    # -- parameters -----------------------------------------------------------------------------
    def _theta(self, g: Grammar | None = None) -> np.ndarray:
        """``theta_``, validated against :meth:`left_corner` (``g``: the PCFG's signature,
        unused)."""
        lc = self.left_corner()
        theta = self.__dict__.get("theta_")
        if theta is None:
            raise NotFittedError(
                "PLCG: no probabilities yet; call fit, set them with set_probs, or build the "
                "model with PLCG.from_treebank")
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != (lc.n_params,):
            raise InvalidInputError(
                f"theta_: expected shape ({lc.n_params},) (one entry per switch outcome of "
                f"left_corner()), got {theta.shape}; set probabilities with set_probs")
        sums = np.add.reduceat(theta, lc.starts) if len(theta) else theta
        if not (np.all(np.isfinite(theta)) and np.all(theta >= 0)
                and np.allclose(sums, 1.0, rtol=0, atol=1e-8)):
            for name, lo, m in lc.spans():  # name the first bad switch
                check_stochastic(theta[lo:lo + m], (m,), f"theta_ (switch {name!r})")
        return theta

    @property
    def probs_(self) -> dict:
        """Switch probabilities by switch name (see :mod:`hiddenstate.grammar.left_corner`
        for the names)."""
        lc = self.left_corner()
        theta = self._theta()
        return {name: theta[lo:lo + m].copy() for name, lo, m in lc.spans()}

    def set_probs(self, switch, probs) -> None:
        """Set the probabilities of one switch by hand (validated, used at once; the other
        switches keep theirs, uniform if none were set)."""
        lc = self.left_corner()
        if switch not in lc.offsets:
            raise InvalidInputError(
                f"switch: {switch!r} is not a switch of this PLCG; see left_corner().switches "
                f"(e.g. {lc.switches[min(1, len(lc.switches) - 1)][0]!r})")
        lo, m = lc.offsets[switch], len(lc.outcomes[switch])
        theta = self._theta().copy() if "theta_" in self.__dict__ else lc.uniform()
        theta[lo:lo + m] = check_stochastic(probs, (m,), f"probs of {switch!r}")
        self.theta_ = theta

    # -- the explanation graph ------------------------------------------------------------------
    def _graph(self, lc: LeftCorner, words, offsets) -> ExplanationGraph:
        node_ptr, item_ptr, items, roots = build_graph(words, offsets, *lc.kernel_args())
        return ExplanationGraph(node_ptr, item_ptr, items,
                                np.zeros(len(item_ptr) - 1, dtype=np.int32),
                                _Names(roots, len(node_ptr) - 1), roots, lc.n_params)

    def _prepare(self, sentences, name: str = "sentences"):
        g = self._check_hyper()
        lc = self.left_corner()
        words, offsets, tokens = self._encode(g, sentences, name)
        return lc, self._graph(lc, words, offsets), tokens

    # -- fitting --------------------------------------------------------------------------------
    def fit(self, sentences, callback: Callable[[int, float], None] | None = None):
        """Learn the switch probabilities from sentences (lists of words) with the mode chosen
        by ``learn``; ``callback(iteration, objective)`` after every iteration. The graph of
        the sentences is kept until ``fit`` sees other sentences (refitting with another
        ``random_state`` or ``learn`` does not rebuild it)."""
        g = self._check_hyper()
        lc = self.left_corner()
        words, offsets, _ = self._encode(g, sentences)
        key = (words.tobytes(), offsets.tobytes())
        cached = self.__dict__.get("_fit_graph")
        if cached is None or cached[0] is not lc or cached[1] != key:
            self._fit_graph = cached = (lc, key, self._graph(lc, words, offsets))
        graph = cached[2]
        # a sentence no derivation reaches (whatever the probabilities) is an input error
        _check_possible(np.where(np.diff(graph.node_ptr)[graph.roots] > 0, 0.0, -np.inf),
                        structural=True)
        # switches no sentence uses keep these: theta_ (hand-set or fitted), else uniform
        theta = (self._theta() if self.init == "current" or "theta_" in self.__dict__
                 else lc.uniform())
        prior = self._prior()
        program = self._program(lc, prior)
        problem = ProgramProblem(graph, program.switches, theta, self.learn == "em")
        best = self._best_restart(problem, theta, LEARNED, callback)
        self.theta_ = problem.flat(best.params)
        self.posterior_ = problem.switch_posteriors(best.posterior, program.switches)
        self.monitor_ = best.monitor
        self.n_features_ = len(lc.grammar.words)
        return self

    # -- inference ------------------------------------------------------------------------------
    def _logtheta(self) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.log(self._theta())

    def score_samples(self, sentences) -> np.ndarray:
        """log P(sentence) of every sentence, the sum over its left-corner derivations
        (``-inf`` where none has non-zero probability)."""
        lc, graph, _ = self._prepare(sentences)
        ins, _ = graph.inside(self._logtheta())
        return ins[graph.roots]

    def expected_counts(self, sentences) -> dict:
        """Expected number of uses of every switch outcome given the sentences:
        ``{(switch, outcome): count}``."""
        lc, graph, _ = self._prepare(sentences)
        ins, _, counts = graph.expected(self._logtheta())
        _check_possible(ins[graph.roots])
        return {(lc.param_switch[p], lc.param_outcome[p]): float(counts[p])
                for p in range(lc.n_params)}

    @staticmethod
    def _params(graph: ExplanationGraph, steps) -> list[int]:
        """Flat parameter indices of a derivation's (node, alternative) steps, in order."""
        out: list[int] = []
        for _, a in steps:
            out.extend(~v for v in graph.items[graph.item_ptr[a]:graph.item_ptr[a + 1]].tolist()
                       if v < 0)
        return out

    def parse(self, sentences, cnf: bool = False, return_logprob: bool = False,
              errors: str = "raise"):
        """The most probable parse of every sentence (the Viterbi left-corner derivation,
        as a tree): a list of :class:`~hiddenstate.grammar.Tree`, binarisation and collapsed
        unary chains undone unless ``cnf``. ``return_logprob``: also their log-probabilities.
        A sentence without a parse of non-zero probability raises
        :class:`~hiddenstate.errors.ZeroProbabilityError` (``errors="raise"``) or gets
        ``None`` and ``-inf`` (``errors="none"``)."""
        if errors not in ("raise", "none"):
            raise InvalidInputError(f"errors: expected 'raise' or 'none', got {errors!r}")
        lc, graph, tokens = self._prepare(sentences)
        vit, best = graph.viterbi(self._logtheta())
        score = vit[graph.roots]
        if errors == "raise":
            _check_possible(score)
        trees = []
        for s, root in enumerate(graph.roots):
            if score[s] == -np.inf:
                trees.append(None)
                continue
            t = self._tree(lc, self._params(graph, graph.walk(int(root), 0, best[:, None],
                                                              None)), tokens[s], cnf)
            trees.append(t)
        return (trees, score) if return_logprob else trees

    @staticmethod
    def _tree(lc: LeftCorner, params, words, cnf: bool) -> Tree:
        t = lc.tree(params)
        _put_words(t, iter(words))
        return t if cnf else from_cnf(t)

    def parse_k_best(self, sentence, k: int = 5, cnf: bool = False) -> list[tuple[float, Tree]]:
        """The ``k`` most probable parses of one sentence (fewer if it has fewer), best
        first, as ``(log-probability, tree)``."""
        k = check_positive_int(k, "k")
        lc, graph, tokens = self._prepare([sentence], "sentence")
        score, alt, rank = graph.kbest(self._logtheta(), k)
        root = int(graph.roots[0])
        _check_possible(score[graph.roots, 0])
        return [(float(score[root, r]),
                 self._tree(lc, self._params(graph, graph.walk(root, r, alt, rank)), tokens[0],
                            cnf))
                for r in range(k) if score[root, r] > -np.inf]

    def sample_parses(self, sentence, n_samples: int = 1, random_state=None,
                      cnf: bool = False) -> list[Tree]:
        """Parses of one sentence drawn from their posterior given it (``random_state=None``:
        the estimator's ``random_state``)."""
        n_samples = check_positive_int(n_samples, "n_samples")
        lc, graph, tokens = self._prepare([sentence], "sentence")
        ins, cond = graph.inside(self._logtheta())
        _check_possible(ins[graph.roots])
        rng = make_rng(self.random_state if random_state is None else random_state)
        draws = graph.sample(cond, np.full(n_samples, graph.roots[0]), rng)
        return [self._tree(lc, self._params(graph, steps), tokens[0], cnf) for steps in draws]

    def sample(self, n_samples: int = 1, random_state=None, max_words: int = 1000,
               cnf: bool = False) -> list[tuple[list[str], Tree]]:
        """Sentences generated by the left-corner process (shift, project, attach), with
        their parse trees (``random_state=None``: the estimator's ``random_state``). A
        derivation longer than ``max_words`` words is drawn again (a grammar whose derivations
        do not end with probability one raises after 100 tries). A call whose trees could not
        fit in memory even at one word each raises
        :class:`~hiddenstate.errors.InsufficientMemoryError` naming ``n_samples`` before
        drawing."""
        n_samples = check_positive_int(n_samples, "n_samples")
        max_words = check_positive_int(max_words, "max_words")
        check_memory({"n_samples": n_samples * SAMPLE_NODE_BYTES * 3.0},
                     f"sample(n_samples={n_samples}) of trees of at least one word")
        self._check_hyper()
        lc = self.left_corner()
        theta = self._theta()
        rng = make_rng(self.random_state if random_state is None else random_state)
        cdf = {name: np.cumsum(theta[lo:lo + m]) for name, lo, m in lc.spans()}

        class _TooLong(Exception):
            pass

        def derive():
            n_words = 0

            def choose(name):
                nonlocal n_words
                if name[0] == "first":
                    n_words += 1
                    if n_words > max_words:
                        raise _TooLong
                c = cdf[name]
                return min(int(np.searchsorted(c, rng.random() * c[-1], side="right")),
                           len(c) - 1)

            try:
                return lc.build(choose)
            except _TooLong:
                return None

        return self._draw_sentences(derive, n_samples, max_words, cnf)


def _put_words(tree: Tree, words) -> None:
    """Replace the leaves of ``tree`` (grammar terminals, e.g. ``unknown_word``) by the
    sentence's own words, left to right."""
    stack = [tree]
    while stack:
        node = stack.pop()
        for i, c in enumerate(node.children):
            if isinstance(c, str):
                node.children[i] = next(words)
        stack.extend(reversed([c for c in node.children if isinstance(c, Tree)]))

