"""The demo: fit a small HMM to sentences from the bundled WikiText-2 extract and write a report.

``python -m hiddenstate.demo --out DIR`` (what ``make demo`` runs):

1. takes the first ``--n-sentences`` sentences (4 to 40 tokens, lower-cased) from the
   bundled extract ``hiddenstate/data/wikitext2_train_head.txt`` and writes them, one per
   line, to ``DIR/sentences.txt``;
2. runs ``hiddenstate fit DIR/sentences.txt --out DIR/model --report DIR`` with a capped
   vocabulary (rarer words become ``<unk>``);
3. prints a few sentences sampled from the model and one decoded sentence.

The report is ``DIR/index.html``. Everything is seeded, so two runs give the same model.
"""

from __future__ import annotations

import argparse
import sys
import time
from importlib import resources
from pathlib import Path

from . import cli

CORPUS = "wikitext2_train_head.txt"


def corpus_path() -> Path:
    """Path of the bundled WikiText-2 extract (see ``hiddenstate/data/README.md``)."""
    return Path(str(resources.files("hiddenstate").joinpath("data", CORPUS)))


def corpus_sentences(n: int | None = None, min_len: int = 4, max_len: int = 40,
                     lowercase: bool = True) -> list[list[str]]:
    """Sentences of the bundled extract as token lists, in corpus order.

    Headings (``= Title =`` lines) and blank lines are skipped; a paragraph is split after
    every ``.``, ``?`` or ``!`` token. Sentences shorter than ``min_len`` or longer than
    ``max_len`` tokens are dropped.
    """
    out: list[list[str]] = []
    with open(corpus_path(), encoding="utf-8") as fh:
        for line in fh:
            s = line.strip()
            if not s or s.startswith("="):
                continue
            tokens = s.lower().split() if lowercase else s.split()
            sent: list[str] = []
            for tok in tokens:
                sent.append(tok)
                if tok in (".", "?", "!"):
                    if min_len <= len(sent) <= max_len:
                        out.append(sent)
                        if n is not None and len(out) >= n:
                            return out
                    sent = []
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hiddenstate.demo",
        description="Fit an HMM to WikiText-2 sentences and write an HTML report.")
    parser.add_argument("--out", default="demo-report", help="report directory (demo-report)")
    parser.add_argument("--n-sentences", type=int, default=1000, help="sentences to fit (1000)")
    parser.add_argument("--n-states", type=int, default=12, help="hidden states (12)")
    parser.add_argument("--max-vocab", type=int, default=400,
                        help="vocabulary size including <unk> (400)")
    parser.add_argument("--n-iter", type=int, default=200, help="EM iteration limit (200)")
    parser.add_argument("--random-state", type=int, default=0, help="seed (0)")
    args = parser.parse_args(argv)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sentences = corpus_sentences(args.n_sentences)
    data = out / "sentences.txt"
    data.write_text("".join(" ".join(s) + "\n" for s in sentences), encoding="utf-8")
    print(f"demo: {len(sentences)} sentences from the bundled WikiText-2 extract -> {data}")

    start = time.perf_counter()
    model_dir = out / "model"
    rc = cli.main(["fit", str(data), "--format", "text", "--out", str(model_dir),
                   "--report", str(out), "--n-states", str(args.n_states),
                   "--max-vocab", str(args.max_vocab), "--n-iter", str(args.n_iter),
                   "--tol", "0.1", "--random-state", str(args.random_state)])
    if rc != 0:
        return rc
    print("\ndemo: three sentences sampled from the model (word/state):")
    rc = cli.main(["sample", str(model_dir), "--n-samples", "12", "--n-sequences", "3",
                   "--random-state", str(args.random_state), "--states"])
    if rc != 0:
        return rc
    first = out / "first_sentence.txt"
    first.write_text(" ".join(sentences[0]) + "\n", encoding="utf-8")
    print("\ndemo: the first training sentence, decoded (word/state):")
    rc = cli.main(["decode", str(model_dir), str(first), "--tokens"])
    print(f"\ndemo: finished in {time.perf_counter() - start:.1f}s; "
          f"open {out / 'index.html'}")
    return rc


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
