r"""An LSTM language model as a PROPS source (needs the ``torch`` extra).

:class:`LSTMSource` predicts the next symbol id in ``0 .. n_symbols-1``. For the input
:math:`x_t` (the embedding of the previous symbol) each layer computes

.. math::

    i_t &= \sigma(W_{ii} x_t + b_{ii} + W_{hi} h_{t-1} + b_{hi}), &
    f_t &= \sigma(W_{if} x_t + b_{if} + W_{hf} h_{t-1} + b_{hf}), \\
    g_t &= \tanh(W_{ig} x_t + b_{ig} + W_{hg} h_{t-1} + b_{hg}), &
    o_t &= \sigma(W_{io} x_t + b_{io} + W_{ho} h_{t-1} + b_{ho}), \\
    c_t &= f_t \odot c_{t-1} + i_t \odot g_t, &
    h_t &= o_t \odot \tanh(c_t),

(the next layer reads :math:`h_t`), and a linear decoder plus softmax on the top layer's
:math:`h_t` gives :math:`f(y_{t+1} \mid y_{\le t})`. These are :class:`torch.nn.LSTM`'s
equations and parameter layout (gate order i, f, g, o).

**Begin of sequence.** The embedding table has ``n_symbols + 1`` rows: row ``n_symbols`` is
a learned begin-of-sequence (BOS) input, never predicted (the decoder has ``n_symbols``
outputs). Every sequence starts from the zero state with the BOS input, so :meth:`reset`
returns a learned distribution of the first symbol.

**Unknown words.** For text, id 0 is ``<unk>`` (see :class:`~hiddenstate.textio.Vocabulary`);
the model treats it as an ordinary symbol, both as an input and as a prediction whose
probability is the mass of every out-of-vocabulary word.

**Missing history.** A missing symbol (the marker ``-1``, :data:`~.base.MISSING`) is fed
as the *expected embedding* under the model's own prediction for it,
:math:`\bar x_t = \sum_w f(w \mid y_{<t})\, E_w`, and the LSTM takes its ordinary step
from there; a missing symbol scores 0 (log 1). This is the first-order (mean-field)
approximation of the exact conditional :math:`\sum_w f(w \mid y_{<t})\, f(y_{t+1} \mid
y_{<t}, w)`, which would run the network once per symbol, and it keeps what the
alternatives lose: the position of the hole (skipping it would read the next word as if
it stood where the missing one did), the context before it (a reset forgets it) and
the model's belief about the missing word (the ``<unk>`` input would claim it is a rare
word; an untrained "missing" row would be noise). It costs one decoder row (the
prediction at the hole) and one ``(W, E)`` product per hole, and nothing for data without
holes (:meth:`LSTMSource.log_probs` then takes the path it always took).

torch is imported only when an :class:`LSTMSource` is built, so ``import hiddenstate`` and
``import hiddenstate.sources`` work without it; building one without torch raises
:class:`MissingDependencyError`.
"""

from __future__ import annotations

import heapq
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .._bundle import from_json, read_bundle, reading, to_json, write_bundle
from .._validation import check_lengths, check_positive_int, check_symbols
from ..errors import (
    InvalidInputError,
    MissingDependencyError,
    ModelFileError,
    NotFittedError,
    NumericalError,
)
from ..textio import Vocabulary
from .base import MISSING, Source, check_symbol, resolve_alphabet

__all__ = ["LSTMSource", "MissingDependencyError", "SOURCE_FORMAT"]

#: the ``format`` field of a saved source's ``model.json``
SOURCE_FORMAT = "hiddenstate-source"

_INSTALL = "install the torch extra: pip install 'hiddenstate[torch]'"


def _torch():
    """The torch module, or :class:`MissingDependencyError`."""
    try:
        import torch
    except ImportError as exc:
        raise MissingDependencyError(f"LSTMSource needs PyTorch; {_INSTALL}") from exc
    return torch


def _make_net(torch, n_symbols: int, embedding_dim: int, hidden_dim: int, num_layers: int):
    """Embedding (``n_symbols + 1`` rows, the last is BOS) -> LSTM -> linear decoder."""
    nn = torch.nn
    net = nn.Module()
    net.embedding = nn.Embedding(n_symbols + 1, embedding_dim)
    # nn.LSTM is only run in eval mode (inference); training applies dropout itself.
    net.lstm = nn.LSTM(embedding_dim, hidden_dim, num_layers=num_layers, batch_first=True)
    net.decoder = nn.Linear(hidden_dim, n_symbols)
    return net


def _tensor_shapes(n_symbols: int, embedding_dim: int, hidden_dim: int,
                   num_layers: int) -> dict[str, tuple[int, ...]]:
    """The shapes of :func:`_make_net`'s ``state_dict``, computed without building it (a
    saved file is checked against them before anything of that size is allocated)."""
    n, E, H = n_symbols, embedding_dim, hidden_dim
    shapes = {"embedding.weight": (n + 1, E)}
    for k in range(num_layers):
        shapes[f"lstm.weight_ih_l{k}"] = (4 * H, E if k == 0 else H)
        shapes[f"lstm.weight_hh_l{k}"] = (4 * H, H)
        shapes[f"lstm.bias_ih_l{k}"] = (4 * H,)
        shapes[f"lstm.bias_hh_l{k}"] = (4 * H,)
    shapes["decoder.weight"] = (n, H)
    shapes["decoder.bias"] = (n,)
    return shapes


def _cell(torch, gates, c, H: int):
    r"""One LSTM cell update from its pre-activations ``gates`` = :math:`W_{ih} x + W_{hh} h
    + b` (nn.LSTM's gate order i, f, g, o along the last axis; any leading batch axes):
    :math:`c' = \sigma(f) c + \sigma(i) \tanh(g)`, :math:`h' = \sigma(o) \tanh(c')`.
    Returns ``(h', c')``."""
    sig = torch.sigmoid(gates)
    c = sig[..., H:2 * H] * c + sig[..., :H] * torch.tanh(gates[..., 2 * H:3 * H])
    return sig[..., 3 * H:] * torch.tanh(c), c


def _check_device(torch, device: str):
    """The torch device ``device``, checked to exist here (a CUDA device on a machine
    without one is an error naming ``device`` now, not a torch error in fit)."""
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError) as exc:
        raise InvalidInputError(
            f"device: {device!r} is not a torch device; pass e.g. 'cpu' or 'cuda'") from exc
    if dev.type == "meta":
        raise InvalidInputError("device: 'meta' tensors hold no values; pass 'cpu' or 'cuda'")
    try:
        torch.empty(0, device=dev)
    except (RuntimeError, AssertionError) as exc:
        raise InvalidInputError(
            f"device: {device!r} is not available here ({str(exc).splitlines()[0]}); pass "
            "device='cpu' (LSTMSource.load(path, device='cpu') for a saved source)") from None
    return dev


class LSTMSource(Source):
    r"""LSTM language model over symbol ids ``0 .. n_symbols-1``, usable as a PROPS source.

    The network is :class:`torch.nn.LSTM` with a learned begin-of-sequence input and a
    linear decoder (see the module docstring, :mod:`hiddenstate.sources.lstm`, for the
    equations and the treatment of missing symbols). Needs the ``torch`` extra.

    Parameters
    ----------
    n_symbols : int or None, default=None
        Alphabet size. ``None``: ``len(vocabulary)`` when :meth:`fit` gets a vocabulary,
        else ``max(X) + 1`` (refused when most of those ids never occur). :meth:`fit`
        refuses an alphabet whose network would not fit in the device's available memory
        (:meth:`_training_bytes`), before allocating it.
    embedding_dim : int, default=64
        Embedding width.
    hidden_dim : int, default=128
        LSTM width.
    num_layers : int, default=1
        Number of stacked LSTM layers.
    dropout : float, default=0.0
        Dropout probability in ``[0, 1)`` on the embeddings, between layers and on the top
        layer's output, during training only (inference never drops).
    epochs : int, default=5
        Passes over the training data (``0`` keeps the random initialisation).
    batch_size : int, default=32
        Number of parallel training lanes (see :meth:`fit`).
    bptt : int, default=64
        Truncated back-propagation length: gradients flow through at most this many steps.
    lr : float, default=3e-3
        Adam learning rate.
    clip : float or None, default=1.0
        Maximum global gradient norm (``None`` or ``0``: no clipping).
    random_state : int or None, default=0
        Seed of the initialisation, dropout and shuffling; with an int, training on the CPU
        is deterministic (torch's global random state is left untouched).
    device : str, default="cpu"
        The torch device for training and inference (``"cpu"``, ``"cuda"``, ...); one this
        machine does not have is an :class:`~hiddenstate.errors.InvalidInputError`.
    verbose : bool, default=False
        Print the mean loss of each epoch to stderr.

    Attributes
    ----------
    n_symbols : int
        Alphabet size (after :meth:`fit` or :meth:`load`).
    vocabulary : Vocabulary or None
        Token mapping of a text model.
    training_loss_ : list of float
        Mean training cross-entropy (nats per token) of each epoch, averaged while the epoch
        ran.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If a hyper-parameter is out of range or ``device`` does not exist here.
    hiddenstate.errors.MissingDependencyError
        If torch is not installed.

    See Also
    --------
    KneserNeySource : An n-gram source (no torch needed).
    hiddenstate.PROPS : Personalises a source with a few perturbation states.

    Notes
    -----
    The network runs in float32. :meth:`reset`/:meth:`step` return the softmax of the
    float32 logits computed in float64 (so it sums to one to ~1e-15); :meth:`log_probs`
    computes the log-softmax of the same logits in float64 in batched passes, which agrees
    with the step loop to float32 rounding of the logits (~1e-7 for moderate logits).
    Initialisation: embeddings and decoder weights uniform on [-0.1, 0.1], decoder bias
    zero, LSTM weights torch's default.

    Rough speed on one CPU thread (W = 10,000, 64-dim embeddings, 128 hidden units, a busy
    2-core machine): ``step`` ~0.3-0.5 ms per token (the 10,000 x 128 decoder product
    dominates), batched :meth:`log_probs` ~7,000 tokens/s, training ~3,000-5,000 tokens/s.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.sources import LSTMSource
    >>> X = np.random.default_rng(0).integers(0, 5, size=300)
    >>> src = LSTMSource(embedding_dim=8, hidden_dim=16, epochs=2).fit(X, lengths=[100] * 3)
    >>> p = src.reset()                        # the distribution of a first symbol
    >>> p.shape, bool(np.isclose(p.sum(), 1.0))
    ((5,), True)
    >>> src.log_probs(X[:4]).shape             # log f(y_t | y_<t) of one sequence
    (4,)
    """

    #: a missing symbol is fed as its expected embedding (see the module docstring)
    supports_missing = True

    #: tokens per LSTM pass of :meth:`log_probs` (the state carries across chunks; the
    #: decoder then runs on blocks of rows whose float64 logits take about 16 MB)
    chunk_size: int = 1024

    def __init__(self, n_symbols: int | None = None, embedding_dim: int = 64,
                 hidden_dim: int = 128, num_layers: int = 1, dropout: float = 0.0,
                 epochs: int = 5, batch_size: int = 32, bptt: int = 64, lr: float = 3e-3,
                 clip: float | None = 1.0, random_state: int | None = 0,
                 device: str = "cpu", verbose: bool = False):
        self._n_symbols_param = n_symbols
        self.embedding_dim = embedding_dim
        self.hidden_dim = hidden_dim
        self.num_layers = num_layers
        self.dropout = dropout
        self.epochs = epochs
        self.batch_size = batch_size
        self.bptt = bptt
        self.lr = lr
        self.clip = clip
        self.random_state = random_state
        self.device = device
        self.verbose = verbose
        self._check_hyper()
        self._torch = _torch()
        self._device = _check_device(self._torch, device)
        self.n_symbols = n_symbols  # the fitted size replaces it in fit / load
        self.vocabulary = None
        self.training_loss_: list[float] = []
        self._net = None
        self._cells: list = []
        self._h = self._c = None

    # ------------------------------------------------------------------ hyper-parameters
    def get_params(self) -> dict[str, Any]:
        """Return the constructor arguments.

        Returns
        -------
        dict
            Every constructor argument by name (``n_symbols`` as given, not fitted).
        """
        return {
            "n_symbols": self._n_symbols_param, "embedding_dim": self.embedding_dim,
            "hidden_dim": self.hidden_dim, "num_layers": self.num_layers,
            "dropout": self.dropout, "epochs": self.epochs, "batch_size": self.batch_size,
            "bptt": self.bptt, "lr": self.lr, "clip": self.clip,
            "random_state": self.random_state, "device": self.device, "verbose": self.verbose,
        }

    def _check_hyper(self) -> None:
        if self._n_symbols_param is not None:
            check_positive_int(self._n_symbols_param, "n_symbols")
        for name in ("embedding_dim", "hidden_dim", "num_layers", "batch_size", "bptt"):
            check_positive_int(getattr(self, name), name)
        check_positive_int(self.epochs, "epochs", minimum=0)
        d = self.dropout
        if isinstance(d, bool) or not isinstance(d, (int, float, np.floating, np.integer)) \
                or not 0.0 <= float(d) < 1.0:
            raise InvalidInputError(f"dropout: expected a probability in [0, 1), got {d!r}")
        lr = self.lr
        if isinstance(lr, bool) or not isinstance(lr, (int, float, np.floating, np.integer)) \
                or not math.isfinite(float(lr)) or lr <= 0:
            raise InvalidInputError(f"lr: expected a finite number > 0, got {lr!r}")
        c = self.clip
        if c is not None and (isinstance(c, bool)
                              or not isinstance(c, (int, float, np.floating, np.integer))
                              or not float(c) >= 0 or math.isnan(float(c))):
            raise InvalidInputError(f"clip: expected a number >= 0 or None, got {c!r}")
        rs = self.random_state
        if rs is not None and (isinstance(rs, bool) or not isinstance(rs, (int, np.integer))
                               or rs < 0):
            raise InvalidInputError(
                f"random_state: expected a non-negative int or None, got {rs!r}")
        if not isinstance(self.device, str):
            raise InvalidInputError(f"device: expected a string such as 'cpu', got "
                                    f"{self.device!r}")
        if not isinstance(self.verbose, (bool, np.bool_)):
            raise InvalidInputError(f"verbose: expected True or False, got {self.verbose!r}")

    def __repr__(self) -> str:
        changed = {k: v for k, v in self.get_params().items()
                   if v != type(self)._DEFAULTS.get(k)}
        return f"LSTMSource({', '.join(f'{k}={v!r}' for k, v in changed.items())})"

    _DEFAULTS = {"n_symbols": None, "embedding_dim": 64, "hidden_dim": 128, "num_layers": 1,
                 "dropout": 0.0, "epochs": 5, "batch_size": 32, "bptt": 64, "lr": 3e-3,
                 "clip": 1.0, "random_state": 0, "device": "cpu", "verbose": False}

    def _training_bytes(self, W: int) -> float:
        """About the memory :meth:`fit` takes for an alphabet of ``W`` symbols: the float32
        parameters (embedding ``(W + 1) x E``, LSTM layers, decoder ``W x H``) four times
        (weights, gradients, Adam's two moments) and the logits of one decoder block with
        their softmax and gradient (at least 64 rows of ``W``)."""
        shapes = _tensor_shapes(W, int(self.embedding_dim), int(self.hidden_dim),
                                int(self.num_layers))
        params = sum(math.prod(shape) for shape in shapes.values())
        return 4.0 * (4 * params + 3 * max(64 * W, 1 << 22))

    def describe(self) -> str:
        w = self.n_symbols if self.n_symbols is not None else "?"
        return f"LSTM language model ({self.num_layers}x{self.hidden_dim}, W={w})"

    # ------------------------------------------------------------------ training
    def fit(self, X, lengths=None, vocabulary: Vocabulary | None = None,
            callback: Callable[[int, float], None] | None = None) -> LSTMSource:
        """Train on concatenated sequences (hmmlearn layout).

        Parameters
        ----------
        X : array-like of int, shape (n_tokens,) or (n_tokens, 1)
            Symbol ids of all sequences, one after another.
        lengths : array-like of int or None, default=None
            Length of each sequence; None: one sequence.
        vocabulary : Vocabulary or None, default=None
            Token mapping of text data (kept on the model and saved with it).
        callback : callable or None, default=None
            ``callback(epoch, mean_loss)`` after each epoch (``epoch`` counts from 1).

        Returns
        -------
        LSTMSource
            The source itself. Interrupted (e.g. Ctrl-C), the model keeps the weights
            trained so far.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a symbol is out of range, the lengths do not match ``X``, ``callback`` is not
            callable, or the network would not fit in the device's memory.
        hiddenstate.errors.NumericalError
            If the loss becomes NaN or infinite (the model is left unfitted).

        Notes
        -----
        Each sequence is scored from the zero state with the BOS input, with the
        cross-entropy of every one of its symbols. Training runs ``batch_size`` lanes in
        parallel: each epoch shuffles the sequences (a seeded :class:`torch.Generator`) and
        deals them to the least-loaded lane; a lane's sequences follow one another, the state
        being reset to zero (with the BOS input) where a new sequence starts. So that one long
        sequence still fills the lanes, a sequence longer than ``max(bptt, n_tokens /
        batch_size)`` is cut into that many pieces; a piece after the first starts from the
        zero state with the true previous symbol as input (as in the usual "batchify" of
        language-model corpora), never with BOS. The lanes are trained by truncated
        back-propagation through time in windows of ``bptt`` steps (state carried, gradient
        cut), with Adam on the mean cross-entropy of each window and gradient-norm clipping.
        """
        torch = self._torch
        if callback is not None and not callable(callback):
            raise InvalidInputError(f"callback: expected callback(epoch, mean_loss), got "
                                    f"{callback!r}")
        X, n = resolve_alphabet(X, self._n_symbols_param, vocabulary, self._training_bytes,
                                "training the LSTM", self.device,
                                "use a smaller vocabulary (Vocabulary.build(..., max_size=...)) "
                                "or a smaller embedding_dim / hidden_dim / num_layers")
        lengths = check_lengths(lengths, len(X))
        seed = self.random_state
        if seed is None:
            seed = int(np.random.SeedSequence().generate_state(1, dtype=np.uint32)[0])
        dev = self._device
        fork_devices = []
        if dev.type == "cuda":
            fork_devices = [dev.index if dev.index is not None else torch.cuda.current_device()]
        with torch.random.fork_rng(devices=fork_devices):
            torch.manual_seed(int(seed))
            net = _make_net(torch, n, self.embedding_dim, self.hidden_dim, self.num_layers)
            with torch.no_grad():
                net.embedding.weight.uniform_(-0.1, 0.1)
                net.decoder.weight.uniform_(-0.1, 0.1)
                net.decoder.bias.zero_()
            net.to(dev)
            self.n_symbols = n
            self.vocabulary = vocabulary
            self.training_loss_ = []
            self._net = net
            self._h = self._c = None
            gen = torch.Generator().manual_seed(int(seed))
            try:
                if self.epochs > 0:
                    self._train(X, lengths, gen, callback)
            except NumericalError:
                self._net = None
                raise
            finally:
                if self._net is not None:  # also after an interrupt: the epochs so far
                    self._prepare_inference()
        return self

    def _pieces(self, lengths: np.ndarray, n_tokens: int) -> np.ndarray:
        """``(start, stop)`` of the training pieces: sequences, long ones cut (see fit)."""
        cap = max(int(self.bptt), -(-n_tokens // int(self.batch_size)))
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        out = []
        for s, m in zip(starts.tolist(), lengths.tolist(), strict=True):
            k = -(-m // cap)
            cuts = [s + (m * j) // k for j in range(k + 1)]
            out.extend(zip(cuts[:-1], cuts[1:], strict=True))
        return np.array(out, dtype=np.int64)

    def _train(self, X: np.ndarray, lengths: np.ndarray, gen, callback) -> None:
        torch = self._torch
        F = torch.nn.functional
        net, dev, n = self._net, self._device, self.n_symbols
        N = len(X)
        pieces = self._pieces(lengths, N)
        seq_start = np.zeros(N, dtype=bool)
        seq_start[np.concatenate([[0], np.cumsum(lengths)[:-1]])] = True
        # input of position i: BOS at a sequence start, else the previous symbol
        prev = np.empty(N, dtype=np.int64)
        prev[0] = n
        prev[1:] = X[:-1]
        prev[seq_start] = n
        piece_start = np.zeros(N, dtype=bool)
        piece_start[pieces[:, 0]] = True
        n_lanes = min(int(self.batch_size), len(pieces))
        opt = torch.optim.Adam(net.parameters(), lr=float(self.lr))
        clip = float(self.clip) if self.clip else None
        bptt, H, L = int(self.bptt), int(self.hidden_dim), int(self.num_layers)
        # rows of logits per block: about 16 MB of float32 (stays off fresh mmap pages)
        block = max(64, (1 << 22) // n)
        X_t = torch.from_numpy(X)
        prev_t = torch.from_numpy(prev)
        reset_t = torch.from_numpy(piece_start)
        net.train()
        for epoch in range(1, int(self.epochs) + 1):
            t0 = time.perf_counter()
            order = torch.randperm(len(pieces), generator=gen).numpy()
            lanes: list[list[int]] = [[] for _ in range(n_lanes)]
            heap = [(0, j) for j in range(n_lanes)]
            for p in order:
                load, j = heapq.heappop(heap)
                lanes[j].append(int(p))
                a, b = pieces[p]
                heapq.heappush(heap, (load + int(b - a), j))
            T = max(load for load, _ in heap)
            idx = np.full((n_lanes, T), -1, dtype=np.int64)
            for j, lane in enumerate(lanes):
                if lane:
                    pos = np.concatenate([np.arange(pieces[p, 0], pieces[p, 1]) for p in lane])
                    idx[j, :len(pos)] = pos
            idx_t = torch.from_numpy(idx)
            valid = idx_t >= 0
            safe = idx_t.clamp(min=0)
            inputs = torch.where(valid, prev_t[safe], 0).to(dev)
            targets = torch.where(valid, X_t[safe], -100).to(dev)
            resets = (valid & reset_t[safe]).to(dev)
            state = [(torch.zeros(n_lanes, H, device=dev), torch.zeros(n_lanes, H, device=dev))
                     for _ in range(L)]
            total = 0.0
            for a in range(0, T, bptt):
                tgt = targets[:, a:a + bptt]
                n_valid = int((tgt >= 0).sum())
                if n_valid == 0:
                    continue
                top, state = self._train_forward(inputs[:, a:a + bptt],
                                                 resets[:, a:a + bptt], state)
                opt.zero_grad(set_to_none=True)
                # decoder + cross-entropy in row blocks (bounded memory), then the LSTM
                top_d = top.detach().requires_grad_()
                flat, tgt_flat = top_d.reshape(-1, H), tgt.reshape(-1)
                for r in range(0, len(flat), block):
                    t_blk = tgt_flat[r:r + block]
                    if not bool((t_blk >= 0).any()):
                        continue
                    loss_sum = F.cross_entropy(net.decoder(flat[r:r + block]), t_blk,
                                               ignore_index=-100, reduction="sum")
                    (loss_sum / n_valid).backward()
                    total += float(loss_sum.detach())
                top.backward(top_d.grad)
                if clip:
                    torch.nn.utils.clip_grad_norm_(net.parameters(), clip)
                opt.step()
                state = [(h.detach(), c.detach()) for h, c in state]
            mean = total / N
            if not math.isfinite(mean):
                raise NumericalError(
                    f"LSTM training loss became {mean} in epoch {epoch}; lower lr or set clip")
            self.training_loss_.append(mean)
            if self.verbose:
                dt = time.perf_counter() - t0
                print(f"LSTMSource epoch {epoch}/{self.epochs}: loss {mean:.4f} nats/token "
                      f"({N / dt:,.0f} tokens/s)", file=sys.stderr)
            if callback is not None:
                callback(epoch, mean)
        net.eval()

    def _train_forward(self, inp, resets, state):
        """Training forward pass over a ``(lanes, steps)`` window, the state zeroed before
        each step whose ``resets`` flag is set; the same equations as :class:`nn.LSTM`
        (written out, as nn.LSTM cannot reset lanes mid-window). Returns the top layer's
        output (after dropout, before the decoder) and the state."""
        torch = self._torch
        F = torch.nn.functional
        net, p = self._net, float(self.dropout)
        H = int(self.hidden_dim)
        lstm = net.lstm
        x = F.dropout(net.embedding(inp), p, net.training)
        keep = (~resets).unsqueeze(-1).to(x.dtype)
        reset_any = resets.any(0).tolist()
        steps = inp.shape[1]
        new_state = []
        for k, (h, c) in enumerate(state):
            w_ih = getattr(lstm, f"weight_ih_l{k}")
            w_hh = getattr(lstm, f"weight_hh_l{k}")
            bias = getattr(lstm, f"bias_ih_l{k}") + getattr(lstm, f"bias_hh_l{k}")
            xp = torch.matmul(x, w_ih.t()) + bias
            w_hh_t = w_hh.t()
            outs = []
            for t in range(steps):
                if reset_any[t]:
                    h = h * keep[:, t]
                    c = c * keep[:, t]
                h, c = _cell(torch, torch.addmm(xp[:, t], h, w_hh_t), c, H)
                outs.append(h)
            x = torch.stack(outs, 1)
            new_state.append((h, c))
            x = F.dropout(x, p, net.training)
        return x, new_state

    # ------------------------------------------------------------------ the source protocol
    def _require_fitted(self) -> None:
        if self._net is None:
            raise NotFittedError(
                "LSTMSource is not fitted; call fit(X, lengths) or LSTMSource.load(path) first")

    def _prepare_inference(self) -> None:
        """Eval mode, and per-layer ``(W_ih, W_hh, b_ih + b_hh)`` for :meth:`_feed`."""
        net = self._net
        net.eval()
        lstm = net.lstm
        with self._torch.no_grad():
            self._cells = [
                (getattr(lstm, f"weight_ih_l{k}"), getattr(lstm, f"weight_hh_l{k}"),
                 getattr(lstm, f"bias_ih_l{k}") + getattr(lstm, f"bias_hh_l{k}"))
                for k in range(int(self.num_layers))]
        self._h = self._c = None

    def _feed(self, symbol: int) -> np.ndarray:
        """Consume one input id (a symbol or BOS); return the next distribution."""
        return self._feed_input(self._net.embedding.weight[symbol])

    def _expected_input(self, p: np.ndarray):
        r""":math:`\sum_w p_w E_w`: the input of a missing symbol whose predictive
        distribution is ``p`` (float32, like the embeddings)."""
        torch = self._torch
        with torch.no_grad():
            weights = torch.from_numpy(np.asarray(p, dtype=np.float32)).to(self._device)
            return torch.mv(self._net.embedding.weight[:self.n_symbols].T, weights)

    def _feed_missing(self) -> np.ndarray:
        """Consume a missing symbol (its expected embedding under the current prediction);
        return the next distribution."""
        return self._feed_input(self._expected_input(self._distribution(self._h[-1, 0])))

    def _feed_input(self, x) -> np.ndarray:
        """Consume one input vector; return the next distribution. One LSTM step written
        out (a call of nn.LSTM costs more than the arithmetic here)."""
        torch = self._torch
        H = int(self.hidden_dim)
        with torch.no_grad():
            hs, cs = [], []
            for k, (w_ih, w_hh, b) in enumerate(self._cells):
                gates = torch.addmv(b, w_ih, x)
                gates.addmv_(w_hh, self._h[k, 0])
                x, c = _cell(torch, gates, self._c[k, 0], H)
                hs.append(x)
                cs.append(c)
            self._h = torch.stack(hs).unsqueeze(1)
            self._c = torch.stack(cs).unsqueeze(1)
        return self._distribution(x)

    def _distribution(self, h_top) -> np.ndarray:
        """Softmax (in float64) of the decoder's float32 logits at the top hidden state."""
        torch = self._torch
        net = self._net
        with torch.no_grad():
            logits = torch.addmv(net.decoder.bias, net.decoder.weight, h_top)
        z = logits.cpu().numpy().astype(np.float64)
        z -= z.max()
        p = np.exp(z)
        p /= p.sum()
        return p

    def _zero_state(self):
        torch = self._torch
        shape = (int(self.num_layers), 1, int(self.hidden_dim))
        return (torch.zeros(shape, device=self._device),
                torch.zeros(shape, device=self._device))

    def reset(self) -> np.ndarray:
        """Start a sequence: the zero state with the BOS input.

        Returns
        -------
        ndarray of shape (n_symbols,)
            The distribution of the first symbol.

        Raises
        ------
        hiddenstate.errors.NotFittedError
            Before :meth:`fit` or :meth:`load`.
        """
        self._require_fitted()
        self._h, self._c = self._zero_state()
        return self._feed(self.n_symbols)

    def step(self, y: int) -> np.ndarray:
        """Consume one symbol and predict the next, in one LSTM step.

        O(1): one step from the carried ``(h, c)``; a missing symbol, ``-1``, is fed as its
        expected embedding.

        Parameters
        ----------
        y : int
            The symbol, or ``-1`` (missing).

        Returns
        -------
        ndarray of shape (n_symbols,)
            The next symbol's distribution (float64, the softmax of the float32 logits
            computed in float64).

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``y`` is not a symbol of the source or ``-1``.
        """
        self._require_fitted()
        y = check_symbol(y, self.n_symbols, allow_missing=True)
        if self._h is None:
            self.reset()
        return self._feed_missing() if y == MISSING else self._feed(y)

    def snapshot(self) -> dict[str, np.ndarray]:
        """Return the LSTM state after the last consumed input.

        The next distribution is a function of this state, so nothing else is needed.

        Returns
        -------
        dict of str to ndarray
            ``{"h", "c"}``: float64 arrays ``(num_layers, hidden_dim)`` (exact: the network
            runs in float32).
        """
        self._require_fitted()
        if self._h is None:
            self.reset()
        L, H = int(self.num_layers), int(self.hidden_dim)
        return {"h": self._h.detach().cpu().double().numpy().reshape(L, H),
                "c": self._c.detach().cpu().double().numpy().reshape(L, H)}

    def restore(self, snapshot: dict[str, np.ndarray]) -> None:
        """Return to a position saved by :meth:`snapshot`.

        Parameters
        ----------
        snapshot : dict of str to ndarray
            ``{"h", "c"}`` from :meth:`snapshot`.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``snapshot`` is not a finite state of this network's shape.
        """
        self._require_fitted()
        torch = self._torch
        L, H = int(self.num_layers), int(self.hidden_dim)
        if not isinstance(snapshot, dict) or not {"h", "c"} <= set(snapshot):
            raise InvalidInputError("snapshot: expected the dict with 'h' and 'c' that "
                                    "LSTMSource.snapshot() returned")
        state = []
        for key in ("h", "c"):
            arr = np.asarray(snapshot[key], dtype=np.float64)
            if arr.shape != (L, H) or not np.all(np.isfinite(arr)):
                raise InvalidInputError(
                    f"snapshot: {key!r} must be a finite array of shape ({L}, {H}), got "
                    f"shape {arr.shape}; was it taken from a different model?")
            state.append(torch.from_numpy(arr.astype(np.float32)).view(L, 1, H)
                         .to(self._device))
        self._h, self._c = state

    def _check_sequence(self, y) -> np.ndarray:
        arr = np.asarray(y)
        if arr.ndim == 1 and arr.size == 0:
            return np.empty(0, dtype=np.int64)
        arr = check_symbols(arr, None, "y", allow_missing=True)
        if int(arr.max()) >= self.n_symbols:
            raise InvalidInputError(
                f"y: symbol {int(arr.max())} is out of range for n_symbols={self.n_symbols}")
        return arr

    def _run(self, inputs: np.ndarray, targets: np.ndarray, h, c):
        """Feed ``inputs`` from the state ``(h, c)`` in chunks of :attr:`chunk_size`;
        ``log f(targets[t])`` scored at the state after ``inputs[t]`` (float32 logits,
        log-softmax in float64). Returns the scores, the final state and top hidden."""
        torch = self._torch
        net, dev = self._net, self._device
        n_in, n_tgt = len(inputs), len(targets)
        inp_t = torch.from_numpy(inputs).to(dev)
        tgt_t = torch.from_numpy(targets).to(dev)
        out = np.empty(n_tgt)
        chunk = max(1, int(self.chunk_size))
        top = h[-1, 0]
        with torch.no_grad():
            for a in range(0, n_in, chunk):
                x = net.embedding(inp_t[a:a + chunk]).unsqueeze(0)
                hs, (h, c) = net.lstm(x, (h, c))
                hs = hs[0]
                top = hs[-1]
                m = min(len(hs), n_tgt - a)
                self._score_rows(hs[:max(m, 0)], tgt_t[a:a + max(m, 0)], out, a)
        return out, h, c, top

    def _score_rows(self, hs, tgt_t, out: np.ndarray, lo: int) -> None:
        """``out[lo + r] = log softmax(decoder(hs[r]))[tgt_t[r]]`` for the rows of ``hs``,
        decoded in blocks whose float64 logits take about 16 MB."""
        torch = self._torch
        block = max(16, (1 << 21) // int(self.n_symbols))
        for r in range(0, len(hs), block):
            e = min(len(hs), r + block)
            logits = self._net.decoder(hs[r:e]).double()
            lp = logits.gather(1, tgt_t[r:e, None])[:, 0] - torch.logsumexp(logits, dim=1)
            out[lo + r:lo + e] = lp.cpu().numpy()

    def _run_holes(self, inputs: np.ndarray, targets: np.ndarray, h, c):
        """:meth:`_run` where ``inputs`` and ``targets`` may hold missing symbols (a missing
        target scores 0). The LSTM runs batched between the missing inputs; each missing
        input is fed as its expected embedding under the prediction at that point (as
        :meth:`step` does: ``_distribution`` of the top hidden state before it); the rows
        are decoded in large blocks afterwards (every ``chunk_size`` rows), as :meth:`_run`
        decodes them. Without missing symbols it is :meth:`_run` itself."""
        holes = np.flatnonzero(inputs == MISSING)
        missing_targets = targets == MISSING
        if not len(holes) and not missing_targets.any():
            return self._run(inputs, targets, h, c)
        torch = self._torch
        net, dev = self._net, self._device
        n_in, n_tgt = len(inputs), len(targets)
        inp_t = torch.from_numpy(np.where(inputs == MISSING, 0, inputs)).to(dev)
        tgt_t = torch.from_numpy(np.where(missing_targets, 0, targets)).to(dev)
        out = np.empty(n_tgt)
        chunk = max(1, int(self.chunk_size))
        top = h[-1, 0]
        pending, done = [], 0          # LSTM outputs not decoded yet, rows decoded so far
        cuts = sorted({0, n_in, *holes.tolist(), *range(0, n_in, chunk)})
        with torch.no_grad():
            for a, b in zip(cuts[:-1], cuts[1:], strict=True):
                x = net.embedding(inp_t[a:b])
                if inputs[a] == MISSING:
                    x = torch.cat([self._expected_input(self._distribution(top))[None], x[1:]])
                hs, (h, c) = net.lstm(x.unsqueeze(0), (h, c))
                top = hs[0, -1]
                pending.append(hs[0])
                if b - done >= chunk or b == n_in:
                    rows = torch.cat(pending)[:max(n_tgt - done, 0)]
                    self._score_rows(rows, tgt_t[done:done + len(rows)], out, done)
                    pending, done = [], b
        out[missing_targets] = 0.0
        return out, h, c, top

    def log_probs(self, y) -> np.ndarray:
        r"""Score every symbol of one sequence in batched forward passes.

        Passes of :attr:`chunk_size` tokens (state carried across chunks): the same numbers
        as the :meth:`reset`/:meth:`step` loop up to float32 rounding. Like the default, it
        resets the source and leaves it where that loop would (after ``y[-2]``).

        Parameters
        ----------
        y : array-like of int, shape (T,)
            The sequence (``-1``: missing, scored 0).

        Returns
        -------
        ndarray of shape (T,)
            :math:`\log f(y_t \mid y_{<t})`.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a symbol is out of range.
        """
        self._require_fitted()
        y = self._check_sequence(y)
        if len(y) == 0:
            self.reset()
            return np.empty(0)
        inputs = np.concatenate([[self.n_symbols], y[:-1]]).astype(np.int64)
        out, self._h, self._c, _ = self._run_holes(inputs, y, *self._zero_state())
        return out

    def log_probs_from(self, y, start: dict | None = None
                       ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        r"""Score symbols continuing from a saved position, in batched passes.

        The batched :meth:`Source.log_probs_from`.

        Parameters
        ----------
        y : array-like of int, shape (T,)
            The next symbols of the sequence.
        start : dict or None, default=None
            A position returned by an earlier call; None: a new sequence.

        Returns
        -------
        log_probs : ndarray of shape (T,)
            :math:`\log f(y_t \mid \text{start}, y_{<t})`.
        position : dict of str to ndarray
            The snapshot after the last symbol plus ``"next"``, the distribution of the
            following symbol.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a symbol is out of range or ``start`` is not a position of this source.
        """
        self._require_fitted()
        y = self._check_sequence(y)
        if start is None:
            h, c = self._zero_state()
            inputs = np.concatenate([[self.n_symbols], y]).astype(np.int64)
            out, self._h, self._c, top = self._run_holes(inputs, y, h, c)
        else:
            if not isinstance(start, dict) or "next" not in start:
                raise InvalidInputError(
                    "start: expected None or the position dict (with 'next') that an earlier "
                    "log_probs_from call returned")
            nxt = np.asarray(start["next"], dtype=np.float64)
            if nxt.shape != (self.n_symbols,):
                raise InvalidInputError(
                    f"start: 'next' must have shape ({self.n_symbols},), got {nxt.shape}")
            self.restore({k: v for k, v in start.items() if k != "next"})
            if len(y) == 0:
                return np.empty(0), {**self.snapshot(), "next": nxt.copy()}
            rest, self._h, self._c, top = self._run_holes(y, y[1:], self._h, self._c)
            with np.errstate(divide="ignore"):
                first = 0.0 if y[0] == MISSING else np.log(nxt[y[0]])
            out = np.concatenate([[first], rest])
        return out, {**self.snapshot(), "next": self._distribution(top)}

    # ------------------------------------------------------------------ persistence
    def save(self, path) -> None:
        """Write the source to a directory, atomically.

        ``model.json`` (format ``"hiddenstate-source"``, hyper-parameters, vocabulary, loss
        history) and ``arrays.<token>.npz`` (the network's tensors as float64, exact for
        float32); see :func:`hiddenstate._bundle.write_bundle`. No pickle.

        Parameters
        ----------
        path : str or os.PathLike
            The directory.

        Raises
        ------
        hiddenstate.errors.NotFittedError
            Before :meth:`fit`.
        """
        self._require_fitted()
        meta = {
            "class": "LSTMSource",
            "params": {k: to_json(v) for k, v in self.get_params().items()},
            "n_symbols": int(self.n_symbols),
            "vocabulary": self.vocabulary.to_dict() if self.vocabulary is not None else None,
            "training_loss": [to_json(float(v)) for v in self.training_loss_],
        }
        arrays = {k: v.detach().cpu().double().numpy()
                  for k, v in self._net.state_dict().items()}
        write_bundle(path, SOURCE_FORMAT, meta, arrays)

    @classmethod
    def load(cls, path, device: str | None = None) -> LSTMSource:
        """Read a source written by :meth:`save`.

        Never unpickles: JSON and plain arrays, checked against the manifest.

        Parameters
        ----------
        path : str or os.PathLike
            The directory.
        device : str or None, default=None
            The torch device to load onto; None: the saved one.

        Returns
        -------
        LSTMSource
            The source, as saved.

        Raises
        ------
        hiddenstate.errors.ModelFileError
            If the directory is missing, modified, corrupted or holds another class.
        hiddenstate.errors.MissingDependencyError
            If torch is not installed.
        """
        torch = _torch()
        path = Path(path)
        meta, arrays = read_bundle(path, SOURCE_FORMAT, what="source")
        if meta.get("class") != "LSTMSource":
            raise ModelFileError(f"{path}: a saved {meta.get('class')!r}, not an LSTMSource")
        with reading(path, "invalid hyper-parameters"):
            params = {k: from_json(v) for k, v in dict(meta["params"]).items()}
            if device is not None:
                params["device"] = device
            src = cls(**params)
            n = meta["n_symbols"]
            if isinstance(n, bool) or not isinstance(n, int) or n < 1 or (
                    src._n_symbols_param is not None and n != src._n_symbols_param):
                raise ModelFileError(f"{path}: invalid n_symbols {n!r}")
            vocab = meta.get("vocabulary")
            vocab = None if vocab is None else Vocabulary.from_dict(vocab, source=str(path))
            if vocab is not None and len(vocab) != n:
                raise ModelFileError(
                    f"{path}: the vocabulary has {len(vocab)} tokens but n_symbols is {n}")
            history = [float(from_json(v)) for v in meta.get("training_loss", [])]
        L = int(src.num_layers)
        if len(arrays) != 4 * L + 3:  # before building anything of the layers' size
            raise ModelFileError(
                f"{path}: a {L}-layer LSTMSource has {4 * L + 3} tensors, not {len(arrays)}")
        expected = _tensor_shapes(n, int(src.embedding_dim), int(src.hidden_dim), L)
        if set(arrays) != set(expected):
            raise ModelFileError(
                f"{path}: tensors {sorted(arrays)} do not match an LSTMSource with these "
                f"hyper-parameters ({sorted(expected)})")
        for k, shape in expected.items():
            arr = arrays[k]
            if arr.dtype != np.float64 or tuple(arr.shape) != shape \
                    or not np.all(np.isfinite(arr)):
                raise ModelFileError(
                    f"{path}: tensor {k} must be finite float64 of shape {shape}, got "
                    f"{arr.dtype} {arr.shape}; the file was modified, or hidden_dim / "
                    "embedding_dim / num_layers / n_symbols do not match the tensors")
        # every size now matches arrays read from the file: building the net is bounded
        net = _make_net(torch, n, int(src.embedding_dim), int(src.hidden_dim), L)
        state = {k: torch.from_numpy(arrays[k].astype(np.float32)) for k in expected}
        net.load_state_dict(state)
        net.to(src._device)  # checked to exist when src was built
        net.eval()
        src.n_symbols = n
        src.vocabulary = vocab
        src.training_loss_ = history
        src._net = net
        src._prepare_inference()
        return src
