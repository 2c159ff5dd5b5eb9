"""The converters of the task projects on real lines from ../shared/data:

- `convert-conllu` (Tweebank v2 CoNLL-U): doc.text is the raw `# text =`, UPOS in pos_/tag_,
  multiword tokens, empty nodes, the SpaceAfter fallback, malformed input;
- `convert-textcat` (TweetEval emotion): one Doc per line, exclusive cats, misaligned files;
- `convert` on MasakhaNER, as the masakhaner project runs it (--sep space --repair-iob), for
  all ten languages.

Expected values come from an independent reading of the same files in the test, not from
the converters. The CLI runs in-process (typer's runner: the same command, no start-up cost);
the `python -m spacy_entangle` entry point runs in the project tests."""

import re
from collections import Counter
from pathlib import Path
from typing import List, Tuple

import pytest
import spacy
from _cli import cli
from spacy.tokens import DocBin

from spacy_entangle.converters import FormatError
from spacy_entangle.converters.conll_ner import ConllFormatError, conll_to_docs
from spacy_entangle.converters.conllu import ConlluFormatError, conllu_to_docs, convert_conllu
from spacy_entangle.converters.textcat import TextcatFormatError, read_mapping, textcat_to_docs

LANGUAGES = ["amh", "hau", "ibo", "kin", "lug", "luo", "pcm", "swa", "wol", "yor"]


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf8")
    return path


@pytest.fixture(scope="module")
def tweebank(shared_data) -> Path:
    folder = shared_data / "tweebank"
    if not (folder / "train.conllu").exists():
        pytest.skip(f"no {folder}")
    return folder


@pytest.fixture(scope="module")
def emotion(shared_data) -> Path:
    folder = shared_data / "tweeteval_emotion"
    if not (folder / "mapping.txt").exists():
        pytest.skip(f"no {folder}")
    return folder


# ------------------------------------------------------------------------ CoNLL-U (Tweebank)


def _reference_tweets(path: Path, n: int) -> Tuple[List[dict], str]:
    """The first n sentences of a CoNLL-U file read independently: raw text and
    (FORM, UPOS, XPOS) per word; and the raw lines they span."""
    blocks = path.read_text(encoding="utf8").split("\n\n")[:n]
    sents = []
    for block in blocks:
        text = next(line[len("# text = ") :] for line in block.splitlines() if line.startswith("# text = "))
        words = [
            tuple(line.split("\t")[i] for i in (1, 3, 4))
            for line in block.splitlines()
            if line and not line.startswith("#")
        ]
        sents.append({"text": text, "words": words})
    return sents, "\n\n".join(blocks) + "\n\n"


@pytest.mark.parametrize("split", ["train", "dev"])
def test_tweebank_first_tweets(tweebank, tmp_path, split):
    n = 60
    ref, text = _reference_tweets(tweebank / f"{split}.conllu", n)
    sample = _write(tmp_path, "sample.conllu", text)
    for tag in ("upos", "xpos"):
        docs = conllu_to_docs(sample, "en", tag_from=tag)
        assert len(docs) == n
        for doc, sent in zip(docs, ref):
            assert doc.text == sent["text"]  # the raw tweet, whitespace and all
            words = [t for t in doc if not t.is_space]
            assert [t.text for t in words] == [f for f, _, _ in sent["words"]]
            assert [t.pos_ for t in words] == [u for _, u, _ in sent["words"]]
            expected_tags = [u if tag == "upos" else ("" if x == "_" else x) for _, u, x in sent["words"]]
            assert [t.tag_ for t in words] == expected_tags
            # extra whitespace is a token of its own, unannotated
            assert all(t.pos_ == "" and t.tag_ == "" for t in doc if t.is_space)
    # the first training tweet keeps its run of seven spaces
    if split == "train":
        doc = conllu_to_docs(sample, "en")[0]
        assert "diary,       I've" in doc.text
        assert [t.text for t in doc][5:8] == [",", "      ", "I"]


def test_tweebank_whole_files_and_docbin_round_trip(tweebank, tmp_path):
    for split in ("train", "dev"):
        raw = (tweebank / f"{split}.conllu").read_text(encoding="utf8")
        texts = re.findall(r"^# text = (.*)$", raw, flags=re.M)
        upos = Counter(line.split("\t")[3] for line in raw.splitlines() if re.match(r"^\d+\t", line))
        out = tmp_path / "corpus" / f"{split}.spacy"  # the folder is created
        r = cli("convert-conllu", tweebank / f"{split}.conllu", out, "--tag", "upos")
        assert r.returncode == 0, r.stderr
        assert f"{len(texts)} docs, {sum(upos.values())} words, {len(upos)} UPOS labels" in r.stdout
        docs = list(DocBin().from_disk(out).get_docs(spacy.blank("en").vocab))
        assert [d.text for d in docs] == texts
        assert Counter(t.pos_ for d in docs for t in d if t.pos_) == upos
        assert all(t.tag_ == t.pos_ for d in docs for t in d)
        assert not [p for p in out.parent.iterdir() if p.name.endswith(".tmp")]


MWT = """# sent_id = 1
# text = I'm gonna  go\tto del mar
1\tI\tI\tPRON\tPRP\t_\t3\tnsubj\t_\tSpaceAfter=No
2\t'm\tbe\tAUX\tVBP\t_\t3\taux\t_\t_
3-4\tgonna\t_\t_\t_\t_\t_\t_\t_\t_
3\tgon\tgo\tVERB\tVBG\tVerbForm=Ger\t0\troot\t_\t_
4\tna\tto\tPART\tTO\t_\t5\tmark\t_\t_
5\tgo\tgo\tVERB\tVB\t_\t3\txcomp\t_\t_
5.1\tgone\tgo\tVERB\tVBN\t_\t_\t_\t3:conj\t_
6\tto\tto\tADP\tIN\t_\t8\tcase\t_\t_
7-8\tdel\t_\t_\t_\t_\t_\t_\t_\t_
7\tde\tde\tADP\t_\t_\t9\tcase\t_\t_
8\tel\tel\tDET\t_\t_\t9\tdet\t_\t_
9\tmar\tmar\tNOUN\t_\t_\t5\tobl\t_\tSpaceAfter=No

# sent_id = 2
1\tNo\tno\tINTJ\tUH\t_\t0\troot\t_\tSpaceAfter=No
2\t!\t!\tPUNCT\t.\t_\t1\tpunct\t_\t_
3\tok\tok\tINTJ\tUH\t_\t1\tdiscourse\t_\tSpaceAfter=No

"""


def test_multiword_tokens_empty_nodes_and_text_fallback(tmp_path):
    from spacy_entangle.converters.conllu import ConlluStats

    stats = ConlluStats()
    docs = conllu_to_docs(_write(tmp_path, "mwt.conllu", MWT), "en", stats=stats)
    doc = docs[0]
    assert doc.text == "I'm gonna  go\tto del mar"
    # gonna = gon + na: split, no space inside; del != de + el: one unannotated token
    assert [t.text for t in doc] == ["I", "'m", "gon", "na", " ", "go", "\t", "to", "del", "mar"]
    assert [t.whitespace_ for t in doc][:4] == ["", " ", "", " "]
    assert [t.pos_ for t in doc] == ["PRON", "AUX", "VERB", "PART", "", "VERB", "", "ADP", "", "NOUN"]
    assert doc[2].tag_ == "VBG" and doc[2].lemma_ == "go" and str(doc[2].morph) == "VerbForm=Ger"
    assert "gone" not in doc.text  # the empty node 5.1 has no surface form
    # no `# text =`: rebuilt from the FORMs and SpaceAfter=No
    assert docs[1].text == "No! ok"
    assert (stats.docs, stats.words, stats.multiword_split, stats.multiword_merged) == (2, 12, 1, 1)
    assert (stats.empty_nodes, stats.no_text, stats.whitespace_tokens) == (1, 1, 2)


def _tweet(text: str, *rows: str) -> str:
    return f"# text = {text}\n" + "".join(f"{r}\n" for r in rows) + "\n"


ROW = "{i}\t{form}\t_\t{upos}\t_\t_\t0\troot\t_\t_"


@pytest.mark.parametrize(
    "text,line,fragment",
    [
        # the FORM is not where the text goes on: the error names the token's line (3)
        (
            _tweet(
                "hello world", ROW.format(i=1, form="hello", upos="INTJ"), ROW.format(i=2, form="word", upos="NOUN")
            ),
            3,
            "FORM 'word' not found",
        ),
        (_tweet("a b", ROW.format(i=1, form="a", upos="DET"), ROW.format(i=2, form="c", upos="NOUN")), 3, "FORM 'c'"),
        (_tweet("a b", "1\ta\t_\tDET\t_\t_\t0\troot\t_"), 2, "expected 10 tab-separated columns"),
        (
            _tweet("a b", ROW.format(i=1, form="a", upos="DET"), ROW.format(i=3, form="b", upos="NOUN")),
            3,
            "out of order",
        ),
        (_tweet("a", ROW.format(i=1, form="a", upos="NOPE")), 2, "unknown UPOS 'NOPE'"),
        (_tweet("a", ROW.format(i="x", form="a", upos="DET")), 2, "invalid ID 'x'"),
        (
            _tweet("ab", "1-2\tab\t_\t_\t_\t_\t_\t_\t_\t_", ROW.format(i=1, form="a", upos="DET")),
            4,
            "multiword token 1-2 is missing words",
        ),
        (
            "# text = a\n" + ROW.format(i=1, form="a", upos="DET") + "\n# text = b\n",
            3,
            "comment line inside a sentence",
        ),
        ("# text = a b\n\n", 1, "no token lines"),
    ],
)
def test_conllu_malformed_names_file_and_line(tmp_path, text, line, fragment):
    src = _write(tmp_path, "bad.conllu", text)
    with pytest.raises(ConlluFormatError) as err:
        conllu_to_docs(src)
    assert isinstance(err.value, FormatError) and err.value.line == line
    assert str(err.value).startswith(f"{src}:{line}: ") and fragment in str(err.value)
    out = tmp_path / "out.spacy"
    r = cli("convert-conllu", src, out)
    assert r.returncode == 1
    assert r.stderr.startswith("✘ convert-conllu failed") and f"{src}:{line}:" in r.stderr
    assert not out.exists()


def test_conllu_empty_file_and_bad_bytes(tmp_path):
    with pytest.raises(ConlluFormatError, match="no sentences found"):
        conllu_to_docs(_write(tmp_path, "empty.conllu", "# just a comment\n\n"))
    bad = tmp_path / "bad.conllu"
    bad.write_bytes(b"# text = a\n1\t\xff\t_\tX\t_\t_\t0\troot\t_\t_\n")
    with pytest.raises(ConlluFormatError, match=r":2: not valid UTF-8"):
        conllu_to_docs(bad)
    r = cli("convert-conllu", tmp_path / "missing.conllu", tmp_path / "o.spacy")
    assert r.returncode != 0


def test_convert_conllu_writes_atomically(tweebank, tmp_path):
    _, text = _reference_tweets(tweebank / "dev.conllu", 5)
    out = tmp_path / "dev.spacy"
    stats = convert_conllu(_write(tmp_path, "s.conllu", text), out)
    assert stats.docs == 5 and out.exists()
    before = out.read_bytes()
    # a failing conversion leaves the earlier output as it was
    with pytest.raises(ConlluFormatError):
        convert_conllu(_write(tmp_path, "bad.conllu", "# text = x\n1\ty\t_\tX\t_\t_\t0\troot\t_\t_\n"), out)
    assert out.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


# --------------------------------------------------------------------- TweetEval (textcat)


def test_textcat_first_lines(emotion, tmp_path):
    n = 50
    names = dict(line.split("\t") for line in (emotion / "mapping.txt").read_text(encoding="utf8").splitlines())
    texts = (emotion / "train_text.txt").read_text(encoding="utf8").split("\n")[:n]
    labels = (emotion / "train_labels.txt").read_text(encoding="utf8").split("\n")[:n]
    t = _write(tmp_path, "t.txt", "\n".join(texts) + "\n")
    lab = _write(tmp_path, "l.txt", "\n".join(labels) + "\n")
    docs = textcat_to_docs(t, lab, emotion / "mapping.txt", "en")
    assert len(docs) == n
    for doc, text, label in zip(docs, texts, labels):
        assert doc.text == text  # verbatim, TweetEval's trailing space included
        assert set(doc.cats) == set(names.values())
        assert doc.cats[names[label.strip()]] == 1.0 and sum(doc.cats.values()) == 1.0
    assert any(text.endswith(" ") for text in texts)
    assert read_mapping(emotion / "mapping.txt") == names


def test_textcat_whole_split_cli(emotion, tmp_path):
    names = dict(line.split("\t") for line in (emotion / "mapping.txt").read_text(encoding="utf8").splitlines())
    labels = (emotion / "val_labels.txt").read_text(encoding="utf8").split()
    texts = (emotion / "val_text.txt").read_text(encoding="utf8").split("\n")
    texts = texts[:-1] if texts[-1] == "" else texts
    out = tmp_path / "corpus" / "dev.spacy"
    r = cli("convert-textcat", emotion / "val_text.txt", emotion / "val_labels.txt", emotion / "mapping.txt", out)
    assert r.returncode == 0, r.stderr
    counts = Counter(names[label] for label in labels)
    assert f"{len(texts)} docs" in r.stdout
    assert "labels: " + ", ".join(f"{name} {counts[name]}" for name in names.values()) in r.stdout
    docs = list(DocBin().from_disk(out).get_docs(spacy.blank("en").vocab))
    assert [d.text for d in docs] == texts
    assert Counter(max(d.cats, key=d.cats.get) for d in docs) == counts


@pytest.mark.parametrize(
    "texts,labels,mapping,where,fragment",
    [
        ("a\nb\nc\n", "0\n1\n", None, "labels", "2 label lines but"),
        ("a\nb\n", "0\n7\n", None, ("labels", 2), "unknown label id '7'"),
        ("a\nb\n", "0\n\n", None, ("labels", 2), "empty label line"),
        ("a\n  \n", "0\n1\n", None, ("texts", 2), "empty text line"),
        ("a\nb\n", "0\n1\n", "0 anger\n1 joy\n", ("mapping", 1), "expected ID<TAB>NAME"),
        ("a\nb\n", "0\n1\n", "0\tanger\n0\tjoy\n", ("mapping", 2), "mapped twice"),
        ("a\nb\n", "0\n1\n", "0\tanger\n1\tanger\n", ("mapping", 2), "used twice"),
        ("a\nb\n", "0\n0\n", "0\tanger\n", "mapping", "at least 2 labels"),
        ("", "", None, "texts", "no lines found"),
    ],
)
def test_textcat_bad_input(tmp_path, texts, labels, mapping, where, fragment):
    files = {
        "texts": _write(tmp_path, "t.txt", texts),
        "labels": _write(tmp_path, "l.txt", labels),
        "mapping": _write(tmp_path, "m.txt", mapping or "0\tanger\n1\tjoy\n2\toptimism\n3\tsadness\n"),
    }
    name, line = where if isinstance(where, tuple) else (where, None)
    with pytest.raises(TextcatFormatError) as err:
        textcat_to_docs(files["texts"], files["labels"], files["mapping"])
    assert err.value.path == str(files[name]) and err.value.line == line
    assert fragment in str(err.value)
    out = tmp_path / "out.spacy"
    r = cli("convert-textcat", files["texts"], files["labels"], files["mapping"], out)
    assert r.returncode == 1 and r.stderr.startswith("✘ convert-textcat failed") and fragment in r.stderr
    assert not out.exists()


# --------------------------------------------------------------------- MasakhaNER (convert)


def _sentences(path: Path) -> List[List[Tuple[str, str, int]]]:
    """Independent reading: (token, tag, 1-based line) per line of each blank-line-separated block."""
    sents, current = [], []
    for lineno, line in enumerate(path.read_text(encoding="utf8").split("\n"), start=1):
        if not line.strip():
            if current:
                sents.append(current)
            current = []
            continue
        fields = line.split()
        current.append((fields[0], fields[-1], lineno))
    return sents + ([current] if current else [])


def _orphans(sents) -> List[int]:
    """Lines of the I-X tags that do not continue a B-X / I-X of their sentence."""
    lines = []
    for sent in sents:
        prev = "O"
        for _, tag, lineno in sent:
            if tag.startswith("I-") and prev[2:] != tag[2:]:
                lines.append(lineno)
                tag = "B-" + tag[2:]
            prev = tag
    return lines


@pytest.mark.parametrize("lang", LANGUAGES)
def test_masakhaner_every_language(shared_data, tmp_path, lang):
    folder = shared_data / "masakhaner" / lang
    if not (folder / "dev.txt").exists():
        pytest.skip(f"no {folder}")
    n = 20
    ref = _sentences(folder / "dev.txt")[:n]
    sample = _write(tmp_path, "dev.txt", "\n\n".join("\n".join(f"{w} {t}" for w, t, _ in s) for s in ref) + "\n")
    docs = conll_to_docs(sample, "xx", sep="space", repair_iob=True)
    assert len(docs) == n
    for doc, sent in zip(docs, ref):
        assert [t.text for t in doc] == [w for w, _, _ in sent]
        assert Counter(e.label_ for e in doc.ents) == Counter(t[2:] for _, t, _ in sent if t.startswith("B-"))
    assert {e.label_ for d in docs for e in d.ents} <= {"PER", "ORG", "LOC", "DATE"}


def test_masakhaner_orphan_i_tags_need_repair(shared_data, tmp_path):
    """The project converts with --repair-iob: some training files hold a sentence that starts
    with I- (a blank line inside an entity); without it the converter names that line."""
    found = 0
    for lang in LANGUAGES:
        path = shared_data / "masakhaner" / lang / "train.txt"
        if not path.exists():
            continue
        sents = _sentences(path)
        orphans = _orphans(sents)
        if not orphans:
            continue
        found += 1
        with pytest.raises(ConllFormatError) as err:
            conll_to_docs(path, "xx", sep="space")
        assert err.value.line == orphans[0]
        out = tmp_path / f"{lang}.spacy"
        r = cli("convert", path, out, "--lang", "xx", "--sep", "space", "--repair-iob")
        assert r.returncode == 0, r.stderr
        n_tokens = sum(len(s) for s in sents)
        assert f"{len(sents)} docs, {n_tokens} tokens" in r.stdout
        assert f"{len(orphans)} orphan I- tag(s) read as B-" in r.stdout
    if not found:
        pytest.skip("no MasakhaNER training file with an orphan I- tag")
