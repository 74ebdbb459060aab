r"""``BlockedHMMLM``: an HMM language model with tens of thousands of states.

The model of Chiu & Rush (2020): an HMM over word tokens whose emissions are constrained
(each word only from its states, :mod:`.constraints`), parameterised by logit tables or
neural networks (:mod:`.params`), trained on the exact log evidence computed by the
blocked forward algorithm (:mod:`.forward`), whose gradient is the posterior marginals.

Training (``learn``):

- ``"gradient"``: AdamW on ``-log p(x) / tokens`` per batch, gradient norm clipped,
  learning rate times ``plateau_factor`` when the validation perplexity has not improved
  for ``plateau_patience`` evaluations; stops when the rate falls below ``min_lr``.
  With ``state_dropout=k'`` each batch keeps ``k'`` random states per cluster.
- ``"em"``: batch EM; expected start, transition and emission counts (the gradients of
  :func:`~.forward.expected_counts`) summed over an epoch, then the M-step. Scalar: each
  distribution is its counts plus ``em_prior`` (a Dirichlet prior of concentration ``1 +
  em_prior``, MAP) normalised. Neural: a generalised M-step, ``em_m_steps`` AdamW steps on
  the expected complete-data log-likelihood of the counts (Berg-Kirkpatrick et al. 2010),
  so the neural parameterisation also learns from exact whole-sentence counts. With
  ``state_dropout=k'`` the counts come from dropped models: on CPU each iteration shuffles
  the sentences and cuts them into ``dropout_masks`` groups, one mask each
  (:func:`~.exact.dropout_counts`); elsewhere one mask per batch, as in gradient training.
  A regulariser (the M-step ignores the masks' renormalisation), judged by held-out
  perplexity: on PTB at K = 4,128 with k' = 24 of 32 it reached validation perplexity
  171.6 after 51 iterations, where EM without dropout overfits after 8 at 196.4
  (``docs/lm.md``).
- ``"stepwise_em"`` (scalar only): stepwise EM (Liang & Klein 2009; Cappé 2011): after each
  batch the running statistics move towards the batch's counts, scaled to the corpus size,
  with step ``(n + 2) ** -stepwise_decay``, and the M-step runs.

Streams (BPTT style, as the reference): the training text is cut into ``batch_size``
streams at sentence boundaries, read ``bptt`` tokens at a time; the filtered state
distribution is carried from one batch to the next (no gradient through it) and a sentence
restarts from the start distribution after every ``<eos>``. With stepwise EM, and batch EM
on a GPU, the backward pass stops at the batch boundary (truncated), so an epoch's counts
are approximate unless a stream fits in one batch.

Batch EM on ``device="cpu"`` runs the exact E-step of :mod:`.exact` instead (numba, whole
sentences, parallel over sentences; ``batch_size`` and ``bptt`` are not used): one EM
iteration per epoch, a tqdm bar over iterations with tokens/s, the validation perplexity
after every iteration in ``history_``, and early stopping: after ``em_patience + 1``
iterations in a row without a new best validation perplexity (the default 0: at the first
rise) training stops, those iterations are marked ``undone`` and the best parameters are
restored (a copy is kept, and checkpointed; if ``n_epochs`` ends first, the last
iteration's parameters stay). Evaluation (:meth:`score`, :meth:`perplexity`) uses all states
and is exact: on CPU through :func:`~.exact.exact_log_likelihood` (whole sentences),
elsewhere by the batched torch recursion (every stream starts a sentence and each sentence
restarts at ``<eos>``); the two agree to rounding.

Checkpoints (:meth:`save_checkpoint`, :func:`load_checkpoint`) hold the parameters, the
optimiser and scheduler state, the random generator, the carried distribution and the
position in the data, as JSON + ``.npz`` (:func:`hiddenstate._bundle.write_bundle`; no pickle):
resuming gives bit-identical parameters to an uninterrupted run.
"""

from __future__ import annotations

import math
import sys
import time
import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from .._bundle import from_json, read_bundle, to_json, write_bundle
from ..errors import InvalidInputError, ModelFileError, NotFittedError, NumericalError
from ..learn import check_possible
from ..textio import Vocabulary
from .constraints import ConstraintSet, DroppedStates
from .data import EOS, sentence_streams
from .exact import (
    SentenceLayout,
    buffer,
    check_memory,
    dropout_counts,
    exact_counts,
    exact_log_likelihood,
)
from .forward import blocked_log_likelihood, expected_counts
from .params import NeuralParams, ScalarParams, state_log_normaliser

__all__ = ["BlockedHMMLM", "LM_FORMAT", "load_checkpoint"]

#: ``format`` of a saved model / checkpoint directory
LM_FORMAT = "hiddenstate-lm"
_LEARN = ("gradient", "em", "stepwise_em")
_DTYPES = {"float32": torch.float32, "float64": torch.float64}


@contextmanager
def _deterministic(on: bool):
    """Torch's deterministic algorithms while training on CPU: without them two runs of
    the same seed differed in float32 rounding (a multi-threaded accumulation in the
    neural parameterisation's backward), which AdamW amplified (the neural EM example of
    ``docs/lm.md``: validation perplexity 177.6 to 178.2). Not on a GPU, where they need
    ``CUBLAS_WORKSPACE_CONFIG``."""
    if not on:
        yield
        return
    prev, warn = (torch.are_deterministic_algorithms_enabled(),
                  torch.is_deterministic_algorithms_warn_only_enabled())
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(prev, warn_only=warn)


def expected_log_likelihood(net, counts, d: DroppedStates) -> torch.Tensor:
    """``sum(counts * log-probabilities)`` over start, transitions and emissions of the
    parameterisation ``net`` with the states ``d`` kept: the expected complete-data
    log-likelihood of expected ``counts = (start, trans, emit)`` (the neural M-step's
    objective)."""
    return sum((c * lp).sum() for c, lp in zip(counts, net(d), strict=True))


def _progress(total: int, disable: bool) -> tqdm:
    """A tqdm bar over training tokens (tokens/s and running perplexity in its postfix)."""
    return tqdm(total=total, disable=disable, unit="tok", unit_scale=True, file=sys.stderr)


class BlockedHMMLM:
    """HMM language model with blocked (sparse) emissions; see the module docstring.

    Parameters
    ----------
    constraint : "brown", "random" or "dense"
        Brown: ``word_cluster`` passed to :meth:`fit` gives each cluster
        ``states_per_cluster`` states (K = clusters x states_per_cluster). Random: each
        word gets ``states_per_cluster`` random states of ``n_states``. Dense: every state
        emits every word (K = ``n_states``).
    states_per_cluster : int
        k, the states of each word.
    n_states : int or None
        K for random and dense constraints.
    parameterization : "scalar" or "neural"
    hidden_size, tie_embeddings : neural parameterisation (embedding width, one table for
        the two state embeddings).
    state_dropout : int or None
        States kept per cluster in each training batch (None: no dropout); gradient or
        batch EM.
    dropout_masks : int
        Batch EM on CPU with ``state_dropout``: masks (groups of shuffled sentences) per
        iteration. On PTB at K = 4,128 (exploratory runs), 8 masks per iteration reached
        validation perplexity 203.6 after 25 iterations, 32 masks 192.8; 128 tracked 32
        within 0.2 for the 8 iterations it ran, at three times the cost.
    learn : "gradient", "em" or "stepwise_em"
    lr : AdamW learning rate; None: 0.05 for the scalar parameterisation, 0.01 (the
        reference's) for the neural one. Chosen on PTB (K = 1032, 150 batches of 64 x 32):
        scalar validation perplexity 320 with 0.05 against 1355 with 0.01.
    clip, weight_decay, plateau_factor, plateau_patience, min_lr : gradient training.
    em_prior, stepwise_decay : EM (Dirichlet concentration ``1 + em_prior``; step decay).
    em_patience : batch EM on CPU stops after this many iterations without a new best
        validation perplexity (0: at the first rise) and restores the best parameters.
    em_m_steps : batch EM with the neural parameterisation: AdamW steps (``lr``,
        ``weight_decay``, ``clip``) per M-step.
    batch_size, bptt : streams and tokens per stream per batch.
    n_epochs, eval_every : epochs; validation every ``eval_every`` batches (None: per epoch).
    init_scale : standard deviation of the initial scalar logits.
    dtype : "float32" or "float64". device : "cpu", "cuda", ...
    random_state : int seed of the initialisation, the dropout and nothing else.
    progress : show a tqdm bar (tokens/s and running perplexity).
    """

    def __init__(self, constraint: str = "brown", states_per_cluster: int = 32,
                 n_states: int | None = None, parameterization: str = "scalar",
                 hidden_size: int = 256, tie_embeddings: bool = False,
                 state_dropout: int | None = None, dropout_masks: int = 32,
                 learn: str = "gradient",
                 lr: float | None = None,
                 clip: float = 5.0, weight_decay: float = 0.0, plateau_factor: float = 0.25,
                 plateau_patience: int = 4, min_lr: float = 1e-4, em_prior: float = 1e-2,
                 stepwise_decay: float = 0.7, em_patience: int = 0, em_m_steps: int = 10,
                 batch_size: int = 16,
                 bptt: int = 32,
                 n_epochs: int = 1, eval_every: int | None = None, init_scale: float = 1.0,
                 dtype: str = "float32", device: str = "cpu", random_state: int = 0,
                 progress: bool = True):
        self.constraint = constraint
        self.states_per_cluster = states_per_cluster
        self.n_states = n_states
        self.parameterization = parameterization
        self.hidden_size = hidden_size
        self.tie_embeddings = tie_embeddings
        self.state_dropout = state_dropout
        self.dropout_masks = dropout_masks
        self.learn = learn
        self.lr = lr
        self.clip = clip
        self.weight_decay = weight_decay
        self.plateau_factor = plateau_factor
        self.plateau_patience = plateau_patience
        self.min_lr = min_lr
        self.em_prior = em_prior
        self.stepwise_decay = stepwise_decay
        self.em_patience = em_patience
        self.em_m_steps = em_m_steps
        self.batch_size = batch_size
        self.bptt = bptt
        self.n_epochs = n_epochs
        self.eval_every = eval_every
        self.init_scale = init_scale
        self.dtype = dtype
        self.device = device
        self.random_state = random_state
        self.progress = progress

    # ------------------------------------------------------------------ hyper-parameters
    def get_params(self, deep: bool = True) -> dict:
        import inspect
        names = [p for p in inspect.signature(type(self).__init__).parameters if p != "self"]
        return {n: getattr(self, n) for n in names}

    def _check_hyper(self) -> None:
        def pos_int(name, lo=1):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
                raise InvalidInputError(f"{name}: expected an integer >= {lo}, got {v!r}")

        def pos_float(name, allow_zero=False):
            v = getattr(self, name)
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) \
                and (v >= 0 if allow_zero else v > 0)
            if not ok:
                raise InvalidInputError(
                    f"{name}: expected a finite number {'>=' if allow_zero else '>'} 0, "
                    f"got {v!r}")

        choices = {"constraint": ("brown", "random", "dense"),
                   "parameterization": ("scalar", "neural"), "learn": _LEARN,
                   "dtype": tuple(_DTYPES)}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise InvalidInputError(
                    f"{name}: expected one of {', '.join(allowed)}, got {getattr(self, name)!r}")
        for name in ("states_per_cluster", "hidden_size", "batch_size", "bptt", "n_epochs",
                     "plateau_patience", "dropout_masks"):
            pos_int(name)
        pos_int("em_patience", lo=0)
        pos_int("em_m_steps")
        for name in ("clip", "min_lr", "init_scale"):
            pos_float(name)
        if self.lr is not None:
            pos_float("lr")
        for name in ("weight_decay", "em_prior"):
            pos_float(name, allow_zero=True)
        if not 0 < self.plateau_factor < 1:
            raise InvalidInputError(
                f"plateau_factor: expected a number in (0, 1), got {self.plateau_factor!r}")
        if not 0.5 < self.stepwise_decay <= 1:
            raise InvalidInputError(
                f"stepwise_decay: expected a number in (0.5, 1], got {self.stepwise_decay!r}")
        if self.constraint in ("random", "dense"):
            pos_int("n_states")
        if self.state_dropout is not None:
            pos_int("state_dropout")
            if self.state_dropout > self.states_per_cluster:
                raise InvalidInputError(
                    f"state_dropout: {self.state_dropout} kept states is more than "
                    f"states_per_cluster ({self.states_per_cluster}); pass at most that")
            if self.constraint == "random":
                raise InvalidInputError(
                    "state_dropout: needs disjoint clusters (constraint='brown' or 'dense'); "
                    "pass state_dropout=None with constraint='random'")
        if self.learn == "stepwise_em" and self.parameterization != "scalar":
            raise InvalidInputError(
                "learn: 'stepwise_em' needs parameterization='scalar' (its M-step after "
                "every batch sets logit tables); use learn='em' or 'gradient' for the neural "
                "parameterisation")
        if self.learn == "stepwise_em" and self.state_dropout is not None:
            raise InvalidInputError(
                "state_dropout: not used by learn='stepwise_em'; pass state_dropout=None, or "
                "use learn='em' or 'gradient' with it")
        if self.eval_every is not None:
            pos_int("eval_every")
        if self.eval_every is not None and self.learn == "em":
            raise InvalidInputError("eval_every: batch EM evaluates once per epoch; pass None")

    # ------------------------------------------------------------------ set-up
    @property
    def _lr(self) -> float:
        if self.lr is not None:
            return float(self.lr)
        return 0.05 if self.parameterization == "scalar" else 0.01

    @property
    def _torch_dtype(self) -> torch.dtype:
        return _DTYPES[self.dtype]

    def _constraints(self, n_words: int, word_cluster) -> ConstraintSet:
        if self.constraint == "brown":
            if word_cluster is None:
                raise InvalidInputError(
                    "word_cluster: constraint='brown' needs the cluster of every word id; "
                    "pass read_brown_paths(...).word_cluster(vocabulary) or brown_clusters(...)")
            wc = np.asarray(word_cluster)
            if wc.shape != (n_words,):
                raise InvalidInputError(
                    f"word_cluster: expected one cluster id per word ({n_words}), got shape "
                    f"{wc.shape}")
            return ConstraintSet.from_clusters(wc, self.states_per_cluster)
        if self.constraint == "dense":
            return ConstraintSet.dense(n_words, self.n_states)
        return ConstraintSet.random(n_words, self.n_states, self.states_per_cluster,
                                    seed=self.random_state)

    def initialize(self, vocabulary: Vocabulary, word_cluster=None) -> BlockedHMMLM:
        """Build the constraint set and draw the initial parameters (``fit`` calls it)."""
        self._check_hyper()
        if not isinstance(vocabulary, Vocabulary) or EOS not in vocabulary:
            raise InvalidInputError(
                f"vocabulary: expected a textio.Vocabulary holding {EOS!r}; build it with "
                "hiddenstate.lm.read_lm_file")
        self.vocabulary_ = vocabulary
        self.eos_id_ = vocabulary.id_of(EOS)
        self.constraints_ = self._constraints(len(vocabulary), word_cluster)
        gen = torch.Generator().manual_seed(int(self.random_state))
        K = self.constraints_.n_states
        if self.parameterization == "scalar" and self._on_cpu:  # the table and its softmax
            check_memory(2 * K * K * self._torch_dtype.itemsize,
                         f"the K x K transition table at K = {K} ({self.dtype})")
        if self.parameterization == "scalar":
            net = ScalarParams(self.constraints_, float(self.init_scale), gen, self._torch_dtype)
        else:
            net = NeuralParams(self.constraints_, int(self.hidden_size),
                               bool(self.tie_embeddings), gen, self._torch_dtype)
        self.net_ = net.to(self.device)
        self.generator_ = torch.Generator().manual_seed(int(self.random_state) + 1)
        self._state = None
        self.history_ = []
        return self

    def _check_fitted(self) -> None:
        if not hasattr(self, "net_"):
            raise NotFittedError("BlockedHMMLM: call fit (or initialize) first")

    @property
    def n_states_(self) -> int:
        self._check_fitted()
        return self.constraints_.n_states

    def _check_ids(self, X, name: str) -> np.ndarray:
        ids = np.asarray(X)
        if ids.ndim != 1 or ids.size == 0 or not np.issubdtype(ids.dtype, np.integer):
            raise InvalidInputError(f"{name}: expected a non-empty 1-D array of token ids")
        V = len(self.vocabulary_)
        if ids.min() < 0 or ids.max() >= V:
            raise InvalidInputError(
                f"{name}: token ids must lie in 0 .. {V - 1}; encode the text with the "
                "model's vocabulary")
        return ids.astype(np.int64)

    # ------------------------------------------------------------------ one batch
    def _window(self, tokens, valid, t0, d: DroppedStates, carry):
        """Tensors of the batch starting at ``t0``: tokens, states, prev states/alpha,
        reset, valid."""
        dev = self.device
        T = min(self.bptt, tokens.shape[1] - t0)
        x = torch.as_tensor(tokens[:, t0:t0 + T], device=dev)
        v = torch.as_tensor(valid[:, t0:t0 + T], device=dev)
        B = x.shape[0]
        prev_tok = torch.as_tensor(tokens[:, t0 - 1] if t0 > 0 else tokens[:, 0], device=dev)
        reset = torch.zeros(B, T, dtype=torch.bool, device=dev)
        reset[:, 1:] = x[:, :-1] == self.eos_id_
        if t0 == 0 or carry is None:
            reset[:, 0] = True
            prev_alpha = torch.full((B, d.cols.shape[1]), 1.0 / d.cols.shape[1],
                                    dtype=self._torch_dtype, device=dev)
        else:
            reset[:, 0] = prev_tok == self.eos_id_
            prev_alpha = carry.gather(1, d.cols[prev_tok])
            z = prev_alpha.sum(dim=1, keepdim=True)
            prev_alpha = torch.where(z > 0, prev_alpha / z.clamp_min(1e-300),
                                     torch.full_like(prev_alpha, 1.0 / prev_alpha.shape[1]))
        return x, v, d.word_states[x], d.word_states[prev_tok], prev_alpha, reset

    def _carry_out(self, x, v, d: DroppedStates, alpha):
        """The carried distribution over all ``k`` states of each stream's last token."""
        last = x[:, -1]
        out = torch.zeros(x.shape[0], self.constraints_.k, dtype=alpha.dtype,
                          device=alpha.device)
        return out.scatter(1, d.cols[last], alpha)

    # ------------------------------------------------------------------ evaluation
    def score(self, X) -> float:
        """Exact total ``log p(X)`` (nats) of a token-id stream with all states (on CPU by
        the numba kernel over whole sentences, elsewhere by the batched torch recursion)."""
        self._check_fitted()
        ids = self._check_ids(X, "X")
        if self._on_cpu:
            layout = SentenceLayout.from_ids(ids, self.eos_id_)
            ws = self.constraints_.word_states
            work = getattr(self, "_work", None)  # the buffers of a running exact EM
            return float(exact_log_likelihood(layout, ws, *self._probabilities(work),
                                              work=work).sum())
        return self._score_torch(ids)

    @property
    def _on_cpu(self) -> bool:
        return torch.device(self.device).type == "cpu"

    def _probabilities(self, work: dict | None = None
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """float64 ``(start (K,), trans (K, K), emit (V, k))`` probabilities, all states
        (``trans`` in ``work["probs"]`` when given: see :func:`.exact.buffer`)."""
        with torch.no_grad():
            ls, lt, le = self.net_(self.constraints_.all_states(self.device))
            K = lt.shape[0]
            trans = torch.from_numpy(buffer(work, "probs", (K, K)))
            trans.copy_(lt).exp_()
            del lt
            start, emit = (t.detach().to("cpu", torch.float64).exp_().numpy() for t in (ls, le))
        return start, trans.numpy(), emit

    def _score_torch(self, ids: np.ndarray) -> float:
        """:meth:`score` by the batched torch recursion over streams (any device)."""
        tokens, valid = sentence_streams(ids, self.eos_id_, max(1, self.batch_size * 4))
        d = self.constraints_.all_states(self.device)
        total = 0.0
        with torch.no_grad():
            ls, lt, le = self.net_(d)
            carry = None
            for t0 in range(0, tokens.shape[1], self.bptt):
                x, v, st, ps, pa, rs = self._window(tokens, valid, t0, d, carry)
                ll, alpha = blocked_log_likelihood(ls, lt, le[x], st, ps, pa, rs, v)
                total += float(ll.sum())
                carry = self._carry_out(x, v, d, alpha)
        return total

    def perplexity(self, X) -> float:
        """``exp(-log p(X) / N)`` over the ``N`` tokens of ``X`` (``<eos>`` included)."""
        return math.exp(-self.score(X) / len(np.asarray(X)))

    # ------------------------------------------------------------------ training
    def fit(self, X, valid=None, vocabulary: Vocabulary | None = None, word_cluster=None,
            max_steps: int | None = None, resume: bool = False,
            checkpoint: str | Path | None = None, checkpoint_every: int = 500
            ) -> BlockedHMMLM:
        """Train on the token-id stream ``X`` (see :func:`~.data.read_lm_file`).

        ``valid``: ids for the plateau schedule and the history; ``max_steps``: stop after
        this many batches in this call; ``resume``: continue from the current parameters
        and training state (after :meth:`initialize`, :func:`load_checkpoint` or an
        earlier ``fit``; raise ``n_epochs`` to train further) instead of starting afresh;
        ``checkpoint``: a directory written every ``checkpoint_every`` batches and at the end.
        """
        with _deterministic(self._on_cpu):
            return self._fit(X, valid, vocabulary, word_cluster, max_steps, resume,
                             checkpoint, checkpoint_every)

    def _fit(self, X, valid, vocabulary, word_cluster, max_steps, resume, checkpoint,
             checkpoint_every) -> BlockedHMMLM:
        if not resume or not hasattr(self, "net_"):
            if vocabulary is None:
                raise InvalidInputError("vocabulary: pass the vocabulary X was encoded with")
            self.initialize(vocabulary, word_cluster)
        if self._state is None:
            self._state = self._new_state()
        ids = self._check_ids(X, "X")
        valid_ids = None if valid is None else self._check_ids(valid, "valid")
        if self._exact_em:
            return self._fit_exact_em(ids, valid_ids, max_steps, checkpoint)
        tokens, mask = sentence_streams(ids, self.eos_id_, self.batch_size)
        st = self._state
        n_windows = -(-tokens.shape[1] // self.bptt)
        bar = _progress(int(mask.sum()) * self.n_epochs, not self.progress)
        bar.update(int(mask[:, :st["window"] * self.bptt].sum())
                   + st["epoch"] * int(mask.sum()))
        steps = 0
        t_start, tok_seen = time.perf_counter(), 0
        run_ll, run_n = 0.0, 0
        while st["epoch"] < self.n_epochs and not st["stopped"]:
            if self.learn == "em" and st["window"] == 0:
                st["acc"] = self._zero_counts()
            while st["window"] < n_windows:
                if max_steps is not None and steps >= max_steps:
                    bar.close()
                    self._maybe_checkpoint(checkpoint)
                    return self
                t0 = st["window"] * self.bptt
                ll, n = self._step(tokens, mask, t0, len(ids))
                st["window"] += 1
                st["step"] += 1
                steps += 1
                run_ll += ll
                run_n += n
                tok_seen += n
                bar.update(n)
                bar.set_postfix(tok_s=f"{tok_seen / (time.perf_counter() - t_start):.0f}",
                                ppl=f"{math.exp(-run_ll / max(run_n, 1)):.1f}")
                if self.eval_every and st["step"] % self.eval_every == 0:
                    self._evaluate(valid_ids, run_ll, run_n)
                    run_ll, run_n = 0.0, 0
                if checkpoint is not None and st["step"] % checkpoint_every == 0:
                    self.save_checkpoint(checkpoint)
                if st["stopped"]:
                    break
            if st["stopped"]:
                break
            if self.learn == "em":
                self._m_step(st["acc"])
            st["epoch"] += 1
            st["window"] = 0
            st["carry"] = None
            if not self.eval_every:
                self._evaluate(valid_ids, run_ll, run_n)
                run_ll, run_n = 0.0, 0
        bar.close()
        self._maybe_checkpoint(checkpoint)
        return self

    @property
    def _exact_em(self) -> bool:
        """Batch EM on CPU: the exact numba E-step over whole sentences."""
        return self.learn == "em" and self._on_cpu

    def _fit_exact_em(self, ids, valid_ids, max_steps, checkpoint) -> BlockedHMMLM:
        """Batch EM with the exact E-step of :mod:`.exact`: one iteration per epoch (see
        the module docstring); ``max_steps`` counts iterations."""
        layout = SentenceLayout.from_ids(ids, self.eos_id_)
        ws = self.constraints_.word_states
        self._work = work = {}  # K x K buffers reused by every iteration of this call
        try:
            return self._exact_em_loop(ids, valid_ids, max_steps, checkpoint, layout, ws,
                                       work)
        finally:
            self._work = None

    def _exact_em_loop(self, ids, valid_ids, max_steps, checkpoint, layout, ws, work
                       ) -> BlockedHMMLM:
        """The iterations of :meth:`_fit_exact_em` (``work``: the reused buffers)."""
        st = self._state
        bar = tqdm(total=self.n_epochs, initial=st["epoch"], disable=not self.progress,
                   unit="it", file=sys.stderr)
        steps = 0
        while st["epoch"] < self.n_epochs and not st["stopped"]:
            if max_steps is not None and steps >= max_steps:
                break
            t0 = time.perf_counter()
            if self.state_dropout is None:
                ll, start, trans, emit = exact_counts(layout, ws, *self._probabilities(work),
                                                      work=work)
            else:
                order, keeps = self._dropout_draws(layout.n_sentences)
                ll, start, trans, emit = dropout_counts(
                    layout.reordered(order), self.constraints_.word_cluster,
                    self.constraints_.k, *self._probabilities(work), keeps, work=work)
            if not math.isfinite(ll):  # the zero-probability rule names the sentences
                check_possible(exact_log_likelihood(layout, ws, *self._probabilities(work)),
                               "training sentence", "a word that no state allowed to it can "
                               "emit, or a transition of probability zero", "use em_prior > 0",
                               argument="X")
                raise NumericalError(
                    "fit: the training log-likelihood is not finite; use dtype='float64' or "
                    "em_prior > 0")
            if valid_ids is not None and "best_params" not in st:  # the starting point
                st["best_params"] = {k: v.clone() for k, v in self.net_.state_dict().items()}
            self._m_step({"start": torch.from_numpy(start), "trans": torch.from_numpy(trans),
                          "emit": torch.from_numpy(emit)}, inplace=True)
            del start, trans, emit
            seconds = time.perf_counter() - t0
            st["epoch"] += 1
            st["step"] += 1
            steps += 1
            self._evaluate(valid_ids, ll, len(ids))
            rec = self.history_[-1]
            rec.update(seconds=seconds, tokens_per_s=len(ids) / seconds)
            if valid_ids is not None:
                self._early_stop(rec)
            bar.update(1)
            bar.set_postfix(tok_s=f"{len(ids) / seconds:.0f}",
                            train_ppl=f"{rec['train_ppl']:.1f}",
                            valid_ppl=f"{rec.get('valid_ppl', float('nan')):.1f}")
        bar.close()
        self._maybe_checkpoint(checkpoint)
        return self

    def _early_stop(self, rec: dict) -> None:
        """Keep a copy of the best parameters; after ``em_patience`` iterations without a
        new best validation perplexity, restore them, mark the iterations after the best
        ``undone`` and stop."""
        st = self._state
        if rec["valid_ppl"] < st["best"]:
            st["best"], st["bad"] = rec["valid_ppl"], 0
            for k, v in self.net_.state_dict().items():
                st["best_params"][k].copy_(v)
            return
        st["bad"] += 1
        if st["bad"] > self.em_patience:
            self.net_.load_state_dict(st.pop("best_params"))  # the copy is not needed again
            st["stopped"] = True
            for r in self.history_[len(self.history_) - st["bad"]:]:
                r["undone"] = True

    def _dropout_draws(self, n_sentences: int) -> tuple[np.ndarray, np.ndarray]:
        """``(order (S,), keeps (G, C, k'))`` of one batch-EM iteration with state dropout:
        a sentence shuffle and ``dropout_masks`` masks (:meth:`.ConstraintSet.dropout`),
        drawn from ``generator_`` (checkpointed, so a resumed run draws the same)."""
        cs = self.constraints_
        order = torch.randperm(n_sentences, generator=self.generator_).numpy()
        offsets = np.arange(cs.n_clusters)[:, None] * cs.k
        keeps = np.stack([
            cs.dropout(int(self.state_dropout), self.generator_).kept.numpy().reshape(
                cs.n_clusters, -1) - offsets for _ in range(int(self.dropout_masks))])
        return order, keeps

    def _maybe_checkpoint(self, checkpoint) -> None:
        if checkpoint is not None:
            self.save_checkpoint(checkpoint)

    def _new_state(self) -> dict:
        st = {"epoch": 0, "window": 0, "step": 0, "carry": None, "stopped": False,
              "best": math.inf, "bad": 0, "lr": self._lr, "em_n": 0}
        if self.learn == "gradient" or self._neural_em:
            st["opt"] = torch.optim.AdamW(self.net_.parameters(), lr=self._lr,
                                          weight_decay=self.weight_decay)
        if self.learn != "gradient" and not self._exact_em:  # exact: no running counts
            st["acc"] = self._zero_counts()
        return st

    def _zero_counts(self) -> dict:
        cs = self.constraints_
        z = {"start": torch.zeros(cs.n_states, dtype=torch.float64),
             "trans": torch.zeros(cs.n_states, cs.n_states, dtype=torch.float64),
             "emit": torch.zeros(cs.n_words, cs.k, dtype=torch.float64)}
        return {k: v.to(self.device) for k, v in z.items()}

    def _evaluate(self, valid_ids, run_ll, run_n) -> None:
        st = self._state
        rec = {"step": st["step"], "epoch": st["epoch"], "lr": st["lr"],
               "train_ppl": math.exp(-run_ll / run_n) if run_n else None}
        if valid_ids is not None:
            ppl = self.perplexity(valid_ids)
            rec["valid_ppl"] = ppl
            if self.learn == "gradient":
                if ppl < st["best"]:
                    st["best"], st["bad"] = ppl, 0
                else:
                    st["bad"] += 1
                    if st["bad"] > self.plateau_patience:
                        st["lr"] *= self.plateau_factor
                        st["bad"] = 0
                        for g in st["opt"].param_groups:
                            g["lr"] = st["lr"]
                        if st["lr"] < self.min_lr:
                            st["stopped"] = True
        self.history_.append(rec)

    def _step(self, tokens, mask, t0, n_total) -> tuple[float, int]:
        st = self._state
        cs = self.constraints_
        if self.state_dropout is not None:
            d = cs.dropout(int(self.state_dropout), self.generator_, self.device)
        else:
            d = cs.all_states(self.device)
        x, v, states, ps, pa, rs = self._window(tokens, mask, t0, d, st["carry"])
        n = int(v.sum())
        if self.learn == "gradient":
            opt = st["opt"]
            opt.zero_grad(set_to_none=True)
            ls, lt, le = self.net_(d)
            ll, alpha = blocked_log_likelihood(ls, lt, le[x], states, ps, pa, rs, v)
            total = ll.sum()
            if not torch.isfinite(total):
                raise NumericalError(
                    "fit: the log-likelihood became non-finite; lower lr or use dtype='float64'")
            (-total / max(n, 1)).backward()
            torch.nn.utils.clip_grad_norm_(self.net_.parameters(), self.clip)
            opt.step()
        else:
            with torch.no_grad():
                ls, lt, le = self.net_(d)
            total, alpha, gs, gt, ge = expected_counts(ls, lt, le[x], states, ps, pa, rs, v)
            total = total.sum()
            ge = ge.to(torch.float64)
            if self.state_dropout is None:
                emit = torch.zeros(cs.n_words, cs.k, dtype=torch.float64, device=self.device)
                emit.index_put_((x[v],), ge[v], accumulate=True)
                batch = {"start": gs.to(torch.float64), "trans": gt.to(torch.float64),
                         "emit": emit}
            else:  # the kept states' counts at their entries
                batch = self._zero_counts()
                batch["start"][d.kept] = gs.to(torch.float64)
                batch["trans"][d.kept[:, None], d.kept[None, :]] = gt.to(torch.float64)
                batch["emit"].index_put_((x[v][:, None], d.cols[x[v]]), ge[v],
                                         accumulate=True)
            if self.learn == "em":
                for key in batch:
                    st["acc"][key] += batch[key]
            else:
                eta = (st["em_n"] + 2) ** -float(self.stepwise_decay)
                scale = n_total / max(n, 1)
                for key in batch:
                    st["acc"][key].mul_(1 - eta).add_(batch[key], alpha=eta * scale)
                st["em_n"] += 1
                self._m_step(st["acc"])
        st["carry"] = self._carry_out(x, v, d, alpha.detach())
        return float(total.detach()), n

    @property
    def _neural_em(self) -> bool:
        return self.learn == "em" and self.parameterization == "neural"

    def _m_step(self, acc: dict, inplace: bool = False) -> None:
        """MAP M-step: counts + ``em_prior``, normalised (see the module docstring).
        ``inplace``: overwrite ``acc["trans"]`` (no ``K x K`` temporary). Neural: see
        :meth:`_neural_m_step`."""
        if self._neural_em:
            self._neural_m_step(acc)
            return
        net, cs, a = self.net_, self.constraints_, float(self.em_prior)
        with torch.no_grad():
            start = acc["start"] + a
            trans = acc["trans"] if inplace else acc["trans"].clone()
            trans.add_(a)
            trans.div_(trans.sum(dim=1, keepdim=True)).log_()
            emit = acc["emit"] + a
            ws = torch.as_tensor(cs.word_states, device=self.device)
            logz = state_log_normaliser(torch.log(emit), ws, cs.n_states)
            dt = self._torch_dtype
            net.start_logits.copy_(torch.log(start / start.sum()).to(dt))
            net.trans_logits.copy_(trans)
            net.emit_logits.copy_((torch.log(emit) - logz[ws]).to(dt))

    def _neural_m_step(self, acc: dict) -> None:
        r"""Generalised M-step of the neural parameterisation (Berg-Kirkpatrick et al.
        2010): ``em_m_steps`` AdamW steps (``lr``, ``weight_decay``, norm clipped at
        ``clip``; the optimiser state carries over between iterations) on the expected
        complete-data log-likelihood per token,
        :math:`Q(\theta) = \frac{1}{N}\big(\sum_z n_z \log p_\theta(z_1 = z)
        + \sum_{ij} n_{ij} \log p_\theta(j \mid i) + \sum_{zw} n_{zw}
        \log p_\theta(w \mid z)\big)`, whose gradient at the E-step's parameters is
        that of :math:`\log p(X) / N` (Fisher's identity)."""
        net, opt, dt = self.net_, self._state["opt"], self._torch_dtype
        counts = [acc[k].to(self.device, dt) for k in ("start", "trans", "emit")]
        n = float(acc["emit"].sum())
        d = self.constraints_.all_states(self.device)
        for _ in range(int(self.em_m_steps)):
            opt.zero_grad(set_to_none=True)
            (-expected_log_likelihood(net, counts, d) / max(n, 1.0)).backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), self.clip)
            opt.step()

    # ------------------------------------------------------------------ sampling
    def sample(self, n_tokens: int, seed: int = 0) -> list[str]:
        """``n_tokens`` tokens drawn from the model (sentences restart after ``<eos>``)."""
        self._check_fitted()
        cs = self.constraints_
        d = cs.all_states(self.device)
        with torch.no_grad():
            ls, lt, le = (t.double().cpu().numpy() for t in self.net_(d))
        rng = np.random.default_rng(seed)
        ws = cs.word_states.reshape(-1)
        order = np.argsort(ws, kind="stable")
        ptr = np.searchsorted(ws[order], np.arange(cs.n_states + 1))
        words_flat = np.repeat(np.arange(cs.n_words), cs.k)[order]
        lp_flat = le.reshape(-1)[order]
        out, z = [], None
        for _ in range(int(n_tokens)):
            p = np.exp(ls if z is None else lt[z])
            z = int(rng.choice(len(p), p=p / p.sum()))
            q = np.exp(lp_flat[ptr[z]:ptr[z + 1]])
            w = int(words_flat[ptr[z] + rng.choice(len(q), p=q / q.sum())])
            out.append(w)
            if w == self.eos_id_:
                z = None
        return self.vocabulary_.decode(out)

    def state_usage(self, X) -> np.ndarray:
        """Posterior mass of each state summed over ``X`` (all states; exact on CPU, by the
        numba kernel over whole sentences, elsewhere exact per batch)."""
        self._check_fitted()
        ids = self._check_ids(X, "X")
        if self._on_cpu:  # exact, by the numba kernel over whole sentences
            ws = self.constraints_.word_states
            _, _, _, emit = exact_counts(SentenceLayout.from_ids(ids, self.eos_id_), ws,
                                         *self._probabilities())
            return np.bincount(ws.reshape(-1), emit.reshape(-1),
                               minlength=self.constraints_.n_states)
        tokens, valid = sentence_streams(ids, self.eos_id_, max(1, self.batch_size * 4))
        d = self.constraints_.all_states(self.device)
        usage = torch.zeros(self.constraints_.n_states, dtype=torch.float64)
        with torch.no_grad():
            ls, lt, le = self.net_(d)
        carry = None
        for t0 in range(0, tokens.shape[1], self.bptt):
            x, v, stt, ps, pa, rs = self._window(tokens, valid, t0, d, carry)
            _, alpha, _, _, ge = expected_counts(ls, lt, le[x], stt, ps, pa, rs, v)
            usage.index_add_(0, stt[v].reshape(-1).cpu(), ge[v].reshape(-1).double().cpu())
            carry = self._carry_out(x, v, d, alpha)
        return usage.numpy()

    # ------------------------------------------------------------------ saving
    def _arrays(self) -> dict[str, np.ndarray]:
        arrays = {f"param.{k}": v.detach().cpu().double().numpy()
                  for k, v in self.net_.state_dict().items()}
        arrays["word_states"] = self.constraints_.word_states
        if self.constraints_.word_cluster is not None:
            arrays["word_cluster"] = self.constraints_.word_cluster
        return arrays

    def save(self, path) -> None:
        """Write the model (hyper-parameters, vocabulary, parameters) to the directory."""
        self._check_fitted()
        write_bundle(path, LM_FORMAT, self._meta(), self._arrays())

    def _meta(self) -> dict:
        return {"class": "BlockedHMMLM",
                "params": {k: to_json(v) for k, v in self.get_params().items()},
                "vocabulary": self.vocabulary_.to_dict(),
                "history": to_json(self.history_)}

    def save_checkpoint(self, path) -> None:
        """Write the model and its training state (see the module docstring)."""
        self._check_fitted()
        st = self._state
        if st is None:
            raise NotFittedError("save_checkpoint: no training state; call fit first")
        arrays = self._arrays()
        meta = self._meta()
        scalars = {k: st[k] for k in ("epoch", "window", "step", "stopped", "best", "bad",
                                      "lr", "em_n")}
        meta["train_state"] = {k: to_json(v) for k, v in scalars.items()}
        arrays["rng"] = self.generator_.get_state().numpy().astype(np.int64)
        if st["carry"] is not None:
            arrays["carry"] = st["carry"].cpu().double().numpy()
        if "opt" in st:
            osd = st["opt"].state_dict()
            meta["optimizer"] = {"param_groups": to_json(osd["param_groups"])}
            for i, s in osd["state"].items():
                for k, v in s.items():
                    arrays[f"opt.{i}.{k}"] = torch.as_tensor(v).cpu().double().numpy()
        if "acc" in st:
            for k, v in st["acc"].items():
                arrays[f"acc.{k}"] = v.cpu().numpy()
        for k, v in st.get("best_params", {}).items():  # batch EM's early stopping
            arrays[f"best.{k}"] = v.cpu().double().numpy()
        write_bundle(path, LM_FORMAT, meta, arrays)


def _from_meta(path, meta: dict, arrays: dict) -> BlockedHMMLM:
    where = Path(path) / "model.json"
    try:
        if meta.get("class") != "BlockedHMMLM":
            raise ModelFileError(f"{where}: not a BlockedHMMLM")
        params = {k: from_json(v) for k, v in dict(meta["params"]).items()}
        model = BlockedHMMLM(**params)
        vocab = Vocabulary.from_dict(meta["vocabulary"], source=str(where))
        model.initialize(vocab, arrays.get("word_cluster"))
        if not np.array_equal(model.constraints_.word_states, arrays["word_states"]):
            raise ModelFileError(f"{where}: word_states do not match the hyper-parameters")
        sd = model.net_.state_dict()
        new = {}
        for k, v in sd.items():
            a = arrays.get(f"param.{k}")
            if a is None or a.shape != tuple(v.shape) or not np.all(np.isfinite(a)):
                raise ModelFileError(f"{where}: parameter {k} is missing, mis-shaped or not "
                                     "finite")
            new[k] = torch.as_tensor(a, dtype=v.dtype)
        model.net_.load_state_dict(new)
        model.history_ = from_json(meta.get("history", []))
    except ModelFileError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelFileError(f"{where}: malformed ({exc})") from exc
    except InvalidInputError as exc:
        raise ModelFileError(f"{where}: invalid hyper-parameters ({exc})") from exc
    return model


def restore(path) -> BlockedHMMLM:
    """The model written by :meth:`BlockedHMMLM.save` (or a checkpoint, without its training
    state) in ``path``; what :func:`hiddenstate.load` calls for a language-model file."""
    meta, arrays = read_bundle(path, LM_FORMAT, "language model")
    return _from_meta(path, meta, arrays)


def load_model(path) -> BlockedHMMLM:
    """Deprecated alias of :func:`hiddenstate.load` for a saved language model (removed
    after 0.2); :func:`load_checkpoint` (resume training) stays."""
    warnings.warn("hiddenstate.lm.load_model is deprecated; use hiddenstate.load(path)",
                  FutureWarning, stacklevel=2)
    return restore(path)


def load_checkpoint(path) -> BlockedHMMLM:
    """Load a checkpoint written by :meth:`BlockedHMMLM.save_checkpoint`; continue with
    ``fit(X, valid, resume=True)``."""
    meta, arrays = read_bundle(path, LM_FORMAT, "language model checkpoint")
    model = _from_meta(path, meta, arrays)
    where = Path(path) / "model.json"
    if "train_state" not in meta:
        raise ModelFileError(f"{where}: a saved model, not a checkpoint; load it with "
                             "hiddenstate.load")
    try:
        st = model._new_state()
        for k, v in meta["train_state"].items():
            st[k] = from_json(v)
        model.generator_.set_state(torch.as_tensor(arrays["rng"].astype(np.uint8)))
        if "carry" in arrays:
            st["carry"] = torch.as_tensor(arrays["carry"], dtype=model._torch_dtype,
                                          device=model.device)
        if "opt" in st:
            osd = st["opt"].state_dict()
            osd["param_groups"] = from_json(meta["optimizer"]["param_groups"])
            state = {}
            for i, p in enumerate(model.net_.parameters()):
                moments = {k: arrays[f"opt.{i}.{k}"] for k in ("exp_avg", "exp_avg_sq")}
                if any(a.shape != tuple(p.shape) or not np.all(np.isfinite(a))
                       for a in moments.values()):
                    raise ModelFileError(f"{where}: the optimiser moments of parameter {i} "
                                         "are mis-shaped or not finite")
                state[i] = {
                    "step": torch.as_tensor(arrays[f"opt.{i}.step"], dtype=torch.float32),
                    **{k: torch.as_tensor(a, dtype=p.dtype) for k, a in moments.items()}}
            osd["state"] = state
            st["opt"].load_state_dict(osd)
        if "acc" in st:
            st["acc"] = {k: torch.as_tensor(arrays[f"acc.{k}"]) for k in st["acc"]}
        best = {k: torch.as_tensor(arrays[f"best.{k}"], dtype=v.dtype, device=v.device)
                for k, v in model.net_.state_dict().items() if f"best.{k}" in arrays}
        for k, v in best.items():
            ref = model.net_.state_dict()[k]
            if v.shape != ref.shape or not bool(torch.isfinite(v).all()):
                raise ModelFileError(f"{where}: the best parameters' {k} is mis-shaped or "
                                     "not finite")
        if best:
            st["best_params"] = best
    except (KeyError, TypeError, ValueError, RuntimeError) as exc:
        raise ModelFileError(f"{where}: malformed training state ({exc})") from exc
    model._state = st
    return model
