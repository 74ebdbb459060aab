"""Quality of our Brown clustering (exchange algorithm) against wcluster on PTB.

    PYTHONPATH=src .venv/bin/python experiments/lm_brown_quality.py [--clusters 128]

Clusters the words of ``ptb.train.txt`` (the token stream wcluster saw: the words of every
line, lines concatenated, no ``<eos>``) with :func:`hiddenstate.lm.brown_clusters`, and
compares the average mutual information (AMI) of the class-bigram model of our clusters
with that of hmm-lm's wcluster clusters (``../shared/data/brown-clusters/lm-<C>/paths``),
both computed by the same function on the same bigram counts. Writes
``experiments/results/lm_brown_quality.md`` and our clusters as a paths file. The goal
(issue 11): at least 98% of wcluster's AMI. No GPU is involved (numba on the CPU).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from hiddenstate.lm.clusters import (  # noqa: E402
    BrownClusters,
    average_mutual_information,
    brown_clusters,
    read_brown_paths,
    write_brown_paths,
)
from hiddenstate.textio import Vocabulary, read_text_file  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clusters", type=int, default=128)
    ap.add_argument("--data-dir", default=str(REPO.parent / "shared" / "data"))
    ap.add_argument("--max-iter", type=int, default=30)
    args = ap.parse_args()
    data = Path(args.data_dir)
    train = data / "ptb" / "ptb.train.txt"
    ref_file = data / "brown-clusters" / f"lm-{args.clusters}" / "paths"
    if not train.is_file() or not ref_file.is_file():
        sys.exit(f"missing {train} or {ref_file}: pass --data-dir")
    words = read_text_file(train).split()
    vocab = Vocabulary.build([words])
    ids = vocab.encode(words)
    ref = read_brown_paths(ref_file)
    ref_wc = ref.word_cluster(vocab)
    assert ref_wc.max() + 1 == args.clusters, "every PTB word should be in the paths file"
    ami_ref = average_mutual_information(ids, ref_wc)
    t0 = time.perf_counter()
    ours = brown_clusters(ids, args.clusters, n_words=len(vocab), max_iter=args.max_iter,
                          verbose=True)
    seconds = time.perf_counter() - t0
    ami_ours = average_mutual_information(ids, ours)
    ratio = ami_ours / ami_ref
    out = REPO / "experiments" / "results"
    out.mkdir(parents=True, exist_ok=True)
    width = max(1, int(np.ceil(np.log2(args.clusters))))
    write_brown_paths(BrownClusters(vocab.tokens, [format(int(c), f"0{width}b") for c in ours],
                                    vocab.counts), out / f"ptb-exchange-{args.clusters}.paths")
    md = [
        "# Brown clustering quality on PTB (our exchange algorithm vs wcluster)",
        "",
        f"Command: `PYTHONPATH=src .venv/bin/python experiments/lm_brown_quality.py "
        f"--clusters {args.clusters}` (CPU only, no GPU; a 2-core machine shared with other "
        "jobs, so the time is an upper bound).",
        "",
        f"Text: ptb.train.txt, {len(ids):,} tokens (lines concatenated, no `<eos>`, as "
        f"wcluster read it), {len(vocab):,} word types, {args.clusters} clusters.",
        "",
        "| clustering | AMI (nats) | ratio to wcluster | time |",
        "|---|---|---|---|",
        f"| wcluster (hmm-lm `lm-{args.clusters}/paths`) | {ami_ref:.5f} | 1.000 | "
        "(not run here) |",
        f"| hiddenstate exchange algorithm | {ami_ours:.5f} | {ratio:.4f} | {seconds:.1f} s |",
        "",
        f"Goal >= 0.98 of wcluster's AMI: {'met' if ratio >= 0.98 else 'NOT met'}.",
        "",
        f"Our clusters: `experiments/results/ptb-exchange-{args.clusters}.paths` "
        "(flat: the bit string is the cluster index, no merge tree).",
    ]
    (out / "lm_brown_quality.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
