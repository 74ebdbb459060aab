"""Shared by the command-line tests: a tiny corpus, new text with unseen words, and running
``hiddenstate.cli.main`` in-process."""

from __future__ import annotations

from pathlib import Path

from hiddenstate import cli

TRAIN = [
    "the cat sat on the mat .",
    "the dog sat on the log .",
    "a cat and a dog met on a mat .",
    "a dog sat .",
    "the cat saw the dog on the log .",
    "the mat and the log .",
    "a zebra sat .",
]
# "café" and "zürich" are new words; "met", "saw" and "zebra" were seen once, "and" twice
NEW = ["the café sat on the mat .", "a dog met zürich ."]


def run(argv, capsys):
    """``(status, stdout, stderr)`` of ``hiddenstate ARGV``."""
    rc = cli.main([str(a) for a in argv])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def one_error_line(err: str, command: str) -> str:
    """The one line of an error: ``hiddenstate COMMAND: error: ...``, no traceback, no raw
    ``[Errno N]``."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"hiddenstate {command}: error: "), err
    assert "Traceback" not in err and "[Errno" not in err
    return lines[0]


def scores(stdout: str) -> list[float]:
    """The per-sequence log-likelihoods of ``hiddenstate score``'s table."""
    rows = [line.split("\t") for line in stdout.splitlines()[1:] if line[:1].isdigit()]
    return [float(r[2]) for r in rows]



def write_corpus(folder: Path) -> Path:
    """``TRAIN`` as the text file ``folder/train.txt``."""
    p = Path(folder) / "train.txt"
    p.write_text("\n".join(TRAIN) + "\n", encoding="utf-8")
    return p
