"""The demo: personalise a black-box language model to one person's writing with PROPS.

``python -m hiddenstate.demo --out DIR`` (what ``make demo`` runs) calls the pipeline of
``hiddenstate personalize`` (:func:`hiddenstate.personalize.personalize`) on bundled data:

- the *reference* corpus is the bundled WikiText-2 extract
  ``hiddenstate/data/wikitext2_train_head.txt`` (Wikipedia articles; CC BY-SA 3.0);
- the *user's* text is ``hiddenstate/data/sailing_logbook.txt``, a hobbyist's sailing
  logbook written for this demo (a different domain and a personal voice, with recurring
  names and phrases);
- a 3-gram Kneser-Ney model is trained on the reference, PROPS (one source state, two
  perturbation states, online EM) is personalised on the first 2,000 words of the logbook,
  and PROPS, a streaming 3-state HMM and the black box alone are compared on the rest.

It prints the summary table and writes ``DIR/index.html`` (plus ``DIR/summary.json`` and the
models), whole or not at all, replacing an earlier demo's ``DIR``. Everything is seeded, so
two runs give the same numbers. It is equivalent to::

    hiddenstate personalize --reference <extract> --target <logbook> --words 2000 --out DIR \
        --overwrite
"""

from __future__ import annotations

import argparse
import sys
import time
from importlib import resources
from pathlib import Path

CORPUS = "wikitext2_train_head.txt"
TARGET = "sailing_logbook.txt"


def data_path(name: str) -> Path:
    """Path of a bundled data file (see ``hiddenstate/data/README.md``)."""
    return Path(str(resources.files("hiddenstate").joinpath("data", name)))


def corpus_path() -> Path:
    """Path of the bundled WikiText-2 extract (see ``hiddenstate/data/README.md``)."""
    return data_path(CORPUS)


def target_path() -> Path:
    """Path of the bundled sailing logbook, the demo's user text."""
    return data_path(TARGET)


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
    from . import cli
    from .errors import HiddenStateError
    from .personalize import format_summary_table

    parser = argparse.ArgumentParser(
        prog="python -m hiddenstate.demo",
        description="Personalise an n-gram model trained on WikiText-2 to a sailing logbook "
                    "with PROPS and write an HTML report.")
    parser.add_argument("--out", default="demo-report",
                        help="report folder (demo-report); an earlier demo's folder is "
                             "replaced whole, a folder holding other files is refused")
    parser.add_argument("--words", type=int, default=2000,
                        help="personalisation words (2000); the rest of the logbook is "
                             "the evaluation text")
    parser.add_argument("--seed", type=int, default=0, help="seed (0)")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="progress bar on stderr (default: when stderr is a terminal)")
    args = parser.parse_args(argv)

    ref, target = corpus_path(), target_path()
    print(f"demo: reference = the bundled WikiText-2 extract ({ref.name}); user text = a "
          f"sailing logbook written for the demo ({target.name})")
    print(f"demo: the same as `hiddenstate personalize --reference {ref} --target {target} "
          f"--words {args.words} --seed {args.seed} --out {args.out} --overwrite`\n")
    show = sys.stderr.isatty() if args.progress is None else args.progress
    progress, close = cli.stage_progress(show)
    start = time.perf_counter()
    try:
        cli.require_report_plots()
        result = cli.personalize_into(args.out, overwrite=True, report=True, reference=ref,
                                      target=target, words=args.words, seed=args.seed,
                                      progress=progress)
    except HiddenStateError as exc:
        print(f"demo: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"demo: error: {cli.format_os_error(exc)}", file=sys.stderr)
        return 1
    finally:
        close()
    s = result.summary
    print(format_summary_table(s))
    ev = s["models"]
    ppl_p = ev["props"]["evaluation"]["perplexity"]
    ppl_b = ev["black_box"]["evaluation"]["perplexity"]
    ppl_h = ev["hmm"]["evaluation"]["perplexity"]
    print(f"\nOn the {s['n_evaluation_words']:,} evaluation words PROPS has perplexity "
          f"{ppl_p:.1f}, against {ppl_b:.1f} for the black box alone and {ppl_h:.1f} for a "
          f"streaming HMM learned from the same {s['n_personalisation_words']:,} words.")
    print(f"{s['vocabulary']['evaluation_unk_share']:.1%} of the evaluation words are outside "
          f"the {s['vocabulary']['size']:,}-word reference vocabulary (<unk>).")
    top = ", ".join(w for w, _ in ev["props"]["top_symbols"][0][:8])
    print(f"Most probable words of the first perturbation state: {top}")
    print(f"\ndemo: finished in {time.perf_counter() - start:.1f}s; "
          f"open {Path(args.out) / 'index.html'}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
