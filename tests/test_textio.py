"""Vocabulary and the text / CSV / .npy readers of hiddenstate.textio."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hiddenstate import textio
from hiddenstate.errors import HiddenStateError, InvalidInputError, ModelFileError
from hiddenstate.textio import UNK, Vocabulary

CORPUS = [
    "the cat sat on the mat".split(),
    "the dog sat on the log".split(),
    "a cat and a dog <unk>".split(),
]


# --------------------------------------------------------------------------- vocabulary


def test_vocabulary_order_counts_and_unk():
    v = Vocabulary.build(CORPUS)
    # <unk> first; then by count (the:4), then ties (2 each) alphabetically, then singletons.
    assert v.tokens[:6] == [UNK, "the", "a", "cat", "dog", "on"]
    assert v.tokens[6] == "sat"
    assert v.counts[v.id_of("the")] == 4
    assert v.counts[0] == 1  # the corpus' own <unk> token is counted as unknown
    assert len(v) == 1 + len({t for s in CORPUS for t in s} - {UNK})
    assert v.unk_id == 0 and v.id_of("zebra") == 0 and v.id_of(UNK) == 0


def test_vocabulary_max_size_includes_unk_and_folds_counts():
    v = Vocabulary.build(CORPUS, max_size=4)
    assert v.tokens == [UNK, "the", "a", "cat"]
    total = sum(len(s) for s in CORPUS)
    assert sum(v.counts) == total  # everything dropped is counted under <unk>
    assert v.counts[0] == total - 4 - 2 - 2
    ids = v.encode("the dog ate".split())
    assert ids.tolist() == [1, 0, 0]
    assert ids.dtype == np.int64


def test_vocabulary_min_count():
    v = Vocabulary.build(CORPUS, min_count=2)
    assert set(v.tokens) == {UNK, "the", "a", "cat", "dog", "on", "sat"}
    assert v.encode(["mat", "log", "and"]).tolist() == [0, 0, 0]


def test_vocabulary_json_round_trip(tmp_path):
    v = Vocabulary.build(CORPUS, max_size=6)
    path = tmp_path / "vocab.json"
    v.save(path)
    raw = json.loads(path.read_text(encoding="utf-8"))  # plain JSON, not pickle
    assert raw["tokens"][0] == UNK and raw["format"] == "hiddenstate.vocabulary"
    w = Vocabulary.load(path)
    assert w == v
    sent = "the cat and the zebra".split()
    assert w.decode(w.encode(sent)) == ["the", "cat", UNK, "the", UNK]


def test_vocabulary_round_trip_non_ascii(tmp_path):
    v = Vocabulary.build([["Zrínyi", "Juárez", "–", "Zrínyi"]])
    v.save(tmp_path / "v.json")
    assert Vocabulary.load(tmp_path / "v.json").tokens == [UNK, "Zrínyi", "Juárez", "–"]


def test_vocabulary_load_rejects_malformed(tmp_path):
    p = tmp_path / "v.json"
    p.write_text(json.dumps({"format": "hiddenstate.vocabulary", "version": 1,
                             "unk_token": UNK, "tokens": [UNK, "a", "a"], "counts": [0, 1, 1]}))
    with pytest.raises(ModelFileError, match="appears more than once"):
        Vocabulary.load(p)
    p.write_text("[1, 2]")
    with pytest.raises(ModelFileError, match="not a hiddenstate vocabulary"):
        Vocabulary.load(p)
    p.write_text("{not json")
    with pytest.raises(ModelFileError, match="not valid UTF-8 JSON"):
        Vocabulary.load(p)
    with pytest.raises(ModelFileError, match="not found"):
        Vocabulary.load(tmp_path / "missing.json")


def test_vocabulary_bad_arguments():
    with pytest.raises(InvalidInputError, match="max_size"):
        Vocabulary.build(CORPUS, max_size=1)
    with pytest.raises(InvalidInputError, match="min_count"):
        Vocabulary.build(CORPUS, min_count=0)
    with pytest.raises(InvalidInputError, match="no tokens"):
        Vocabulary.build([[], []])
    v = Vocabulary.build(CORPUS)
    with pytest.raises(InvalidInputError, match="out of range"):
        v.decode([len(v)])


# --------------------------------------------------------------------------- text


def test_read_text_encodes_lines_and_skips_blank(tmp_path):
    p = tmp_path / "t.txt"
    p.write_text("the cat sat\n\n   \n  the  dog\tsat \nzebra\n", encoding="utf-8")
    X, lengths, v = textio.read_text(p)
    assert lengths.tolist() == [3, 3, 1]
    assert X.shape == (7, 1) and X.dtype == np.int64
    assert v.decode(X[:, 0]) == "the cat sat the dog sat zebra".split()
    # Reading with a fixed vocabulary maps unseen words to <unk>.
    q = tmp_path / "u.txt"
    q.write_text("the unicorn sat\n", encoding="utf-8")
    X2, l2, v2 = textio.read_text(q, v)
    assert v2 is v and l2.tolist() == [3]
    assert X2[:, 0].tolist() == [v.id_of("the"), v.unk_id, v.id_of("sat")]


def test_read_text_errors_name_the_file(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n  \n")
    with pytest.raises(InvalidInputError, match=r"empty\.txt: empty"):
        textio.read_text(empty)
    with pytest.raises(InvalidInputError, match=r"nothere\.txt: file not found"):
        textio.read_text(tmp_path / "nothere.txt")
    binary = tmp_path / "bin.txt"
    binary.write_bytes(b"\xff\xfe\x00abc")
    with pytest.raises(InvalidInputError, match=r"(?i)bin\.txt: not UTF-8"):
        textio.read_text(binary)


# --------------------------------------------------------------------------- csv


def test_read_csv_blank_lines_header_comments(tmp_path):
    p = tmp_path / "d.csv"
    p.write_text("x,y\n# a comment\n1,2\n3, 4.5\n\n\n-1e-3,6\n\n7,8\n9,10\n\n")
    X, lengths = textio.read_csv(p)
    np.testing.assert_array_equal(
        X, [[1, 2], [3, 4.5], [-1e-3, 6], [7, 8], [9, 10]])
    assert X.dtype == np.float64
    assert lengths.tolist() == [2, 1, 2]


def test_read_csv_with_lengths_file(tmp_path):
    p = tmp_path / "d.csv"
    p.write_text("\n".join(str(i) for i in range(6)) + "\n")
    lt = tmp_path / "lengths.txt"
    lt.write_text("2\n4\n")
    X, lengths = textio.read_csv(p, lt)
    assert X.shape == (6, 1) and lengths.tolist() == [2, 4]
    ln = tmp_path / "lengths.npy"
    np.save(ln, np.array([1, 5]))
    assert textio.read_csv(p, ln)[1].tolist() == [1, 5]
    lt.write_text("2 3\n")
    with pytest.raises(InvalidInputError, match=r"lengths\.txt: lengths add up to 5 .* 6 rows"):
        textio.read_csv(p, lt)


def test_read_csv_errors(tmp_path):
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("1,2\n3,4\n5\n")
    with pytest.raises(InvalidInputError, match=r"ragged\.csv, line 3: has 1 columns .* 2"):
        textio.read_csv(ragged)
    bad = tmp_path / "bad.csv"
    bad.write_text("1,2\n3,abc\n")
    with pytest.raises(InvalidInputError, match=r"bad\.csv, line 2, column 2: 'abc'"):
        textio.read_csv(bad)
    inf = tmp_path / "inf.csv"
    inf.write_text("1\ninf\n")
    with pytest.raises(InvalidInputError, match=r"inf\.csv, line 2, column 1: infinite"):
        textio.read_csv(inf)
    empty = tmp_path / "empty.csv"
    empty.write_text("# nothing\n\n")
    with pytest.raises(InvalidInputError, match=r"empty\.csv: empty"):
        textio.read_csv(empty)
    both = tmp_path / "both.csv"
    both.write_text("1\n2\n\n3\n")
    lt = tmp_path / "l.txt"
    lt.write_text("3")
    with pytest.raises(InvalidInputError, match="use one or the other"):
        textio.read_csv(both, lt)
    with pytest.raises(InvalidInputError, match=r"missing\.csv: file not found"):
        textio.read_csv(tmp_path / "missing.csv")


def test_read_table_missing_cells_dates_columns_and_sequences(tmp_path):
    """Every missing marker is NaN, a date column is the index (not data), a blank line
    starts a sequence, comments are skipped, and columns are chosen by name or position,
    in the order given; checked cell by cell against the file as written."""
    p = tmp_path / "t.csv"
    p.write_text("# a comment\n"
                 "Date,a,b,c\n"
                 "2024-01-01,1,,3\n"
                 "2024-01-02,NA,5,nan\n"
                 "\n\n"
                 "2024-01-05, 7 ,?,9\n"
                 "# another\n"
                 "2024-01-06,10,N/A,\n")
    data = textio.read_table(p)
    nan = np.nan
    np.testing.assert_array_equal(data.X, [[1, nan, 3], [nan, 5, nan], [7, nan, 9],
                                           [10, nan, nan]])
    np.testing.assert_array_equal(data.lengths, [2, 2])
    assert data.columns == ["a", "b", "c"] and data.index_name == "Date"
    assert data.index.dtype.kind == "M"
    assert [str(d)[:10] for d in data.index] == ["2024-01-01", "2024-01-02", "2024-01-05",
                                                 "2024-01-06"]
    chosen = textio.read_table(p, columns=["c", "2"])  # a name, then a position from 1
    np.testing.assert_array_equal(chosen.X, [[3, 1], [nan, nan], [9, 7], [nan, 10]])
    assert chosen.columns == ["c", "a"] and chosen.index_name == "Date"
    labelled = textio.read_table(p, columns=["a"], index_column="b")  # numbers as labels
    assert labelled.index_name == "b"
    np.testing.assert_array_equal(labelled.index, [nan, 5, nan, nan])
    X, lengths = textio.read_csv(p)  # the same numbers, as (X, lengths)
    np.testing.assert_array_equal(X, data.X)
    np.testing.assert_array_equal(lengths, [2, 2])


def test_read_table_other_date_formats_labels_and_no_header(tmp_path):
    us = tmp_path / "us.csv"
    us.write_text("day,x\n12/30/2023,1.5\n12/31/2023,2.5\n01/01/2024,3.5\n")
    data = textio.read_table(us)
    assert data.index_name == "day" and [str(d)[:10] for d in data.index] == [
        "2023-12-30", "2023-12-31", "2024-01-01"]
    np.testing.assert_array_equal(data.X.ravel(), [1.5, 2.5, 3.5])
    geyser = tmp_path / "g.csv"
    geyser.write_text("duration,waiting,kind\n3.6,79,long\n1.8,54,short\n")
    with pytest.raises(InvalidInputError, match=r"g\.csv, line 2, column 3 \('kind'\): "
                                                r"'long' is not a number.*--columns"):
        textio.read_table(geyser)
    data = textio.read_table(geyser, columns=["duration", "waiting"], index_column="kind")
    assert data.index.tolist() == ["long", "short"] and data.X.shape == (2, 2)
    bare = tmp_path / "bare.csv"
    bare.write_text("1,2\n3,4\n")
    data = textio.read_table(bare, columns=[2])
    assert data.columns == ["column 2"] and data.X.ravel().tolist() == [2.0, 4.0]


@pytest.mark.parametrize("kwargs, needle", [
    ({"columns": ["Prce"]}, r"columns: no column 'Prce' in .*'Date', 'Price'"),
    ({"columns": ["3"]}, r"columns: column 3 does not exist; .* has 2 columns"),
    ({"columns": ["Price", "2"]}, r"columns: 'Price' is named twice"),
    ({"columns": ["Price"], "index_column": "Price"}, r"index_column: 'Price' is also a data"),
    ({"index_column": "Price"}, r"no data column"),
])
def test_read_table_column_errors_name_the_fix(tmp_path, kwargs, needle):
    p = tmp_path / "prices.csv"
    p.write_text("Date,Price\n2024-01-02,10.5\n2024-01-03,11\n")
    if kwargs == {"index_column": "Price"}:
        p.write_text("Price\n10.5\n11\n")
    with pytest.raises(InvalidInputError, match=needle):
        textio.read_table(p, **kwargs)


def test_read_table_ragged_and_quoted_rows(tmp_path):
    short = tmp_path / "short.csv"
    short.write_text("a,b\n1,2\n3\n4,5\n")
    with pytest.raises(InvalidInputError, match=r"short\.csv, line 3: has 1 columns but "
                                                r"the header has 2"):
        textio.read_table(short)
    long = tmp_path / "long.csv"
    long.write_text("1,2\n3,4,5\n6\n")  # the total of commas is right, two rows are not
    with pytest.raises(InvalidInputError, match=r"long\.csv, line 2: has 3 columns"):
        textio.read_table(long)
    quoted = tmp_path / "quoted.csv"
    quoted.write_text('"name, with comma",x\n"1",2\n"3",4\n')
    data = textio.read_table(quoted)
    assert data.columns == ["name, with comma", "x"]
    np.testing.assert_array_equal(data.X, [[1, 2], [3, 4]])


# --------------------------------------------------------------------------- npy


def test_read_npy_keeps_dtype_and_lengths(tmp_path):
    p = tmp_path / "sym.npy"
    np.save(p, np.array([0, 2, 1, 1, 0], dtype=np.int32))
    X, lengths = textio.read_npy(p)
    assert X.shape == (5, 1) and X.dtype == np.int32 and lengths.tolist() == [5]
    ln = tmp_path / "len.npy"
    np.save(ln, np.array([3, 2]))
    assert textio.read_npy(p, ln)[1].tolist() == [3, 2]
    q = tmp_path / "real.npy"
    data = np.arange(12.0).reshape(6, 2)
    np.save(q, data)
    X, lengths = textio.read_npy(q)
    np.testing.assert_array_equal(X, data)


def test_read_npy_refuses_pickles_and_bad_arrays(tmp_path):
    obj = tmp_path / "obj.npy"
    np.save(obj, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(InvalidInputError, match=r"obj\.npy: dtype object is not numeric "
                                                r"\(reading it needs pickle"):
        textio.read_npy(obj)
    cube = tmp_path / "cube.npy"
    np.save(cube, np.zeros((2, 2, 2)))
    with pytest.raises(InvalidInputError, match=r"cube\.npy: expected a 1-D or 2-D"):
        textio.read_npy(cube)
    nan = tmp_path / "nan.npy"
    np.save(nan, np.array([1.0, np.nan]))
    with pytest.raises(InvalidInputError, match=r"nan\.npy: contains NaN .* row 1"):
        textio.read_npy(nan)
    garbage = tmp_path / "garbage.npy"
    garbage.write_bytes(b"definitely not numpy")
    with pytest.raises(InvalidInputError, match=r"garbage\.npy: "):
        textio.read_npy(garbage)
    ok = tmp_path / "ok.npy"
    np.save(ok, np.zeros(4))
    lz = tmp_path / "zero.txt"
    lz.write_text("4 0")
    with pytest.raises(InvalidInputError, match=r"zero\.txt: length 1 is 0"):
        textio.read_npy(ok, lz)


# --------------------------------------------------------------------------- dispatch


def test_infer_format_and_read_data(tmp_path):
    assert textio.infer_format("a/b.TXT") == "text"
    assert textio.infer_format("wiki.train.tokens") == "text"
    assert textio.infer_format("x.csv") == "csv"
    assert textio.infer_format("x.npy") == "npy"
    with pytest.raises(InvalidInputError, match=r"data\.dat: cannot tell the format.*--format"):
        textio.infer_format("data.dat")
    p = tmp_path / "x.dat"
    p.write_text("1,2\n3,4\n")
    X, lengths, vocab = textio.read_data(p, "csv")
    assert vocab is None and X.shape == (2, 2) and lengths.tolist() == [2]
    with pytest.raises(InvalidInputError, match="--lengths"):
        textio.read_data(p, "text", lengths_path=p)
    # every reader error is a HiddenStateError (so the CLI reports it in one line)
    assert issubclass(InvalidInputError, HiddenStateError)


def test_split_sequences_inverts_concatenation():
    X = np.arange(10)[:, None]
    parts = textio.split_sequences(X, [3, 5, 2])
    assert [len(p) for p in parts] == [3, 5, 2]
    np.testing.assert_array_equal(np.concatenate(parts), X)
