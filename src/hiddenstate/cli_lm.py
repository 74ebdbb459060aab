"""``hiddenstate lm ...``: HMM language models from the command line (needs torch).

- ``lm clusters TEXT --clusters C --out PATHS``: Brown clusters of a text (exchange
  algorithm, :func:`hiddenstate.lm.brown_clusters`) as a ``paths`` file.
- ``lm train --train F --valid F --out DIR``: train a :class:`~hiddenstate.lm.BlockedHMMLM`
  on one-sentence-per-line text; the model is saved in ``DIR`` and the training state in
  ``DIR/checkpoint`` (``--resume`` continues it).
- ``lm eval DIR FILE``: exact log-likelihood and perplexity (JSON).
- ``lm baseline --train F FILE``: the same numbers for an interpolated Kneser-Ney n-gram
  model of the training text (:class:`~hiddenstate.sources.KneserNeySource`), the baseline
  the HMM is compared with.
- ``lm sample DIR --tokens N``: text drawn from the model.
- ``lm report DIR FILE --out OUT``: validation-perplexity curve (``curve.png``), state usage
  per cluster (``usage.png``) and ``report.json``.

Torch is imported only when one of these commands runs.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np

from .errors import InvalidInputError, ModelFileError


def _encoding(text: str) -> str:
    """argparse type of ``--encoding``: a codec Python knows."""
    from .textio import check_encoding
    try:
        return check_encoding(text)
    except InvalidInputError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("encoding: ")) from None


def add_parser(sub, int_at_least, finite_float) -> None:
    lm = sub.add_parser("lm", help="HMM language models with many states (needs torch)")
    enc = dict(type=_encoding, default="utf-8",
               help="encoding of the text files, e.g. latin-1 or utf-16 (utf-8)")
    lsub = lm.add_subparsers(dest="lm_command", metavar="LM_COMMAND", required=True)

    p = lsub.add_parser("clusters", help="Brown clusters of a text (exchange algorithm)")
    p.add_argument("text", metavar="TEXT", help="text file, whitespace-separated tokens")
    p.add_argument("--clusters", type=int_at_least(2), default=128)
    p.add_argument("--max-iter", type=int_at_least(1), default=30)
    p.add_argument("--out", required=True, help="paths file to write")
    p.add_argument("--encoding", **enc)
    p.set_defaults(func=cmd_clusters)

    p = lsub.add_parser("train", help="train a blocked HMM language model")
    p.add_argument("--train", required=True, help="training text, one sentence per line")
    p.add_argument("--valid", default=None, help="validation text (plateau schedule)")
    p.add_argument("--out", required=True, help="model directory to write")
    p.add_argument("--constraint", choices=["brown", "random", "dense"], default="brown")
    p.add_argument("--paths", default=None,
                   help="Brown clusters (wcluster paths file); default: computed here")
    p.add_argument("--clusters", type=int_at_least(2), default=128,
                   help="clusters computed when --paths is not given (128)")
    p.add_argument("--states-per-cluster", type=int_at_least(1), default=32)
    p.add_argument("--states", type=int_at_least(1), default=None,
                   help="total states for --constraint random or dense")
    p.add_argument("--dropout", type=int_at_least(1), default=None,
                   help="states kept per cluster in each batch (state dropout)")
    p.add_argument("--dropout-masks", type=int_at_least(1), default=32,
                   help="batch EM on CPU with --dropout: masks per iteration (32)")
    p.add_argument("--parameterization", choices=["scalar", "neural"], default="scalar")
    p.add_argument("--hidden", type=int_at_least(1), default=256)
    p.add_argument("--learn", choices=["gradient", "em", "stepwise-em", "stepwise_em"],
                   default="gradient", help="stepwise_em: deprecated spelling of stepwise-em")
    p.add_argument("--lr", type=finite_float, default=None)
    p.add_argument("--prior", type=finite_float, default=None,
                   help="EM: Dirichlet concentration of every row, pseudo-count prior - 1 "
                        "(1.01)")
    p.add_argument("--em-prior", type=finite_float, default=None,
                   help="deprecated: EM pseudo-count; use --prior 1+x")
    p.add_argument("--em-patience", type=int_at_least(0), default=0,
                   help="batch EM on CPU: iterations without a new best validation "
                        "perplexity before stopping (0)")
    p.add_argument("--em-m-steps", type=int_at_least(1), default=10,
                   help="batch EM with --parameterization neural: AdamW steps per M-step (10)")
    p.add_argument("--epochs", type=int_at_least(1), default=None,
                   help="epochs (EM: iterations) in all (1); with --resume, the new total")
    p.add_argument("--batch-size", type=int_at_least(1), default=None,
                   help="streams per batch (16 on CPU, 256 on a GPU)")
    p.add_argument("--bptt", type=int_at_least(1), default=32)
    p.add_argument("--eval-every", type=int_at_least(1), default=None)
    p.add_argument("--checkpoint-every", type=int_at_least(1), default=500)
    p.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    p.add_argument("--device", default="cpu")
    p.add_argument("--seed", type=int_at_least(0), default=0)
    p.add_argument("--resume", action="store_true",
                   help="continue OUT/checkpoint (on the same training text)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="a progress bar on stderr (default: when stderr is a terminal; "
                        "otherwise one line per evaluation)")
    p.add_argument("--encoding", **enc)
    p.set_defaults(func=cmd_train)

    p = lsub.add_parser("eval", help="exact perplexity of a text")
    p.add_argument("model", metavar="MODEL")
    p.add_argument("text", metavar="TEXT")
    p.add_argument("--encoding", **enc)
    p.set_defaults(func=cmd_eval)

    p = lsub.add_parser(
        "baseline", help="perplexity of a Kneser-Ney n-gram model of the training text",
        description="Fit an interpolated Kneser-Ney n-gram model (hiddenstate.sources."
                    "KneserNeySource) to --train, one sentence per line, and print the exact "
                    "log-likelihood and perplexity of TEXT as `lm eval` does (same vocabulary "
                    "rule: the words of --train, one <eos> after every line).")
    p.add_argument("text", metavar="TEXT", help="text to score, one sentence per line")
    p.add_argument("--train", required=True, help="training text, one sentence per line")
    p.add_argument("--order", type=int_at_least(1), default=5, help="n-gram order (5)")
    p.add_argument("--encoding", **enc)
    p.set_defaults(func=cmd_baseline)

    p = lsub.add_parser("sample", help="draw text from a model")
    p.add_argument("model", metavar="MODEL")
    p.add_argument("--tokens", type=int_at_least(1), default=50)
    p.add_argument("--seed", type=int_at_least(0), default=0)
    p.set_defaults(func=cmd_sample)

    p = lsub.add_parser("report", help="perplexity curve and state usage per cluster")
    p.add_argument("model", metavar="MODEL")
    p.add_argument("text", metavar="TEXT", help="text whose state usage is shown")
    p.add_argument("--out", required=True)
    p.add_argument("--encoding", **enc)
    p.set_defaults(func=cmd_report)


def cmd_clusters(args, out) -> int:
    from .lm.clusters import BrownClusters, brown_clusters, write_brown_paths
    from .textio import Vocabulary, read_text_file
    words = read_text_file(args.text, args.encoding).split()
    vocab = Vocabulary.build([words])
    ids = vocab.encode(words)
    wc = brown_clusters(ids, args.clusters, n_words=len(vocab), max_iter=args.max_iter)
    width = max(1, int(np.ceil(np.log2(args.clusters))))
    write_brown_paths(BrownClusters(vocab.tokens, [format(int(c), f"0{width}b") for c in wc],
                                    vocab.counts), args.out)
    print(json.dumps({"clusters": int(len(set(wc.tolist()))), "words": len(vocab),
                      "out": str(args.out)}), file=out)
    return 0


def _progress(flag):
    """``--progress``: a bar when asked or when stderr is a terminal, else one line per
    evaluation (a log file gets no bar)."""
    if flag is None:
        return True if sys.stderr.isatty() else "lines"
    return flag


def cmd_train(args, out) -> int:
    from .lm import BlockedHMMLM, brown_clusters, load_checkpoint, read_brown_paths, read_lm_file
    from .lm.data import vocabulary_difference
    from .lm.model import check_device
    check_device(args.device)  # before reading anything
    if args.em_prior is not None:
        warnings.warn("--em-prior is deprecated; pass --prior 1+x (the Dirichlet "
                      "concentration)", FutureWarning, stacklevel=1)
    if not args.resume and args.constraint != "brown" and args.states is None:
        raise InvalidInputError(
            f"--states: --constraint {args.constraint} needs the total number of states; "
            "pass e.g. --states 1024 (or use --constraint brown with --states-per-cluster)")
    train, vocab = read_lm_file(args.train, encoding=args.encoding)
    ckpt = Path(args.out) / "checkpoint"
    if args.resume:
        if not (ckpt / "model.json").is_file():
            raise InvalidInputError(
                f"--resume: {ckpt} holds no checkpoint to continue (`lm train --out "
                f"{args.out}` writes one as it trains); drop --resume to start a new model")
        model = load_checkpoint(ckpt)
        diff = vocabulary_difference(vocab, model.vocabulary_)
        if diff is not None:
            raise InvalidInputError(
                f"--train: {args.train} does not have the checkpoint's vocabulary ({diff}), so "
                "its word ids would mean other words; resume with the training text of the "
                "checkpoint, or train a new model without --resume")
        train, _ = read_lm_file(args.train, model.vocabulary_, encoding=args.encoding)
        valid = read_lm_file(args.valid, model.vocabulary_, args.encoding)[0] \
            if args.valid else None
        if args.epochs is not None:
            done = model._state["epoch"]
            if args.epochs <= done and not model._state["stopped"]:
                raise InvalidInputError(
                    f"--epochs: the checkpoint has trained {done} epochs already; pass more "
                    "than that to train further")
            model.n_epochs = args.epochs
        model.progress = _progress(args.progress)
        model.fit(train, valid, resume=True, checkpoint=ckpt,
                  checkpoint_every=args.checkpoint_every)
    else:
        valid = read_lm_file(args.valid, vocab, args.encoding)[0] if args.valid else None
        wc = None
        if args.constraint == "brown":
            if args.paths:
                wc = read_brown_paths(args.paths).word_cluster(vocab)
            else:
                eos = vocab.id_of("<eos>")
                wc = brown_clusters(train[train != eos], args.clusters, n_words=len(vocab))
                wc[eos] = wc.max() + 1  # <eos> in a cluster of its own
        model = BlockedHMMLM(
            constraint=args.constraint, states_per_cluster=args.states_per_cluster,
            n_states=args.states, parameterization=args.parameterization,
            hidden_size=args.hidden, state_dropout=args.dropout, dropout_masks=args.dropout_masks,
            learn=args.learn, lr=args.lr, prior=args.prior, em_prior=args.em_prior,
            em_patience=args.em_patience, em_m_steps=args.em_m_steps,
            batch_size=args.batch_size, bptt=args.bptt, n_epochs=args.epochs or 1,
            eval_every=args.eval_every, dtype=args.dtype, device=args.device,
            random_state=args.seed, progress=_progress(args.progress))
        model.fit(train, valid, vocabulary=vocab, word_cluster=wc, checkpoint=ckpt,
                  checkpoint_every=args.checkpoint_every)
    model.save(args.out)
    last = model.history_[-1] if model.history_ else {}
    print(json.dumps({"states": model.n_states_, "out": str(args.out), **last}), file=out)
    return 0


def _load(path):
    """The language model saved in ``--model`` (:func:`hiddenstate.load`)."""
    from .lm import BlockedHMMLM
    from .persist import load

    model = load(path)
    if not isinstance(model, BlockedHMMLM):
        raise ModelFileError(f"--model: {path} holds a {type(model).__name__}, not a "
                             "BlockedHMMLM; pass a directory written by `hiddenstate lm train`")
    return model


def cmd_eval(args, out) -> int:
    from .lm import read_lm_file
    model = _load(args.model)
    ids, _ = read_lm_file(args.text, model.vocabulary_, args.encoding)
    ll = model.score(ids)
    print(json.dumps({"tokens": int(len(ids)), "log_likelihood": ll,
                      "perplexity": float(np.exp(-ll / len(ids)))}), file=out)
    return 0


def _sentence_lengths(ids, eos: int) -> np.ndarray:
    """The length of each sentence of ``ids`` (each ends with ``<eos>``; text after the last
    one is a sentence too)."""
    cut = np.flatnonzero(np.asarray(ids) == eos) + 1
    if not len(cut) or cut[-1] != len(ids):
        cut = np.append(cut, len(ids))
    return np.diff(np.concatenate(([0], cut)))


def cmd_baseline(args, out) -> int:
    from .lm import read_lm_file
    from .sources import KneserNeySource
    train, vocab = read_lm_file(args.train, encoding=args.encoding)
    ids, _ = read_lm_file(args.text, vocab, args.encoding)
    eos = vocab.id_of("<eos>")
    kn = KneserNeySource(order=args.order).fit(
        np.asarray(train), _sentence_lengths(train, eos), n_symbols=len(vocab))
    ll, start = 0.0, 0
    for n in _sentence_lengths(ids, eos):  # each sentence from the start-of-sequence context
        ll += float(kn.log_probs(np.asarray(ids[start:start + n])).sum())
        start += n
    print(json.dumps({"model": f"Kneser-Ney {args.order}-gram", "tokens": int(len(ids)),
                      "log_likelihood": ll, "perplexity": float(np.exp(-ll / len(ids)))}),
          file=out)
    return 0


def cmd_sample(args, out) -> int:
    model = _load(args.model)
    words = model.sample(args.tokens, random_state=args.seed)
    print(" ".join(words).replace(" <eos> ", "\n").replace("<eos>", ""), file=out)
    return 0


def cmd_report(args, out) -> int:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise InvalidInputError("lm report: needs matplotlib (the plot extra)") from exc
    from .lm import read_lm_file
    model = _load(args.model)
    ids, _ = read_lm_file(args.text, model.vocabulary_, args.encoding)
    dest = Path(args.out)
    dest.mkdir(parents=True, exist_ok=True)
    hist = [h for h in model.history_ if h.get("valid_ppl")]
    fig = Figure(figsize=(5, 3.5))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    if hist:
        ax.plot([h["step"] for h in hist], [h["valid_ppl"] for h in hist], marker="o")
    ax.set(xlabel="batches", ylabel="validation perplexity", title="validation perplexity")
    fig.tight_layout()
    fig.savefig(dest / "curve.png", dpi=100)
    usage = model.state_usage(ids)
    cs = model.constraints_
    fig = Figure(figsize=(6, 3.5))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    rep = {"perplexity": model.perplexity(ids), "states": cs.n_states, "history": hist}
    if cs.word_cluster is not None:
        per = usage.reshape(-1, cs.k)
        frac = per / np.maximum(per.sum(axis=1, keepdims=True), 1e-300)
        used = (frac > 1e-3 / cs.k).sum(axis=1)
        ax.bar(np.arange(len(used)), used)
        ax.set(xlabel="cluster", ylabel=f"states used (of {cs.k})",
               title="states carrying > 0.1/k of their cluster's mass")
        rep["states_used_per_cluster"] = used.tolist()
    else:
        ax.hist(usage, bins=50)
        ax.set(xlabel="posterior mass of a state", ylabel="states")
    fig.tight_layout()
    fig.savefig(dest / "usage.png", dpi=100)
    (dest / "report.json").write_text(json.dumps(rep, indent=1))
    print(json.dumps({"out": str(dest), "perplexity": rep["perplexity"]}), file=out)
    return 0
