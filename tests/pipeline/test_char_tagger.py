"""The `char_tagger` component (one label per character of doc.text) on the tiny
offline backbones, trained on real posts of ../shared/data/codeswitch_es_wix."""

import json
import subprocess
import sys
from pathlib import Path

import numpy
import pytest
import spacy
from _pipelines import entangle_cfg, listener
from _weasel import offline_env
from spacy.cli.evaluate import evaluate
from spacy.tokens import Doc, DocBin
from spacy.training import Example

from spacy_entangle.char_tags import char_spans_from_tags
from spacy_entangle.pipeline.char_scorer import score_char_tags
from spacy_entangle.tokenization import prepare_docs
from spacy_entangle.tokenization.text_rows import text_rows

ROOT = Path(__file__).resolve().parents[2]

# emoji outside the BMP, a ZWJ sequence, a combining accent, a non-BMP CJK character,
# runs of spaces and newlines, a trailing space
ODD_TEXTS = [
    "ne|amiga ukarís 😀 xe|yunai|tu",
    "👩‍👩‍👧‍👦 family  of   four\n\nnew line",
    "cafe\u0301 𠜎 𝔘𝔫𝔦 ",
    "a",
]


@pytest.fixture(scope="module")
def posts(shared_data):
    """Reference docs (char_tags + word tags) for the first 12 posts of the corpus."""
    from spacy_entangle.converters.codeswitch import post_to_doc, read_codeswitch

    path = shared_data / "codeswitch_es_wix" / "mixed_annotated.txt"
    if not path.exists():
        pytest.skip(f"{path} not found")
    vocab = spacy.blank("es").vocab
    return [post_to_doc(p, vocab) for p in read_codeswitch(path)[:12]]


def build(canine_dir, bert_dir, *, tagger=False, side="char", **overrides):
    nlp = spacy.blank("es")
    nlp.add_pipe("entangle", config={"model": entangle_cfg(canine_dir, bert_dir, **overrides), "store_output": True})
    if tagger:
        nlp.add_pipe("tagger", config={"model": {"@architectures": "spacy.Tagger.v2", "tok2vec": listener("subword")}})
    nlp.add_pipe(
        "char_tagger",
        config={"model": {"@architectures": "spacy-entangle.CharTagger.v1", "upstream": "entangle", "side": side}},
    )
    return nlp


def make_examples(nlp, refs):
    return [Example(nlp.make_doc(ref.text), ref) for ref in refs]


@pytest.fixture(scope="module")
def trained(canine_dir, bert_dir, posts):
    nlp = build(canine_dir, bert_dir, tagger=True)
    exs = make_examples(nlp, posts[:8])
    sgd = nlp.initialize(lambda: exs)  # Adam, learn rate 0.001
    history = [dict(nlp.update(exs, sgd=sgd, drop=0.0)) for _ in range(20)]
    return nlp, history


def test_loss_falls_beside_a_tagger(trained):
    nlp, history = trained
    for name in ("char_tagger", "tagger"):
        first = numpy.mean([h[name] for h in history[:3]])
        last = numpy.mean([h[name] for h in history[-3:]])
        assert last < 0.9 * first, (name, first, last)
    assert history[-1]["entangle"] > 0  # the encoder received the char tagger's gradient
    assert set(nlp.get_pipe("entangle").listening_components) == {"tagger", "char_tagger"}
    assert nlp.get_pipe("entangle").model.attrs["sides"] == ("subword", "char")
    labels = nlp.get_pipe("char_tagger").labels
    assert {"ES", "WIX", "OTHER"} <= set(labels) and None not in labels


def test_predictions_one_label_per_character(trained):
    nlp, _ = trained
    texts = ["", " ", "   ", "\n\n", "\t \n"] + ODD_TEXTS
    labels = set(nlp.get_pipe("char_tagger").labels)
    for doc in nlp.pipe(texts, batch_size=3):
        tags = doc._.char_tags
        assert isinstance(tags, tuple) and len(tags) == len(doc.text)
        for char, tag in zip(doc.text, tags):
            assert (tag is None) if char.isspace() else (tag in labels)
        # char_spans: maximal runs, covering exactly the labelled characters
        spans = doc._.char_spans
        assert sum(e - s for s, e, _ in spans) == sum(t is not None for t in tags)
        for (s, e, label), nxt in zip(spans, spans[1:] + [(len(tags) + 1, 0, None)]):
            assert set(tags[s:e]) == {label}
            assert nxt[0] > e or nxt[2] != label
    assert nlp("")._.char_tags == () and nlp("")._.char_spans == []
    # whitespace_label: whitespace gets that label instead of None
    ct = nlp.get_pipe("char_tagger")
    ct.cfg["whitespace_label"] = "WS"
    try:
        doc = nlp("a  b\n")
        assert [doc._.char_tags[i] for i in (1, 2, 4)] == ["WS"] * 3
        assert nlp("   ")._.char_tags == ("WS",) * 3
    finally:
        ct.cfg["whitespace_label"] = None


def test_rows_are_the_characters_own_states(canine_dir, bert_dir, trained, posts):
    """Each character reads the row that holds ITS codepoint (CANINE ids are
    codepoints), also across windows, emoji and runs of whitespace."""
    small = build(
        canine_dir,
        bert_dir,
        # windows of 20 characters (their cuts are what the test reads): a quarter overlaps
        window_getter={"@misc": "spacy-entangle.windows.v1", "max_pieces": 12, "max_chars": 20, "overlap": 0.25},
    )
    small.initialize(lambda: make_examples(small, posts[:2]))
    texts = ODD_TEXTS + ["averyveryverylongwordthatdoesnotfit in a window"]
    for nlp, windowed in ((trained[0], False), (small, True)):
        ent = nlp.get_pipe("entangle")
        shim = ent.model.shims[0]
        docs = [nlp.make_doc(t) for t in texts]
        wins, aligns = prepare_docs(docs, shim.subwords, shim.chars, ent.model.attrs["window_settings"])
        exact = fallback = 0
        for d, (doc, align) in enumerate(zip(docs, aligns)):
            ids = numpy.concatenate([w.char_ids for w in wins if w.doc_index == d])
            rows = text_rows(doc, align, "char")
            assert len(rows) == len(doc.text) and (rows >= 0).all() and (rows < len(ids)).all()
            doc_fallback = 0
            for i, char in enumerate(doc.text):
                if ids[rows[i]] == ord(char):
                    exact += 1
                else:  # only a clipped token's tail or a space past its window's end
                    assert i > 0 and rows[i] == rows[i - 1], (doc.text, i)
                    doc_fallback += 1
            if not windowed:
                # one window per doc: only a space at the very end of the doc lies outside it
                assert doc_fallback == len(doc.text) - len(doc.text.rstrip(" ")), doc.text
            fallback += doc_fallback
        if windowed:
            assert len(wins) > len(docs) and fallback > 0 and exact > 5 * fallback
        # the model's output: one row per character
        out = nlp.get_pipe("char_tagger").model.predict([ent(doc) for doc in docs])
        assert [o.shape[0] for o in out] == [len(doc.text) for doc in docs]


@pytest.mark.parametrize("side,sides", [("both", ("subword", "char")), ("subword", ("subword",))])
def test_other_sides(canine_dir, bert_dir, posts, side, sides):
    """side = "subword" is token-level (each character reads its token's first piece);
    "both" concatenates the char row and that subword row."""
    nlp = build(canine_dir, bert_dir, side=side)
    exs = make_examples(nlp, posts[:3])
    sgd = nlp.initialize(lambda: exs)
    assert nlp.get_pipe("entangle").model.attrs["sides"] == sides
    states = nlp.get_pipe("char_tagger").model.layers[0]
    assert states.get_dim("nO") == 32 * len(sides)
    nlp.update(exs, sgd=sgd)
    doc = nlp("ne amiga ukarís")
    assert len(doc._.char_tags) == len(doc.text)
    rows = text_rows(doc, doc._.entangle.align, "subword")
    first = [
        doc._.entangle.align.subword_rows[i]
        for i in numpy.cumsum(doc._.entangle.align.subword_lengths) - doc._.entangle.align.subword_lengths
    ]
    assert list(rows) == [first[t.i] for t in doc for _ in t.text_with_ws]


def test_docbin_and_bytes_round_trip(trained):
    nlp, _ = trained
    docs = list(nlp.pipe(ODD_TEXTS + ["", "  "]))
    db = DocBin(store_user_data=True)
    for doc in docs:
        doc._.entangle = None  # only the annotation travels here
        db.add(doc)
    loaded = list(DocBin().from_bytes(db.to_bytes()).get_docs(nlp.vocab))
    for a, b in zip(docs, loaded):
        assert b._.char_tags == a._.char_tags and b._.char_spans == a._.char_spans
        c = Doc(nlp.vocab).from_bytes(a.to_bytes())
        assert c._.char_tags == a._.char_tags
    # the setter checks the length
    with pytest.raises(ValueError, match="one label .* per character"):
        docs[0]._.char_tags = ["ES"]


def test_serialisation_round_trip(trained, tmp_path):
    nlp, _ = trained
    before = [d._.char_tags for d in nlp.pipe(ODD_TEXTS)]
    nlp.to_disk(tmp_path / "pipe")
    nlp2 = spacy.load(tmp_path / "pipe")
    assert nlp2.get_pipe("char_tagger").labels == nlp.get_pipe("char_tagger").labels
    assert [d._.char_tags for d in nlp2.pipe(ODD_TEXTS)] == before


def test_scorer_all_and_mix():
    nlp = spacy.blank("es")
    ref = nlp.make_doc("neamiga hola 😀")
    ref._.char_tags = ["WIX", "WIX", "ES", "ES", "ES", "ES", "ES", None, "ES", "ES", "ES", "ES", None, "OTHER"]
    pred = nlp.make_doc("neamiga hola 😀")
    # 2 errors inside the mixed word (7 chars), 1 in "hola"; the spaces' labels do not count
    pred._.char_tags = ["WIX", "ES", "ES", "WIX", "ES", "ES", "ES", "X", "ES", "ES", "ES", "WIX", "Y", "OTHER"]
    scores = score_char_tags([Example(pred, ref)])
    assert scores["char_acc"] == pytest.approx(9 / 12)
    assert scores["char_acc_mix"] == pytest.approx(5 / 7)
    assert scores["char_acc_per_label"] == {"ES": pytest.approx(7 / 9), "OTHER": 1.0, "WIX": pytest.approx(1 / 2)}
    # no mixed word: MIX is None, not 0
    ref2 = nlp.make_doc("hola")
    ref2._.char_tags = ["ES"] * 4
    assert score_char_tags([Example(nlp.make_doc("hola"), ref2)])["char_acc_mix"] is None
    assert char_spans_from_tags(["A", "A", None, "A", "B"]) == [(0, 2, "A"), (3, 4, "A"), (4, 5, "B")]


def test_baseline_runs_the_char_encoder_only(canine_dir, bert_dir, posts):
    """n_coattention = 0 + a char-only listener: no subword encoder, no co-attention."""
    calls = {"subword": 0, "char": 0}
    for n_coattention, expect_subword in ((0, False), (1, True)):
        calls.update(subword=0, char=0)
        nlp = build(canine_dir, bert_dir, n_coattention=n_coattention, hidden_width=32)
        exs = make_examples(nlp, posts[:4])
        sgd = nlp.initialize(lambda exs=exs: exs)
        model = nlp.get_pipe("entangle").model.shims[0]._model
        model.subword_encoder.register_forward_hook(lambda *a: calls.__setitem__("subword", calls["subword"] + 1))
        model.char_encoder.register_forward_hook(lambda *a: calls.__setitem__("char", calls["char"] + 1))
        losses = [nlp.update(exs, sgd=sgd)["char_tagger"] for _ in range(3)]
        nlp("ne|amiga hola")
        assert calls["char"] >= 4
        assert (calls["subword"] > 0) == expect_subword, (n_coattention, calls)
        if not expect_subword:
            assert all(p.grad is None for p in model.subword_encoder.parameters())
            assert losses[-1] < losses[0]


@pytest.mark.slow
@pytest.mark.parametrize("config_name", ["char_tagger_cpu.cfg", "char_tagger_charonly_cpu.cfg"])
def test_spacy_train_and_evaluate(config_name, canine_dir, bert_dir, shared_data, tmp_path):
    """`spacy train` with the CPU preset (plus a word-level tagger beside the
    char_tagger) and with the char-only baseline, a few steps on converted corpora, the
    loss falling; `spacy evaluate` reports char_acc ("All") and char_acc_mix ("MIX")."""
    from spacy_entangle.converters.codeswitch import convert_codeswitch

    corpus = tmp_path / "corpus"
    convert_codeswitch(shared_data / "codeswitch_es_wix" / "mixed_annotated.txt", corpus, dev_frac=0.2, test_frac=0.2)
    nlp = spacy.blank("es")
    train = list(DocBin().from_disk(corpus / "train.spacy").get_docs(nlp.vocab))[:40]
    DocBin(docs=train, store_user_data=True).to_disk(corpus / "small.spacy")
    dev = list(DocBin().from_disk(corpus / "dev.spacy").get_docs(nlp.vocab))[:20]
    DocBin(docs=dev, store_user_data=True).to_disk(corpus / "small_dev.spacy")
    from spacy.util import load_config

    config = load_config(ROOT / "configs" / config_name)
    baseline = "charonly" in config_name  # the char-only baseline config
    assert config["components"]["entangle"]["model"]["n_coattention"] == (0 if baseline else 1)
    if not baseline:  # the preset + a tagger listening to the subword side
        config["nlp"]["pipeline"] = ["entangle", "tagger", "char_tagger"]
        config["components"]["tagger"] = {
            "factory": "tagger",
            "model": {"@architectures": "spacy.Tagger.v2", "nO": None, "tok2vec": listener("subword")},
        }
        config["training"]["score_weights"]["tag_acc"] = 0.5
    config.to_disk(tmp_path / "config.cfg")
    out = tmp_path / "model"
    cmd = [
        sys.executable,
        "-m",
        "spacy",
        "train",
        str(tmp_path / "config.cfg"),
        "--output",
        str(out),
        "--paths.train",
        str(corpus / "small.spacy"),
        "--paths.dev",
        str(corpus / "small_dev.spacy"),
        "--paths.char_backbone",
        str(canine_dir),
        "--paths.subword_backbone",
        str(bert_dir),
        "--components.entangle.model.hidden_width",
        "32",
        "--components.entangle.model.n_heads",
        "2",
        "--components.entangle.model.ffn_width",
        "64",
        "--training.max_steps",
        "12",
        "--training.eval_frequency",
        "4",
        "--training.optimizer.learn_rate.warmup_steps",
        "1",
        "--training.optimizer.learn_rate.initial_rate",
        "0.003",
        "--training.logger.progress_bar",
        "false",
        "--nlp.batch_size",
        "16",
    ]
    run = subprocess.run(cmd, capture_output=True, text=True, env=offline_env(), cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    header = next(line for line in run.stdout.splitlines() if "CHAR_ACC" in line)
    assert "CHAR_ACC_MIX" in header and ("TAG_ACC" in header) != baseline
    rows = [line.split() for line in run.stdout.splitlines() if line.strip()[:1].isdigit()]
    # columns: epoch, step, loss entangle, [loss tagger,] loss char_tagger, ...; rows
    # after the first sum the losses of 4 steps: the char_tagger's falls
    col = 3 if baseline else 4
    steps = {int(r[1]): float(r[col]) for r in rows}
    assert steps[12] < steps[4], run.stdout
    meta = json.loads((out / "model-last" / "meta.json").read_text())
    assert "char_acc" in meta["performance"] and "char_acc_mix" in meta["performance"]
    # spaCy's `evaluate` command in this process (the trained pipeline loads here below anyway)
    evaluate(str(out / "model-last"), corpus / "small_dev.spacy", output=tmp_path / "metrics.json", per_component=True)
    scores = json.loads((tmp_path / "metrics.json").read_text())["char_tagger"]
    assert 0.0 <= scores["char_acc"] <= 1.0 and 0.0 <= scores["char_acc_mix"] <= 1.0
    loaded = spacy.load(out / "model-last")
    doc = loaded("ne amiga ukarís 😀")
    assert len(doc._.char_tags) == len(doc.text)
    assert loaded.get_pipe("entangle").model.attrs["sides"] == (("char",) if baseline else ("subword", "char"))
