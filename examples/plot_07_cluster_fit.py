"""
Fitting on a Dask cluster
=========================

``hiddenstate.distributed.fit`` runs every batch learning mode of ``hs.HMM`` on a Dask
cluster: each worker holds a partition of the sequences and computes its E-step there,
the statistics are merged in a fixed binary tree, the M-step runs on the client. The
result is the local fit to rounding, whatever the number of workers (see
:doc:`/distributed`). Here a local cluster of two worker processes stands in for a real
one (``Client("tcp://scheduler:8786")``); the data are 100 sequences of the bundled
WikiText-2 extract's sentences (a 10-state HMM over 200 word symbols).
"""

import matplotlib.pyplot as plt
import numpy as np

import hiddenstate as hs
from hiddenstate import distributed as hsd
from hiddenstate.demo import corpus_sentences
from hiddenstate.textio import Vocabulary, encode_sequences

if __name__ == "__main__":  # the worker processes import this file: work under main only
    sentences = corpus_sentences(2000)
    vocab = Vocabulary.build(sentences, max_size=200)
    X, lengths = encode_sequences(sentences, vocab)
    print(f"{len(lengths)} sentences, {len(X)} tokens")

    def make():
        return hs.HMM(10, emission="categorical", learn="map", n_iter=40, tol=-np.inf,
                      random_state=0)

    with hsd.local_client(n_workers=2) as client:
        cluster = hsd.fit(make(), X, client, lengths=lengths, n_partitions=4)
    local = make().fit(X, lengths)

    a, b = np.asarray(cluster.monitor_.history), np.asarray(local.monitor_.history)
    print(f"final objective: cluster {a[-1]:.6f}, local {b[-1]:.6f}")
    print(f"largest relative difference over the {len(a)} iterations: "
          f"{np.max(np.abs(a - b) / np.abs(b)):.1e}")
    print(f"largest difference of transmat_: "
          f"{np.max(np.abs(cluster.transmat_ - local.transmat_)):.1e}")

    fig, ax = plt.subplots(figsize=(7, 3.5))
    ax.plot(np.arange(1, len(b) + 1), b / len(X), lw=3, alpha=0.4, label="local HMM.fit")
    ax.plot(np.arange(1, len(a) + 1), a / len(X), ls="--", marker=".",
            label="2 Dask workers, 4 partitions")
    ax.set_xlabel("iteration")
    ax.set_ylabel("MAP objective per token")
    ax.legend()
    fig.tight_layout()
