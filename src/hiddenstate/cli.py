"""The ``hiddenstate`` command line: ``fit``, ``score``, ``decode``, ``sample``, ``report``,
``personalize`` and ``lm`` (HMM language models, :mod:`hiddenstate.cli_lm`).

Every subcommand reads input through :mod:`hiddenstate.textio`. A model directory written by
``fit`` (or :func:`save_model_dir`) holds the model (``hiddenstate.load`` reads it),
``cli.json`` (how the model's input is encoded: the input format, the emission family, the
number of symbols or features, and the vocabulary's checksum) and, for text models,
``vocabulary.json``. ``score``, ``decode``, ``sample`` and ``report`` refuse a directory
whose ``cli.json`` is missing or disagrees with the model or the vocabulary, and input in a
format the model was not trained on.

Errors that the user can fix (a :class:`~hiddenstate.errors.HiddenStateError`) are printed
as one line on stderr and exit with status 2, like argparse's own usage errors.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import os
import re
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from . import textio
from ._bundle import peek
from ._outdir import OutputError, Staged, stage
from ._validation import check_memory
from .errors import HiddenStateError, InvalidInputError, ModelFileError, ZeroProbabilityError
from .learn import MODES
from .progress import FitProgress

#: the objective's name on the progress bar, per learning mode
SHORT_OBJECTIVES = {"em": "log-lik", "map": "log-post", "vb": "ELBO", "vt": "log p(X,z*)",
                    "kvt": "k-best", "gibbs": "log p(X,z,θ)"}

PROG = "hiddenstate"
META_FILE = "cli.json"
VOCAB_FILE = "vocabulary.json"
_META_FORMAT = "hiddenstate.cli"
#: the version of ``cli.json`` written (version 1, which has no checksums, is still read)
_META_VERSION = 2


# --------------------------------------------------------------------------- argument types


def _int_at_least(minimum: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {value}")
        return value

    return parse


def _finite_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if math.isnan(value):
        raise argparse.ArgumentTypeError("expected a number, got nan")
    return value


def _column_list(text: str) -> list[str]:
    names = [c.strip() for c in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(
            f"expected comma-separated column names or positions, got {text!r}")
    return names


def _encoding(text: str) -> str:
    try:
        return textio.check_encoding(text)
    except InvalidInputError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("encoding: ")) from None


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors on one line: ``hiddenstate fit: error: argument
    --n-states: ...; see `hiddenstate fit --help```, exit status 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}; see `{self.prog} --help`\n")


def build_parser() -> argparse.ArgumentParser:
    """Build the parser of the ``hiddenstate`` command and its subcommands.

    ``fit``, ``score``, ``decode``, ``sample``, ``report`` and ``personalize`` (see
    ``docs/cli.md``); each subcommand's parser sets ``func``, the function that runs it.

    Returns
    -------
    argparse.ArgumentParser
        The parser; a usage error names the subcommand and points at its ``--help``.

    Examples
    --------
    >>> from hiddenstate import cli
    >>> args = cli.build_parser().parse_args(["fit", "corpus.txt", "--out", "model",
    ...                                       "--n-states", "3"])
    >>> args.command, args.input, args.out, args.n_states
    ('fit', 'corpus.txt', 'model', 3)
    """
    parser = _Parser(
        prog=PROG,
        description="Fit hidden Markov models to text, CSV or .npy data, then score, decode "
                    "and sample.",
    )
    from ._version import __version__

    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def add_input(p: argparse.ArgumentParser, with_lengths: bool = True) -> None:
        p.add_argument("input", metavar="INPUT",
                       help="data file ('-' reads text or CSV from stdin)")
        p.add_argument("--format", choices=textio.FORMATS, default=None,
                       help="input format (default: from the extension: .txt/.tokens -> text, "
                            ".csv -> csv, .npy -> npy; text for text models)")
        p.add_argument("--encoding", type=_encoding, default="utf-8",
                       help="encoding of text and CSV input, e.g. latin-1 or utf-16 (utf-8)")
        if with_lengths:
            p.add_argument("--lengths", metavar="FILE", default=None,
                           help="sequence lengths for CSV/npy input (.npy or integers in a "
                                "text file); CSV can instead separate sequences by blank lines")
        fitted = "" if p.prog.endswith(" fit") else "as the model was fitted, else "
        p.add_argument("--columns", metavar="COLS", type=_column_list, default=None,
                       help="CSV: the data columns, comma-separated header names or positions "
                            f"counted from 1 (default: {fitted}every column but the index)")
        p.add_argument("--index-column", metavar="COL", default=None,
                       help="CSV: a column of dates or row labels that is not data (default: "
                            f"{fitted}a column whose every cell is a date); reports plot the "
                            "series against it")

    def add_model(p: argparse.ArgumentParser) -> None:
        p.add_argument("--model", "-m", metavar="MODEL_DIR", required=True,
                       help="model directory written by `hiddenstate fit`")

    # fit
    p = sub.add_parser("fit", help="learn an HMM from data and save it",
                       description="Learn an HMM by EM and save it to a model directory.")
    add_input(p)
    p.add_argument("--out", "-o", metavar="MODEL_DIR", required=True,
                   help="folder to save the model in (created; an existing one is replaced "
                        "only with --overwrite)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing --out (and --report) folder written by an "
                        "earlier fit")
    p.add_argument("--n-states", type=_int_at_least(1), default=2, help="hidden states (2)")
    p.add_argument("--emission",
                   choices=("categorical", "gaussian", "poisson", "gmm", "multinomial"),
                   default=None,
                   help="emission family (default: categorical for text, gaussian otherwise); "
                   "gmm: a mixture of --n-mix Gaussians per state; multinomial: rows of "
                   "counts (see docs/families.md)")
    p.add_argument("--covariance-type", choices=("spherical", "diag", "full", "tied"),
                   default="diag", help="Gaussian and gmm covariance type (diag)")
    p.add_argument("--n-mix", type=_int_at_least(1), default=None,
                   help="mixture components per state, --emission gmm only (1)")
    p.add_argument("--n-trials", type=_int_at_least(1), default=None,
                   help="the total every row of counts must have, --emission multinomial "
                   "only (default: each row's own total)")
    p.add_argument("--duration", choices=("nonparametric", "poisson", "negative-binomial",
                                          "geometric"), default=None,
                   help="fit a hidden semi-Markov model (hs.HSMM) whose states last a number "
                        "of steps of this distribution (default: an HMM)")
    p.add_argument("--max-duration", type=_int_at_least(1), default=None, metavar="D",
                   help="with --duration: the longest segment (default: the longest sequence)")
    p.add_argument("--n-iter", type=_int_at_least(1), default=100,
                   help="maximum EM iterations (100)")
    p.add_argument("--learn", choices=MODES, default="em",
                   help="learning mode: em, map, vb (variational Bayes), vt (Viterbi "
                   "training) or kvt (k best paths); see docs/learning-modes.md (em)")
    p.add_argument("--k-best", type=_int_at_least(1), default=1,
                   help="paths per sequence for --learn kvt (1)")
    for name in ("startprob", "transmat", "emissionprob"):
        p.add_argument(f"--{name}-prior", type=_finite_float, default=None,
                       help=f"Dirichlet concentration of {name}_ rows (map/vb/vt/kvt)")
    p.add_argument("--tol", type=_finite_float, default=1e-4,
                   help="stop when the objective gains less than this per observation "
                   "(1e-4 nats; not for vt/kvt, which stop when the best paths stop changing)")
    p.add_argument("--n-init", type=_int_at_least(1), default=1,
                   help="random restarts; the best is kept (1)")
    p.add_argument("--random-state", type=_int_at_least(0), default=None,
                   help="seed (default: random)")
    p.add_argument("--max-vocab", type=_int_at_least(2), default=None,
                   help="text: keep this many symbols including <unk> (default: all)")
    p.add_argument("--min-count", type=_int_at_least(1), default=None,
                   help="text: words seen fewer times map to <unk>, which then stands for "
                        "every word not seen in training (3)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDRESS", default=None,
                       help="fit on the Dask cluster at ADDRESS (e.g. tcp://host:8786); "
                            "needs the dask extra")
    where.add_argument("--workers", type=_int_at_least(1), default=None, metavar="N",
                       help="fit on a local Dask cluster of N worker processes")
    p.add_argument("--partitions", type=_int_at_least(1), default=None, metavar="N",
                   help="with --scheduler/--workers: partitions of the data (one per worker)")
    p.add_argument("--report", metavar="REPORT_DIR", default=None,
                   help="also write an HTML report (index.html + PNGs) to this directory")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="show a progress bar on stderr (default: when stderr is a terminal)")
    p.set_defaults(func=cmd_fit)

    # score
    p = sub.add_parser("score", help="log-likelihood of data under a model",
                       description="Print the log-likelihood of every sequence and the total.")
    add_model(p)
    add_input(p)
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=cmd_score)

    # decode
    p = sub.add_parser("decode", help="most likely hidden states",
                       description="Print the decoded state sequence of every input sequence, "
                                   "one line per sequence.")
    add_model(p)
    add_input(p)
    p.add_argument("--algorithm", choices=("viterbi", "map"), default="viterbi",
                   help="viterbi: best joint path; map: per-step posterior argmax (viterbi)")
    p.add_argument("--tokens", action="store_true",
                   help="text models: print word/state pairs instead of states only")
    p.add_argument("--json", action="store_true", help="print JSON instead of lines")
    p.set_defaults(func=cmd_decode)

    # sample
    p = sub.add_parser("sample", help="draw sequences from a model",
                       description="Draw sequences from a model: text models print one line "
                                   "of words per sequence, numeric models CSV rows with a "
                                   "blank line between sequences.")
    add_model(p)
    p.add_argument("--n-samples", "-n", type=_int_at_least(1), default=20,
                   help="observations per sequence (20)")
    p.add_argument("--n-sequences", type=_int_at_least(1), default=1, help="sequences (1)")
    p.add_argument("--random-state", type=_int_at_least(0), default=None,
                   help="seed (default: random)")
    p.add_argument("--states", action="store_true",
                   help="also print the hidden states (text: word/state; numeric: a "
                        "'# states:' comment line before each sequence)")
    p.set_defaults(func=cmd_sample)

    # report
    p = sub.add_parser("report", help="HTML report of a saved model on some data",
                       description="Write index.html and PNG plots describing a model and "
                                   "its fit to INPUT.")
    add_model(p)
    add_input(p)
    p.add_argument("--out", "-o", metavar="REPORT_DIR", required=True,
                   help="folder to write the report in (created; an existing one is "
                        "replaced only with --overwrite)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing --out folder holding an earlier report")
    p.set_defaults(func=cmd_report)

    # personalize
    p = sub.add_parser(
        "personalize", help="personalise a black-box language model to a user's text (PROPS)",
        description="Train a black-box language model on REFERENCE (or load one), personalise "
                    "it with PROPS on the first --words words of TARGET, compare with a "
                    "streaming HMM and the black box alone on the next --eval-words words, and "
                    "write the models, summary.json and an HTML report to --out. Text files "
                    "hold one sequence per line (blank lines skipped); see docs/props.md.")
    p.add_argument("--reference", metavar="TEXT", default=None,
                   help="reference corpus the black box is trained on (not needed with "
                        "--load-source)")
    p.add_argument("--target", metavar="TEXT", required=True, help="the user's text")
    p.add_argument("--out", "-o", metavar="DIR", required=True,
                   help="output folder (created; an existing one is replaced only with "
                        "--overwrite)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing --out folder written by an earlier personalize")
    p.add_argument("--words", type=_int_at_least(1), default=2000,
                   help="personalisation words: the first N words of the target (2000)")
    p.add_argument("--eval-words", type=_int_at_least(1), default=None,
                   help="evaluation words after them (default: the rest of the target, at "
                        "most 20000)")
    p.add_argument("--source", choices=("ngram", "lstm"), default="ngram",
                   help="black box: interpolated Kneser-Ney n-gram model or an LSTM (needs "
                        "the torch extra) (ngram)")
    p.add_argument("--order", type=_int_at_least(1), default=3, help="n-gram order (3)")
    p.add_argument("--load-source", metavar="DIR", default=None,
                   help="reuse a saved source (e.g. OUT/source of an earlier run) instead of "
                        "training one; its vocabulary is used")
    p.add_argument("--vocab-size", type=_int_at_least(2), default=10000,
                   help="vocabulary size including <unk>, built from the reference; target "
                        "words outside it become <unk> (10000)")
    p.add_argument("--perturbation-states", type=_int_at_least(1), default=2,
                   help="learned PROPS states next to the source state (2)")
    p.add_argument("--hmm-states", type=_int_at_least(1), default=3,
                   help="states of the baseline streaming HMM (3: as many as PROPS)")
    p.add_argument("--seed", type=_int_at_least(0), default=0, help="random seed (0)")
    p.add_argument("--lowercase", action=argparse.BooleanOptionalAction, default=True,
                   help="lower-case both texts (default: yes)")
    p.add_argument("--encoding", type=_encoding, default="utf-8",
                   help="encoding of both texts, e.g. latin-1 (utf-8)")
    p.add_argument("--missing-token", metavar="TOKEN", default=None,
                   help="a token of the target that marks a missing word (none)")
    p.add_argument("--report", action=argparse.BooleanOptionalAction, default=True,
                   help="write index.html and its plots (default: yes; needs matplotlib)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="show a progress bar on stderr (default: when stderr is a terminal)")
    p.set_defaults(func=cmd_personalize)

    from . import cli_lm  # torch is imported only when an lm command runs
    cli_lm.add_parser(sub, _int_at_least, _finite_float)
    return parser


#: the Python names of the reader's arguments and the options that set them
_READER_OPTIONS = {"columns:": "--columns:", "index_column:": "--index-column:"}


def _read(path, fmt: str | None, args, **kwargs) -> textio.DataFile:
    """:func:`hiddenstate.textio.read_file` with the input options of ``args``; errors name
    the command-line option (``--columns``), not the Python argument."""
    try:
        return textio.read_file(path, fmt, lengths_path=args.lengths, encoding=args.encoding,
                                **kwargs)
    except InvalidInputError as exc:
        msg = str(exc)
        for py, flag in _READER_OPTIONS.items():
            if msg.startswith(py):
                raise InvalidInputError(flag + msg[len(py):]) from exc
        raise


def _symbols(data: textio.DataFile, emission: str) -> np.ndarray:
    """The data a model of ``emission`` reads: CSV numbers read by a categorical model are
    symbols, a missing cell (NaN) the missing symbol -1."""
    X = data.X
    if emission != "categorical" or X.dtype.kind != "f":
        return X
    missing = np.isnan(X)
    filled = np.where(missing, -1.0, X)
    if not np.all(filled == np.round(filled)):
        r = int(np.argwhere(filled != np.round(filled))[0][0])
        raise InvalidInputError(
            f"X: row {r} holds {X[r].tolist()}, which is not a whole number; categorical "
            "emissions read symbols 0..W-1 (a missing cell is a missing symbol); pass "
            "--emission gaussian for measurements")
    return filled.astype(np.int64)


@contextlib.contextmanager
def _about_file(path) -> Iterator[None]:
    """Prefix the estimator's data errors ("X: ...") with the file they came from."""
    try:
        yield
    except (InvalidInputError, ZeroProbabilityError) as exc:
        msg = str(exc)
        if msg.startswith(("X:", "lengths:")):
            raise type(exc)(f"{path}: {msg}") from exc
        raise


def _finite_or_none(obj):
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite_or_none(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_finite_or_none(v) for v in obj]
    return obj


def _dumps(obj, **kw) -> str:
    """Strict JSON: a log-likelihood of -inf (probability zero) is written as null."""
    return json.dumps(_finite_or_none(obj), allow_nan=False, **kw)


def _warn(command: str, message: str) -> None:
    print(f"{PROG} {command}: warning: {message}", file=sys.stderr)


# --------------------------------------------------------------------------- output folders

#: what each kind of output folder may hold (an existing folder holding anything else is
#: never replaced, see :mod:`hiddenstate._outdir`)
_MODEL_FILES = re.compile(
    r"model\.json|cli\.json|vocabulary\.json|arrays(\.[0-9a-f]{16})?\.npz"
    r"|model\.json(\.[0-9a-f]{16})?\.tmp|arrays\.npz\.tmp")
_PERSONALIZE_FILES = {"source", "props", "hmm", "vocabulary.json", "personalisation.txt",
                      "evaluation.txt", "summary.json"}
#: ``kind -> (what the folder holds, in messages)``
_KINDS = {"model": "a model written by `hiddenstate fit`",
          "report": "a report written by hiddenstate",
          "personalize": "the output of `hiddenstate personalize`"}


def _writes(kind: str):
    from .report import REPORT_FILES
    from .report.personalize import PERSONALIZE_REPORT_FILES

    if kind == "model":
        return lambda name: _MODEL_FILES.fullmatch(name) is not None
    if kind == "report":
        return lambda name: name in REPORT_FILES
    return lambda name: name in _PERSONALIZE_FILES or name in PERSONALIZE_REPORT_FILES


def _holds_an_hmm(option: str):
    """``check`` of :func:`~hiddenstate._outdir.stage` for ``fit --out``: a folder whose
    ``model.json`` holds another estimator (a PROPS model of ``personalize``...) is not
    replaced, ``--overwrite`` or not."""
    def check(path: Path) -> None:
        if not (path / "model.json").is_file():
            return
        try:
            _, cls = peek(path)
        except ModelFileError:
            return  # a damaged fit folder: made only of the files fit writes
        if cls not in ("HMM", "HSMM"):
            raise InvalidInputError(
                f"{option}: {path} holds a {cls!s:.40} model, not one written by `hiddenstate "
                "fit`, and is never replaced; pass a new folder")
    return check


def stage_output(path, option: str, kind: str, overwrite: bool) -> Staged:
    """The folder ``path`` (``--out`` / ``--report``) staged for writing whole or not at
    all (:func:`hiddenstate._outdir.stage`): ``kind`` is ``"model"``, ``"report"`` or
    ``"personalize"`` (what may be replaced); refusals name ``option`` and the fix."""
    return stage(path, option=option, writes=_writes(kind), what=_KINDS[kind],
                 overwrite=overwrite, check=_holds_an_hmm(option) if kind == "model" else None)


def _separate(a: tuple[str, str | None], b: tuple[str, str | None]) -> None:
    """Two output folders of one command must be neither the same nor nested."""
    (name_a, path_a), (name_b, path_b) = a, b
    if path_a is None or path_b is None:
        return
    pa, pb = Path(os.path.abspath(path_a)), Path(os.path.abspath(path_b))
    if pa == pb or pa in pb.parents or pb in pa.parents:
        raise InvalidInputError(
            f"{name_b}: {path_b} is {name_a} or inside it (or holds it); pass two separate "
            "folders")


# --------------------------------------------------------------------------- model dirs


def _vocabulary_digest(vocabulary: textio.Vocabulary) -> str:
    """SHA-256 of a vocabulary's content (tokens, counts, unknown token), as kept in
    ``cli.json``: an edited ``vocabulary.json`` or one from another fit would give the
    model's ids to the wrong words."""
    doc = json.dumps(vocabulary.to_dict(), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(doc.encode("utf-8")).hexdigest()


def save_model_dir(model, path: str | Path, input_format: str,
                   vocabulary: textio.Vocabulary | None = None, **extra) -> Path:
    """Save a fitted model to a directory that the command line can use.

    The directory holds the model (``model.save``), ``cli.json`` and, for text,
    ``vocabulary.json``; ``hiddenstate score``, ``decode`` and ``sample`` read it.

    Parameters
    ----------
    model : hiddenstate.HMM
        The fitted model.
    path : str or pathlib.Path
        The directory.
    input_format : {"text", "csv", "npy"}
        How the model's input is encoded: ``"text"`` (with the ``vocabulary`` that encoded
        the training text; a categorical model over ``len(vocabulary)`` symbols), or
        ``"csv"`` / ``"npy"`` (numbers; no vocabulary).
    vocabulary : hiddenstate.textio.Vocabulary or None, default=None
        The vocabulary of a text model; None for csv/npy.
    **extra
        JSON values kept in ``cli.json`` as notes (``fit`` writes the data file, its size
        and the fit time).

    Returns
    -------
    pathlib.Path
        The directory.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``input_format`` is unknown, a vocabulary is missing (text) or given (csv/npy),
        or it does not match the model's symbols.
    hiddenstate.errors.NotFittedError
        If the model is not fitted.

    Examples
    --------
    >>> import json
    >>> import numpy as np
    >>> import hiddenstate as hs
    >>> from hiddenstate import cli
    >>> model = hs.HMM(2, random_state=0).fit(np.array([0, 1, 1, 0, 2, 2, 1, 0]))
    >>> path = cli.save_model_dir(model, "npy-model", "npy", data="x.npy")
    >>> meta = json.loads((path / "cli.json").read_text())
    >>> meta["input_format"], meta["n_features"], meta["data"]
    ('npy', 3, 'x.npy')
    """
    if input_format not in textio.FORMATS:
        raise InvalidInputError(
            f"input_format: expected one of {', '.join(textio.FORMATS)}, got {input_format!r}")
    if (input_format == "text") != (vocabulary is not None):
        raise InvalidInputError(
            "vocabulary: a text model needs the Vocabulary that encoded its training text, "
            "and a csv/npy model has none; pass vocabulary= exactly when input_format='text'")
    model.check_is_fitted()
    if vocabulary is not None:
        if not isinstance(vocabulary, textio.Vocabulary):
            raise InvalidInputError(
                f"vocabulary: expected a hiddenstate.textio.Vocabulary, got "
                f"{type(vocabulary).__name__}")
        if model.emission != "categorical" or model.n_features_ != len(vocabulary):
            raise InvalidInputError(
                f"vocabulary: {len(vocabulary)} words, but the model is a {model.emission} "
                f"model over {model.n_features_} symbols; pass the vocabulary the model was "
                "trained with")
    d = Path(path)
    model.save(d)
    meta = {"format": _META_FORMAT, "version": _META_VERSION, "input_format": input_format,
            "emission": model.emission, "n_features": int(model.n_features_),
            "vocabulary": VOCAB_FILE if vocabulary is not None else None,
            "vocabulary_sha256": (_vocabulary_digest(vocabulary) if vocabulary is not None
                                  else None),
            **extra}
    if vocabulary is not None:
        vocabulary.save(d / VOCAB_FILE)
    else:  # a text fit's vocabulary left in a reused directory must not look current
        (d / VOCAB_FILE).unlink(missing_ok=True)
    (d / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return d


def load_model_dir(path: str | Path):
    """``(model, meta, vocabulary)`` from a directory written by ``hiddenstate fit`` or
    :func:`save_model_dir`.

    ``cli.json`` must be there (a directory written by ``model.save`` alone does not say how
    its input is encoded) and agree with the model (emission family, number of symbols or
    features) and with ``vocabulary.json`` (its size and checksum); anything missing or
    inconsistent is a :class:`~hiddenstate.errors.ModelFileError` naming the file and the fix.
    """
    from .models import HMM
    from .persist import load

    d = Path(path)
    if not d.exists():
        raise ModelFileError(
            f"{d}: model directory not found; create one with `hiddenstate fit DATA --out {d}`")
    if not d.is_dir():
        raise ModelFileError(
            f"{d}: is a file, not a model folder; pass the folder `hiddenstate fit --out` "
            "wrote")
    meta_path = d / META_FILE
    refit = f"refit with `hiddenstate fit DATA --out {d} --overwrite`"
    if not meta_path.is_file():
        raise ModelFileError(f"{d}: " + _not_a_fit_folder(d))
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFileError(f"{meta_path}: not valid JSON ({exc}); {refit}") from exc
    if not isinstance(meta, dict) or meta.get("format") != _META_FORMAT:
        raise ModelFileError(f"{meta_path}: not a hiddenstate CLI metadata file; {refit}")
    version = meta.get("version")
    if version not in (1, _META_VERSION):
        raise ModelFileError(
            f"{meta_path}: version {version!r} is not supported (this hiddenstate reads 1 and "
            f"{_META_VERSION}); upgrade hiddenstate or {refit}")
    model = load(d)
    if not isinstance(model, HMM):
        raise ModelFileError(
            f"{d / 'model.json'}: holds a {type(model).__name__}, and the command line reads "
            "the HMMs that `hiddenstate fit` writes; load it in Python with hiddenstate.load, "
            "or fit an HMM with `hiddenstate fit DATA --out NEW_FOLDER`")
    fmt, vocab_name = meta.get("input_format"), meta.get("vocabulary")
    if fmt not in textio.FORMATS:
        raise ModelFileError(
            f"{meta_path}: input_format {fmt!r} is not one of {', '.join(textio.FORMATS)}; "
            + refit)
    if (fmt == "text") != (vocab_name is not None) or vocab_name not in (None, VOCAB_FILE):
        raise ModelFileError(
            f"{meta_path}: input_format {fmt!r} with vocabulary {vocab_name!r} (text models "
            f"have {VOCAB_FILE!r}, csv/npy models none); the file was edited, " + refit)
    if fmt == "text" and model.emission != "categorical":
        raise ModelFileError(
            f"{meta_path}: says the model reads text, but model.json holds a "
            f"{model.emission} model; the directory mixes files from different fits, " + refit)
    if version >= 2:
        for key, have in (("emission", model.emission), ("n_features", model.n_features_)):
            if meta.get(key) != have:
                raise ModelFileError(
                    f"{meta_path}: {key} is {meta.get(key)!r} but model.json has {have!r}; "
                    "the directory mixes files from different fits, " + refit)
    vocabulary = None
    if vocab_name is not None:
        vocab_path = d / VOCAB_FILE
        vocabulary = textio.Vocabulary.load(vocab_path)
        if model.n_features_ != len(vocabulary):
            raise ModelFileError(
                f"{vocab_path}: {len(vocabulary)} words but the model has "
                f"{model.n_features_} symbols; the directory mixes files from different "
                "fits, " + refit)
        if version >= 2 and meta.get("vocabulary_sha256") != _vocabulary_digest(vocabulary):
            raise ModelFileError(
                f"{vocab_path}: does not match the checksum in {META_FILE} (it was edited or "
                "comes from another fit, so words would get the wrong ids); " + refit)
    return model, meta, vocabulary


def _not_a_fit_folder(d: Path) -> str:
    """Why the folder ``d`` (without ``cli.json``) is not a model folder of the command
    line, and the fix that works for what it holds."""
    new = "hiddenstate fit DATA --out NEW_FOLDER"
    try:
        entries = os.listdir(d)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc}); check its permissions"
    if not entries:
        return f"is empty; fit a model into it with `hiddenstate fit DATA --out {d}`"
    summary = d / "summary.json"
    if summary.is_file() or {"props", "hmm"} <= set(entries):
        return (f"is the output of `hiddenstate personalize` (PROPS in {d / 'props'}, the "
                f"streaming HMM in {d / 'hmm'}); score, decode, sample and report read the "
                f"HMMs `hiddenstate fit` writes: load these in Python with "
                f"hiddenstate.load, or fit an HMM with `{new}`")
    if not (d / "model.json").is_file():
        return (f"holds no model ({META_FILE} and model.json are missing); pass the folder "
                f"`hiddenstate fit --out` wrote, or fit one with `{new}`")
    try:
        _, cls = peek(d)
    except ModelFileError as exc:
        return f"{exc}; pass the folder `hiddenstate fit --out` wrote, or fit one with `{new}`"
    if cls not in ("HMM", "HSMM"):
        return (f"holds a {cls!s:.40} model (model.json), and score, decode, sample and report "
                f"read the HMMs `hiddenstate fit` writes: load it in Python with "
                f"hiddenstate.load('{d}'), or fit an HMM with `{new}`")
    return (f"{META_FILE} is missing, so the command line cannot tell how the model's input "
            "is encoded (model.save does not write it): save the model with "
            "hiddenstate.cli.save_model_dir(model, dir, input_format=..., vocabulary=...), or "
            f"refit with `hiddenstate fit DATA --out {d} --overwrite`")


def _input_format(args, meta: dict) -> str:
    """The format of ``args.input`` (``--format``, else its extension; text for a text
    model, CSV for a numeric model reading stdin); it must be one the model reads."""
    reads_text = meta["input_format"] == "text"
    default = "text" if reads_text else ("csv" if str(args.input) == "-" else None)
    fmt = args.format or textio.infer_format(args.input, default=default)
    if (fmt == "text") != reads_text:
        how = "--format" if args.format else "its extension"
        want = ("text (one sequence of words per line)" if reads_text
                else f"numbers (CSV or .npy; it was fitted on {meta['input_format']})")
        fix = "--format text if the file is text" if reads_text else "--format csv or npy"
        raise InvalidInputError(
            f"{args.input}: is {fmt} (from {how}), but the model in {args.model} reads "
            f"{want}, as its {META_FILE} says; pass such input, or {fix}")
    return fmt


def _read_for_model(args, meta: dict, vocabulary, model) -> textio.DataFile:
    """The input of ``score``/``decode``/``report``, read as the model's was: its vocabulary
    for text; for CSV the columns and index column chosen at the fit (``cli.json``) unless
    ``--columns``/``--index-column`` say otherwise."""
    fmt = _input_format(args, meta)
    columns, index = args.columns, args.index_column
    if fmt == "csv":
        columns = meta.get("columns") if columns is None else columns
        index = meta.get("index_column") if index is None else index
    data = _read(args.input, fmt, args, vocabulary=vocabulary, columns=columns,
                 index_column=index)
    data.X = _symbols(data, model.emission)
    return data


def _zero_probability(model, vocabulary, X, lengths, per_seq) -> str | None:
    """None when every sequence has positive probability; else a sentence naming the
    sequences of probability zero (and, for text, the unknown-word cause and fix)."""
    zero = [i for i, ll in enumerate(per_seq) if ll == -math.inf]
    if not zero:
        return None
    shown = ", ".join(map(str, zero[:10])) + (", ..." if len(zero) > 10 else "")
    hint = ""
    if vocabulary is not None:
        unk = vocabulary.unk_id
        seqs = textio.split_sequences(X, lengths)
        has_unk = any(np.any(seqs[i][:, 0] == unk) for i in zero)
        if has_unk and np.max(model.emissionprob_[:, unk]) == 0:
            hint = (f" (they hold words outside the vocabulary, read as {vocabulary.unk_token}, "
                    "to which this model gives probability zero in every state; refit it "
                    "with `hiddenstate fit`, which reserves probability for unseen words)")
    return f"{len(zero)} sequence(s) have probability zero: {shown}{hint}"


def _reserve_unseen(model, vocabulary: textio.Vocabulary) -> float:
    """Give ``<unk>`` the probability :meth:`~hiddenstate.textio.Vocabulary.unseen_probability`
    in every state of a fitted text model, the other words scaled by one minus it, and
    return it (0 when training tokens were mapped to ``<unk>``: it learned its probability
    from them). So a word never seen in training has a positive probability whatever the
    training counts."""
    share = vocabulary.unseen_probability()
    if share > 0:
        B = (1.0 - share) * np.asarray(model.emissionprob_, dtype=np.float64)
        B[:, vocabulary.unk_id] += share
        model.emissionprob_ = B
    return share


def _require_positive(args, model, vocabulary, X, lengths, command: str) -> None:
    """Refuse data of probability zero (``decode``, ``report``): it has no most likely
    states and no posteriors."""
    with _about_file(args.input):
        per_seq = model.score_samples(X, lengths)
    msg = _zero_probability(model, vocabulary, X, lengths, per_seq)
    if msg is not None:
        raise ZeroProbabilityError(
            f"{args.input}: {msg}; {command} needs data the model can explain (use "
            "`hiddenstate score` to see the log-likelihoods)")


# --------------------------------------------------------------------------- commands


#: ``--min-count`` of a text fit: words seen once or twice become ``<unk>``, so ``<unk>``
#: learns the probability of a word not seen in training and new text gets a finite score;
#: chosen on the Penn Treebank sample, the sailing logbook and the WikiText-2 extract
#: (``experiments/results/cli_unknown_words.md``): better held-out text than 2 on all
#: three, the best unsupervised tagging (as 5, which keeps a third fewer words)
DEFAULT_MIN_COUNT = 3


def _default_emission(fmt: str, X: np.ndarray, path) -> tuple[str, str | None]:
    """The emission family when ``--emission`` is not given, and a note saying why for
    numeric input: categorical for text and for one column of integers (symbols, as the
    Python API reads an integer array), Gaussian for floats. Several integer columns are
    refused (the command line fits categorical emissions on one column)."""
    if fmt == "text":
        return "categorical", None
    if X.dtype.kind in "iub":
        if X.shape[1] != 1:
            raise InvalidInputError(
                f"{path}: {X.shape[1]} columns of integers; pass --emission poisson (counts) "
                "or gaussian (measurements), or one column of symbols for categorical "
                "emissions (several categorical features: hs.HMM in Python)")
        return "categorical", ("integer data: categorical emissions (symbols 0..W-1); pass "
                               "--emission poisson for counts or gaussian for measurements")
    return "gaussian", None


def cmd_fit(args, out) -> int:
    from .models import HMM

    if args.report is not None:
        from .report import require_matplotlib

        require_matplotlib()
    fmt = args.format or textio.infer_format(args.input)
    if fmt != "text" and (args.max_vocab is not None or args.min_count is not None):
        raise InvalidInputError("--max-vocab/--min-count: only apply to text input; drop them")
    _separate(("--out", args.out), ("--report", args.report))
    with contextlib.ExitStack() as stack:  # both folders checked before any work
        model_dir = stack.enter_context(stage_output(args.out, "--out", "model", args.overwrite))
        report_dir = None if args.report is None else stack.enter_context(
            stage_output(args.report, "--report", "report", args.overwrite))
        data = _read(args.input, fmt, args, max_size=args.max_vocab,
                     min_count=DEFAULT_MIN_COUNT if args.min_count is None else args.min_count,
                     columns=args.columns, index_column=args.index_column)
        lengths, vocabulary = data.lengths, data.vocabulary
        note = None
        if args.emission is None:
            emission, note = _default_emission(fmt, data.X, args.input)
        else:
            emission = args.emission
        X = _symbols(data, emission)
        model, seconds = _fit(HMM, X, lengths, vocabulary, emission, fmt, args)
        notes = {}
        if vocabulary is not None:
            notes["unseen_probability"] = _reserve_unseen(model, vocabulary)
        if fmt == "csv":  # how score, decode and report read CSV for this model
            notes.update(columns=args.columns, index_column=args.index_column,
                         column_names=data.columns)
        save_model_dir(model, model_dir.path, fmt, vocabulary, source=str(args.input),
                       n_sequences=len(lengths), n_observations=int(lengths.sum()),
                       fit_seconds=round(seconds, 3), **notes)
        if report_dir is not None:
            from .report import write_report

            with _about_file(args.input):
                write_report(model, report_dir.path, X=X, lengths=lengths,
                             vocabulary=vocabulary, source=str(args.input), fit_seconds=seconds,
                             tokens=data.tokens, index=data.index, index_name=data.index_name,
                             feature_names=data.columns)
        model_dir.commit()
        if report_dir is not None:
            report_dir.commit()
    out_dir = Path(args.out)
    index = None if args.report is None else Path(args.report) / "index.html"

    loglik = model.score(X, lengths)
    n_obs = int(lengths.sum())
    history = model.monitor_.history
    parts = [f"fitted a {args.n_states}-state {emission} {type(model).__name__} on "
             f"{len(lengths)} sequences "
             f"({n_obs} observations) in {seconds:.1f}s",
             f"iterations: {len(history)}"
             f" ({'converged' if model.monitor_.converged else 'not converged'})",
             f"log-likelihood: {loglik:.6f} ({loglik / n_obs:.6f} per observation)"]
    if note is not None:
        parts.insert(1, note)
    if emission == "categorical":
        parts.append(f"perplexity: {math.exp(-loglik / n_obs):.3f}")
    if vocabulary is not None:
        unk_share = float(np.mean(X[:, 0] == vocabulary.unk_id))
        parts.append(f"vocabulary: {len(vocabulary)} symbols ({unk_share:.1%} of tokens are "
                     f"{vocabulary.unk_token})")
        share = notes["unseen_probability"]
        if share > 0:
            # no training word was rare enough to stand for the unseen ones (docs/cli.md)
            parts.append(
                f"unseen words: probability {share:.4g} for {vocabulary.unk_token} in every "
                f"state (Witten-Bell: {len(vocabulary) - 1} types, {sum(vocabulary.counts)} "
                "tokens)")
    parts.append(f"model saved to {out_dir}")
    if index is not None:
        parts.append(f"report written to {index}")
    print("\n".join(parts), file=out)
    return 0


def _fit(HMM, X, lengths, vocabulary, emission: str, fmt: str, args):
    """``(model, seconds)``: the HMM of the command-line options fitted to the data."""
    if fmt == "text" and emission != "categorical":
        raise InvalidInputError(
            f"--emission: text input needs categorical emissions, got {emission!r}; "
            "drop --emission or pass numeric CSV/npy data"
        )
    if args.n_mix is not None and emission != "gmm":
        raise InvalidInputError("--n-mix: only applies with --emission gmm; drop it")
    if args.n_trials is not None and emission != "multinomial":
        raise InvalidInputError("--n-trials: only applies with --emission multinomial; drop it")
    semi = {}
    if args.duration is not None:  # an HSMM: the HMM's options, and its durations
        from .models import HSMM as HMM

        semi = {"duration": args.duration, "max_duration": args.max_duration}
    elif args.max_duration is not None:
        raise InvalidInputError("--max-duration: only applies with --duration; drop it")
    if emission == "categorical" and fmt != "text" and X.shape[1] != 1:
        raise InvalidInputError(
            f"{args.input}: categorical emissions need one column of integer symbols, got "
            f"{X.shape[1]} columns; pass --emission gaussian or poisson, or one column"
        )
    model = HMM(
        n_states=args.n_states, emission=emission,
        n_features=len(vocabulary) if vocabulary is not None else None,
        covariance_type=args.covariance_type, n_iter=args.n_iter, tol=args.tol,
        n_init=args.n_init, random_state=args.random_state, learn=args.learn,
        k_best=args.k_best, startprob_prior=args.startprob_prior,
        transmat_prior=args.transmat_prior, emissionprob_prior=args.emissionprob_prior,
        n_mix=args.n_mix or 1, n_trials=args.n_trials, **semi,
    )
    show = sys.stderr.isatty() if args.progress is None else args.progress
    start = time.perf_counter()
    if args.scheduler is not None or args.workers is not None:
        _fit_distributed(model, X, lengths, args, show)
    elif args.partitions is not None:
        raise InvalidInputError("--partitions: only applies with --scheduler or --workers")
    else:
        bar = FitProgress(args.n_iter, args.n_init, enabled=show,
                          label=SHORT_OBJECTIVES[args.learn])
        try:
            with _about_file(args.input):
                model.fit(X, lengths, callback=bar)
        finally:
            bar.close()
    return model, time.perf_counter() - start


def _fit_distributed(model, X, lengths, args, progress: bool) -> None:
    """``model`` fitted by :func:`hiddenstate.distributed.fit` on the cluster at
    ``--scheduler`` or on a local one of ``--workers`` processes (tqdm bar per restart)."""
    try:
        from distributed import Client

        from . import distributed as hsd
    except ImportError as exc:
        raise InvalidInputError(
            "--scheduler/--workers: need Dask's distributed scheduler; "
            "pip install 'hiddenstate[dask]'") from exc
    if args.scheduler is not None:
        try:
            client = Client(args.scheduler, timeout="30s")
        except OSError as exc:
            raise InvalidInputError(
                f"--scheduler: cannot reach a Dask scheduler at {args.scheduler} ({exc}); "
                "check the address (tcp://host:8786) and that the scheduler is running") from exc
        context = client
    else:
        context = hsd.local_client(args.workers)
    with context as client, _about_file(args.input):
        hsd.fit(model, X, client, lengths=lengths, n_partitions=args.partitions,
                progress=progress)


def cmd_score(args, out) -> int:
    model, meta, vocabulary = load_model_dir(args.model)
    data = _read_for_model(args, meta, vocabulary, model)
    X, lengths = data.X, data.lengths
    with _about_file(args.input):  # wrong number of features, symbols out of range, ...
        per_seq = [float(v) for v in model.score_samples(X, lengths)]
        total = float(sum(per_seq))
    n_obs = int(lengths.sum())
    result = {"total": total, "n_sequences": len(lengths), "n_observations": n_obs,
              "per_observation": total / n_obs,
              "sequences": [{"length": int(n), "log_likelihood": ll}
                            for n, ll in zip(lengths, per_seq, strict=True)]}
    if model.emission == "categorical":
        result["perplexity"] = math.exp(-total / n_obs)
    zero = _zero_probability(model, vocabulary, X, lengths, per_seq)
    if zero is not None:  # -inf is the right log-likelihood; say so
        _warn("score", zero)
    if args.json:
        print(_dumps(result, indent=2), file=out)
        return 0
    print("sequence\tlength\tlog_likelihood", file=out)
    for i, s in enumerate(result["sequences"]):
        print(f"{i}\t{s['length']}\t{s['log_likelihood']!r}", file=out)
    print(f"total\t{n_obs}\t{total!r}", file=out)
    tail = f"# per observation: {total / n_obs:.6f}"
    if "perplexity" in result:
        tail += f"  perplexity: {result['perplexity']:.4f}"
    print(tail, file=out)
    return 0


def cmd_decode(args, out) -> int:
    model, meta, vocabulary = load_model_dir(args.model)
    if args.tokens and vocabulary is None:
        raise InvalidInputError("--tokens: only text models have words; drop --tokens")
    data = _read_for_model(args, meta, vocabulary, model)
    X, lengths = data.X, data.lengths
    _require_positive(args, model, vocabulary, X, lengths, "decode")
    with _about_file(args.input):
        logprob, states = model.decode(X, lengths, algorithm=args.algorithm)
    seq_states = textio.split_sequences(states, lengths)
    if args.json:
        result = {"algorithm": args.algorithm, "log_probability": logprob,
                  "states": [s.tolist() for s in seq_states]}
        if vocabulary is not None:  # the words as written; oov: those read as <unk>
            result["tokens"] = data.tokens
            result["oov"] = [o.tolist() for o in data.oov]
        if data.index is not None:
            result["index_name"] = data.index_name
            result["index"] = [_labels(i) for i in textio.split_sequences(data.index, lengths)]
        print(_dumps(result), file=out)
        return 0
    for i, s in enumerate(seq_states):
        if args.tokens:
            oov = set(data.oov[i].tolist())
            print(" ".join(f"{OOV_MARK if t in oov else ''}{w}/{int(k)}"
                           for t, (w, k) in enumerate(zip(data.tokens[i], s, strict=True))),
                  file=out)
        else:
            print(" ".join(str(int(k)) for k in s), file=out)
    return 0


#: ``decode --tokens`` writes a word outside the model's vocabulary (read as ``<unk>``) as
#: ``*word/state``: the word as the user wrote it, marked
OOV_MARK = "*"


def _labels(index: np.ndarray) -> list:
    """Index labels as JSON values: dates as ISO 8601 (a date alone when there is no time
    of day), numbers as numbers, the rest as strings."""
    if index.dtype.kind == "M":
        days = index.astype("datetime64[D]")
        text = (days if np.all(days == index) else index.astype("datetime64[s]")).astype(str)
        return text.tolist()
    if index.dtype.kind == "f":
        return index.tolist()
    return [str(v) for v in index]


def _sequence_seeds(seed: int | None, n: int):
    """One seed per sequence (``None`` each when ``seed`` is None, without a list)."""
    if seed is None:
        return (None for _ in range(n))
    return (int(v) for v in np.random.SeedSequence(seed).generate_state(n, dtype=np.uint32))


def cmd_sample(args, out) -> int:
    model, meta, vocabulary = load_model_dir(args.model)
    if args.random_state is not None:  # the seeds of all sequences are drawn at once
        check_memory({"--n-sequences": 4.0 * args.n_sequences},
                     f"sample --n-sequences {args.n_sequences}",
                     {"--n-sequences": "draw fewer sequences per call (and seed each call)"})
    seeds = [args.random_state] if args.n_sequences == 1 else _sequence_seeds(
        args.random_state, args.n_sequences)
    names = meta.get("column_names")
    if vocabulary is None and names and not all(n.startswith("column ") for n in names):
        print(",".join(names), file=out)  # the header of the fit's data: score reads it back
    for i, seed in enumerate(seeds):
        X, states = model.sample(args.n_samples, random_state=seed)
        X = np.asarray(X)
        if vocabulary is not None:
            words = vocabulary.decode(X.reshape(len(X), -1)[:, 0])
            if args.states:
                print(" ".join(f"{w}/{int(k)}" for w, k in zip(words, states, strict=True)),
                      file=out)
            else:
                print(" ".join(words), file=out)
            continue
        if i:
            print("", file=out)
        if args.states:
            print("# states: " + " ".join(str(int(k)) for k in states), file=out)
        for line in textio.iter_rows_csv(X.reshape(len(X), -1)):
            print(line, file=out)
    return 0


def cmd_report(args, out) -> int:
    from .report import require_matplotlib, write_report

    require_matplotlib()
    _separate(("--model", args.model), ("--out", args.out))
    with stage_output(args.out, "--out", "report", args.overwrite) as report_dir:
        model, meta, vocabulary = load_model_dir(args.model)
        data = _read_for_model(args, meta, vocabulary, model)
        X, lengths = data.X, data.lengths
        _require_positive(args, model, vocabulary, X, lengths, "report")
        with _about_file(args.input):
            write_report(model, report_dir.path, X=X, lengths=lengths, vocabulary=vocabulary,
                         source=str(args.input), fit_seconds=meta.get("fit_seconds"),
                         tokens=data.tokens, index=data.index, index_name=data.index_name,
                         feature_names=data.columns or meta.get("column_names"),
                         unseen_probability=meta.get("unseen_probability"))
        report_dir.commit()
    print(f"report written to {Path(args.out) / 'index.html'}", file=out)
    return 0


def stage_progress(show: bool):
    """``(progress, close)``: a ``progress(stage, done, total, value)`` callback for
    :func:`hiddenstate.personalize.personalize` that draws one
    :class:`~hiddenstate.progress.FitProgress` per stage on stderr (when ``show``), and the
    function that ends the last bar."""
    bars: dict[str, FitProgress] = {}
    labels = {"source": "loss", "props": "mean log p", "hmm": "mean log p"}

    def progress(stage: str, done: int, total: int, value: float) -> None:
        if stage not in labels:
            return
        if stage not in bars:
            close()
            bars[stage] = FitProgress(total, enabled=show, label=labels[stage],
                                      prefix=f"{stage:<6}", show_delta=False)
        if done > 0:  # done == 0 announces the stage (its clock starts)
            bars[stage](done, value)

    def close() -> None:
        for bar in bars.values():
            bar.close()

    return progress, close


def require_report_plots() -> None:
    """Fail before any work when the report of ``personalize`` cannot be drawn."""
    from .report import require_matplotlib

    try:
        require_matplotlib()
    except HiddenStateError as exc:
        raise HiddenStateError(
            "report: matplotlib is not installed; pip install 'hiddenstate[plot]' "
            "(or pass --no-report)") from exc


def write_personalize_report(result, n_words: int = 400) -> Path:
    """Write the HTML report of a personalisation ``result`` into its output directory,
    record its path in ``result.index`` and return it (``personalize`` and the demo)."""
    from .report.personalize import write_personalize_report as write

    result.index = write(result, result.out, n_words=n_words)
    return result.index


def personalize_into(out, *, overwrite: bool, report: bool, **kwargs):
    """Run :func:`hiddenstate.personalize.personalize` (``kwargs``) and write its folder
    ``out`` whole or not at all: built beside ``out`` with the report (when ``report``),
    then switched in (:mod:`hiddenstate._outdir`; an existing ``out`` is replaced only with
    ``overwrite``, and only if it holds nothing but an earlier run's files). Returns the
    result, its ``out`` and ``index`` the final paths (``personalize`` and the demo)."""
    from .personalize import personalize

    with stage_output(out, "--out", "personalize", overwrite) as folder:
        result = personalize(out=folder.path, **kwargs)
        if report:
            write_personalize_report(result)
        folder.commit()
    result.out = Path(out)
    if result.index is not None:
        result.index = result.out / result.index.name
    return result


def cmd_personalize(args, out) -> int:
    from .personalize import format_summary_table

    if args.load_source is not None and args.reference is not None:
        _warn("personalize", "--reference is not used with --load-source (the saved source "
              "and its vocabulary are reused); drop one of them")
    if args.report:
        require_report_plots()
    show = sys.stderr.isatty() if args.progress is None else args.progress
    progress, close = stage_progress(show)
    try:
        result = personalize_into(
            args.out, overwrite=args.overwrite, report=args.report,
            reference=args.reference, target=args.target, words=args.words,
            eval_words=args.eval_words, source=args.source, order=args.order,
            load_source_dir=args.load_source, vocab_size=args.vocab_size,
            perturbation_states=args.perturbation_states, hmm_states=args.hmm_states,
            seed=args.seed, lowercase=args.lowercase, progress=progress,
            encoding=args.encoding, missing_token=args.missing_token)
    finally:
        close()
    s = result.summary
    voc = s["vocabulary"]
    d = Path(args.out)
    parts = [format_summary_table(s), "",
             f"vocabulary: {voc['size']} symbols; {voc['evaluation_unk_share']:.1%} of the "
             f"evaluation words are {voc['unk_token']} (outside the vocabulary)",
             f"models saved to {d / 'props'}, {d / 'hmm'} and {d / 'source'}; numbers in "
             f"{d / 'summary.json'}"]
    if result.index is not None:
        parts.append(f"report written to {result.index}")
    print("\n".join(parts), file=out)
    return 0


# --------------------------------------------------------------------------- entry point


def format_os_error(exc: OSError) -> str:
    """An operating-system error as one readable line (no ``[Errno N]``)."""
    if isinstance(exc, OutputError) or not exc.strerror:
        return str(exc)
    name = exc.filename if exc.filename is not None else ""
    return f"{name}: {exc.strerror}" if name != "" else exc.strerror


def _print_warnings(command: str, caught: list) -> None:
    """One line per distinct cause (the warning's class and the line of code that issued
    it): the last message, and how many times it came."""
    groups: dict[tuple, list] = {}
    for w in caught:
        groups.setdefault((w.category, w.filename, w.lineno), []).append(w)
    for (category, _, _), ws in groups.items():
        times = f"; {len(ws)} times, the last shown" if len(ws) > 1 else ""
        _warn(command, f"{ws[-1].message} ({category.__name__}{times})")


def main(argv: list[str] | None = None) -> int:
    """Run the command line.

    The command's output goes to stdout; errors go to stderr as one line that names the
    command (no traceback). Warnings are collected while a command runs and printed on
    stderr at its end, one line per distinct cause.

    Parameters
    ----------
    argv : list of str or None, default=None
        The arguments (without the program name); None: ``sys.argv[1:]``.

    Returns
    -------
    int
        The exit status: 0 ok, 2 a usage or input error, 1 an operating-system error, 130
        interrupted, 141 the reader of stdout went away.

    Examples
    --------
    >>> from pathlib import Path
    >>> from hiddenstate import cli
    >>> _ = Path("corpus.txt").write_text("the cat sat\\nthe dog sat\\na cat ran\\n")
    >>> cli.main(["fit", "corpus.txt", "--n-states", "2", "--min-count", "1",
    ...           "--out", "model", "--random-state", "0", "--no-progress"])
    fitted a 2-state categorical HMM on 3 sequences (9 observations) in ...s
    iterations: 8 (converged)
    log-likelihood: -17.326751 (-1.925195 per observation)
    perplexity: 6.856
    vocabulary: 7 symbols (0.0% of tokens are <unk>)
    unseen words: probability 0.4 for <unk> in every state (Witten-Bell: 6 types, 9 tokens)
    model saved to model
    0
    >>> cli.main(["score", "corpus.txt", "--model", "model"])
    sequence  length  log_likelihood
    0         3       -5.15681...
    1         3       -5.15681...
    2         3       -7.01311...
    total     9       -17.32675...
    # per observation: -1.925195  perplexity: 6.8565
    0
    >>> cli.main(["score", "missing.txt", "--model", "model"])  # the error goes to stderr
    2
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors
        return int(exc.code or 0) if not isinstance(exc.code, str) else 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            status = args.func(args, sys.stdout)
            sys.stdout.flush()  # a closed pipe shows here, not at exit
            return status
        except BrokenPipeError:  # the reader went away (`... | head`): stop quietly, as cat does
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no flush error
            return 141
        except HiddenStateError as exc:
            print(f"{PROG} {args.command}: error: {exc}", file=sys.stderr)
            return 2
        except OSError as exc:  # a full disk, an I/O error
            print(f"{PROG} {args.command}: error: {format_os_error(exc)}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print(f"{PROG} {args.command}: interrupted", file=sys.stderr)
            return 130
        finally:
            _print_warnings(args.command, caught)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
