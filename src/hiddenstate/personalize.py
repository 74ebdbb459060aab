r"""Personalise a black-box language model to one user's text with PROPS, and compare.

The pipeline behind ``hiddenstate personalize`` (and ``make demo``), as plain functions:

1. :func:`read_tokens` reads the *reference* corpus and the user's *target* text (one
   sequence per line, blank lines skipped, optionally lower-cased);
2. :func:`build_vocabulary` builds the vocabulary from the reference (the ``vocab_size`` most
   frequent words; id 0 is ``<unk>``, and every target word outside the vocabulary becomes
   ``<unk>``);
3. :func:`train_source` trains the black box on the reference (an interpolated Kneser-Ney
   n-gram model, or an LSTM with the torch extra), or :func:`personalize` loads a saved one;
4. :func:`split_target` cuts the target's word stream into the first ``words`` words (the
   personalisation stream) and the next ``eval_words`` (the evaluation words). A line cut in
   two becomes two sequences: its second part starts a new sequence (every model restarts
   its filter, the source its context);
5. :func:`stream_fit` learns PROPS (one source state, ``perturbation_states`` learned
   states, online EM) and a plain streaming HMM with the same number of states (online EM,
   every emission learned) from the personalisation stream, fed in chunks; each symbol's
   prequential log-probability ``log p(y_t | y_<t, theta_{t-1})`` (``stream_log_prob_``) is
   kept as the learning curve;
6. :func:`evaluate` scores the evaluation words with both models frozen
   (``score_tokens``) and with the black box alone;
7. :func:`personalize` runs all of it, writes ``out/summary.json``, the models
   (``out/props``, ``out/hmm``, ``out/source``; :func:`hiddenstate.load` reads them back),
   the vocabulary and the two token streams as text (``personalisation.txt``,
   ``evaluation.txt``; one sequence per line, after lower-casing), and returns a
   :class:`PersonalizeResult`. The HTML report is written from that result by
   :func:`hiddenstate.report.personalize.write_personalize_report` (the command line and
   ``make demo`` call it; the pipeline sits below the report layer and does not).

Predictive numbers: for each model and each stretch of words, the mean predictive probability
:math:`\frac1n\sum_t p(y_t \mid y_{<t})` and the perplexity
:math:`\exp(-\frac1n\sum_t \log p(y_t \mid y_{<t}))`.

Missing words: with ``missing_token`` (``--missing-token``), that token in the target marks
a word that is missing (lost, redacted): it is the symbol ``-1`` for every model (no
emission term; the black box predicts past the hole by its own rule, see
``docs/props.md``), and the predictive numbers, ``<unk>`` shares and membership shares are
over the observed words only.

``progress(stage, done, total, value)`` (optional) is called as the work advances: stage
``"source"`` (LSTM epochs; ``value`` the training loss), ``"props"`` and ``"hmm"`` (words
seen; ``value`` the running mean prequential log-probability) and ``"evaluate"``;
``done == 0`` (``value`` NaN) announces that a stage starts.
"""

from __future__ import annotations

import importlib.util
import json
import math
import textwrap
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import textio
from .errors import HiddenStateError, InvalidInputError, ModelFileError
from .models import HMM, PROPS
from .models.props import perturbation_log_odds
from .sources import MISSING, KneserNeySource, Source, load_source, sequence_log_probs
from .textio import top_symbols

__all__ = ["EVAL_WORDS_CAP", "SUMMARY_FORMAT", "Evaluation", "PersonalizeResult", "Stream",
           "build_vocabulary", "evaluate", "format_summary_table", "hmm_baseline_note",
           "personalize", "predictive_summary", "read_tokens", "require_torch",
           "split_target", "stream_fit", "train_source"]

#: default cap on the number of evaluation words (the rest of the target, at most this)
EVAL_WORDS_CAP = 20000
#: ``format`` field of ``summary.json``
SUMMARY_FORMAT = "hiddenstate.personalize"
SOURCES = ("ngram", "lstm")

Progress = Callable[[str, int, int, float], None]


# --------------------------------------------------------------------------- text


def read_tokens(path, lowercase: bool = True, option: str = "--target",
                encoding: str = "utf-8") -> list[list[str]]:
    r"""Read a text file as token lists, one per non-blank line.

    Parameters
    ----------
    path : str or os.PathLike
        The text file.
    lowercase : bool, default=True
        Lower-case every token.
    option : str, default="--target"
        The command-line option the error messages name.
    encoding : str, default="utf-8"
        The file's text encoding (see :func:`hiddenstate.textio.read_text_file`).

    Returns
    -------
    list of list of str
        The tokens of each line.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If the file cannot be read; the message names ``option``.

    Examples
    --------
    >>> from pathlib import Path
    >>> from hiddenstate import personalize as pz
    >>> reference_text = "the cat sat on the mat\nthe dog sat on the rug\n"
    >>> _ = Path("reference.txt").write_text(reference_text * 30)
    >>> _ = Path("target.txt").write_text("my cat sat on my mat\nmy dog ran\n" * 30)
    >>> pz.read_tokens("target.txt")[:2]
    [['my', 'cat', 'sat', 'on', 'my', 'mat'], ['my', 'dog', 'ran']]
    """
    try:
        seqs = textio.read_text_sequences(path, encoding)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{option}: {exc}") from exc
    if lowercase:
        seqs = [[w.lower() for w in s] for s in seqs]
    return seqs


def build_vocabulary(reference: Sequence[Sequence[str]], vocab_size: int = 10000
                     ) -> textio.Vocabulary:
    """Build the vocabulary of the most frequent reference words.

    Parameters
    ----------
    reference : sequence of sequence of str
        The reference corpus, as token lists.
    vocab_size : int, default=10000
        The largest vocabulary size, ``<unk>`` (id 0) included.

    Returns
    -------
    hiddenstate.textio.Vocabulary
        The vocabulary.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``vocab_size`` is not an integer >= 2 (the message names ``--vocab-size``).

    Examples
    --------
    >>> from hiddenstate import personalize as pz
    >>> pz.build_vocabulary([["the", "cat", "sat"], ["the", "dog"]], vocab_size=3).tokens
    ['<unk>', 'the', 'cat']
    """
    _check_int(vocab_size, "--vocab-size", 2)
    return textio.Vocabulary.build(reference, max_size=vocab_size)


@dataclass
class Stream:
    """Sequences of a stretch of the target: the words, their ids and the layout.

    Parameters
    ----------
    tokens : list of list of str
        The words of each sequence.
    X : ndarray of int64 of shape (n_words,)
        Their symbol ids (``-1``: a missing word).
    lengths : ndarray of int64 of shape (n_sequences,)
        The length of each sequence.

    Examples
    --------
    >>> from hiddenstate import personalize as pz
    >>> vocabulary = pz.build_vocabulary([["the", "cat", "sat"]])
    >>> stream = pz.Stream.encode([["the", "dog", "sat"], ["cat"]], vocabulary)
    >>> stream.X, stream.lengths, len(stream)
    (array([3, 0, 2, 1]), array([3, 1]), 4)
    """

    tokens: list[list[str]]
    X: np.ndarray  # (n,) int64 symbol ids
    lengths: np.ndarray  # (n_sequences,) int64

    @property
    def words(self) -> list[str]:
        """The words of every sequence, one after the other."""
        return [w for s in self.tokens for w in s]

    @property
    def observed(self) -> np.ndarray:
        """Whether each word is observed (not the missing marker ``-1``)."""
        return self.X != MISSING

    def __len__(self) -> int:
        return int(self.lengths.sum())

    @classmethod
    def encode(cls, tokens: list[list[str]], vocabulary: textio.Vocabulary,
               missing_token: str | None = None) -> Stream:
        """Encode token lists with a vocabulary.

        Parameters
        ----------
        tokens : list of list of str
            The words of each sequence (empty sequences are dropped).
        vocabulary : hiddenstate.textio.Vocabulary
            The vocabulary (words it lacks become ``<unk>``).
        missing_token : str or None, default=None
            A token that marks a missing word: it becomes the missing marker ``-1``.

        Returns
        -------
        Stream
            The stream.

        Examples
        --------
        >>> from hiddenstate import personalize as pz
        >>> vocabulary = pz.build_vocabulary([["the", "cat", "sat"]])
        >>> pz.Stream.encode([["the", "???", "sat"]], vocabulary, missing_token="???").X
        array([ 3, -1,  2])
        """
        tokens = [s for s in tokens if s]
        lengths = np.array([len(s) for s in tokens], dtype=np.int64)
        X = vocabulary.encode(w for s in tokens for w in s)
        if missing_token is not None:
            X[np.array([w == missing_token for s in tokens for w in s], dtype=bool)] = MISSING
        return cls(tokens, X, lengths)

    def write(self, path) -> None:
        """Write the stream as text, one sequence per line.

        Parameters
        ----------
        path : str or os.PathLike
            The file to write (UTF-8).
        """
        Path(path).write_text("".join(" ".join(s) + "\n" for s in self.tokens),
                              encoding="utf-8")


def split_target(sequences: Sequence[Sequence[str]], words: int, eval_words: int | None = None
                 ) -> tuple[list[list[str]], list[list[str]]]:
    """Cut the target into the personalisation words and the evaluation words.

    The first ``words`` words of the target and the next ``eval_words``, each as a list of
    sequences. A line cut by a boundary contributes its two parts as separate sequences.

    Parameters
    ----------
    sequences : sequence of sequence of str
        The target's token lists.
    words : int
        The number of personalisation words (fewer than the target has).
    eval_words : int or None, default=None
        The number of evaluation words; None: the rest, at most :data:`EVAL_WORDS_CAP`.

    Returns
    -------
    personalisation : list of list of str
        The first ``words`` words.
    evaluation : list of list of str
        The next ``eval_words`` words.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``words`` leaves no word to evaluate on, or an argument is not a positive
        integer (the messages name ``--words``, ``--eval-words``).

    Examples
    --------
    >>> from hiddenstate import personalize as pz
    >>> pz.split_target([["a", "b", "c"], ["d", "e"]], words=2, eval_words=2)
    ([['a', 'b']], [['c'], ['d']])
    """
    _check_int(words, "--words", 1)
    total = sum(len(s) for s in sequences)
    if total <= words:
        raise InvalidInputError(
            f"--words: the target has only {total} words, so {words} personalisation words "
            f"leave none to evaluate on; pass --words below {total} (e.g. "
            f"{max(1, (2 * total) // 3)}) or a longer --target")
    if eval_words is None:
        eval_words = min(total - words, EVAL_WORDS_CAP)
    _check_int(eval_words, "--eval-words", 1)
    eval_words = min(eval_words, total - words)
    first: list[list[str]] = []
    second: list[list[str]] = []
    seen = 0
    end = words + eval_words
    for s in sequences:
        a, b = seen, seen + len(s)
        seen = b
        if a < words:
            first.append(list(s[: min(b, words) - a]))
        lo, hi = max(a, words), min(b, end)
        if lo < hi:
            second.append(list(s[lo - a: hi - a]))
        if seen >= end:
            break
    return [s for s in first if s], second


# --------------------------------------------------------------------------- models


def _check_int(value, option: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise InvalidInputError(f"{option}: expected an integer >= {minimum}, got {value!r}")
    return int(value)


def require_torch(option: str = "--source lstm") -> None:
    """Raise a clear error when torch (needed by the LSTM source) is missing.

    Parameters
    ----------
    option : str, default="--source lstm"
        The command-line option the error names.

    Raises
    ------
    hiddenstate.errors.HiddenStateError
        If torch is not installed.

    Examples
    --------
    >>> from hiddenstate import personalize as pz
    >>> pz.require_torch()  # doctest: +SKIP
    """
    if importlib.util.find_spec("torch") is None:
        raise HiddenStateError(
            f"{option}: the LSTM source needs PyTorch, which is not installed; "
            "pip install 'hiddenstate[torch]', or use --source ngram")


def train_source(kind: str, X: np.ndarray, lengths: np.ndarray,
                 vocabulary: textio.Vocabulary, order: int = 3, seed: int = 0,
                 progress: Progress | None = None, options: dict | None = None) -> Source:
    r"""Train the black box on the encoded reference.

    Parameters
    ----------
    kind : {"ngram", "lstm"}
        An interpolated Kneser-Ney model of order ``order``, or an
        :class:`~hiddenstate.sources.LSTMSource` (the torch extra) seeded with ``seed``.
    X : ndarray of int64
        The reference's symbol ids.
    lengths : ndarray of int64
        The length of each reference sequence.
    vocabulary : hiddenstate.textio.Vocabulary
        The vocabulary of the ids (saved with the source).
    order : int, default=3
        The n-gram order.
    seed : int, default=0
        The LSTM's random seed.
    progress : callable or None, default=None
        ``progress(stage, done, total, value)``, called as the work advances (see the module
        docstring).
    options : dict or None, default=None
        Keyword arguments of the source's constructor.

    Returns
    -------
    hiddenstate.sources.Source
        The trained source.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``kind`` or ``order`` is invalid.
    hiddenstate.errors.HiddenStateError
        If ``kind="lstm"`` and torch is not installed.

    Examples
    --------
    >>> from pathlib import Path
    >>> from hiddenstate import personalize as pz
    >>> reference_text = "the cat sat on the mat\nthe dog sat on the rug\n"
    >>> _ = Path("reference.txt").write_text(reference_text * 30)
    >>> _ = Path("target.txt").write_text("my cat sat on my mat\nmy dog ran\n" * 30)
    >>> reference = pz.read_tokens("reference.txt")
    >>> vocabulary = pz.build_vocabulary(reference)
    >>> ref = pz.Stream.encode(reference, vocabulary)
    >>> pz.train_source("ngram", ref.X, ref.lengths, vocabulary, order=2).describe()
    '2-gram interpolated Kneser-Ney (W=8)'
    """
    if kind == "ngram":
        _check_int(order, "--order", 1)
        return KneserNeySource(order=order, **(options or {})).fit(
            X, lengths, vocabulary=vocabulary)
    if kind == "lstm":
        require_torch()
        from .sources.lstm import LSTMSource

        src = LSTMSource(random_state=seed, **(options or {}))
        epochs = src.epochs
        callback = None
        if progress is not None:
            progress("source", 0, epochs, math.nan)

            def callback(epoch: int, loss: float) -> None:
                progress("source", epoch, epochs, loss)
        return src.fit(X, lengths, vocabulary=vocabulary, callback=callback)
    raise InvalidInputError(f"--source: expected one of {SOURCES}, got {kind!r}")


def _chunks(lengths: np.ndarray, chunk: int):
    """``(a, b, piece_lengths, continues)`` for consecutive word ranges ``[a, b)`` of about
    ``chunk`` words; ``continues``: the range starts inside a sequence."""
    bounds = np.concatenate(([0], np.cumsum(lengths)))
    n = int(bounds[-1])
    starts = set(bounds[:-1].tolist())
    a = 0
    while a < n:
        b = min(n, a + chunk)
        inner = bounds[(bounds > a) & (bounds < b)]
        cuts = np.concatenate(([a], inner, [b]))
        yield a, b, np.diff(cuts).astype(np.int64), a > 0 and a not in starts
        a = b


def stream_fit(model, stream: Stream, chunk: int | None = None, progress: Progress | None = None,
               stage: str = "props") -> np.ndarray:
    r"""Feed a stream to a streaming (online-EM) model in chunks.

    ``partial_fit`` in chunks of ``chunk`` words, continuing sequences across chunk
    boundaries, so the result equals one call.

    Parameters
    ----------
    model : hiddenstate.HMM or hiddenstate.PROPS
        A model with ``learn="online-em"``.
    stream : Stream
        The words to learn from.
    chunk : int or None, default=None
        The words per call; None: a twentieth of the stream, at least 50.
    progress : callable or None, default=None
        ``progress(stage, done, total, value)``, called as the work advances (see the module
        docstring).
    stage : str, default="props"
        The stage name ``progress`` is called with.

    Returns
    -------
    ndarray of shape (n_words,)
        The prequential log-probability of every word (the chunks' ``stream_log_prob_``
        joined).

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``chunk`` is invalid or the model is not a streaming learner.

    Examples
    --------
    >>> from pathlib import Path
    >>> from hiddenstate import personalize as pz
    >>> reference_text = "the cat sat on the mat\nthe dog sat on the rug\n"
    >>> _ = Path("reference.txt").write_text(reference_text * 30)
    >>> _ = Path("target.txt").write_text("my cat sat on my mat\nmy dog ran\n" * 30)
    >>> import hiddenstate as hs
    >>> reference = pz.read_tokens("reference.txt")
    >>> vocabulary = pz.build_vocabulary(reference)
    >>> ref = pz.Stream.encode(reference, vocabulary)
    >>> source = pz.train_source("ngram", ref.X, ref.lengths, vocabulary, order=2)
    >>> first, second = pz.split_target(pz.read_tokens("target.txt"), words=200, eval_words=50)
    >>> personalisation = pz.Stream.encode(first, vocabulary)
    >>> evaluation = pz.Stream.encode(second, vocabulary)
    >>> props = hs.PROPS([source], n_perturbation_states=1, random_state=0)
    >>> curve = pz.stream_fit(props, personalisation, chunk=50)
    >>> curve.shape
    (200,)
    """
    n = len(stream)
    chunk = max(50, -(-n // 20)) if chunk is None else _check_int(chunk, "chunk", 1)
    out = np.empty(n)
    if progress is not None:
        progress(stage, 0, n, math.nan)
    for a, b, pieces, continues in _chunks(stream.lengths, chunk):
        model.partial_fit(stream.X[a:b], pieces, continues=continues)
        out[a:b] = model.stream_log_prob_
        if progress is not None:
            seen = out[:b][stream.observed[:b]]
            progress(stage, b, n, float(np.mean(seen)) if len(seen) else math.nan)
    return out


def predictive_summary(log_prob: np.ndarray, observed: np.ndarray | None = None) -> dict:
    """Summarise per-word log-probabilities.

    Parameters
    ----------
    log_prob : array-like of float
        The log-probability of every word.
    observed : array-like of bool or None, default=None
        Whether each word is observed: the numbers are over the observed words only (a
        missing word is predicted with probability 1 and would flatter every number).

    Returns
    -------
    dict
        ``n_words``, ``mean_prob`` (the mean of p), ``mean_log_prob`` and ``perplexity``
        (exp of minus the mean log p).

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate import personalize as pz
    >>> summary = pz.predictive_summary(np.log([0.5, 0.25, 1.0]), observed=[True, True, False])
    >>> summary["n_words"], summary["mean_prob"], round(summary["perplexity"], 4)
    (2, 0.375, 2.8284)
    """
    lp = np.asarray(log_prob, dtype=np.float64)
    if observed is not None:
        lp = lp[np.asarray(observed, dtype=bool)]
    mean_lp = float(lp.mean()) if lp.size else math.nan
    return {"n_words": int(lp.size), "mean_prob": float(np.exp(lp).mean()) if lp.size
            else math.nan, "mean_log_prob": mean_lp,
            "perplexity": math.exp(-mean_lp) if -mean_lp < 709 else math.inf}


@dataclass
class Evaluation:
    r"""Per-word outputs on the evaluation words (models frozen).

    Parameters
    ----------
    props_log_prob : ndarray of shape (n_words,)
        PROPS's predictive log-probability of each word.
    hmm_log_prob : ndarray of shape (n_words,)
        The streaming HMM's.
    source_log_prob : ndarray of shape (n_words,)
        The black box's alone.
    membership_log_odds : ndarray of shape (n_words,)
        PROPS's log-odds that the word comes from a perturbation state.
    perturbation_prob : ndarray of shape (n_words,)
        :math:`p_t = P(z_t \in K_p \mid y_{\le t})`.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.personalize import Evaluation
    >>> scores = Evaluation(*(np.zeros(3) for _ in range(5)))
    >>> scores.props_log_prob.shape
    (3,)
    """

    props_log_prob: np.ndarray
    hmm_log_prob: np.ndarray
    source_log_prob: np.ndarray
    membership_log_odds: np.ndarray
    perturbation_prob: np.ndarray  # p_t = P(z_t in perturbation states | y_<=t)


def evaluate(props: PROPS, hmm: HMM, stream: Stream) -> Evaluation:
    r"""Score the evaluation words with PROPS and the HMM frozen, and with the black box alone.

    ``score_tokens`` of both models; the membership log-odds from PROPS's filtered
    posteriors (as in :meth:`hiddenstate.PROPS.token_scores`); the black box is PROPS's
    first source.

    Parameters
    ----------
    props : hiddenstate.PROPS
        The personalised PROPS model.
    hmm : hiddenstate.HMM
        The streaming HMM.
    stream : Stream
        The evaluation words.

    Returns
    -------
    Evaluation
        The per-word outputs.

    Raises
    ------
    NotFittedError
        If a model is not fitted.

    Examples
    --------
    >>> from pathlib import Path
    >>> from hiddenstate import personalize as pz
    >>> reference_text = "the cat sat on the mat\nthe dog sat on the rug\n"
    >>> _ = Path("reference.txt").write_text(reference_text * 30)
    >>> _ = Path("target.txt").write_text("my cat sat on my mat\nmy dog ran\n" * 30)
    >>> import hiddenstate as hs
    >>> reference = pz.read_tokens("reference.txt")
    >>> vocabulary = pz.build_vocabulary(reference)
    >>> ref = pz.Stream.encode(reference, vocabulary)
    >>> source = pz.train_source("ngram", ref.X, ref.lengths, vocabulary, order=2)
    >>> first, second = pz.split_target(pz.read_tokens("target.txt"), words=200, eval_words=50)
    >>> personalisation = pz.Stream.encode(first, vocabulary)
    >>> evaluation = pz.Stream.encode(second, vocabulary)
    >>> props = hs.PROPS([source], n_perturbation_states=1, random_state=0)
    >>> _ = pz.stream_fit(props, personalisation)
    >>> hmm = hs.HMM(n_states=2, n_features=len(vocabulary), learn="online-em", random_state=0)
    >>> _ = pz.stream_fit(hmm, personalisation, stage="hmm")
    >>> scores = pz.evaluate(props, hmm, evaluation)
    >>> bool(scores.props_log_prob.mean() > scores.source_log_prob.mean())
    True
    """
    X, lengths = stream.X, stream.lengths
    filtered = props.filter_proba(X, lengths)
    return Evaluation(props.score_tokens(X, lengths), hmm.score_tokens(X, lengths),
                      sequence_log_probs(props.sources[0], X, lengths),
                      perturbation_log_odds(filtered, props.n_sources),
                      filtered[:, props.n_sources:].sum(axis=1))


# --------------------------------------------------------------------------- the pipeline


@dataclass
class PersonalizeResult:
    r"""Everything :func:`personalize` computed.

    Parameters
    ----------
    summary : dict
        What ``summary.json`` holds.
    out : pathlib.Path
        The output directory.
    vocabulary : hiddenstate.textio.Vocabulary
        The vocabulary.
    source : hiddenstate.sources.Source
        The black box.
    props : hiddenstate.PROPS
        The personalised PROPS model.
    hmm : hiddenstate.HMM
        The streaming HMM.
    personalisation : Stream
        The personalisation words.
    evaluation : Stream
        The evaluation words.
    curves : dict of str to ndarray
        The prequential log-probabilities on the personalisation stream (``"props"``,
        ``"hmm"``, ``"black_box"``).
    scores : Evaluation
        The per-word outputs on the evaluation words.
    index : pathlib.Path or None, default=None
        ``index.html``, once a report writer has set it.
    seconds : dict of str to float, default={}
        The time of each stage.

    Examples
    --------
    >>> from pathlib import Path
    >>> from hiddenstate import personalize as pz
    >>> reference_text = "the cat sat on the mat\nthe dog sat on the rug\n"
    >>> _ = Path("reference.txt").write_text(reference_text * 30)
    >>> _ = Path("target.txt").write_text("my cat sat on my mat\nmy dog ran\n" * 30)
    >>> result = pz.personalize("reference.txt", "target.txt", "out", words=200, eval_words=50)
    >>> sorted(result.curves), len(result.personalisation), len(result.evaluation)
    (['black_box', 'hmm', 'props'], 200, 50)
    """

    summary: dict
    out: Path
    vocabulary: textio.Vocabulary
    source: Source
    props: PROPS
    hmm: HMM
    personalisation: Stream
    evaluation: Stream
    curves: dict[str, np.ndarray]  # prequential log-probs on the personalisation stream
    scores: Evaluation
    index: Path | None = None  # index.html, once a report writer has set it
    seconds: dict[str, float] = field(default_factory=dict)


def _unk_share(stream: Stream, vocabulary: textio.Vocabulary) -> float:
    """The share of ``<unk>`` among the observed words."""
    seen = stream.X[stream.observed]
    return float(np.mean(seen == vocabulary.unk_id)) if len(seen) else 0.0


def personalize(reference=None, target=None, out=None, *, words: int = 2000,
                eval_words: int | None = None, source: str = "ngram", order: int = 3,
                load_source_dir=None, vocab_size: int = 10000, perturbation_states: int = 2,
                hmm_states: int = 3, seed: int = 0, lowercase: bool = True,
                progress: Progress | None = None, report: bool | None = None,
                source_options: dict | None = None, chunk: int | None = None,
                n_report_words: int | None = None, encoding: str = "utf-8",
                missing_token: str | None = None) -> PersonalizeResult:
    r"""Run the whole pipeline (see the module docstring) and write its files to ``out``.

    The HTML report is not written here: pass the result to
    :func:`hiddenstate.report.personalize.write_personalize_report`. Errors name the
    command-line option to fix (``--words``, ``--target``, ...).

    Parameters
    ----------
    reference : str, os.PathLike or None, default=None
        The reference corpus (a text file) the black box is trained on; may be None with
        ``load_source_dir``.
    target : str or os.PathLike
        The user's text file.
    out : str or os.PathLike
        The output directory.
    words : int, default=2000
        The number of personalisation words.
    eval_words : int or None, default=None
        The number of evaluation words; None: the rest, at most :data:`EVAL_WORDS_CAP`.
    source : {"ngram", "lstm"}, default="ngram"
        The black box to train.
    order : int, default=3
        The n-gram order.
    load_source_dir : str, os.PathLike or None, default=None
        Reuse a saved source (its vocabulary then replaces the one built from
        ``reference``).
    vocab_size : int, default=10000
        The largest vocabulary size.
    perturbation_states : int, default=2
        PROPS's learned states.
    hmm_states : int, default=3
        The streaming HMM's states.
    seed : int, default=0
        The random seed of every model.
    lowercase : bool, default=True
        Lower-case both texts.
    progress : callable or None, default=None
        ``progress(stage, done, total, value)``, called as the work advances (see the module
        docstring).
    report : bool or None, default=None
        Deprecated (removed after 0.2): ``False`` is ignored with a ``FutureWarning``,
        ``True`` raises an error that says what to call instead.
    source_options : dict or None, default=None
        Keyword arguments of the source's constructor.
    chunk : int or None, default=None
        The words per ``partial_fit`` call (see :func:`stream_fit`).
    n_report_words : int or None, default=None
        Deprecated and ignored (with a ``FutureWarning``).
    encoding : str, default="utf-8"
        Both texts' encoding.
    missing_token : str or None, default=None
        A token that marks missing words in the target (lower-cased with the text; see the
        module docstring).

    Returns
    -------
    PersonalizeResult
        Everything computed; ``out`` holds ``summary.json``, the models (``props``, ``hmm``,
        ``source``; :func:`hiddenstate.load` reads them back), ``vocabulary.json`` and the
        two token streams as text.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If an argument or a file is invalid; the message names the option to fix.
    hiddenstate.errors.ModelFileError
        If ``load_source_dir`` does not hold a saved source.

    Examples
    --------
    >>> from pathlib import Path
    >>> from hiddenstate import personalize as pz
    >>> reference_text = "the cat sat on the mat\nthe dog sat on the rug\n"
    >>> _ = Path("reference.txt").write_text(reference_text * 30)
    >>> _ = Path("target.txt").write_text("my cat sat on my mat\nmy dog ran\n" * 30)
    >>> result = pz.personalize("reference.txt", "target.txt", "out", words=200, eval_words=50,
    ...                         order=2, perturbation_states=1, hmm_states=2)
    >>> sorted(path.name for path in Path("out").iterdir())  # doctest: +NORMALIZE_WHITESPACE
    ['evaluation.txt', 'hmm', 'personalisation.txt', 'props', 'source', 'summary.json',
     'vocabulary.json']
    >>> models = result.summary["models"]
    >>> perplexity = {name: model["evaluation"]["perplexity"] for name, model in models.items()}
    >>> perplexity["props"] < perplexity["black_box"]
    True
    """
    _check_report_args(report, n_report_words)
    times: dict[str, float] = {}
    t0 = time.perf_counter()
    if source not in SOURCES:
        raise InvalidInputError(f"--source: expected one of {SOURCES}, got {source!r}")
    for value, option, minimum in ((words, "--words", 1), (order, "--order", 1),
                                   (vocab_size, "--vocab-size", 2),
                                   (perturbation_states, "--perturbation-states", 1),
                                   (hmm_states, "--hmm-states", 1)):
        _check_int(value, option, minimum)
    if eval_words is not None:
        _check_int(eval_words, "--eval-words", 1)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InvalidInputError(f"--seed: expected an integer >= 0, got {seed!r}")
    if missing_token is not None and (not isinstance(missing_token, str) or not missing_token
                                      or any(c.isspace() for c in missing_token)):
        raise InvalidInputError(
            f"--missing-token: expected one token (a non-empty string without spaces), got "
            f"{missing_token!r}")
    if missing_token is not None and lowercase:
        missing_token = missing_token.lower()
    if target is None:
        raise InvalidInputError("--target: pass the user's text file")
    if out is None:
        raise InvalidInputError("--out: pass the output directory")
    if load_source_dir is None and reference is None:
        raise InvalidInputError(
            "--reference: pass the reference corpus the black box is trained on (or "
            "--load-source DIR to reuse a saved source)")
    if source == "lstm" and load_source_dir is None:
        require_torch()

    textio.check_encoding(encoding)
    target_seqs = read_tokens(target, lowercase, "--target", encoding)
    first, second = split_target(target_seqs, words, eval_words)

    # -- vocabulary and black box
    ref_X = ref_lengths = None
    ref_words = None
    if load_source_dir is not None:
        src = _load_source(load_source_dir)
        vocabulary = src.vocabulary
        source_kind = {"KneserNeySource": "ngram", "LSTMSource": "lstm"}.get(
            type(src).__name__, type(src).__name__)
    else:
        ref_seqs = read_tokens(reference, lowercase, "--reference", encoding)
        vocabulary = build_vocabulary(ref_seqs, vocab_size)
        ref = Stream.encode(ref_seqs, vocabulary)
        ref_X, ref_lengths, ref_words = ref.X, ref.lengths, len(ref)
        times["read"] = time.perf_counter() - t0
        t = time.perf_counter()
        src = train_source(source, ref_X, ref_lengths, vocabulary, order, seed, progress,
                           source_options)
        source_kind = source
        times["source"] = time.perf_counter() - t

    pers = Stream.encode(first, vocabulary, missing_token)
    evs = Stream.encode(second, vocabulary, missing_token)
    W = len(vocabulary)

    # -- personalise PROPS, stream the HMM
    t = time.perf_counter()
    props = PROPS([src], n_perturbation_states=perturbation_states, learn="online-em",
                  random_state=seed)
    props_curve = stream_fit(props, pers, chunk, progress, "props")
    times["props"] = time.perf_counter() - t
    t = time.perf_counter()
    hmm = HMM(n_states=hmm_states, emission="categorical", n_features=W, learn="online-em",
              random_state=seed)
    hmm_curve = stream_fit(hmm, pers, chunk, progress, "hmm")
    times["hmm"] = time.perf_counter() - t
    source_curve = sequence_log_probs(src, pers.X, pers.lengths)

    # -- evaluate, frozen
    t = time.perf_counter()
    scores = evaluate(props, hmm, evs)
    if progress is not None:
        progress("evaluate", 1, 1, float(np.mean(scores.props_log_prob[evs.observed])))
    times["evaluate"] = time.perf_counter() - t

    # -- save
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    src.save(out / "source")
    props.save(out / "props")
    hmm.save(out / "hmm")
    vocabulary.save(out / "vocabulary.json")
    pers.write(out / "personalisation.txt")
    evs.write(out / "evaluation.txt")

    summary = _summary(
        reference=reference, target=target, load_source_dir=load_source_dir,
        source_kind=source_kind, src=src, vocabulary=vocabulary, ref_words=ref_words,
        ref_X=ref_X, pers=pers, evs=evs, props=props, hmm=hmm, scores=scores,
        curves={"props": props_curve, "hmm": hmm_curve, "black_box": source_curve},
        settings={"words": words, "eval_words": len(evs), "source": source_kind,
                  "order": order if source_kind == "ngram" else None,
                  "load_source": None if load_source_dir is None else str(load_source_dir),
                  "vocab_size": vocab_size, "perturbation_states": perturbation_states,
                  "hmm_states": hmm_states, "seed": seed, "lowercase": lowercase,
                  "missing_token": missing_token})
    result = PersonalizeResult(summary, out, vocabulary, src, props, hmm, pers, evs,
                               {"props": props_curve, "hmm": hmm_curve,
                                "black_box": source_curve}, scores, seconds=times)
    times["total"] = time.perf_counter() - t0
    summary["seconds"] = {k: round(v, 3) for k, v in times.items()}
    (out / "summary.json").write_text(
        json.dumps(_finite(summary), indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return result


def _check_report_args(report, n_report_words) -> None:
    """The deprecated ``report`` / ``n_report_words`` arguments (see :func:`personalize`)."""
    if report:
        raise InvalidInputError(
            "report: personalize() no longer writes the HTML report (the pipeline returns "
            "its result); drop report=True and call hiddenstate.report.personalize."
            "write_personalize_report(result, result.out) (the command line and the demo do)")
    for value, name in ((report, "report"), (n_report_words, "n_report_words")):
        if value is not None:
            warnings.warn(
                f"{name}: deprecated and ignored (personalize() writes no report); drop it, "
                "and pass n_words= to hiddenstate.report.personalize.write_personalize_report",
                FutureWarning, stacklevel=3)


def _load_source(path) -> Source:
    p = Path(path)
    if not p.is_dir():
        raise InvalidInputError(
            f"--load-source: {p} is not a directory; pass a directory written by "
            "`hiddenstate personalize` (its source/) or by a source's save()")
    try:
        src = load_source(p)
    except ModelFileError as exc:
        raise ModelFileError(
            f"--load-source: {exc}; pass the source/ directory of an earlier `hiddenstate "
            "personalize` run (or a directory written by a source's save())") from exc
    if src.vocabulary is None:
        raise InvalidInputError(
            f"--load-source: the source in {p} has no vocabulary, so target words cannot be "
            "mapped to its symbols; train it with a vocabulary (or drop --load-source)")
    return src


def _finite(obj):
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def _summary(*, reference, target, load_source_dir, source_kind, src, vocabulary, ref_words,
             ref_X, pers, evs, props, hmm, scores, curves, settings) -> dict:
    Ks = props.n_sources
    pert_top = top_symbols(props.emissionprob_, vocabulary, 10)
    odds = scores.membership_log_odds
    models = {
        "props": {
            "label": f"PROPS ({Ks} source + {props.n_perturbation_states} perturbation states)",
            "personalisation": predictive_summary(curves["props"], pers.observed),
            "evaluation": predictive_summary(scores.props_log_prob, evs.observed),
            "startprob": props.startprob_.tolist(),
            "transmat": props.transmat_.tolist(),
            "state_names": ["source"] + [f"perturbation {k + 1}"
                                         for k in range(props.n_perturbation_states)],
            "top_symbols": [[[w, p] for w, p in row] for row in pert_top],
        },
        "hmm": {
            "label": f"streaming HMM ({hmm.n_states} states)",
            "personalisation": predictive_summary(curves["hmm"], pers.observed),
            "evaluation": predictive_summary(scores.hmm_log_prob, evs.observed),
            "transmat": hmm.transmat_.tolist(),
            # the evaluation words it never saw while learning (what makes it weak)
            "unseen_share": _unseen_share(pers, evs, len(vocabulary)),
        },
        "black_box": {
            "label": f"black box alone ({src.describe()})",
            "personalisation": predictive_summary(curves["black_box"], pers.observed),
            "evaluation": predictive_summary(scores.source_log_prob, evs.observed),
        },
    }
    return {
        "format": SUMMARY_FORMAT, "version": 1,
        "reference": None if reference is None else str(reference),
        "target": str(target),
        "settings": settings,
        "source": {"kind": source_kind, "description": src.describe(),
                   "trained_on_words": ref_words,
                   "loaded_from": None if load_source_dir is None else str(load_source_dir)},
        "vocabulary": {
            "size": len(vocabulary), "built_from": "reference" if ref_X is not None
            else "the loaded source",
            "unk_token": vocabulary.unk_token,
            "reference_unk_share": None if ref_X is None
            else float(np.mean(ref_X == vocabulary.unk_id)),
            "personalisation_unk_share": _unk_share(pers, vocabulary),
            "evaluation_unk_share": _unk_share(evs, vocabulary),
        },
        "n_personalisation_words": len(pers),
        "n_evaluation_words": len(evs),
        "n_personalisation_missing": int(np.count_nonzero(~pers.observed)),
        "n_evaluation_missing": int(np.count_nonzero(~evs.observed)),
        "n_personalisation_sequences": len(pers.lengths),
        "n_evaluation_sequences": len(evs.lengths),
        "models": models,
        "membership": {  # over the observed evaluation words
            "mean_perturbation_prob": float(np.mean(scores.perturbation_prob[evs.observed])),
            "share_words_perturbation": float(np.mean(
                scores.perturbation_prob[evs.observed] > 0.5)),
            "median_log_odds": float(np.median(odds[evs.observed])),
        },
    }


def _unseen_share(pers: Stream, evs: Stream, W: int) -> float:
    """The share of the observed evaluation words whose symbol never occurs among the
    observed personalisation words."""
    seen = np.zeros(W, dtype=bool)
    seen[pers.X[pers.observed]] = True
    ev = evs.X[evs.observed]
    return float(np.mean(~seen[ev])) if len(ev) else 0.0


def hmm_baseline_note(summary: dict, always: bool = True) -> str | None:
    r"""Explain the streaming HMM's evaluation score.

    The report's note; the CLI's table prints it when the perplexity exceeds the vocabulary
    size. The baseline HMM learns its emissions from the personalisation words alone, by
    online EM whose prior adds :data:`~hiddenstate.learn.online.online_em.PRIOR_MASS` (1e-6)
    pseudo-observations per row: an evaluation word it never saw there gets almost no
    probability. A perplexity above the vocabulary size W is worse than a uniform guess over
    the W symbols (whose perplexity is W); PROPS predicts such words through its black box.

    Parameters
    ----------
    summary : dict
        The summary (:attr:`PersonalizeResult.summary`).
    always : bool, default=True
        Give the note whatever the perplexity; False: only when it exceeds the vocabulary
        size.

    Returns
    -------
    str or None
        The note; None when there is nothing to say (or the summary predates
        ``unseen_share``).

    Examples
    --------
    >>> from hiddenstate import personalize as pz
    >>> summary = {"n_personalisation_words": 2000, "vocabulary": {"size": 10000},
    ...            "models": {"hmm": {"unseen_share": 0.31,
    ...                               "evaluation": {"perplexity": 47086.0}}}}
    >>> print(pz.hmm_baseline_note(summary, always=False))  # doctest: +NORMALIZE_WHITESPACE
    The streaming HMM learns its emissions from the 2,000 personalisation words alone:
    31.0% of the evaluation words never occur there and get almost no probability (online
    EM's prior adds 1e-06 pseudo-observations per row), so its evaluation perplexity
    (47086.0) is above the vocabulary size (10,000), worse than a uniform guess. It is the
    baseline without a black box; PROPS predicts those words through its black box.
    """
    from .learn.online.online_em import PRIOR_MASS

    hmm = summary["models"]["hmm"]
    share = hmm.get("unseen_share")
    if share is None:
        return None
    W = summary["vocabulary"]["size"]
    ppl = hmm["evaluation"]["perplexity"]
    above = ppl is None or not math.isfinite(ppl) or ppl > W
    if not (always or above):
        return None
    text = (f"The streaming HMM learns its emissions from the "
            f"{summary['n_personalisation_words']:,} personalisation words alone: "
            f"{share:.1%} of the evaluation words never occur there and get almost no "
            f"probability (online EM's prior adds {PRIOR_MASS:g} pseudo-observations per row)")
    if above:
        text += (f", so its evaluation perplexity ({format_perplexity(ppl)}) is above the "
                 f"vocabulary size ({W:,}), worse than a uniform guess")
    return text + (". It is the baseline without a black box; PROPS predicts those words "
                   "through its black box.")


def format_summary_table(summary: dict) -> str:
    r"""Format a summary as a plain-text table (what the CLI and the demo print).

    Parameters
    ----------
    summary : dict
        The summary (:attr:`PersonalizeResult.summary`, or ``summary.json`` read back).

    Returns
    -------
    str
        The table: mean predictive probability and perplexity of each model on the
        personalisation and the evaluation words.

    Examples
    --------
    >>> from pathlib import Path
    >>> from hiddenstate import personalize as pz
    >>> reference_text = "the cat sat on the mat\nthe dog sat on the rug\n"
    >>> _ = Path("reference.txt").write_text(reference_text * 30)
    >>> _ = Path("target.txt").write_text("my cat sat on my mat\nmy dog ran\n" * 30)
    >>> result = pz.personalize("reference.txt", "target.txt", "out", words=200, eval_words=50,
    ...                         order=2, perturbation_states=1, hmm_states=2)
    >>> print(pz.format_summary_table(result.summary))  # doctest: +NORMALIZE_WHITESPACE
                                       personalisation (200 words)       evaluation (50 words)
    model                               mean P(word)    perplexity  mean P(word)    perplexity
    PROPS                                     0.3189           4.1        0.3622           3.8
    HMM (streaming)                           0.2450           5.8        0.2970           4.2
    black box                                 0.2526          61.3        0.2512          65.1
    """
    n_p, n_e = summary["n_personalisation_words"], summary["n_evaluation_words"]
    head1 = f"{'':34}{'personalisation (' + str(n_p) + ' words)':>28}" \
            f"{'evaluation (' + str(n_e) + ' words)':>28}"
    head2 = f"{'model':34}{'mean P(word)':>14}{'perplexity':>14}{'mean P(word)':>14}" \
            f"{'perplexity':>14}"
    lines = [head1, head2]
    for key in ("props", "hmm", "black_box"):
        m = summary["models"][key]
        name = {"props": "PROPS", "hmm": "HMM (streaming)", "black_box": "black box"}[key]
        cells = []
        for part in ("personalisation", "evaluation"):
            s = m[part]
            cells.append(f"{s['mean_prob']:>14.4f}{format_perplexity(s['perplexity']):>14}")
        lines.append(f"{name:34}" + "".join(cells))
    note = hmm_baseline_note(summary, always=False)
    if note is not None:
        lines += ["", textwrap.fill(note, 90)]
    return "\n".join(lines)


def format_perplexity(value) -> str:
    """A perplexity with one decimal ("inf" for an infinite or missing one)."""
    return "inf" if value is None or not math.isfinite(value) else f"{value:.1f}"
