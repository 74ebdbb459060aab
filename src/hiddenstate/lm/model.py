r"""``BlockedHMMLM``: an HMM language model with tens of thousands of states.

The model of Chiu & Rush (2020): an HMM over word tokens whose emissions are constrained
(each word only from its states, :mod:`.constraints`), parameterised by logit tables or
neural networks (:mod:`.params`), trained on the exact log evidence computed by the
blocked forward algorithm, whose gradient is the posterior marginals (:mod:`.scan` for a
partition of the states -- Brown or dense constraints -- with fused Triton kernels on a
GPU (:mod:`.triton_scan`); :mod:`.forward` for any constraint set).

Training (``learn``):

- ``"gradient"``: AdamW on ``-log p(x) / tokens`` per batch, gradient norm clipped,
  learning rate times ``plateau_factor`` when the validation perplexity has not improved
  for ``plateau_patience`` evaluations; stops when the rate falls below ``min_lr``.
  With ``state_dropout=k'`` each batch keeps ``k'`` random states per cluster.
- ``"em"``: batch EM with an exact E-step over whole sentences, one iteration per epoch:
  the expected start, transition and emission counts of the corpus, then the M-step.
  On CPU the E-step is the numba kernels' (:mod:`.exact`), on a GPU the two-pass torch
  recursion of :func:`.scan.stream_counts` (``batch_size`` streams, ``bptt`` tokens a
  window, the backward pass carried across windows, counts accumulated on the device); the
  two compute the same counts. Scalar: each distribution is its counts plus ``prior - 1``
  (the MAP estimate under a Dirichlet prior of concentration ``prior``) normalised.
  Neural: a generalised M-step, ``em_m_steps`` AdamW steps on the expected complete-data
  log-likelihood of the counts (Berg-Kirkpatrick et al. 2010). With ``state_dropout=k'``
  each iteration shuffles the sentences and cuts them into ``dropout_masks`` groups, one
  mask each (:func:`~.exact.dropout_counts`): a regulariser (the M-step ignores the masks'
  renormalisation), judged by held-out perplexity. After every iteration the validation
  perplexity goes to ``history_``; after ``em_patience + 1`` iterations in a row without a
  new best, training stops, those iterations are marked ``undone`` and the best parameters
  are restored.
- ``"stepwise-em"`` (scalar only): stepwise EM (Liang & Klein 2009; Cappé 2011): after each
  batch the running statistics move towards the batch's counts, scaled to the corpus size,
  with step ``(n + 2) ** -stepwise_decay``, and the M-step runs. The batch counts stop at
  the batch boundary (the carried distribution starts the next batch).

Streams (BPTT style, as the reference): the training text is cut into ``batch_size``
streams at sentence boundaries, read ``bptt`` tokens at a time; the filtered state
distribution is carried from one batch to the next (no gradient through it) and a sentence
restarts from the start distribution after every ``<eos>``. Evaluation (:meth:`score`,
:meth:`score_samples`, :meth:`perplexity`) uses all states and is exact: on CPU through
:func:`~.exact.exact_log_likelihood` (whole sentences), elsewhere by the batched torch
recursion; the two agree to rounding.

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
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from .._bundle import from_json, read_bundle, to_json, write_bundle
from .._deprecation import keyword_only_after_first
from .._sklearn_base import BaseEstimator
from .._validation import check_memory
from ..errors import (
    InvalidInputError,
    ModelFileError,
    NotFittedError,
    NumericalError,
)
from ..learn import ConvergenceMonitor, check_possible
from ..textio import Vocabulary
from . import triton_scan
from .constraints import ConstraintSet, DroppedStates
from .data import EOS, sentence_streams, vocabulary_difference
from .exact import (
    SentenceLayout,
    buffer,
    dropout_counts,
    exact_counts,
    exact_log_likelihood,
)
from .forward import blocked_log_likelihood
from .params import NeuralParams, ScalarParams, state_log_normaliser
from .scan import (
    blocks_to_matrix,
    partition_log_likelihood,
    step_log_normalisers,
    stream_counts,
)

__all__ = ["BlockedHMMLM", "LM_FORMAT", "SCAN_BACKEND", "load_checkpoint", "load_model"]

#: ``format`` of a saved model / checkpoint directory
LM_FORMAT = "hiddenstate-lm"
_LEARN = ("gradient", "em", "stepwise-em")
#: deprecated spellings of ``learn`` (one release, with a FutureWarning)
_OLD_LEARN = {"stepwise_em": "stepwise-em"}
_DTYPES = {"float32": torch.float32, "float64": torch.float64}
#: the Dirichlet concentration of ``prior=None`` (a MAP pseudo-count of 0.01, tuned on PTB)
DEFAULT_PRIOR = 1.01
#: streams per batch of ``batch_size=None``, per device type. CPU: the old default. GPU:
#: on an H200 a training step at K = 33,024 took 110-120 ms at 16 to 512 streams (bound by
#: launches, ../shared/gpu), so 16 streams used a few percent of the card; 256 streams
#: trained to PTB validation perplexity 135.6 in 176 s there.
DEVICE_BATCH = {"cpu": 16, "cuda": 256}
#: the recursion of a partition: "auto" (the fused Triton kernels on a CUDA device when
#: triton imports and the kernels pass their self-check, else torch), "torch" or "triton"
SCAN_BACKEND = "auto"
_TRITON_OK: dict = {}


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


def check_device(device) -> torch.device:
    """``torch.device(device)`` if torch can use it here, else an
    :class:`~hiddenstate.errors.InvalidInputError` naming ``device`` and the fix."""
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise InvalidInputError(
            f"device: {device!r} is not a torch device; pass 'cpu' or 'cuda' (or 'cuda:0')"
        ) from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise InvalidInputError(
                f"device: {device!r}, but this torch ({torch.__version__}) sees no CUDA GPU; "
                "pass device='cpu' or install a CUDA build of torch")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise InvalidInputError(
                f"device: {device!r}, but there are {torch.cuda.device_count()} CUDA "
                "devices; pass one of cuda:0 ..")
    elif dev.type != "cpu":
        raise InvalidInputError(f"device: {device!r} is not supported; pass 'cpu' or 'cuda'")
    return dev


@dataclass
class _Window:
    """The tensors of one batch: tokens ``x (B, T)``, ``valid``, ``reset``, the token before
    the window and the filtered distribution over its kept states."""

    x: torch.Tensor
    valid: torch.Tensor
    reset: torch.Tensor
    prev_tok: torch.Tensor
    prev_alpha: torch.Tensor


class BlockedHMMLM(BaseEstimator):
    r"""HMM language model with blocked (sparse) emissions (Chiu & Rush 2020).

    Each word may only be emitted by its ``k`` states (:class:`ConstraintSet`), so the
    forward recursion runs over ``k`` states per token; training, evaluation and checkpoints
    are described in the module docstring (:mod:`hiddenstate.lm.model`) and ``docs/lm.md``.
    A scikit-learn estimator (``get_params``/``set_params``, ``sklearn.base.clone``); the
    constructor stores its arguments, which ``fit`` validates.

    Parameters
    ----------
    constraint : {"brown", "random", "dense"}, default="brown"
        Brown: the ``word_cluster`` passed to :meth:`fit` gives each cluster
        ``states_per_cluster`` states (K = clusters x states_per_cluster). Random: each word
        gets ``states_per_cluster`` random states of ``n_states``. Dense: every state emits
        every word (K = ``n_states``).
    states_per_cluster : int, default=32
        The states of each word, k.
    n_states : int or None, default=None
        K for random and dense constraints.
    parameterization : {"scalar", "neural"}, default="scalar"
        Logit tables, or the neural parameterisation (state and word embeddings).
    hidden_size : int, default=256
        The embedding width of the neural parameterisation.
    tie_embeddings : bool, default=False
        The neural parameterisation uses one table for the two state embeddings.
    state_dropout : int or None, default=None
        The states kept per cluster in each training batch or EM group (None: no dropout).
    dropout_masks : int, default=32
        Batch EM with ``state_dropout``: the masks (groups of shuffled sentences) per
        iteration. On PTB at K = 4,128 (exploratory runs), 8 masks per iteration reached
        validation perplexity 203.6 after 25 iterations, 32 masks 192.8; 128 tracked 32
        within 0.2 for the 8 iterations it ran, at three times the cost.
    learn : {"gradient", "em", "stepwise-em"}, default="gradient"
        The training (``"stepwise_em"``: the deprecated spelling).
    lr : float or None, default=None
        The AdamW learning rate; None: 0.05 for the scalar parameterisation, 0.01 (the
        reference's) for the neural one. Chosen on PTB (K = 1032, 150 batches of 64 x 32):
        scalar validation perplexity 320 with 0.05 against 1355 with 0.01.
    clip : float, default=5.0
        The gradient norm is clipped to this.
    weight_decay : float, default=0.0
        AdamW's weight decay.
    plateau_factor : float, default=0.25
        The learning rate is multiplied by this when the validation perplexity has not
        improved for ``plateau_patience`` evaluations.
    plateau_patience : int, default=4
        See ``plateau_factor``.
    min_lr : float, default=1e-4
        Gradient training stops when the learning rate falls below this.
    prior : float or None, default=None
        EM: the Dirichlet concentration of every categorical row (MAP pseudo-count
        ``prior - 1``); None: 1.01.
    stepwise_decay : float, default=0.7
        Stepwise EM's step decay: step ``(n + 2) ** -stepwise_decay``.
    em_patience : int, default=0
        Batch EM stops after this many iterations without a new best validation perplexity
        (0: at the first rise) and restores the best parameters.
    em_m_steps : int, default=10
        Batch EM with the neural parameterisation: AdamW steps (``lr``, ``weight_decay``,
        ``clip``) per M-step.
    batch_size : int or None, default=None
        The streams per batch; None: 16 on CPU, 256 on a GPU (``DEVICE_BATCH``).
    bptt : int, default=32
        The tokens per stream per batch.
    n_epochs : int, default=1
        The number of epochs.
    eval_every : int or None, default=None
        Validate every ``eval_every`` batches (None: once per epoch).
    init_scale : float, default=1.0
        The standard deviation of the initial scalar logits.
    dtype : {"float32", "float64"}, default="float32"
        The dtype of the parameters and the recursions.
    device : str, default="cpu"
        The torch device (``"cpu"``, ``"cuda"``, ``"cuda:1"`` ...).
    random_state : int, default=0
        The seed of the initialisation and the dropout (and nothing else).
    progress : bool or "lines", default=True
        True: a tqdm bar on stderr; False: nothing; ``"lines"``: one line per evaluation on
        stderr, for logs.
    em_prior : float or None, default=None
        Deprecated: a pseudo-count, ``prior = 1 + em_prior`` (one release).

    Attributes
    ----------
    vocabulary_ : hiddenstate.textio.Vocabulary
        The vocabulary of the training ids.
    constraints_ : ConstraintSet
        Which states emit which word.
    n_states_ : int
        The number of states K.
    monitor_ : hiddenstate.learn.ConvergenceMonitor
        The training curve in the estimator contract's form (see the property).
    history_ : list of dict
        One record per evaluation (``step``, ``epoch``, ``lr``, ``train_ppl``,
        ``valid_ppl`` with validation data, ``tokens_per_s`` ...).
    net_ : torch.nn.Module
        The parameters.

    Examples
    --------
    >>> from pathlib import Path
    >>> from hiddenstate.lm import read_lm_file
    >>> _ = Path("train.txt").write_text("the cat sat\na dog ran\n" * 20)
    >>> ids, vocabulary = read_lm_file("train.txt")
    >>> from hiddenstate.lm import BlockedHMMLM, brown_clusters
    >>> word_cluster = brown_clusters(ids, n_clusters=3)
    >>> model = BlockedHMMLM(states_per_cluster=2, learn="em", n_epochs=3, progress=False)
    >>> model = model.fit(ids, vocabulary=vocabulary, word_cluster=word_cluster)
    >>> model.n_states_, model.constraints_.k
    (6, 2)
    >>> model.perplexity(ids) < len(vocabulary)
    True
    """

    @keyword_only_after_first
    def __init__(self, constraint: str = "brown", states_per_cluster: int = 32,
                 n_states: int | None = None, parameterization: str = "scalar",
                 hidden_size: int = 256, tie_embeddings: bool = False,
                 state_dropout: int | None = None, dropout_masks: int = 32,
                 learn: str = "gradient", lr: float | None = None,
                 clip: float = 5.0, weight_decay: float = 0.0, plateau_factor: float = 0.25,
                 plateau_patience: int = 4, min_lr: float = 1e-4, prior: float | None = None,
                 stepwise_decay: float = 0.7, em_patience: int = 0, em_m_steps: int = 10,
                 batch_size: int | None = None, bptt: int = 32,
                 n_epochs: int = 1, eval_every: int | None = None, init_scale: float = 1.0,
                 dtype: str = "float32", device: str = "cpu", random_state: int = 0,
                 progress: bool | str = True, em_prior: float | None = None):
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
        self.prior = prior
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
        self.em_prior = em_prior

    # ------------------------------------------------------------------ hyper-parameters
    def _check_hyper(self) -> None:
        def pos_int(name, lo=1):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
                raise InvalidInputError(f"{name}: expected an integer >= {lo}, got {v!r}")

        def pos_float(name, allow_zero=False):
            v = getattr(self, name)
            ok = isinstance(v, (int, float, np.floating, np.integer)) \
                and not isinstance(v, bool) and math.isfinite(v) \
                and (v >= 0 if allow_zero else v > 0)
            if not ok:
                raise InvalidInputError(
                    f"{name}: expected a finite number {'>=' if allow_zero else '>'} 0, "
                    f"got {v!r}")

        if self.learn in _OLD_LEARN:
            warnings.warn(f"learn={self.learn!r} is deprecated; use learn="
                          f"{_OLD_LEARN[self.learn]!r}", FutureWarning, stacklevel=4)
        choices = {"constraint": ("brown", "random", "dense"),
                   "parameterization": ("scalar", "neural"), "learn": _LEARN,
                   "dtype": tuple(_DTYPES)}
        for name, allowed in choices.items():
            v = getattr(self, name)
            v = self._learn if name == "learn" and v in _OLD_LEARN else v
            if not isinstance(v, str) or v not in allowed:
                raise InvalidInputError(
                    f"{name}: expected one of {', '.join(allowed)}, got {getattr(self, name)!r}")
        check_device(self.device)
        if self.progress not in (True, False, "lines"):
            raise InvalidInputError(
                f"progress: expected True, False or 'lines', got {self.progress!r}")
        for name in ("states_per_cluster", "hidden_size", "bptt", "n_epochs",
                     "plateau_patience", "dropout_masks", "em_m_steps"):
            pos_int(name)
        if self.batch_size is not None:
            pos_int("batch_size")
        pos_int("em_patience", lo=0)
        pos_int("random_state", lo=0)
        for name in ("clip", "min_lr", "init_scale"):
            pos_float(name)
        if self.lr is not None:
            pos_float("lr")
        pos_float("weight_decay", allow_zero=True)
        if self.em_prior is not None:
            warnings.warn("em_prior is deprecated (a pseudo-count); pass prior=1 + em_prior, "
                          "the Dirichlet concentration", FutureWarning, stacklevel=4)
            pos_float("em_prior", allow_zero=True)
            if self.prior is not None:
                raise InvalidInputError(
                    "em_prior: deprecated, and prior is given too; pass prior only")
        if self.prior is not None:
            pos_float("prior")
            if self.prior < 1:
                raise InvalidInputError(
                    f"prior: expected a Dirichlet concentration >= 1 (1 is flat; the MAP "
                    f"pseudo-count is prior - 1), got {self.prior!r}")
        if not isinstance(self.plateau_factor, (int, float)) or not 0 < self.plateau_factor < 1:
            raise InvalidInputError(
                f"plateau_factor: expected a number in (0, 1), got {self.plateau_factor!r}")
        if not isinstance(self.stepwise_decay, (int, float)) \
                or not 0.5 < self.stepwise_decay <= 1:
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
        if self._learn == "stepwise-em" and self.parameterization != "scalar":
            raise InvalidInputError(
                "learn: 'stepwise-em' needs parameterization='scalar' (its M-step after "
                "every batch sets logit tables); use learn='em' or 'gradient' for the neural "
                "parameterisation")
        if self._learn == "stepwise-em" and self.state_dropout is not None:
            raise InvalidInputError(
                "state_dropout: not used by learn='stepwise-em'; pass state_dropout=None, or "
                "use learn='em' or 'gradient' with it")
        if self.eval_every is not None:
            pos_int("eval_every")
        if self.eval_every is not None and self._learn == "em":
            raise InvalidInputError("eval_every: batch EM evaluates once per epoch; pass None")

    # ------------------------------------------------------------------ set-up
    @property
    def _learn(self) -> str:
        return _OLD_LEARN.get(self.learn, self.learn)

    @property
    def _lr(self) -> float:
        if self.lr is not None:
            return float(self.lr)
        return 0.05 if self.parameterization == "scalar" else 0.01

    @property
    def _pseudo_count(self) -> float:
        """The MAP pseudo-count ``prior - 1`` (``em_prior`` while it is accepted)."""
        if self.prior is not None:
            return float(self.prior) - 1.0
        if self.em_prior is not None:
            return float(self.em_prior)
        return DEFAULT_PRIOR - 1.0

    @property
    def _batch(self) -> int:
        if self.batch_size is not None:
            return int(self.batch_size)
        return DEVICE_BATCH.get(torch.device(self.device).type, 16)

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

    def _check_model_memory(self, cs: ConstraintSet) -> None:
        """Refuse (before allocating) a model whose parameters, gradients, optimiser
        moments and one step's ``K' x K'`` transition arrays do not fit the device."""
        K, V, k = cs.n_states, cs.n_words, cs.k
        kp = k if self.state_dropout is None else int(self.state_dropout)
        Kp = K if cs.word_cluster is None else cs.n_clusters * kp
        item = self._torch_dtype.itemsize
        if self.parameterization == "scalar":
            params = K * K + K + V * k
        else:
            params = (2 * K + V + 4) * int(self.hidden_size)
        check_memory({"states_per_cluster": 4 * params * item + 4 * Kp * Kp * item},
                     f"a model of K = {K} states ({self.parameterization}, {self.dtype}): its "
                     "parameters, their gradients and optimiser moments and one step's K' x K' "
                     "transitions", {"states_per_cluster": "use fewer states or state_dropout"},
                     device=str(self.device))

    def initialize(self, vocabulary: Vocabulary, word_cluster=None) -> BlockedHMMLM:
        r"""Build the constraint set and draw the initial parameters (``fit`` calls it).

        Parameters
        ----------
        vocabulary : hiddenstate.textio.Vocabulary
            The vocabulary (holding ``<eos>``; :func:`read_lm_file` builds one).
        word_cluster : array-like of int of shape (n_words,) or None, default=None
            The cluster of every word id (``constraint="brown"`` needs it).

        Returns
        -------
        BlockedHMMLM
            The model itself, with initial parameters and no training state.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a hyper-parameter, the vocabulary or ``word_cluster`` is invalid.
        hiddenstate.errors.InsufficientMemoryError
            If the model would not fit in memory (raised before allocating).

        Examples
        --------
        >>> from pathlib import Path
        >>> from hiddenstate.lm import read_lm_file
        >>> _ = Path("train.txt").write_text("the cat sat\na dog ran\n" * 20)
        >>> ids, vocabulary = read_lm_file("train.txt")
        >>> from hiddenstate.lm import BlockedHMMLM
        >>> BlockedHMMLM(constraint="dense", n_states=4).initialize(vocabulary).n_states_
        4
        """
        self._check_hyper()
        if not isinstance(vocabulary, Vocabulary) or EOS not in vocabulary:
            raise InvalidInputError(
                f"vocabulary: expected a textio.Vocabulary holding {EOS!r}; build it with "
                "hiddenstate.lm.read_lm_file")
        cs = self._constraints(len(vocabulary), word_cluster)
        self._check_model_memory(cs)
        self.vocabulary_ = vocabulary
        self.eos_id_ = vocabulary.id_of(EOS)
        self.constraints_ = cs
        gen = torch.Generator().manual_seed(int(self.random_state))
        if self.parameterization == "scalar":
            net = ScalarParams(cs, float(self.init_scale), gen, self._torch_dtype)
        else:
            net = NeuralParams(cs, int(self.hidden_size), bool(self.tie_embeddings), gen,
                               self._torch_dtype)
        self.net_ = net.to(self.device)
        self._wc = None if cs.word_cluster is None else \
            torch.as_tensor(cs.word_cluster, device=self.device)
        self.generator_ = torch.Generator().manual_seed(int(self.random_state) + 1)
        self._state = None
        self.history_ = []
        return self

    def _check_fitted(self) -> None:
        if not hasattr(self, "net_"):
            raise NotFittedError("BlockedHMMLM: call fit (or initialize) first")

    @property
    def n_states_(self) -> int:
        """The number of states K of the fitted (or initialised) model."""
        self._check_fitted()
        return self.constraints_.n_states

    def _check_ids(self, X, name: str, vocabulary: Vocabulary | None = None) -> np.ndarray:
        """``X`` as int64 ids of ``vocabulary`` (default: the model's)."""
        vocabulary = self.vocabulary_ if vocabulary is None else vocabulary
        theirs = getattr(X, "vocabulary", None)
        if isinstance(theirs, Vocabulary):
            diff = vocabulary_difference(theirs, vocabulary)
            if diff is not None:
                raise InvalidInputError(
                    f"{name}: encoded with another vocabulary ({diff}); encode it with the "
                    "model's: read_lm_file(path, model.vocabulary_)")
        try:
            ids = np.asarray(X)
        except (ValueError, TypeError):
            ids = np.asarray([], dtype=object)
        if ids.ndim != 1 or ids.size == 0 or not np.issubdtype(ids.dtype, np.integer):
            raise InvalidInputError(
                f"{name}: expected a non-empty 1-D array of integer token ids (got "
                f"{'dtype ' + str(ids.dtype) if ids.size else 'nothing'}, shape "
                f"{ids.shape}); encode text with hiddenstate.lm.read_lm_file")
        V = len(vocabulary)
        if ids.min() < 0 or ids.max() >= V:
            raise InvalidInputError(
                f"{name}: token ids must lie in 0 .. {V - 1}; encode the text with the "
                "model's vocabulary")
        return ids.astype(np.int64)

    # ------------------------------------------------------------------ one batch
    def _window(self, tokens, valid, t0, d: DroppedStates, carry) -> _Window:
        """The tensors of the batch starting at ``t0``."""
        dev = self.device
        T = min(self.bptt, tokens.shape[1] - t0)
        x = torch.as_tensor(tokens[:, t0:t0 + T], device=dev)
        v = torch.as_tensor(valid[:, t0:t0 + T], device=dev)
        B = x.shape[0]
        prev_tok = torch.as_tensor(tokens[:, t0 - 1] if t0 > 0 else tokens[:, 0], device=dev)
        reset = torch.zeros(B, T, dtype=torch.bool, device=dev)
        reset[:, 1:] = x[:, :-1] == self.eos_id_
        kp = d.cols.shape[1]
        if t0 == 0 or carry is None:
            reset[:, 0] = True
            prev_alpha = torch.full((B, kp), 1.0 / kp, dtype=self._torch_dtype, device=dev)
        else:
            reset[:, 0] = prev_tok == self.eos_id_
            prev_alpha = carry.gather(1, d.cols[prev_tok])
            z = prev_alpha.sum(dim=1, keepdim=True)
            prev_alpha = torch.where(z > 0, prev_alpha / z.clamp_min(1e-300),
                                     torch.full_like(prev_alpha, 1.0 / kp))
        return _Window(x, v, reset, prev_tok, prev_alpha)

    def _use_triton(self, k: int, device: torch.device) -> bool:
        """Whether the partition recursion runs on the fused Triton kernels (see
        ``SCAN_BACKEND``): on a CUDA device, once their self-check against the torch path
        passed (a kernel that does not compile there warns once and is not used)."""
        if SCAN_BACKEND == "torch" or not triton_scan.AVAILABLE or k > triton_scan.MAX_BLOCK:
            return False
        if SCAN_BACKEND == "triton":
            return True
        if device.type != "cuda":
            return False
        key = (str(device), self._torch_dtype)
        if key not in _TRITON_OK:
            _TRITON_OK[key] = _triton_self_check(device, self._torch_dtype)
        return _TRITON_OK[key]

    def _log_likelihood(self, ls, lt, le_table, w: _Window, d: DroppedStates):
        """Differentiable ``(loglik (B,), alpha (B, k'))`` of a window (the partition fast
        path, or the general recursion for overlapping constraint sets)."""
        B, T = w.x.shape
        le = le_table.index_select(0, w.x.reshape(-1)).view(B, T, -1)
        if self._wc is not None:
            fn = triton_scan.triton_log_likelihood \
                if self._use_triton(le.shape[2], le.device) else partition_log_likelihood
            return fn(ls, lt, le, self._wc[w.x], self._wc[w.prev_tok], w.prev_alpha, w.reset,
                      w.valid)
        return blocked_log_likelihood(ls, lt, le, d.word_states[w.x], d.word_states[w.prev_tok],
                                      w.prev_alpha, w.reset, w.valid)

    def _carry_out(self, w: _Window, d: DroppedStates, alpha):
        """The carried distribution over all ``k`` states of each stream's last token."""
        last = w.x[:, -1]
        out = torch.zeros(w.x.shape[0], self.constraints_.k, dtype=alpha.dtype,
                          device=alpha.device)
        return out.scatter(1, d.cols[last], alpha)

    # ------------------------------------------------------------------ evaluation
    def score(self, X) -> float:
        r"""Compute the exact total log-likelihood of a token-id stream with all states.

        Parameters
        ----------
        X : array-like of int
            A token-id stream (:func:`read_lm_file`; ``<eos>`` ends every sentence).

        Returns
        -------
        float
            :math:`\log p(X)` in nats.

        Raises
        ------
        NotFittedError
            Before ``fit`` (or ``initialize``).
        hiddenstate.errors.InvalidInputError
            If ``X`` is not a stream of ids of the model's vocabulary.

        Examples
        --------
        >>> from pathlib import Path
        >>> from hiddenstate.lm import read_lm_file
        >>> _ = Path("train.txt").write_text("the cat sat\na dog ran\n" * 20)
        >>> ids, vocabulary = read_lm_file("train.txt")
        >>> from hiddenstate.lm import BlockedHMMLM
        >>> model = BlockedHMMLM(constraint="dense", n_states=4, learn="em", n_epochs=3,
        ...                      progress=False).fit(ids, vocabulary=vocabulary)
        >>> bool(abs(model.score(ids) - model.score_samples(ids).sum()) < 1e-6)
        True
        """
        return float(self.score_samples(X).sum())

    def score_samples(self, X) -> np.ndarray:
        r"""Compute the exact log-likelihood of every sentence of a token-id stream.

        A sentence ends with ``<eos>``; trailing tokens without one form the last sentence. On
        CPU (and for overlapping constraint sets) by the numba kernel over whole sentences,
        elsewhere by the batched torch recursion.

        Parameters
        ----------
        X : array-like of int
            A token-id stream (:func:`read_lm_file`; ``<eos>`` ends every sentence).

        Returns
        -------
        ndarray of shape (n_sentences,)
            :math:`\log p` of each sentence (float64, nats).

        Raises
        ------
        NotFittedError
            Before ``fit`` (or ``initialize``).
        hiddenstate.errors.InvalidInputError
            If ``X`` is not a stream of ids of the model's vocabulary.

        Examples
        --------
        >>> from pathlib import Path
        >>> from hiddenstate.lm import read_lm_file
        >>> _ = Path("train.txt").write_text("the cat sat\na dog ran\n" * 20)
        >>> ids, vocabulary = read_lm_file("train.txt")
        >>> from hiddenstate.lm import BlockedHMMLM
        >>> model = BlockedHMMLM(constraint="dense", n_states=4, learn="em", n_epochs=3,
        ...                      progress=False).fit(ids, vocabulary=vocabulary)
        >>> model.score_samples(ids[:8]).shape
        (2,)
        """
        self._check_fitted()
        ids = self._check_ids(X, "X")
        layout = SentenceLayout.from_ids(ids, self.eos_id_)
        if self._numba_estep:
            ws = self.constraints_.word_states
            work = getattr(self, "_work", None)  # the buffers of a running exact EM
            return exact_log_likelihood(layout, ws, *self._probabilities(work), work=work)
        per_token = self._token_log_normalisers(ids)
        out = np.add.reduceat(per_token, layout.bounds[:-1])
        # a token of probability zero (normaliser -inf) leaves NaN behind it in the scaled
        # recursion: its sentence has probability zero
        out[np.logical_or.reduceat(per_token == -np.inf, layout.bounds[:-1])] = -np.inf
        return out

    @property
    def _on_cpu(self) -> bool:
        return torch.device(self.device).type == "cpu"

    @property
    def _numba_estep(self) -> bool:
        """Exact scoring and E-steps by the numba kernels: on CPU, and for overlapping
        (random) constraint sets on any device; else the torch recursion of :mod:`.scan`."""
        return self._on_cpu or self.constraints_.word_cluster is None

    def _probabilities(self, work: dict | None = None
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """float64 ``(start (K,), trans (K, K), emit (V, k))`` probabilities on the host,
        all states (``trans`` in ``work["probs"]`` when given: see :func:`.exact.buffer`)."""
        with torch.no_grad():
            ls, lt, le = self.net_(self.constraints_.all_states(self.device))
            K = lt.shape[0]
            trans = torch.from_numpy(buffer(work, "probs", (K, K)))
            trans.copy_(lt).exp_()
            del lt
            start, emit = (t.detach().to("cpu", torch.float64).exp_().numpy() for t in (ls, le))
        return start, trans.numpy(), emit

    def _token_log_normalisers(self, ids: np.ndarray) -> np.ndarray:
        """Each token's share of ``log p(ids)`` (float64, in order) by the batched torch
        recursion of a partition (any device)."""
        tokens, valid = sentence_streams(ids, self.eos_id_, max(1, self._batch * 4))
        d = self.constraints_.all_states(self.device)
        out = np.zeros(tokens.shape, dtype=np.float64)
        with torch.no_grad():
            ls, lt, le = self.net_(d)
            carry = None
            for t0 in range(0, tokens.shape[1], self.bptt):
                w = self._window(tokens, valid, t0, d, carry)
                B, T = w.x.shape
                lz, alpha = step_log_normalisers(
                    ls, lt, le.index_select(0, w.x.reshape(-1)).view(B, T, -1), self._wc[w.x],
                    self._wc[w.prev_tok], w.prev_alpha, w.reset, w.valid)
                out[:, t0:t0 + T] = lz.double().cpu().numpy()
                carry = self._carry_out(w, d, alpha)
        return out[valid]

    def _score_torch(self, ids: np.ndarray) -> float:
        """``log p(ids)`` by the training recursion (:meth:`_log_likelihood`: any device,
        any constraint set, the backend of ``SCAN_BACKEND``); the tests and the device
        check hold it against the numba kernels."""
        tokens, valid = sentence_streams(ids, self.eos_id_, max(1, self._batch * 4))
        d = self.constraints_.all_states(self.device)
        total = 0.0
        with torch.no_grad():
            ls, lt, le = self.net_(d)
            carry = None
            for t0 in range(0, tokens.shape[1], self.bptt):
                w = self._window(tokens, valid, t0, d, carry)
                ll, alpha = self._log_likelihood(ls, lt, le, w, d)
                total += float(ll.sum())
                carry = self._carry_out(w, d, alpha)
        return total

    def perplexity(self, X) -> float:
        r"""Compute the perplexity of a token-id stream.

        :math:`\exp(-\log p(X) / N)` over the ``N`` tokens of ``X`` (``<eos>`` included).

        Parameters
        ----------
        X : array-like of int
            A token-id stream (:func:`read_lm_file`; ``<eos>`` ends every sentence).

        Returns
        -------
        float
            The perplexity.

        Raises
        ------
        NotFittedError
            Before ``fit`` (or ``initialize``).
        hiddenstate.errors.InvalidInputError
            If ``X`` is not a stream of ids of the model's vocabulary.

        Examples
        --------
        >>> from pathlib import Path
        >>> from hiddenstate.lm import read_lm_file
        >>> _ = Path("train.txt").write_text("the cat sat\na dog ran\n" * 20)
        >>> ids, vocabulary = read_lm_file("train.txt")
        >>> from hiddenstate.lm import BlockedHMMLM
        >>> model = BlockedHMMLM(constraint="dense", n_states=4, learn="em", n_epochs=3,
        ...                      progress=False).fit(ids, vocabulary=vocabulary)
        >>> model.perplexity(ids) < len(vocabulary)   # the uniform model's perplexity
        True
        """
        return math.exp(-self.score(X) / len(np.asarray(X)))

    # ------------------------------------------------------------------ training
    def fit(self, X, valid=None, vocabulary: Vocabulary | None = None, word_cluster=None,
            max_steps: int | None = None, resume: bool = False,
            checkpoint: str | Path | None = None, checkpoint_every: int = 500
            ) -> BlockedHMMLM:
        r"""Train on a token-id stream.

        Ids that remember another vocabulary than the model's (:class:`TokenIds`) are refused.

        Parameters
        ----------
        X : array-like of int
            A token-id stream (:func:`read_lm_file`; ``<eos>`` ends every sentence).
        valid : array-like of int or None, default=None
            Validation ids for the plateau schedule, early stopping and ``history_``.
        vocabulary : hiddenstate.textio.Vocabulary or None, default=None
            The vocabulary ``X`` was encoded with (needed unless ``resume``).
        word_cluster : array-like of int of shape (n_words,) or None, default=None
            The cluster of every word id (``constraint="brown"``): :func:`brown_clusters`, or
            ``read_brown_paths(...).word_cluster(vocabulary)``.
        max_steps : int or None, default=None
            Stop after this many batches (EM: iterations) in this call.
        resume : bool, default=False
            Continue from the current parameters and training state (after :meth:`initialize`,
            :func:`load_checkpoint` or an earlier ``fit``; raise ``n_epochs`` to train further)
            instead of starting afresh.
        checkpoint : str, os.PathLike or None, default=None
            A directory written every ``checkpoint_every`` batches and at the end
            (:meth:`save_checkpoint`).
        checkpoint_every : int, default=500
            See ``checkpoint``.

        Returns
        -------
        BlockedHMMLM
            The model itself, trained.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a hyper-parameter, the ids, the vocabulary or ``word_cluster`` is invalid.
        hiddenstate.errors.InsufficientMemoryError
            If the model or a batch would not fit in memory (raised before allocating).

        Examples
        --------
        >>> from pathlib import Path
        >>> from hiddenstate.lm import read_lm_file
        >>> _ = Path("train.txt").write_text("the cat sat\na dog ran\n" * 20)
        >>> ids, vocabulary = read_lm_file("train.txt")
        >>> from hiddenstate.lm import BlockedHMMLM
        >>> model = BlockedHMMLM(constraint="dense", n_states=4, learn="em", n_epochs=3,
        ...                      progress=False).fit(ids, vocabulary=vocabulary)
        >>> len(model.history_)
        3
        """
        if max_steps is not None and (isinstance(max_steps, bool) or not isinstance(
                max_steps, (int, np.integer)) or max_steps < 1):
            raise InvalidInputError(f"max_steps: expected an integer >= 1, got {max_steps!r}")
        if isinstance(checkpoint_every, bool) or not isinstance(
                checkpoint_every, (int, np.integer)) or checkpoint_every < 1:
            raise InvalidInputError(
                f"checkpoint_every: expected an integer >= 1, got {checkpoint_every!r}")
        with _deterministic(self._on_cpu_device()):
            return self._fit(X, valid, vocabulary, word_cluster, max_steps, resume,
                             checkpoint, checkpoint_every)

    def _on_cpu_device(self) -> bool:
        try:
            return check_device(self.device).type == "cpu"
        except InvalidInputError:
            return True  # _check_hyper names the bad device

    def _fit(self, X, valid, vocabulary, word_cluster, max_steps, resume, checkpoint,
             checkpoint_every) -> BlockedHMMLM:
        if not resume or not hasattr(self, "net_"):
            if vocabulary is None:
                raise InvalidInputError("vocabulary: pass the vocabulary X was encoded with")
            if isinstance(vocabulary, Vocabulary):  # before building anything
                self._check_ids(X, "X", vocabulary)
            self.initialize(vocabulary, word_cluster)
        else:
            self._check_hyper()
        if self._state is None:
            self._state = self._new_state()
        ids = self._check_ids(X, "X")
        valid_ids = None if valid is None else self._check_ids(valid, "valid")
        if self._learn == "em":
            return self._fit_em(ids, valid_ids, max_steps, checkpoint)
        self._check_batch_memory()
        tokens, mask = sentence_streams(ids, self.eos_id_, self._batch)
        st = self._state
        n_windows = -(-tokens.shape[1] // self.bptt)
        bar = _progress(int(mask.sum()) * self.n_epochs, self.progress is not True)
        bar.update(int(mask[:, :st["window"] * self.bptt].sum())
                   + st["epoch"] * int(mask.sum()))
        steps = 0
        t_start, tok_seen = time.perf_counter(), 0
        run_ll, run_n = 0.0, 0
        while st["epoch"] < self.n_epochs and not st["stopped"]:
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
                    self._evaluate(valid_ids, run_ll, run_n, tok_seen / (
                        time.perf_counter() - t_start))
                    run_ll, run_n = 0.0, 0
                if checkpoint is not None and st["step"] % checkpoint_every == 0:
                    self.save_checkpoint(checkpoint)
                if st["stopped"]:
                    break
            if st["stopped"]:
                break
            st["epoch"] += 1
            st["window"] = 0
            st["carry"] = None
            if not self.eval_every:
                self._evaluate(valid_ids, run_ll, run_n,
                               tok_seen / max(time.perf_counter() - t_start, 1e-9))
                run_ll, run_n = 0.0, 0
        bar.close()
        self._maybe_checkpoint(checkpoint)
        return self

    def _check_batch_memory(self) -> None:
        """Refuse a batch whose gathered ``k' x k'`` blocks do not fit the device."""
        kp = self.constraints_.k if self.state_dropout is None else int(self.state_dropout)
        check_memory({"batch_size": 4 * self._batch * int(self.bptt) * kp * kp
                      * self._torch_dtype.itemsize},
                     f"a batch of {self._batch} streams x {self.bptt} tokens gathering {kp} x "
                     f"{kp} blocks per token", {"batch_size": "pass a smaller batch_size or bptt"},
                     device=str(self.device))

    def _fit_em(self, ids, valid_ids, max_steps, checkpoint) -> BlockedHMMLM:
        """Batch EM with an exact E-step: one iteration per epoch (see the module
        docstring); ``max_steps`` counts iterations."""
        layout = SentenceLayout.from_ids(ids, self.eos_id_)
        self._work = work = {}  # K x K buffers reused by every iteration of this call
        try:
            return self._em_loop(ids, valid_ids, max_steps, checkpoint, layout, work)
        finally:
            self._work = None

    def _em_counts(self, layout: SentenceLayout, work: dict) -> tuple[float, dict]:
        """``(log p, counts)`` of one E-step (float64; numba on the host or torch on the
        device, see :attr:`_numba_estep`), dropout masks drawn from ``generator_``."""
        cs = self.constraints_
        if self.state_dropout is not None:
            order, keeps = self._dropout_draws(layout.n_sentences)
            layout = layout.reordered(order)
        else:
            keeps = None
        if self._numba_estep:
            if keeps is None:
                ll, start, trans, emit = exact_counts(layout, cs.word_states,
                                                      *self._probabilities(work), work=work)
            else:
                ll, start, trans, emit = dropout_counts(layout, cs.word_cluster, cs.k,
                                                        *self._probabilities(work), keeps,
                                                        work=work)
            return ll, {"start": torch.from_numpy(start), "trans": torch.from_numpy(trans),
                        "emit": torch.from_numpy(emit)}
        return self._device_counts(layout, keeps, work)

    def _device_counts(self, layout: SentenceLayout, keeps, work: dict
                       ) -> tuple[float, dict]:
        """The E-step of :meth:`_em_counts` by :func:`.scan.stream_counts` on the model's
        device: every group of sentences (all of them without dropout) as ``batch_size``
        streams under its mask, counts added at the kept states' entries of float64
        arrays that stay on the device (no ``K x K`` host array)."""
        cs, dev = self.constraints_, self.device
        K, V, k = cs.n_states, cs.n_words, cs.k
        if "acc" not in work:
            work["acc"] = {"start": torch.zeros(K, dtype=torch.float64, device=dev),
                           "trans": torch.zeros(K, K, dtype=torch.float64, device=dev),
                           "emit": torch.zeros(V, k, dtype=torch.float64, device=dev)}
        acc = work["acc"]
        for a in acc.values():
            a.zero_()
        groups = layout.chunks(1 if keeps is None else len(keeps))
        total = 0.0
        for g in range(len(groups) - 1):
            part = layout.part(groups[g], groups[g + 1])
            d = cs.all_states(dev) if keeps is None else cs.kept_states(keeps[g], dev)
            tokens, valid = sentence_streams(part.x, self.eos_id_, self._batch)
            starts = np.zeros(tokens.shape, dtype=bool)  # the layout's sentences (a
            flat = np.zeros(len(part.x), dtype=bool)  # shuffled one may hold one without
            flat[part.bounds[:-1]] = True  # <eos> anywhere)
            starts[valid] = flat
            with torch.no_grad():
                ls, lt, le = self.net_(d)
                ll, s, blocks, e = stream_counts(ls, lt, le, self._wc, tokens, valid,
                                                 self.eos_id_, int(self.bptt), starts=starts)
                del ls, lt, le
                total += ll
                C = cs.n_clusters
                if keeps is None:  # add the blocks in place, no second K x K array
                    acc["start"] += s
                    acc["trans"].view(C, k, C, k).add_(
                        blocks.view(C, C, k, k).permute(0, 2, 1, 3))
                    acc["emit"] += e
                else:
                    trans = blocks_to_matrix(blocks, C)
                    del blocks
                    kept = d.kept
                    acc["start"].index_add_(0, kept, s)
                    idx = (kept[:, None], kept[None, :])
                    acc["trans"].index_put_(idx, acc["trans"][idx] + trans)
                    acc["emit"].scatter_add_(1, d.cols, e)
        return total, acc

    def _em_loop(self, ids, valid_ids, max_steps, checkpoint, layout, work) -> BlockedHMMLM:
        """The iterations of :meth:`_fit_em` (``work``: the reused buffers)."""
        st = self._state
        bar = tqdm(total=self.n_epochs, initial=st["epoch"], disable=self.progress is not True,
                   unit="it", file=sys.stderr)
        steps = 0
        while st["epoch"] < self.n_epochs and not st["stopped"]:
            if max_steps is not None and steps >= max_steps:
                break
            t0 = time.perf_counter()
            ll, counts = self._em_counts(layout, work)
            if not math.isfinite(ll):  # the zero-probability rule names the sentences
                check_possible(exact_log_likelihood(layout, self.constraints_.word_states,
                                                    *self._probabilities(work)),
                               "training sentence", "a word that no state allowed to it can "
                               "emit, or a transition of probability zero", "use prior > 1",
                               argument="X")
                raise NumericalError(
                    "fit: the training log-likelihood is not finite; use dtype='float64' or "
                    "prior > 1")
            if valid_ids is not None and "best_params" not in st:  # the starting point
                st["best_params"] = {k: v.clone() for k, v in self.net_.state_dict().items()}
            self._m_step(counts, inplace=True)
            del counts
            seconds = time.perf_counter() - t0
            st["epoch"] += 1
            st["step"] += 1
            steps += 1
            self._evaluate(valid_ids, ll, len(ids), len(ids) / seconds, seconds=seconds)
            rec = self.history_[-1]
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
        if self._learn == "gradient" or self._neural_em:
            st["opt"] = torch.optim.AdamW(self.net_.parameters(), lr=self._lr,
                                          weight_decay=self.weight_decay)
        if self._learn == "stepwise-em":  # the running statistics
            cs, dev = self.constraints_, self.device
            st["acc"] = {"start": torch.zeros(cs.n_states, dtype=torch.float64, device=dev),
                         "trans": torch.zeros(cs.n_states, cs.n_states, dtype=torch.float64,
                                              device=dev),
                         "emit": torch.zeros(cs.n_words, cs.k, dtype=torch.float64,
                                             device=dev)}
        return st

    def _evaluate(self, valid_ids, run_ll, run_n, tok_s: float, **extra) -> None:
        st = self._state
        rec = {"step": st["step"], "epoch": st["epoch"], "lr": st["lr"],
               "train_ppl": math.exp(-run_ll / run_n) if run_n else None, **extra,
               "tokens_per_s": tok_s}
        if valid_ids is not None:
            ppl = self.perplexity(valid_ids)
            rec["valid_ppl"] = ppl
            if self._learn == "gradient":
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
        if self.progress == "lines":
            parts = [f"epoch {rec['epoch']}", f"step {rec['step']}"]
            if rec["train_ppl"] is not None:
                parts.append(f"train ppl {rec['train_ppl']:.1f}")
            if "valid_ppl" in rec:
                parts.append(f"valid ppl {rec['valid_ppl']:.1f}")
            parts.append(f"{tok_s:,.0f} tok/s")
            print("lm: " + ", ".join(parts), file=sys.stderr, flush=True)

    def _step(self, tokens, mask, t0, n_total) -> tuple[float, int]:
        """One batch of gradient training or stepwise EM."""
        st = self._state
        cs = self.constraints_
        if self.state_dropout is not None:
            d = cs.dropout(int(self.state_dropout), self.generator_, self.device)
        else:
            d = cs.all_states(self.device)
        w = self._window(tokens, mask, t0, d, st["carry"])
        n = int(w.valid.sum())
        if self._learn == "gradient":
            opt = st["opt"]
            opt.zero_grad(set_to_none=True)
            ls, lt, le = self.net_(d)
            ll, alpha = self._log_likelihood(ls, lt, le, w, d)
            total = ll.sum()
            if not torch.isfinite(total):
                raise NumericalError(
                    "fit: the log-likelihood became non-finite; lower lr or use dtype='float64'")
            (-total / max(n, 1)).backward()
            torch.nn.utils.clip_grad_norm_(self.net_.parameters(), self.clip)
            opt.step()
        else:  # stepwise EM: the batch's counts are the gradient of its log-likelihood
            with torch.no_grad():
                ls, lt, le = (t.detach().requires_grad_(True) for t in self.net_(d))
            with torch.enable_grad():
                ll, alpha = self._log_likelihood(ls, lt, le, w, d)
                total = ll.sum()
                gs, gt, ge = torch.autograd.grad(total, (ls, lt, le))
            batch = {"start": gs, "trans": gt, "emit": ge}
            eta = (st["em_n"] + 2) ** -float(self.stepwise_decay)
            scale = n_total / max(n, 1)
            for key, a in st["acc"].items():
                a.mul_(1 - eta).add_(batch[key].to(torch.float64), alpha=eta * scale)
            st["em_n"] += 1
            self._m_step(st["acc"])
        st["carry"] = self._carry_out(w, d, alpha.detach())
        return float(total.detach()), n

    @property
    def _neural_em(self) -> bool:
        return self._learn == "em" and self.parameterization == "neural"

    def _m_step(self, acc: dict, inplace: bool = False) -> None:
        """MAP M-step: counts + ``prior - 1``, normalised (see the module docstring).
        ``inplace``: overwrite ``acc["trans"]`` (no ``K x K`` temporary). Neural: see
        :meth:`_neural_m_step`."""
        if self._neural_em:
            self._neural_m_step(acc)
            return
        net, cs, a = self.net_, self.constraints_, self._pseudo_count
        dev = self.device
        with torch.no_grad():
            start = acc["start"].to(dev) + a
            trans = acc["trans"].to(dev)
            trans = trans if inplace and trans is acc["trans"] else trans.clone()
            trans.add_(a)
            trans.div_(trans.sum(dim=1, keepdim=True)).log_()
            emit = acc["emit"].to(dev) + a
            ws = torch.as_tensor(cs.word_states, device=dev)
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

    @property
    def monitor_(self) -> ConvergenceMonitor:
        """The training curve in the estimator contract's form (a fresh copy each call).

        ``history`` holds the mean training log-likelihood per token of each evaluation
        (``-log train_ppl`` of ``history_``'s records), ``iter`` their number, ``converged`` True
        when training ended before ``n_epochs`` (EM's early stop on the validation perplexity, or
        the gradient learning rate falling below ``min_lr``).
        """
        self._check_fitted()
        mon = ConvergenceMonitor(tol=float("nan"), n_iter=int(self.n_epochs))
        mon.history = [-math.log(r["train_ppl"]) for r in self.history_
                       if r.get("train_ppl") is not None]
        st = getattr(self, "_state", None)
        mon.converged = bool(st["stopped"]) if st is not None else any(
            r.get("undone", False) for r in self.history_)
        return mon

    # ------------------------------------------------------------------ sampling
    def sample(self, n_samples: int = 1, random_state=None, *, n_tokens: int | None = None,
               seed: int | None = None) -> list[str]:
        r"""Draw tokens from the model (sentences restart after ``<eos>``).

        Parameters
        ----------
        n_samples : int, default=1
            The number of tokens.
        random_state : int, numpy.random.Generator or None, default=None
            The seed; None: the estimator's own ``random_state`` (the estimator
            contract).
        n_tokens : int or None, default=None
            Deprecated name of ``n_samples``.
        seed : int or None, default=None
            Deprecated name of ``random_state``.

        Returns
        -------
        list of str
            The tokens.

        Raises
        ------
        NotFittedError
            Before ``fit`` (or ``initialize``).
        hiddenstate.errors.InvalidInputError
            If ``n_samples`` or ``random_state`` is invalid.
        hiddenstate.errors.InsufficientMemoryError
            If the tokens would not fit in memory.

        Examples
        --------
        >>> from pathlib import Path
        >>> from hiddenstate.lm import read_lm_file
        >>> _ = Path("train.txt").write_text("the cat sat\na dog ran\n" * 20)
        >>> ids, vocabulary = read_lm_file("train.txt")
        >>> from hiddenstate.lm import BlockedHMMLM
        >>> model = BlockedHMMLM(constraint="dense", n_states=4, learn="em", n_epochs=3,
        ...                      progress=False).fit(ids, vocabulary=vocabulary)
        >>> len(model.sample(6, random_state=0))
        6
        """
        if n_tokens is not None:
            warnings.warn("sample(n_tokens=...) is deprecated; pass n_samples",
                          FutureWarning, stacklevel=2)
            n_samples = n_tokens
        if seed is not None:
            warnings.warn("sample(seed=...) is deprecated; pass random_state",
                          FutureWarning, stacklevel=2)
            random_state = seed
        self._check_fitted()
        if isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)) \
                or n_samples < 1:
            raise InvalidInputError(f"n_samples: expected an integer >= 1, got {n_samples!r}")
        check_memory({"n_samples": 100 * int(n_samples)},
                     f"sample: {n_samples} tokens as Python strings")
        if random_state is not None and not isinstance(random_state, np.random.Generator) \
                and (isinstance(random_state, bool)
                     or not isinstance(random_state, (int, np.integer)) or random_state < 0):
            raise InvalidInputError(
                f"random_state: expected None, an integer >= 0 or a numpy Generator, got "
                f"{random_state!r}")
        rng = np.random.default_rng(self.random_state if random_state is None
                                    else random_state)
        cs = self.constraints_
        d = cs.all_states(self.device)
        with torch.no_grad():
            ls, lt, le = (t.double().cpu().numpy() for t in self.net_(d))
        ws = cs.word_states.reshape(-1)
        order = np.argsort(ws, kind="stable")
        ptr = np.searchsorted(ws[order], np.arange(cs.n_states + 1))
        words_flat = np.repeat(np.arange(cs.n_words), cs.k)[order]
        lp_flat = le.reshape(-1)[order]
        out, z = [], None
        for _ in range(int(n_samples)):
            p = np.exp(ls if z is None else lt[z])
            z = int(rng.choice(len(p), p=p / p.sum()))
            q = np.exp(lp_flat[ptr[z]:ptr[z + 1]])
            w = int(words_flat[ptr[z] + rng.choice(len(q), p=q / q.sum())])
            out.append(w)
            if w == self.eos_id_:
                z = None
        return self.vocabulary_.decode(out)

    def state_usage(self, X) -> np.ndarray:
        r"""Compute the posterior mass of each state summed over a token-id stream.

        All states; exact over whole sentences (the numba kernel on CPU, the two-pass torch
        recursion elsewhere).

        Parameters
        ----------
        X : array-like of int
            A token-id stream (:func:`read_lm_file`; ``<eos>`` ends every sentence).

        Returns
        -------
        ndarray of shape (K,)
            The expected number of tokens each state emits.

        Raises
        ------
        NotFittedError
            Before ``fit`` (or ``initialize``).
        hiddenstate.errors.InvalidInputError
            If ``X`` is not a stream of ids of the model's vocabulary.
        hiddenstate.errors.ZeroProbabilityError
            If a sentence has probability zero (``score_samples`` gives ``-inf`` for it): it
            has no state posterior; the message names the sentences.

        Examples
        --------
        >>> from pathlib import Path
        >>> from hiddenstate.lm import read_lm_file
        >>> _ = Path("train.txt").write_text("the cat sat\na dog ran\n" * 20)
        >>> ids, vocabulary = read_lm_file("train.txt")
        >>> from hiddenstate.lm import BlockedHMMLM
        >>> model = BlockedHMMLM(constraint="dense", n_states=4, learn="em", n_epochs=3,
        ...                      progress=False).fit(ids, vocabulary=vocabulary)
        >>> round(float(model.state_usage(ids[:8]).sum()), 6)
        8.0
        """
        self._check_fitted()
        ids = self._check_ids(X, "X")
        cs = self.constraints_
        if self._numba_estep:
            loglik, _, _, emit = exact_counts(SentenceLayout.from_ids(ids, self.eos_id_),
                                              cs.word_states, *self._probabilities())
        else:
            tokens, valid = sentence_streams(ids, self.eos_id_, max(1, self._batch * 4))
            with torch.no_grad():
                ls, lt, le = self.net_(cs.all_states(self.device))
                loglik, _, _, emit = stream_counts(ls, lt, le, self._wc, tokens, valid,
                                                   self.eos_id_, int(self.bptt))
                emit = emit.cpu().numpy()
        if not math.isfinite(float(loglik)):  # the zero-probability rule names the sentences
            check_possible(self.score_samples(ids), "sentence", "a word that no state "
                           "allowed to it can emit, or a transition of probability zero",
                           "Leave those sentences out, or train with prior > 1.",
                           use="state posterior")
        return np.bincount(cs.word_states.reshape(-1), emit.reshape(-1),
                           minlength=cs.n_states)

    # ------------------------------------------------------------------ saving
    def _arrays(self) -> dict[str, np.ndarray]:
        arrays = {f"param.{k}": v.detach().cpu().double().numpy()
                  for k, v in self.net_.state_dict().items()}
        arrays["word_states"] = self.constraints_.word_states
        if self.constraints_.word_cluster is not None:
            arrays["word_cluster"] = self.constraints_.word_cluster
        return arrays

    def save(self, path) -> None:
        r"""Write the model (hyper-parameters, vocabulary, parameters) to a directory.

        JSON + ``.npz``, no pickle; :func:`hiddenstate.load` reads it back.

        Parameters
        ----------
        path : str or os.PathLike
            The directory.

        Raises
        ------
        NotFittedError
            Before ``fit`` (or ``initialize``).

        Examples
        --------
        >>> from pathlib import Path
        >>> from hiddenstate.lm import read_lm_file
        >>> _ = Path("train.txt").write_text("the cat sat\na dog ran\n" * 20)
        >>> ids, vocabulary = read_lm_file("train.txt")
        >>> from hiddenstate.lm import BlockedHMMLM
        >>> model = BlockedHMMLM(constraint="dense", n_states=4, learn="em", n_epochs=3,
        ...                      progress=False).fit(ids, vocabulary=vocabulary)
        >>> import hiddenstate as hs
        >>> model.save("lm-model")
        >>> bool(abs(hs.load("lm-model").score(ids) - model.score(ids)) < 1e-6)
        True
        """
        self._check_fitted()
        write_bundle(path, LM_FORMAT, self._meta(), self._arrays())

    def _meta(self) -> dict:
        return {"class": "BlockedHMMLM",
                "params": {k: to_json(v) for k, v in self.get_params().items()},
                "vocabulary": self.vocabulary_.to_dict(),
                "history": to_json(self.history_)}

    def save_checkpoint(self, path) -> None:
        r"""Write the model and its training state to a directory.

        The parameters, the optimiser and scheduler state, the random generator, the carried
        distribution and the position in the data (see the module docstring); resuming with
        :func:`load_checkpoint` and ``fit(..., resume=True)`` gives bit-identical parameters to
        an uninterrupted run.

        Parameters
        ----------
        path : str or os.PathLike
            The directory.

        Raises
        ------
        NotFittedError
            Before ``fit`` (or ``initialize``).
        NotFittedError
            Without a training state (after :meth:`initialize` alone).

        Examples
        --------
        >>> from pathlib import Path
        >>> from hiddenstate.lm import read_lm_file
        >>> _ = Path("train.txt").write_text("the cat sat\na dog ran\n" * 20)
        >>> ids, vocabulary = read_lm_file("train.txt")
        >>> from hiddenstate.lm import BlockedHMMLM
        >>> model = BlockedHMMLM(constraint="dense", n_states=4, learn="em", n_epochs=3,
        ...                      progress=False).fit(ids, vocabulary=vocabulary)
        >>> from hiddenstate.lm import load_checkpoint
        >>> model.save_checkpoint("checkpoint")
        >>> load_checkpoint("checkpoint").n_states_
        4
        """
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


def _progress(total: int, disable: bool) -> tqdm:
    """A tqdm bar over training tokens (tokens/s and running perplexity in its postfix)."""
    return tqdm(total=total, disable=disable, unit="tok", unit_scale=True, file=sys.stderr)


def _triton_self_check(device: torch.device, dtype: torch.dtype) -> bool:
    """Whether the Triton kernels run on ``device`` and agree with the torch path on a
    small random window (forward and gradients); warns once when they do not."""
    g = torch.Generator().manual_seed(0)
    C, k, B, T = 3, 8, 4, 5
    args = [torch.log_softmax(torch.randn(C * k, generator=g), 0),
            torch.log_softmax(torch.randn(C * k, C * k, generator=g), 1),
            torch.randn(B, T, k, generator=g)]
    args = [a.to(device, dtype).requires_grad_(True) for a in args]
    rest = [torch.randint(0, C, (B, T), generator=g).to(device),
            torch.randint(0, C, (B,), generator=g).to(device),
            torch.full((B, k), 1.0 / k, dtype=dtype, device=device),
            (torch.rand(B, T, generator=g) < 0.3).to(device),
            torch.ones(B, T, dtype=torch.bool, device=device)]
    tol = 1e-4 if dtype == torch.float32 else 1e-10
    try:
        out = []
        for fn in (partition_log_likelihood, triton_scan.triton_log_likelihood):
            ll, _ = fn(*args, *rest)
            out.append((ll.detach(), *torch.autograd.grad(ll.sum(), args)))
        ok = all(torch.allclose(a, b, atol=tol, rtol=tol) for a, b in zip(*out, strict=True))
        why = "they disagree with the torch recursion"
    except Exception as exc:  # noqa: BLE001 - any compiler or driver failure
        ok, why = False, f"{type(exc).__name__}: {exc}"
    if not ok:
        warnings.warn(f"hiddenstate.lm: the Triton kernels are not used on {device} ({why}); "
                      "the torch recursion runs instead", RuntimeWarning, stacklevel=2)
    return ok


def _from_meta(path, meta: dict, arrays: dict) -> BlockedHMMLM:
    where = Path(path) / "model.json"
    try:
        if meta.get("class") != "BlockedHMMLM":
            raise ModelFileError(f"{where}: not a BlockedHMMLM")
        params = {k: from_json(v) for k, v in dict(meta["params"]).items()}
        # files of the release before the renames (em_prior a pseudo-count, stepwise_em)
        if params.get("em_prior") is not None and params.get("prior") is None:
            params["prior"] = 1.0 + float(params["em_prior"])
        params["em_prior"] = None
        params["learn"] = _OLD_LEARN.get(params.get("learn"), params.get("learn"))
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
        history = from_json(meta.get("history", []))
        if not isinstance(history, list) or not all(isinstance(h, dict) for h in history):
            raise ModelFileError(f"{where}: history is not a list of records")
        model.history_ = history
    except ModelFileError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
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
    """Load a saved language model (deprecated alias of :func:`hiddenstate.load`).

    Removed after 0.2; :func:`load_checkpoint` (to resume training) stays.

    Parameters
    ----------
    path : str or os.PathLike
        The directory written by :meth:`BlockedHMMLM.save`.

    Returns
    -------
    BlockedHMMLM
        The model (a checkpoint loads without its training state).

    Raises
    ------
    hiddenstate.errors.ModelFileError
        If the directory does not hold a valid language model.

    Examples
    --------
    >>> import hiddenstate as hs
    >>> model = hs.load("lm-model")  # doctest: +SKIP
    """
    warnings.warn("hiddenstate.lm.load_model is deprecated; use hiddenstate.load(path)",
                  FutureWarning, stacklevel=2)
    return restore(path)


def _check_train_state(st: dict, where) -> None:
    """Refuse a checkpoint's training counters that no run can have written."""
    ints = ("epoch", "window", "step", "bad", "em_n")
    ok = all(isinstance(st[k], int) and not isinstance(st[k], bool) and st[k] >= 0
             for k in ints) and isinstance(st["stopped"], bool) \
        and isinstance(st["lr"], (int, float)) and math.isfinite(st["lr"]) and st["lr"] > 0 \
        and isinstance(st["best"], (int, float)) and not math.isnan(st["best"])
    if not ok:
        raise ModelFileError(f"{where}: the training state's counters are not valid "
                             f"({ {k: st[k] for k in ints + ('stopped', 'lr', 'best')} })")


def load_checkpoint(path) -> BlockedHMMLM:
    r"""Load a checkpoint written by :meth:`BlockedHMMLM.save_checkpoint`.

    Continue training with ``fit(X, valid, resume=True)``.

    Parameters
    ----------
    path : str or os.PathLike
        The checkpoint directory.

    Returns
    -------
    BlockedHMMLM
        The model with its training state.

    Raises
    ------
    hiddenstate.errors.ModelFileError
        If the directory is not a valid checkpoint (a saved model without training state
        included).

    Examples
    --------
    >>> from pathlib import Path
    >>> from hiddenstate.lm import read_lm_file
    >>> _ = Path("train.txt").write_text("the cat sat\na dog ran\n" * 20)
    >>> ids, vocabulary = read_lm_file("train.txt")
    >>> from hiddenstate.lm import BlockedHMMLM
    >>> model = BlockedHMMLM(constraint="dense", n_states=4, learn="em", n_epochs=3,
    ...                      progress=False).fit(ids, vocabulary=vocabulary)
    >>> from hiddenstate.lm import load_checkpoint
    >>> model.save_checkpoint("checkpoint")
    >>> resumed = load_checkpoint("checkpoint")
    >>> resumed.set_params(n_epochs=4).fit(ids, resume=True).n_states_
    4
    """
    meta, arrays = read_bundle(path, LM_FORMAT, "language model checkpoint")
    model = _from_meta(path, meta, arrays)
    where = Path(path) / "model.json"
    if "train_state" not in meta:
        raise ModelFileError(f"{where}: a saved model, not a checkpoint; load it with "
                             "hiddenstate.load")
    try:
        st = model._new_state()
        for k, v in meta["train_state"].items():
            if k not in st:
                raise ModelFileError(f"{where}: unknown training state entry {k!r}")
            st[k] = from_json(v)
        _check_train_state(st, where)
        model.generator_.set_state(torch.as_tensor(arrays["rng"].astype(np.uint8)))
        if "carry" in arrays:
            carry = arrays["carry"]
            if carry.ndim != 2 or carry.shape[1] != model.constraints_.k \
                    or not np.all(np.isfinite(carry)) or carry.min() < 0:
                raise ModelFileError(f"{where}: the carried distribution is mis-shaped, "
                                     "negative or not finite")
            st["carry"] = torch.as_tensor(carry, dtype=model._torch_dtype,
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
            acc = {k: torch.as_tensor(arrays[f"acc.{k}"]) for k in st["acc"]}
            for k, v in acc.items():
                if v.shape != st["acc"][k].shape or not bool(torch.isfinite(v).all()) \
                        or bool((v < 0).any()):
                    raise ModelFileError(f"{where}: the running counts {k} are mis-shaped, "
                                         "negative or not finite")
            st["acc"] = {k: v.to(model.device) for k, v in acc.items()}
        best = {k: torch.as_tensor(arrays[f"best.{k}"], dtype=v.dtype, device=v.device)
                for k, v in model.net_.state_dict().items() if f"best.{k}" in arrays}
        for k, v in best.items():
            ref = model.net_.state_dict()[k]
            if v.shape != ref.shape or not bool(torch.isfinite(v).all()):
                raise ModelFileError(f"{where}: the best parameters' {k} is mis-shaped or "
                                     "not finite")
        if best:
            st["best_params"] = best
    except ModelFileError:
        raise
    except (KeyError, TypeError, ValueError, RuntimeError, AttributeError) as exc:
        raise ModelFileError(f"{where}: malformed training state ({exc})") from exc
    model._state = st
    return model
