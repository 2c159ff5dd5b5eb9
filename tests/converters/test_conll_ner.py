"""`python -m spacy_entangle convert`: CoNLL-style BIO files -> .spacy (one Doc per sentence).

Real lines from ../shared/data (WNUT-17 TOKEN<TAB>TAG, MasakhaNER TOKEN TAG), malformed input
(file + 1-based line, exit code 1, no output left behind). The shipped configs are checked in
tests/configs/test_configs.py."""

from collections import Counter
from pathlib import Path

import pytest
import spacy
from _cli import cli
from spacy.tokens import DocBin

from spacy_entangle.converters.conll_ner import ConllFormatError, conll_to_docs, convert

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
WNUT = SHARED / "wnut17"
SWA = SHARED / "masakhaner" / "swa" / "dev.txt"

needs_wnut = pytest.mark.skipif(not (WNUT / "train.conll").exists(), reason="no ../shared/data/wnut17")
needs_swa = pytest.mark.skipif(not SWA.exists(), reason="no ../shared/data/masakhaner/swa")


def _cli(*args):
    """`python -m spacy_entangle convert ARGS`, in-process."""
    return cli("convert", *args)


def _first_sentences(path: Path, n: int, sep="\t"):
    """Reference reading, independent of the converter: (words, tags) of the first n sentences
    and the raw lines they span (separators included)."""
    sents, words, tags, lines = [], [], [], []
    for line in path.read_text(encoding="utf8").splitlines(keepends=True):
        lines.append(line)
        if not line.strip():
            if words:
                sents.append((words, tags))
                words, tags = [], []
                if len(sents) == n:
                    break
            continue
        fields = line.rstrip("\n").split(sep) if sep else line.split()
        words.append(fields[0])
        tags.append(fields[-1])
    if words and len(sents) < n:
        sents.append((words, tags))
    return sents, "".join(lines)


def _count_entities(tags):
    return Counter(t[2:] for t in tags if t.startswith("B-"))


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf8")
    return path


@needs_wnut
def test_wnut_first_sentences_verbatim(tmp_path):
    n = 40
    ref, text = _first_sentences(WNUT / "train.conll", n)
    assert "\t\n" in text  # train.conll separates some sentences with a lone tab
    sample = _write(tmp_path, "sample.conll", text)
    docs = conll_to_docs(sample, "en")
    assert len(docs) == n
    assert sum(len(d) for d in docs) == sum(len(w) for w, _ in ref)
    for doc, (words, tags) in zip(docs, ref):
        assert [t.text for t in doc] == words  # tokens kept exactly as given
        assert doc.text == " ".join(words)
        assert not doc[-1].whitespace_
        assert [t.ent_iob_ + ("-" + t.ent_type_ if t.ent_type_ else "") for t in doc] == tags
    got = Counter(e.label_ for d in docs for e in d.ents)
    assert got == sum((_count_entities(tags) for _, tags in ref), Counter())
    # the first sentence of train.conll: "Empire State Building" and "ESB", both location
    assert [(e.text, e.label_) for e in docs[0].ents] == [("Empire State Building", "location"), ("ESB", "location")]


@needs_wnut
@pytest.mark.parametrize("split,n_sents,n_tokens,n_ents", [("train", 3394, 62730, 1975), ("dev", 1009, 15733, 836)])
def test_wnut_whole_files_cli(tmp_path, split, n_sents, n_tokens, n_ents):
    out = tmp_path / "corpus" / f"{split}.spacy"  # the folder is created
    r = _cli(WNUT / f"{split}.conll", out, "--lang", "en")
    assert r.returncode == 0, r.stderr
    summary = r.stdout.strip().splitlines()
    assert len(summary) == 1
    assert f"{n_sents} docs, {n_tokens} tokens, {n_ents} entities" in summary[0]
    docs = list(DocBin().from_disk(out).get_docs(spacy.blank("en").vocab))
    assert len(docs) == n_sents
    assert sum(len(d) for d in docs) == n_tokens
    assert sum(len(d.ents) for d in docs) == n_ents
    labels = {e.label_ for d in docs for e in d.ents}
    assert labels == {"person", "location", "group", "creative-work", "corporation", "product"}
    # every token is annotated (O or an entity), none missing
    assert all(t.ent_iob_ in ("B", "I", "O") for d in docs[:50] for t in d)
    assert not [p for p in out.parent.iterdir() if p.name.endswith(".tmp")]


@needs_swa
def test_masakhaner_space_separated(tmp_path):
    n = 25
    ref, text = _first_sentences(SWA, n, sep=None)
    sample = _write(tmp_path, "swa.txt", text)
    docs = conll_to_docs(sample, "xx")  # sep auto -> space
    assert len(docs) == n
    for doc, (words, _) in zip(docs, ref):
        assert [t.text for t in doc] == words
    got = Counter(e.label_ for d in docs for e in d.ents)
    assert got == sum((_count_entities(tags) for _, tags in ref), Counter())
    assert set(got) <= {"PER", "ORG", "LOC", "DATE"} and got
    # whole file through the CLI, explicit --sep space
    out = tmp_path / "swa.spacy"
    r = _cli(SWA, out, "--sep", "space")
    assert r.returncode == 0, r.stderr
    assert "300 docs, 7263 tokens, 674 entities" in r.stdout
    # a tab-only reading of a space-separated file fails on line 1
    r = _cli(SWA, tmp_path / "bad.spacy", "--sep", "tab")
    assert r.returncode == 1
    assert f"{SWA}:1:" in r.stderr and "no tag column" in r.stderr
    assert not (tmp_path / "bad.spacy").exists()


def test_separators_and_line_endings(tmp_path):
    text = "\ufeffHello\tO\r\nNew York\tB-location\r\n \t \r\n\r\nx\tB-person\ny\tI-person\n\n\n"
    docs = conll_to_docs(_write(tmp_path, "a.conll", text))
    assert [[t.text for t in d] for d in docs] == [["Hello", "New York"], ["x", "y"]]
    assert [(e.text, e.label_) for e in docs[0].ents] == [("New York", "location")]
    assert [(e.text, e.label_) for e in docs[1].ents] == [("x y", "person")]
    # no trailing newline at the end of the file
    docs = conll_to_docs(_write(tmp_path, "b.conll", "a O\nb B-LOC"))
    assert [(e.text, e.label_) for e in docs[0].ents] == [("b", "LOC")]


def test_adjacent_entities_and_vocab(tmp_path):
    text = "a\tB-person\nb\tB-person\nc\tI-person\nd\tO\ne\tB-group\n"
    nlp = spacy.blank("en")
    docs = conll_to_docs(_write(tmp_path, "c.conll", text), nlp)
    assert [(e.text, e.label_) for e in docs[0].ents] == [("a", "person"), ("b c", "person"), ("e", "group")]
    assert docs[0].vocab is nlp.vocab
    assert conll_to_docs(_write(tmp_path, "d.conll", text), nlp.vocab)[0].vocab is nlp.vocab


def test_entities_also_as_spans_for_spancat(tmp_path):
    text = "a\tB-person\nb\tB-person\nc\tI-person\nd\tO\n"
    out = tmp_path / "c.spacy"
    convert(_write(tmp_path, "c.conll", text), out, spans_key="sc")
    (doc,) = DocBin().from_disk(out).get_docs(spacy.blank("en").vocab)
    assert (
        [(s.text, s.label_) for s in doc.spans["sc"]]
        == [(e.text, e.label_) for e in doc.ents]
        == [("a", "person"), ("b c", "person")]
    )
    convert(_write(tmp_path, "c.conll", text), out)  # default: entities only
    (doc,) = DocBin().from_disk(out).get_docs(spacy.blank("en").vocab)
    assert "sc" not in doc.spans and len(doc.ents) == 2


@pytest.mark.parametrize(
    "text,line,fragment",
    [
        ("a\tO\nb\n", 2, "no tag column"),
        ("a\tO\nb\t\n", 2, "no tag column"),
        ("a\tO\n\nb\tO\nc\tI-person\n", 4, "cannot follow 'O'"),
        ("a\tO\n\nc\tI-person\n", 3, "cannot follow the start of the sentence"),
        ("a\tB-group\nc\tI-person\n", 2, "cannot follow 'B-group'"),
        ("a\tO\nb\tX-person\n", 2, "invalid tag 'X-person'"),
        ("a\tO\nb\tB-\n", 2, "invalid tag 'B-'"),
        ("a\tO\n\tO\n", 2, "empty token"),
        ("a O\nb\n", 2, "no tag column"),
        ("a\tO\nb\tI-group\nc\n", 2, "cannot follow 'O'"),  # the first problem is named
    ],
)
def test_malformed_names_file_and_line(tmp_path, text, line, fragment):
    src = _write(tmp_path, "bad.conll", text)
    with pytest.raises(ConllFormatError) as err:
        conll_to_docs(src)
    assert err.value.line == line
    assert str(err.value).startswith(f"{src}:{line}: ")
    assert fragment in str(err.value)
    out = tmp_path / "out.spacy"
    r = _cli(src, out)
    assert r.returncode == 1
    assert f"{src}:{line}:" in r.stderr and fragment in r.stderr
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.conll"]


def test_malformed_keeps_existing_output(tmp_path):
    out = tmp_path / "out.spacy"
    assert convert(_write(tmp_path, "good.conll", "a\tB-person\n"), out).docs == 1
    before = out.read_bytes()
    r = _cli(_write(tmp_path, "bad.conll", "a\tO\n" * 100 + "b\n"), out)
    assert r.returncode == 1 and "bad.conll:101:" in r.stderr
    assert out.read_bytes() == before  # not truncated, not half-written
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.conll", "good.conll", "out.spacy"]


def test_invalid_utf8_names_line(tmp_path):
    src = tmp_path / "latin1.conll"
    src.write_bytes("a\tO\n\ncaf\xe9\tO\n".encode("latin-1"))
    with pytest.raises(ConllFormatError) as err:
        conll_to_docs(src)
    assert err.value.line == 3 and "UTF-8" in str(err.value)


def test_missing_and_empty_input(tmp_path):
    out = tmp_path / "out.spacy"
    missing = tmp_path / "nope.conll"
    r = _cli(missing, out)
    assert r.returncode == 1 and f"{missing}: file not found" in r.stderr
    empty = _write(tmp_path, "empty.conll", "\n \n\t\n")
    r = _cli(empty, out)
    assert r.returncode == 1 and f"{empty}: no sentences found" in r.stderr
    assert not out.exists()
    r = _cli(_write(tmp_path, "ok.conll", "a\tO\n"), out, "--lang", "not-a-language")
    assert r.returncode == 1 and "unknown language code" in r.stderr
    assert not out.exists()


def test_repair_iob(tmp_path):
    src = _write(tmp_path, "orphan.conll", "a\tO\nb\tI-PER\nc\tI-PER\nd\tB-LOC\ne\tI-ORG\n")
    docs = conll_to_docs(src, repair_iob=True)
    assert [(e.text, e.label_) for e in docs[0].ents] == [("b c", "PER"), ("d", "LOC"), ("e", "ORG")]
    r = _cli(src, tmp_path / "o.spacy", "--repair-iob")
    assert r.returncode == 0 and "2 orphan I- tag(s) read as B-" in r.stdout


def test_output_is_deterministic(tmp_path):
    src = _write(tmp_path, "a.conll", "a\tB-person\nb\tO\n\nc\tO\n")
    convert(src, tmp_path / "1.spacy", lang="en")
    convert(src, tmp_path / "2.spacy", lang="en")
    assert (tmp_path / "1.spacy").read_bytes() == (tmp_path / "2.spacy").read_bytes()


def test_a_language_code_gives_spacy_blanks_vocab_without_importing_pipeline_factories(tmp_path):
    """A converter given a language code makes the vocab `spacy.blank` would hold (the
    language's lexical attributes), without building a Language: its constructor imports every
    installed pipeline factory (spacy-transformers, and transformers with it), seconds at the
    start of each `convert` that runs no pipeline."""
    import subprocess
    import sys

    path = _write(tmp_path, "tiny.conll", "Hello\tO\nParis\tB-location\n12\tO\n\n")
    code = (
        "import sys; from spacy_entangle.converters.conll_ner import conll_to_docs; "
        f"doc = conll_to_docs({str(path)!r}, 'en')[0]; "
        "print(doc.vocab.lang, [t.like_num for t in doc], [e.text for e in doc.ents], "
        "'transformers' in sys.modules, 'spacy_transformers' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["en", "[False,", "False,", "True]", "['Paris']", "False", "False"]
    blank = spacy.blank("en").vocab
    assert blank.lang == "en" and blank["12"].like_num
