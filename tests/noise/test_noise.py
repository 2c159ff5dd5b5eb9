"""Character noise (spacy_entangle.noise): the attacks, annotation alignment, determinism,
the `perturb` CLI and the training augmenter, on real spaCy objects."""

import random
from collections import Counter

import pytest
import spacy
from _cli import cli
from spacy.tokens import Doc, DocBin, Span
from spacy.training import Corpus

from spacy_entangle.noise import is_word, perturb_doc, perturb_docs
from spacy_entangle.noise.attacks import ATTACKS, perturb_word

WORDS = "@paulwalk says the Empire State Building looks amazing tonight http://t.co/xyz 2026 !!!".split()


def annotated(nlp) -> Doc:
    doc = Doc(nlp.vocab, words=WORDS)
    doc.ents = [Span(doc, 0, 1, "person"), Span(doc, 3, 6, "location")]
    for t in doc:
        t.tag_ = "NN" if t.text[:1].isupper() else "X"
        t.pos_ = "PROPN" if t.text[:1].isupper() else "X"
    doc.spans["sc"] = [Span(doc, 3, 6, "building")]
    doc.cats = {"joy": 1.0, "anger": 0.0}
    return doc


@pytest.fixture
def nlp():
    return spacy.blank("en")


@pytest.mark.parametrize("attack,delta", [("drop", -1), ("add", 1), ("swap", 0), ("keyboard", 0)])
def test_each_attack(attack, delta):
    rng = random.Random(0)
    for word in ["amazing", "Building", "tonight", "abcd"]:
        new = perturb_word(word, attack, rng)
        assert len(new) == len(word) + delta and new != word
        assert new[0] == word[0] and new[-1] == word[-1]  # first and last character kept
    assert perturb_word("aaaa", "swap", rng) == "aaaa"  # nothing to swap: unchanged
    assert perturb_word("a12b", "keyboard", rng) == "a12b"  # no internal letter
    assert perturb_word("abc", "drop", rng) == "abc"  # under 4 characters
    for _ in range(10):  # case kept
        assert perturb_word("ABCD", "keyboard", rng).isupper()
        assert perturb_word("abcd", "keyboard", rng).islower()


def test_annotations_survive(nlp):
    doc = annotated(nlp)
    new, changed = perturb_doc(doc, 1.0, random.Random(1))
    assert len(new) == len(doc)
    assert [t.whitespace_ for t in new] == [t.whitespace_ for t in doc]
    assert [(e.start, e.end, e.label_) for e in new.ents] == [(e.start, e.end, e.label_) for e in doc.ents]
    assert [e.text for e in new.ents] != [e.text for e in doc.ents]  # entity texts change
    assert [t.tag_ for t in new] == [t.tag_ for t in doc] and [t.pos_ for t in new] == [t.pos_ for t in doc]
    assert [(s.start, s.end, s.label_) for s in new.spans["sc"]] == [(3, 6, "building")]
    assert new.cats == doc.cats
    assert sum(changed.values()) == sum(a != b for a, b in zip(new, doc) if a.text != b.text)
    assert set(changed) <= set(ATTACKS)


def test_short_words_urls_numbers_untouched(nlp):
    doc = annotated(nlp)
    for seed in range(20):
        new, _ = perturb_doc(doc, 1.0, random.Random(seed))
        for a, b in zip(doc, new):
            if not is_word(a):
                assert a.text == b.text
    eligible = [t.text for t in doc if is_word(t)]
    assert "the" not in eligible and "http://t.co/xyz" not in eligible and "2026" not in eligible
    assert "!!!" not in eligible and "amazing" in eligible


def test_rate_zero_and_one(nlp):
    doc = annotated(nlp)
    same, changed = perturb_doc(doc, 0.0, random.Random(0))
    assert same.text == doc.text and not changed
    new, changed = perturb_doc(doc, 1.0, random.Random(0), attacks=["drop"])
    assert changed["drop"] == sum(is_word(t) for t in doc)
    assert all(a.text != b.text for a, b in zip(doc, new) if is_word(a))


def test_determinism_per_seed(nlp):
    docs = [annotated(nlp) for _ in range(20)]
    a = [d.text for d in perturb_docs(docs, 0.5, seed=3)]
    b = [d.text for d in perturb_docs(docs, 0.5, seed=3)]
    c = [d.text for d in perturb_docs(docs, 0.5, seed=4)]
    assert a == b and a != c


def test_empty_and_whitespace_docs(nlp):
    for text in ["", "   ", "\n\n"]:
        doc = nlp.make_doc(text)
        new, changed = perturb_doc(doc, 1.0, random.Random(0))
        assert new.text == doc.text and len(new) == len(doc) and not changed


def test_bad_settings(nlp):
    with pytest.raises(ValueError, match="between 0 and 1"):
        perturb_doc(annotated(nlp), 1.5, random.Random(0))
    with pytest.raises(ValueError, match="subset of"):
        perturb_doc(annotated(nlp), 0.5, random.Random(0), attacks=["typo"])


def _run(*args):
    return cli("perturb", *args)


def test_cli(nlp, tmp_path):
    src, out = tmp_path / "in.spacy", tmp_path / "out.spacy"
    DocBin(docs=[annotated(nlp) for _ in range(10)] + [nlp.make_doc("")]).to_disk(src)
    r = _run(src, out, "--rate", "0.5", "--seed", "1", "--attacks", "drop,swap")
    assert r.returncode == 0, r.stderr
    assert "11 docs" in r.stdout and "changed" in r.stdout and "drop" in r.stdout and "keyboard" not in r.stdout
    docs = list(DocBin().from_disk(out).get_docs(nlp.vocab))
    assert len(docs) == 11 and [len(d) for d in docs] == [len(WORDS)] * 10 + [0]
    assert all([e.label_ for e in d.ents] == ["person", "location"] for d in docs[:10])
    assert docs[0].cats == {"joy": 1.0, "anger": 0.0}
    first = out.read_bytes()
    assert _run(src, out, "--rate", "0.5", "--seed", "1", "--attacks", "drop,swap").returncode == 0
    assert out.read_bytes() == first  # same seed, same file
    r = _run(src, tmp_path / "x.spacy", "--rate", "0.5", "--attacks", "drop,typo")
    assert r.returncode == 1 and "typo" in r.stderr and not (tmp_path / "x.spacy").exists()
    r = _run(tmp_path / "missing.spacy", tmp_path / "y.spacy", "--rate", "0.5")
    assert r.returncode != 0 and "missing.spacy" in (r.stderr + r.stdout)
    (tmp_path / "bad.spacy").write_bytes(b"not a docbin")
    r = _run(tmp_path / "bad.spacy", tmp_path / "z.spacy", "--rate", "0.5")
    assert r.returncode == 1 and "bad.spacy" in r.stderr and not (tmp_path / "z.spacy").exists()


def test_augmenter_in_a_corpus(nlp, tmp_path):
    DocBin(docs=[annotated(nlp) for _ in range(30)]).to_disk(tmp_path / "train.spacy")
    make = spacy.registry.augmenters.get("spacy-entangle.char_noise_augmenter.v1")
    corpus = Corpus(tmp_path / "train.spacy", augmenter=make(level=0.5, rate=1.0, seed=0))
    examples = list(corpus(nlp))
    assert len(examples) == 30
    noisy = [eg for eg in examples if eg.reference.text != annotated(nlp).text]
    assert 5 < len(noisy) < 25  # about half
    for eg in examples:
        assert [e.label_ for e in eg.reference.ents] == ["person", "location"]
        assert eg.predicted.text == eg.reference.text
    counts = Counter(len(eg.reference) for eg in examples)
    assert counts == {len(WORDS): 30}
    with pytest.raises(ValueError, match="level"):
        make(level=2.0)


def test_perturb_corpus_and_pure_attacks(nlp, tmp_path):
    """The library call behind `perturb` (noise.perturb_corpus) writes what the command
    writes; the string attacks (noise.attacks, used by pretraining) import no spaCy."""
    import ast

    import spacy_entangle.noise.attacks as attacks_module
    from spacy_entangle.noise import perturb_corpus

    src = tmp_path / "in.spacy"
    DocBin(docs=[annotated(nlp) for _ in range(5)]).to_disk(src)
    stats = perturb_corpus(src, tmp_path / "lib.spacy", 0.5, seed=3, attacks=["drop", "swap"])
    assert stats.docs == 5 and stats.words > 0 and set(stats.counts) <= {"drop", "swap"}
    assert stats.summary().startswith("5 docs, ") and "keyboard" not in stats.summary()
    assert _run(src, tmp_path / "cli.spacy", "--rate", "0.5", "--seed", "3", "--attacks", "drop,swap").returncode == 0
    assert (tmp_path / "lib.spacy").read_bytes() == (tmp_path / "cli.spacy").read_bytes()
    tree = ast.parse(open(attacks_module.__file__, encoding="utf8").read())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert imported <= {"random", "string", "typing"}, imported


def _code_switched(nlp) -> Doc:
    """'hola amigo yesterday mixedword': es, es, en, and one word with an intraword switch."""
    doc = nlp("hola amigo yesterday mixedword")
    tags = []
    for token in doc:
        labels = ["es"] * 5 + ["en"] * 4 if token.text == "mixedword" else ["es" if token.i < 2 else "en"] * len(token)
        tags += labels + [None] * len(token.whitespace_)
    doc._.char_tags = tags
    return doc


@pytest.mark.issue(31)
def test_character_labels_follow_the_changed_words(nlp):
    doc = _code_switched(nlp)
    for seed in range(5):
        new, changed = perturb_doc(doc, 1.0, random.Random(seed))
        assert sum(changed.values()) >= 2
        assert len(new._.char_tags) == len(new.text)
        spans = [(new.text[s:e], label) for s, e, label in new._.char_spans]
        labels = {token.text: label for token in new for text, label in spans if text == token.text}
        assert labels[new[0].text] == labels[new[1].text] == "es" and labels[new[2].text] == "en"
        # the word with two labels is never attacked: its switch point is kept
        assert new[3].text == "mixedword" and ("mixed", "es") in spans and ("word", "en") in spans


def test_augmenter_keeps_character_labels(nlp, tmp_path):
    DocBin(docs=[_code_switched(nlp) for _ in range(10)], store_user_data=True).to_disk(tmp_path / "train.spacy")
    make = spacy.registry.augmenters.get("spacy-entangle.char_noise_augmenter.v1")
    examples = list(Corpus(tmp_path / "train.spacy", augmenter=make(level=1.0, rate=1.0, seed=0))(nlp))
    assert all(eg.reference.text != _code_switched(nlp).text for eg in examples)
    for eg in examples:
        tags = eg.reference._.char_tags
        assert tags is not None and len(tags) == len(eg.reference.text)
        assert {label for _, _, label in eg.reference._.char_spans} == {"es", "en"}
