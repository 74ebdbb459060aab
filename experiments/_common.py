"""Helpers shared by the experiment scripts: logged fits, path accuracy, PTB, the Penn
Treebank sample's tagged words, markdown.

Nothing here is part of the library; the experiments import it as a sibling module.
"""

from __future__ import annotations

import re
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy.optimize import linear_sum_assignment

REPO = Path(__file__).resolve().parent.parent
#: the shared data folder, relative to the repository root (``<repo>/../shared/data``)
DEFAULT_DATA_DIR = REPO.parent / "shared" / "data"


# -- fitting with a per-restart log ------------------------------------------------------------
@dataclass
class FitLog:
    """What one ``HMM.fit`` (with ``n_init`` restarts) did, restart by restart."""

    model: object
    wall: float                                        # seconds for the whole fit
    t0: float                                          # perf_counter when fit started
    histories: list[list[float]] = field(default_factory=list)   # objective per iteration
    stamps: list[list[float]] = field(default_factory=list)      # perf_counter per iteration
    n_iter: int = 0                                    # the cap, to tell "converged"
    warnings: list[str] = field(default_factory=list)

    @property
    def iters(self) -> list[int]:
        """Iterations run by each restart (E-steps, the last one included)."""
        return [len(h) for h in self.histories]

    @property
    def converged(self) -> list[bool]:
        return [len(h) < self.n_iter for h in self.histories]

    @property
    def restart_seconds(self) -> list[float]:
        """Seconds per restart (its initialisation included)."""
        ends = [s[-1] for s in self.stamps]
        return [float(d) for d in np.diff([self.t0, *ends])]


def logged_fit(model, X, lengths) -> FitLog:
    """``model.fit(X, lengths)`` recording every restart's objective and timestamps.

    The library's ``callback(iteration, value)`` restarts its count at 1 for each of the
    ``n_init`` runs, which is how restarts are told apart.
    """
    histories: list[list[float]] = []
    stamps: list[list[float]] = []

    def callback(iteration, value):
        now = time.perf_counter()
        if iteration == 1:
            histories.append([])
            stamps.append([])
        histories[-1].append(float(value))
        stamps[-1].append(now)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        model.fit(X, lengths, callback=callback)
        wall = time.perf_counter() - t0
    return FitLog(model, wall, t0, histories, stamps, model.n_iter,
                  sorted({f"{w.category.__name__}: {w.message}" for w in caught}))


def iterations_at(history: list[float], tol: float) -> int:
    """Iterations the absolute-``tol`` stopping rule would have taken on ``history``
    (deterministic prefix of the same run), or ``len(history)`` if it never fires."""
    for i in range(1, len(history)):
        if history[i] - history[i - 1] < tol:
            return i + 1
    return len(history)


# -- scores ------------------------------------------------------------------------------------
def path_accuracy(true_states: np.ndarray, decoded: np.ndarray, n_states: int) -> float:
    """Fraction of positions labelled right after the best one-to-one relabelling
    (Hungarian algorithm on the confusion matrix)."""
    confusion = np.zeros((n_states, n_states))
    np.add.at(confusion, (np.asarray(true_states), np.asarray(decoded)), 1)
    rows, cols = linear_sum_assignment(confusion, maximize=True)
    return float(confusion[rows, cols].sum() / len(true_states))


# -- Penn Treebank -----------------------------------------------------------------------------
@dataclass
class Corpus:
    vocab: list[str]
    X_train: np.ndarray
    lengths_train: list[int]
    X_valid: np.ndarray
    lengths_valid: list[int]
    unk_rate_valid: float


def _read_sentences(path: Path, limit: int) -> list[list[str]]:
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            words = line.split()
            if words:
                out.append([*words, "</s>"])
                if len(out) >= limit:
                    break
    return out


def load_ptb(data_dir: Path, n_train: int, n_valid: int, vocab_size: int) -> Corpus:
    """The first ``n_train`` / ``n_valid`` sentences of PTB (Mikolov's preprocessing), each
    ended by ``</s>``; the ``vocab_size`` most frequent training words are kept, every other
    word becomes ``<unk>`` (symbol 0)."""
    ptb = Path(data_dir) / "ptb"
    files = {name: ptb / f"ptb.{name}.txt" for name in ("train", "valid")}
    missing = [str(p) for p in files.values() if not p.is_file()]
    if missing:
        raise SystemExit(
            f"Penn Treebank not found: {', '.join(missing)} does not exist. Put ptb.train.txt "
            "and ptb.valid.txt under <data-dir>/ptb/ and pass --data-dir <data-dir> "
            f"(default: {DEFAULT_DATA_DIR}), or run with --skip-ptb.")
    train = _read_sentences(files["train"], n_train)
    valid = _read_sentences(files["valid"], n_valid)
    counts = Counter(w for s in train for w in s)
    counts.pop("<unk>", None)
    vocab = ["<unk>"] + [w for w, _ in counts.most_common(vocab_size)]
    index = {w: i for i, w in enumerate(vocab)}

    def encode(sents):
        X = np.array([index.get(w, 0) for s in sents for w in s], dtype=np.int64)
        return X, [len(s) for s in sents]

    Xt, Lt = encode(train)
    Xv, Lv = encode(valid)
    return Corpus(vocab, Xt, Lt, Xv, Lv, float(np.mean(Xv == 0)))


# -- Penn Treebank sample (NLTK's 10%: parsed WSJ, .mrg) --------------------------------------
_LEAF = re.compile(r"\(([^\s()]+) ([^\s()]+)\)")


def _trees(text: str):
    """The top-level bracketings of an ``.mrg`` file, as strings."""
    depth, start = 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            if depth == 0:
                start = i
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                yield text[start:i + 1]


def load_treebank(data_dir: Path) -> list[list[tuple[str, str]]]:
    """Sentences of ``<data_dir>/ptb-sample-treebank/combined/wsj_*.mrg`` as (word, tag)
    pairs in file order, the ``-NONE-`` empty elements dropped (3,914 sentences, 94,084
    tokens, 45 tags). Fair-use data: read it for experiments, never ship it."""
    folder = Path(data_dir) / "ptb-sample-treebank" / "combined"
    files = sorted(folder.glob("wsj_*.mrg"))
    if not files:
        raise SystemExit(
            f"Penn Treebank sample not found: no {folder}/wsj_*.mrg. Pass --data-dir "
            f"<data-dir> holding ptb-sample-treebank/combined/ (default: {DEFAULT_DATA_DIR}).")
    out = []
    for path in files:
        for tree in _trees(path.read_text(encoding="ascii")):
            words = [(w, t) for t, w in _LEAF.findall(tree) if t != "-NONE-"]
            if words:
                out.append(words)
    return out


#: Penn Treebank tag -> Universal Dependencies UPOS (17 tags), by tag; the words below
#: refine it (UD's own conversion is word- and tree-aware; this is its word-level core)
PTB_TO_UPOS = {
    "JJ": "ADJ", "JJR": "ADJ", "JJS": "ADJ", "IN": "ADP", "RB": "ADV", "RBR": "ADV",
    "RBS": "ADV", "WRB": "ADV", "MD": "AUX", "CC": "CCONJ", "DT": "DET", "PDT": "DET",
    "WDT": "DET", "UH": "INTJ", "NN": "NOUN", "NNS": "NOUN", "CD": "NUM", "POS": "PART",
    "RP": "PART", "TO": "PART", "PRP": "PRON", "PRP$": "PRON", "WP": "PRON", "WP$": "PRON",
    "EX": "PRON", "NNP": "PROPN", "NNPS": "PROPN", ".": "PUNCT", ",": "PUNCT", ":": "PUNCT",
    "``": "PUNCT", "''": "PUNCT", "-LRB-": "PUNCT", "-RRB-": "PUNCT", "$": "SYM", "#": "SYM",
    "SYM": "SYM", "VB": "VERB", "VBD": "VERB", "VBG": "VERB", "VBN": "VERB", "VBP": "VERB",
    "VBZ": "VERB", "FW": "X", "LS": "X",
}
#: verb forms of be/have/do that UD tags AUX (PTB tags them VB*)
_AUX_WORDS = {"be", "is", "are", "was", "were", "been", "being", "am", "'s", "'re", "'m",
              "have", "has", "had", "having", "'ve", "'d", "do", "does", "did"}
#: prepositions (PTB IN) that UD tags SCONJ when they introduce a clause
_SCONJ_WORDS = {"because", "if", "while", "although", "though", "whether", "unless",
                "since", "until", "after", "before", "as", "than", "once", "so", "that"}


def upos(word: str, tag: str) -> str:
    """The coarse (UPOS, 17-tag) class of a PTB-tagged word: :data:`PTB_TO_UPOS`, with
    be/have/do verbs as AUX and clause-introducing prepositions as SCONJ (word lists above;
    "as", "since", "that" ... are ambiguous and always go to SCONJ here)."""
    low = word.lower()
    if tag.startswith("VB") and low in _AUX_WORDS:
        return "AUX"
    if tag == "IN" and low in _SCONJ_WORDS:
        return "SCONJ"
    return PTB_TO_UPOS[tag]


# -- output ------------------------------------------------------------------------------------
def markdown_table(header: list[str], rows: list[list]) -> str:
    def cell(v):
        if isinstance(v, float):
            return f"{v:.4g}"
        return str(v)

    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)
