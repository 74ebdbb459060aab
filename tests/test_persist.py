"""``hiddenstate.load`` restores every estimator: fitted on a tiny data set, saved, loaded,
each gives the same ``score`` to the bit (and the same learned arrays); the old load entry
points are deprecated aliases that warn and return the same; a programs model finds its
built-in program or says to pass one."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import hiddenstate as hs
from hiddenstate import persist
from hiddenstate.errors import InvalidInputError, MissingDependencyError, ModelFileError
from hiddenstate.grammar import Grammar
from hiddenstate.programs import Program, ProgramModel, grammar_program, msw
from hiddenstate.programs.examples import builtin_program, hmm_program, path_program, pcfg_program
from hiddenstate.sources import KneserNeySource, load_source

W = 4
RULES = {"S": [("NP", "VP")], "VP": [("V", "NP"), ("eats",)], "NP": [("she",), ("fish",)],
         "V": [("eats",)]}
SENTENCES = ["she eats fish".split(), "fish eats".split(), "she eats she".split()]


def _symbols(seed: int, n: int = 120, width: int = W):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, width, size=(n, 1))
    return X, [n // 3, n - n // 3]


def _hmm():
    X, lengths = _symbols(0)
    m = hs.HMM(2, emission="categorical", n_iter=5, random_state=0).fit(X, lengths)
    return m, lambda model: model.score(X, lengths)


def _props():
    X, lengths = _symbols(1)
    src = KneserNeySource(order=2).fit(X[:, 0], n_symbols=W)
    m = hs.PROPS([src], n_perturbation_states=2, random_state=0).fit(X, lengths)
    return m, lambda model: model.score(X, lengths)


def _pcfg():
    m = hs.PCFG(rules=RULES, start="S", n_iter=4, random_state=0).fit(SENTENCES)
    return m, lambda model: model.score(SENTENCES)


def _plcg():
    m = hs.PLCG(rules=RULES, start="S", n_iter=4, random_state=0).fit(SENTENCES)
    return m, lambda model: model.score(SENTENCES)


def _treenet():
    rng = np.random.default_rng(2)
    X = rng.integers(0, 3, size=(40, 2))
    net = hs.TreeNet(n_states={"a": 2, "b": 2}, edges=[("a", "b"), ("b", "x0"), ("a", "x1")],
                     observed={"x0": 3, "x1": 3}, n_iter=3, random_state=0).fit(X)
    return net, lambda model: model.score(X)


def _nbh():
    rng = np.random.default_rng(3)
    X = rng.choice(np.array(["p", "q", "r"], dtype=object), size=(30, 3))
    y = rng.choice(np.array(["no", "yes"]), size=30)
    m = hs.NaiveBayesHidden(n_clusters=2, n_iter=5, random_state=0).fit(X, y)
    return m, lambda model: model.score(X, y)


def _program():
    prog = hmm_program(2, 3)
    rng = np.random.default_rng(4)
    goals = [prog.predicates["hmm"](tuple(rng.integers(0, 3, 12).tolist())) for _ in range(3)]
    m = ProgramModel(prog, learn="vb", n_iter=5, random_state=0).fit(goals)
    # the loaded model has its own program: score the same goals built on it
    return m, lambda model: model.score(
        [model.program.predicates["hmm"](g[1]) for g in goals])


def _lm():
    pytest.importorskip("torch")
    from hiddenstate.lm import BlockedHMMLM
    from hiddenstate.textio import Vocabulary

    rng = np.random.default_rng(5)
    vocab = Vocabulary(["<unk>", "<eos>"] + [f"w{i}" for i in range(8)])
    ids = []
    for _ in range(12):
        ids += list(rng.integers(2, 10, size=rng.integers(1, 5))) + [1]
    ids = np.array(ids, dtype=np.int64)
    m = BlockedHMMLM(states_per_cluster=2, dtype="float64", progress=False, n_epochs=1,
                     batch_size=2, bptt=6, random_state=0)
    m.fit(ids, vocabulary=vocab, word_cluster=np.arange(10) % 3)
    return m, lambda model: model.score(ids)


ESTIMATORS = {"HMM": _hmm, "PROPS": _props, "PCFG": _pcfg, "PLCG": _plcg, "TreeNet": _treenet,
              "NaiveBayesHidden": _nbh, "ProgramModel": _program, "BlockedHMMLM": _lm}


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_every_estimator_saves_and_loads_with_the_same_score(name, tmp_path):
    model, score = ESTIMATORS[name]()
    model.save(tmp_path / "m")
    back = hs.load(tmp_path / "m")
    assert type(back) is type(model) and type(back).__name__ == name
    assert score(back) == score(model)  # to the bit
    assert np.isfinite(score(model))
    assert back.get_params(deep=False).keys() == model.get_params(deep=False).keys()


def test_the_registry_names_every_model_class_the_format_holds():
    assert set(persist.MODELS) == {"HMM", "PROPS", "PCFG", "PLCG", "TreeNet",
                                   "NaiveBayesHidden"}
    assert all(getattr(hs, n) is c for n, c in persist.MODELS.items())
    assert hs.ProgramModel is ProgramModel and "ProgramModel" in hs.__all__


def test_saved_sources_load_too(tmp_path):
    X, lengths = _symbols(6)
    src = KneserNeySource(order=3).fit(X[:, 0], n_symbols=W)
    src.save(tmp_path / "kn")
    back = hs.load(tmp_path / "kn")
    assert type(back) is KneserNeySource
    assert np.array_equal(back.log_probs(X[:, 0]), src.log_probs(X[:, 0]))
    assert np.array_equal(load_source(tmp_path / "kn").log_probs(X[:, 0]),
                          src.log_probs(X[:, 0]))
    # load_source keeps its meaning: a source or an error, never a model
    _hmm()[0].save(tmp_path / "hmm")
    with pytest.raises(ModelFileError, match="unknown source class 'HMM'"):
        load_source(tmp_path / "hmm")


def test_a_saved_lstm_source_loads(tmp_path):
    pytest.importorskip("torch")
    from hiddenstate.sources import LSTMSource

    X, _ = _symbols(7, n=60)
    src = LSTMSource(embedding_dim=3, hidden_dim=4, epochs=1, random_state=0).fit(X[:, 0])
    src.save(tmp_path / "l")
    back = hs.load(tmp_path / "l")
    assert type(back) is LSTMSource
    assert np.array_equal(back.log_probs(X[:, 0]), src.log_probs(X[:, 0]))


# -- the programs model without program= --------------------------------------------------------
def _round_trip(prog: Program, goals, tmp_path, **kw):
    m = ProgramModel(prog, init="declared", n_iter=3, **kw).fit(goals)
    m.save(tmp_path / prog.name)
    return m, hs.load(tmp_path / prog.name)


def test_builtin_programs_are_found_by_name_and_switches(tmp_path):
    hmm = hmm_program(3, 2)
    goals = [hmm.predicates["hmm"]((0, 1, 1, 0, 1))]
    m, back = _round_trip(hmm, goals, tmp_path)
    assert back.program.name == "hmm" and back.program is not hmm
    assert back.score([back.program.predicates["hmm"]((0, 1, 1, 0, 1))]) == m.score(goals)
    path = path_program()
    m, back = _round_trip(path, [path.predicates["path"](1, 4)], tmp_path)
    assert back.score([back.program.predicates["path"](1, 4)]) == m.score(
        [path.predicates["path"](1, 4)])
    # a PCFG example (start: the one nonterminal no rule uses) and a Grammar's program
    for prog in (pcfg_program(RULES, "S"),
                 grammar_program(Grammar.from_rules(RULES, ["S", "VP"]))):
        goals = [prog.predicates["sentence"](tuple(s)) for s in SENTENCES]
        m = ProgramModel(prog, init="declared", n_iter=3).fit(goals)
        m.save(tmp_path / "g")
        back = hs.load(tmp_path / "g")
        mine = {n: back.program.switches.outcomes(n) for n in back.program.switches.names}
        assert mine == {n: prog.switches.outcomes(n) for n in prog.switches.names}
        assert back.score([back.program.predicates["sentence"](tuple(s))
                           for s in SENTENCES]) == m.score(goals)


def test_builtin_program_refuses_switches_it_cannot_have():
    hmm = hmm_program(2, 3)
    switches = [(n, list(hmm.switches.outcomes(n))) for n in hmm.switches.names]
    assert builtin_program("hmm", switches) is not None
    assert builtin_program("hmm", switches[:-1]) is None          # a switch missing
    assert builtin_program("hmm", [*switches[:-1], (switches[-1][0], [0, 1])]) is None
    assert builtin_program("path", switches) is None
    assert builtin_program("mine", switches) is None
    # two nonterminals no rule uses: the start of a pcfg_program is unknown
    two_roots = [("S", [("a",)]), ("T", [("b",)])]
    assert builtin_program("pcfg", two_roots) is None


def test_a_user_program_must_be_passed(tmp_path):
    prog = Program("coin")
    prog.switch("c", ["h", "t"])

    @prog.goal
    def toss(x):
        return [[msw("c", x)]]

    m = ProgramModel(prog, n_iter=2).fit([toss("h"), toss("h"), toss("t")])
    m.save(tmp_path / "coin")
    with pytest.raises(InvalidInputError, match=r"^program: .*'coin'.*program=my_program"):
        hs.load(tmp_path / "coin")
    back = hs.load(tmp_path / "coin", program=prog)
    assert np.array_equal(back.probs_["c"], m.probs_["c"])
    # program= for anything else is a mistake, named
    _hmm()[0].save(tmp_path / "hmm")
    with pytest.raises(InvalidInputError, match="^program: only a saved ProgramModel"):
        hs.load(tmp_path / "hmm", program=prog)


# -- errors ---------------------------------------------------------------------------------------
def test_unknown_formats_and_classes_are_refused(tmp_path):
    _hmm()[0].save(tmp_path / "m")
    doc = json.loads((tmp_path / "m" / "model.json").read_text())
    for edit, match in [({"format": "someone-else"}, "not a hiddenstate model file"),
                        ({"class": "Pickle"}, "unknown model class 'Pickle'"),
                        ({"format": ["x"]}, "not a hiddenstate model file")]:
        (tmp_path / "m" / "model.json").write_text(json.dumps({**doc, **edit}))
        with pytest.raises(ModelFileError, match=match):
            hs.load(tmp_path / "m")
    with pytest.raises(ModelFileError, match="is not a saved model"):
        hs.load(tmp_path / "nothing")


def test_a_language_model_without_torch_is_a_clear_error(tmp_path, monkeypatch):
    d = tmp_path / "lm"
    d.mkdir()
    (d / "model.json").write_text(json.dumps({"format": persist.LM_FORMAT, "version": 2,
                                              "class": "BlockedHMMLM"}))
    monkeypatch.setattr(persist, "_torch_installed", lambda: False)
    with pytest.raises(MissingDependencyError, match=r"needs PyTorch.*hiddenstate\[torch\]"):
        hs.load(d)


def test_the_lm_format_name_is_the_one_lm_writes():
    pytest.importorskip("torch")
    from hiddenstate.lm.model import LM_FORMAT

    assert persist.LM_FORMAT == LM_FORMAT


def test_an_lm_checkpoint_loads_as_its_model(tmp_path):
    pytest.importorskip("torch")
    from hiddenstate.lm import load_checkpoint

    model, score = _lm()
    model.save_checkpoint(tmp_path / "ckpt")
    back = hs.load(tmp_path / "ckpt")
    assert back._state is None and score(back) == score(model)
    assert load_checkpoint(tmp_path / "ckpt")._state is not None  # kept: resumes training


# -- deprecated aliases ---------------------------------------------------------------------------
def _warns_once(fn, *args, match, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn(*args, **kw)
    future = [w for w in caught if issubclass(w.category, FutureWarning)]
    assert len(future) == 1 and match in str(future[0].message), [str(w.message) for w in caught]
    assert future[0].filename == __file__  # points at the caller
    return out


def test_old_entry_points_warn_and_return_the_same(tmp_path):
    import hiddenstate.io as hio
    import hiddenstate.programs as hp

    model, score = _hmm()
    _warns_once(hio.save, model, tmp_path / "m", match="model.save(path)")
    back = _warns_once(hio.load, tmp_path / "m", match="use hiddenstate.load")
    assert score(back) == score(hs.load(tmp_path / "m"))
    npz = _warns_once(getattr, hio, "arrays_path", match="hiddenstate.persist.arrays_path")
    assert npz(tmp_path / "m") == persist.arrays_path(tmp_path / "m")
    assert _warns_once(getattr, hio, "VERSION", match="hiddenstate._bundle.VERSION") == 3
    with pytest.raises(AttributeError):
        hio.nothing_here  # noqa: B018
    pm, pscore = _program()
    pm.save(tmp_path / "p")
    again = _warns_once(hp.load, tmp_path / "p", hmm_program(2, 3), match="hiddenstate.load")
    assert pscore(again) == pscore(pm)


def test_lm_load_model_is_a_deprecated_alias(tmp_path):
    pytest.importorskip("torch")
    from hiddenstate.lm import load_model

    model, score = _lm()
    model.save(tmp_path / "lm")
    back = _warns_once(load_model, tmp_path / "lm", match="use hiddenstate.load")
    assert score(back) == score(model)


def test_the_command_line_reads_only_hmms_from_its_directories(tmp_path):
    """``cli.load_model_dir`` keeps its own meaning (cli.json and the vocabulary checked with
    the model) and now says so when model.json holds another estimator (it used to fail
    with an AttributeError)."""
    from hiddenstate import cli

    hmm, score = _hmm()
    cli.save_model_dir(hmm, tmp_path / "d", "csv")
    model, meta, vocabulary = cli.load_model_dir(tmp_path / "d")
    assert score(model) == score(hmm) and meta["input_format"] == "csv" and vocabulary is None
    _pcfg()[0].save(tmp_path / "d")
    with pytest.raises(ModelFileError, match="holds a PCFG"):
        cli.load_model_dir(tmp_path / "d")
