"""`convert-codeswitch`: the Spanish-Wixarika intraword code-switching annotation
(../shared/data/codeswitch_es_wix) -> .spacy corpora with one label per character."""

import json

import pytest
import spacy
import srsly
from _cli import cli
from spacy.tokens import DocBin

from spacy_entangle.converters.codeswitch import (
    CodeswitchFormatError,
    convert_codeswitch,
    mixed_char_labels,
    post_to_doc,
    read_codeswitch,
)


@pytest.fixture(scope="module")
def source(shared_data):
    path = shared_data / "codeswitch_es_wix" / "mixed_annotated.txt"
    if not path.exists():
        pytest.skip(f"{path} not found")
    return path


@pytest.fixture(scope="module")
def converted(source, tmp_path_factory):
    out = tmp_path_factory.mktemp("codeswitch")
    stats = convert_codeswitch(source, out, dev_frac=0.2, test_frac=0.2, seed=0)
    nlp = spacy.blank("es")
    docs = {s: list(DocBin().from_disk(out / f"{s}.spacy").get_docs(nlp.vocab)) for s in ("train", "dev", "test")}
    return out, stats, docs


def _find(docs, needle):
    for split_docs in docs.values():
        for doc in split_docs:
            if needle in doc.text:
                return doc
    raise AssertionError(f"no doc holds {needle!r}")


def test_counts_and_deterministic_split(converted, source, tmp_path):
    out, stats, docs = converted
    meta = json.loads((out / "splits.json").read_text(encoding="utf8"))
    ids = [meta[s] for s in ("train", "dev", "test")]
    # 505 posts (post ids), each in exactly one split, as many docs as ids
    assert sum(len(i) for i in ids) == stats.posts == 505
    assert len(set().union(*map(set, ids))) == 505
    assert [len(i) for i in ids] == [len(docs[s]) for s in ("train", "dev", "test")] == [303, 101, 101]
    assert stats.words == sum(len(d) for split in docs.values() for d in split) == 4658
    # the MIXED words are spread over the splits (stratified)
    assert all(stats.split_mixed[s] >= 10 for s in ("train", "dev", "test"))
    # same input, same seed: byte-identical output; another seed: another split
    again = tmp_path / "again"
    convert_codeswitch(source, again, dev_frac=0.2, test_frac=0.2, seed=0)
    for name in ("train.spacy", "dev.spacy", "test.spacy", "splits.json"):
        assert (again / name).read_bytes() == (out / name).read_bytes(), name
    other = tmp_path / "other"
    convert_codeswitch(source, other, dev_frac=0.2, test_frac=0.2, seed=1)
    assert json.loads((other / "splits.json").read_text())["dev"] != meta["dev"]


def test_labels_align_with_characters(converted):
    _, stats, docs = converted
    for split in docs.values():
        for doc in split:
            tags = doc._.char_tags
            assert len(tags) == len(doc.text)
            assert "|" not in doc.text
            for token in doc:
                assert token.tag_  # the word label (MIXED for mixed words)
                if token.whitespace_:
                    assert tags[token.idx + len(token)] is None
    # `uka|rí|s MIXED` -> uka WIX, rí WIX, s ES: the accented í is one character
    doc = _find(docs, "ukarís")
    start = doc.text.index("ukarís")
    assert doc._.char_tags[start : start + 6] == ("WIX",) * 5 + ("ES",)
    assert [t.tag_ for t in doc if t.text == "ukarís"] == ["MIXED"]
    # emoji outside the BMP: one character each, labelled OTHER
    emoji = doc.text.index("😀")
    assert doc.text[emoji : emoji + 5] == "😀 😍 😘"
    assert doc._.char_tags[emoji : emoji + 5] == ("OTHER", None, "OTHER", None, "OTHER")
    assert (emoji, emoji + 1, "OTHER") in doc._.char_spans
    # `chula|da ES.SLANG` (post 0): marks removed, the word's label on every character
    doc = _find(docs, "chulada")
    i = doc.text.index("chulada")
    assert set(doc._.char_tags[i : i + 7]) == {"ES.SLANG"}
    # `Saludo|ri WIX` followed by pieces `Saludo ES`, `ri WIX`: the pieces win
    doc = _find(docs, "Saludori")
    assert doc._.char_tags[:8] == ("ES",) * 6 + ("WIX",) * 2
    # every character labelled except the spaces and 21 characters the annotation leaves open
    assert stats.unlabelled_chars == 21
    assert sum(stats.alignment.values()) == 80


def test_mixed_word_rules():
    # exact (case-insensitive), segments (typo in the piece text), fuzzy (piece count differs)
    assert mixed_char_labels("Ne|plimo", [("ne", "WIX"), ("plimo", "ES.SLANG")]) == (
        ["WIX"] * 2 + ["ES.SLANG"] * 5,
        "exact",
    )
    assert mixed_char_labels("neamiku", [("ne", "WIX"), ("amiku", "ES.SLANG")])[1] == "exact"
    labels, rule = mixed_char_labels("ne|kwe|ramate", [("ne", "WIX"), ("kwe", "WIX"), ("remate", "ES")])
    assert (labels, rule) == (["WIX"] * 5 + ["ES"] * 6, "segments")
    labels, rule = mixed_char_labels("ukari|zz", [("uki", "WIX"), ("ri", "WIX"), ("zz", "ES.SLANG")])
    assert (labels, rule) == (["WIX"] * 5 + ["ES.SLANG"] * 2, "fuzzy")
    # a piece holding a mark itself (`niñ|a`)
    assert mixed_char_labels("a|niña", [("a", "WIX"), ("niñ|a", "ES")]) == (["WIX"] + ["ES"] * 4, "exact")


def test_real_lines_with_problems(source, tmp_path):
    """Real lines: a MIXED word with pieces, one without pieces, a piece without label,
    a trailing `?` field, an empty field before the label."""
    lines = source.read_text(encoding="utf8").splitlines()
    # lines 27-33 (uka|rí|s with pieces), 409-410 (ne|amiga MIXED without pieces),
    # 1697-1699 (ta|cuñado: piece `- cuñado` without label), 367 (empty field), 653 (`?`)
    picked = lines[26:33] + lines[408:410] + lines[1696:1699] + [lines[366], lines[652]]
    path = tmp_path / "part.txt"
    path.write_text("\n".join(picked) + "\n", encoding="utf8")
    nlp = spacy.blank("es")
    from spacy_entangle.converters.codeswitch import CodeswitchStats

    stats = CodeswitchStats()
    posts = read_codeswitch(path, stats=stats)
    assert stats.unsure_marks == 1
    docs = {p.post_id: post_to_doc(p, nlp.vocab, stats=stats) for p in posts}
    assert "ukarís" in docs[2].text
    ne_amiga = docs[43]
    i = ne_amiga.text.index("neamiga")
    assert ne_amiga._.char_tags[i : i + 7] == (None,) * 7  # unlabelled, not guessed
    assert docs[186].text == "tacuñado"
    assert docs[186]._.char_tags == ("WIX", "WIX") + (None,) * 6
    assert docs[36].text == "Yak+t+t+" and docs[36]._.char_tags == ("WIX",) * 8
    assert docs[65].text == "ter+wawe" and docs[65]._.char_tags == ("WIX",) * 8
    assert any("no piece lines" in w for w in stats.warnings)
    assert any("'cuñado' has no label" in w for w in stats.warnings)
    # --strict refuses both
    with pytest.raises(CodeswitchFormatError, match=r"part\.txt:12: piece 'cuñado' has no label"):
        read_codeswitch(path, strict=True)
    only_mixed = tmp_path / "mixed.txt"
    only_mixed.write_text("\n".join(lines[408:410]) + "\n", encoding="utf8")
    with pytest.raises(CodeswitchFormatError, match=r"mixed\.txt:1: MIXED word 'ne\|amiga' has no piece lines"):
        read_codeswitch(only_mixed, strict=True)


@pytest.mark.parametrize(
    "text,line,message",
    [
        ("1\tabc\tES\n1\tdef\n", 2, "expected POST_ID<TAB>TOKEN<TAB>LABEL"),
        ("1\tabc\tES\nx1\tdef\tES\n", 2, "post id 'x1' is not a number"),
        ("- uka WIX\n", 1, "before any word"),
        ("1\tuka|s\tMIXED\n- uka WIX extra\n", 2, "expected '- PIECE LABEL'"),
        ("1\tabc\tES\n1\t|\tES\n", 2, "empty token"),
        ("1\tabc\t\t\n", 1, "no label"),
        ("1\tabc\tES\n1\t\xff\tES\n", 2, "not valid UTF-8"),
    ],
)
def test_malformed_input_names_file_and_line(tmp_path, text, line, message):
    path = tmp_path / "bad.txt"
    path.write_bytes(text.encode("utf8").replace("\xff".encode(), b"\xff"))
    with pytest.raises(CodeswitchFormatError) as err:
        read_codeswitch(path)
    assert err.value.line == line
    assert f"bad.txt:{line}: " in str(err.value) and message in str(err.value)


def test_cli(source, tmp_path):
    out = tmp_path / "corpus"
    run = cli("convert-codeswitch", source, out, "--dev-frac", "0.1", "--test-frac", "0")
    assert run.returncode == 0, run.stderr
    assert "505 posts" in run.stdout and "no piece lines" in run.stderr
    assert (out / "train.spacy").exists() and (out / "dev.spacy").exists()
    assert not (out / "test.spacy").exists()  # test_frac 0: no test split
    bad = tmp_path / "bad.txt"
    bad.write_text("1\tabc\tES\n- x ES\n", encoding="utf8")
    run = cli("convert-codeswitch", bad, tmp_path / "o2", "--strict")
    assert run.returncode == 1
    assert "bad.txt:2:" in run.stderr
    run = cli("convert-codeswitch", source, tmp_path / "o3", "--dev-frac", "0.6", "--test-frac", "0.5")
    assert run.returncode == 1 and "dev_frac + test_frac < 1" in run.stderr
    assert not (tmp_path / "o3" / "train.spacy").exists()


@pytest.mark.issue(12)
def test_codeswitch_rerun_without_test_split_leaves_no_stale_test(shared_data, tmp_path):
    source = shared_data / "codeswitch_es_wix" / "mixed_annotated.txt"
    if not source.exists():
        pytest.skip(f"{source} not found")
    out = tmp_path / "corpus"
    convert_codeswitch(source, out, dev_frac=0.2, test_frac=0.2)
    assert (out / "test.spacy").exists()
    stats = convert_codeswitch(source, out, dev_frac=0.2, test_frac=0.0)
    assert not (out / "test.spacy").exists()
    assert any("test.spacy" in w for w in stats.warnings)
    splits = srsly.read_json(out / "splits.json")
    assert splits["test"] == []
    n = sum(len(DocBin().from_disk(out / f"{s}.spacy")) for s in ("train", "dev"))
    assert n == len(splits["train"]) + len(splits["dev"])
