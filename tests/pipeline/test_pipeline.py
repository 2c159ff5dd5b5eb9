"""The `entangle` component with real ner / tagger / textcat listeners."""

import subprocess
import sys

import numpy
import pytest
import spacy
from _pipelines import build, entangle_cfg, examples, train
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


@pytest.fixture(scope="module")
def trained(canine_dir, bert_dir):
    nlp = build(canine_dir, bert_dir)
    history = train(nlp, n_steps=25)
    return nlp, history


def test_losses_fall_for_every_listener(trained):
    nlp, history = trained
    for name in ("ner", "tagger", "textcat"):
        first = numpy.mean([h[name] for h in history[:3]])
        last = numpy.mean([h[name] for h in history[-3:]])
        assert last < first, (name, first, last)
    # the encoder received gradients from the listeners
    assert history[-1]["entangle"] > 0


def test_listeners_and_sides(trained):
    nlp, _ = trained
    ent = nlp.get_pipe("entangle")
    assert set(ent.listening_components) == {"ner", "tagger", "textcat"}
    assert ent.model.attrs["sides"] == ("subword", "char")


def test_every_token_gets_a_vector(trained):
    nlp, _ = trained
    texts = ["", "   ", "\n\n", "a", "👩‍👩‍👧‍👦", "x" * 300, "ctrl\x00\x07 chars", "𝔘𝔫𝔦 𠜎 outside BMP"]
    for doc in nlp.pipe(texts):
        data = doc._.entangle
        assert len(data.align.subword_lengths) == len(doc)
        assert (data.align.subword_lengths >= 1).all()
        assert len(doc.cats) == 3


def test_padding_invariance(trained):
    nlp, _ = trained
    ent = nlp.get_pipe("entangle")
    short = nlp.make_doc("short tweet 😀 @you")
    long = nlp.make_doc("a much longer tweet with many more words and characters, " * 6)
    alone = ent.predict([short])[0]
    batched = ent.predict([long, short.copy()])[1]
    numpy.testing.assert_allclose(alone.subword, batched.subword, atol=1e-5)
    numpy.testing.assert_allclose(alone.char, batched.char, atol=1e-5)


def test_doc_longer_than_both_windows(canine_dir, bert_dir):
    nlp = build(
        canine_dir,
        bert_dir,
        components=("ner",),
        window_getter={"@misc": "spacy-entangle.windows.v1", "max_pieces": 32, "max_chars": 64},
    )
    nlp.initialize(lambda: examples(nlp))
    text = " ".join(["Emoji 😀 and tokenization in a long doc."] * 40)
    doc = nlp(text)
    data = doc._.entangle
    assert len(data.align.window_rows) > 10
    assert data.subword.shape[0] == data.align.n_subword_rows
    assert (data.align.subword_lengths >= 1).all()


def test_missing_upstream_is_an_error(trained):
    nlp, _ = trained
    with nlp.select_pipes(disable=["entangle"]):
        with pytest.raises(ValueError, match="No output from the upstream component"):
            nlp("Apple is nice")


def test_serialisation_round_trip(trained, tmp_path):
    nlp, _ = trained
    nlp.to_disk(tmp_path / "pipe")
    texts = ["Apple is buying a U.K. startup 😀", "so sad that Bowie died"]
    before = list(nlp.pipe(texts))
    nlp2 = spacy.load(tmp_path / "pipe")
    after = list(nlp2.pipe(texts))
    for a, b in zip(before, after):
        numpy.testing.assert_allclose(a._.entangle.subword, b._.entangle.subword, atol=1e-5)
        assert [t.tag_ for t in a] == [t.tag_ for t in b]
        assert [(e.text, e.label_) for e in a.ents] == [(e.text, e.label_) for e in b.ents]
        assert a.cats == pytest.approx(b.cats)
    # bytes too
    nlp3 = spacy.blank("en").from_config(nlp.config)
    nlp3.from_bytes(nlp.to_bytes())
    numpy.testing.assert_allclose(nlp3(texts[0])._.entangle.char, before[0]._.entangle.char, atol=1e-5)


def test_load_in_fresh_offline_process(canine_dir, bert_dir, tmp_path):
    """spacy.load needs neither the backbone directories nor the network."""
    import shutil

    char_copy, sub_copy = tmp_path / "char", tmp_path / "sub"
    shutil.copytree(canine_dir, char_copy)
    shutil.copytree(bert_dir, sub_copy)
    nlp = build(char_copy, sub_copy, components=("ner",))
    train(nlp, n_steps=2)
    nlp.to_disk(tmp_path / "pipe")
    expected = nlp("Apple in Paris")._.entangle.subword
    shutil.rmtree(char_copy)
    shutil.rmtree(sub_copy)
    code = (
        "import spacy, sys, numpy; nlp = spacy.load(sys.argv[1]); doc = nlp('Apple in Paris');"
        "numpy.save(sys.argv[2], doc._.entangle.subword)"
    )
    env = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HOME": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "pipe"), str(tmp_path / "out.npy")],
        capture_output=True,
        text=True,
        env=env,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    numpy.testing.assert_allclose(numpy.load(tmp_path / "out.npy"), expected, atol=1e-6)


def test_replace_listeners(trained, tmp_path):
    nlp, _ = trained
    nlp.to_disk(tmp_path / "pipe")
    nlp2 = spacy.load(tmp_path / "pipe")
    doc_before = nlp2("Apple is buying a U.K. startup")
    nlp2.replace_listeners("entangle", "ner", ["model.tok2vec"])
    assert "ner" not in nlp2.get_pipe("entangle").listening_components
    tok2vec_cfg = nlp2.config["components"]["ner"]["model"]["tok2vec"]
    assert tok2vec_cfg["@architectures"] == "spacy-entangle.EntangleTok2Vec.v1"
    doc_after = nlp2("Apple is buying a U.K. startup")
    assert [(e.text, e.label_) for e in doc_before.ents] == [(e.text, e.label_) for e in doc_after.ents]
    # the standalone ner now survives removing entangle, and round-trips
    nlp2.remove_pipe("tagger")
    nlp2.remove_pipe("textcat")
    nlp2.remove_pipe("entangle")
    nlp2.to_disk(tmp_path / "ner_only")
    nlp3 = spacy.load(tmp_path / "ner_only")
    doc3 = nlp3("Apple is buying a U.K. startup")
    assert [(e.text, e.label_) for e in doc3.ents] == [(e.text, e.label_) for e in doc_after.ents]


def test_source_into_another_pipeline(trained, tmp_path):
    nlp, _ = trained
    nlp.to_disk(tmp_path / "pipe")
    source = spacy.load(tmp_path / "pipe")
    ref = source("Apple is buying a U.K. startup")
    other = spacy.blank("en")
    other.add_pipe("sentencizer")
    other.add_pipe("entangle", source=source)
    other.add_pipe("ner", source=source)
    assert other.get_pipe("entangle").listening_components == ["ner"]
    doc = other("Apple is buying a U.K. startup")
    assert [(e.text, e.label_) for e in doc.ents] == [(e.text, e.label_) for e in ref.ents]
    assert other.get_pipe("entangle").model.attrs["sides"] == ("subword",)


def test_frozen_does_not_change_weights(canine_dir, bert_dir):
    nlp = build(canine_dir, bert_dir, components=("ner",), frozen=True)
    exs = examples(nlp)
    sgd = nlp.initialize(lambda: exs)
    ent = nlp.get_pipe("entangle")
    before = {k: v.clone() for k, v in ent.model.shims[0]._model.state_dict().items()}
    history = train(nlp, n_steps=3, sgd=sgd)
    after = ent.model.shims[0]._model.state_dict()
    assert all((before[k] == after[k]).all() for k in before)
    assert history[-1]["ner"] >= 0


def test_side_only_computes_what_is_read(canine_dir, bert_dir):
    nlp = build(canine_dir, bert_dir, components=("ner",), side="char")
    nlp.initialize(lambda: examples(nlp))
    assert nlp.get_pipe("entangle").model.attrs["sides"] == ("char",)
    doc = nlp("Apple in Paris")
    assert doc._.entangle.subword is None and doc._.entangle.char is not None


def test_bad_width_heads_is_a_config_error(canine_dir, bert_dir):
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match="divisible"):
        nlp.add_pipe("entangle", config={"model": entangle_cfg(canine_dir, bert_dir, hidden_width=30, n_heads=4)})


def test_bad_backbone_names_it(tmp_path, bert_dir, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    nlp = spacy.blank("en")
    nlp.add_pipe("entangle", config={"model": entangle_cfg(tmp_path / "nothing-here", bert_dir)})
    with pytest.raises(ValueError, match="nothing-here"):
        nlp.initialize()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.text(max_size=60), max_size=4))
def test_random_unicode_through_pipe(trained, texts):
    nlp, _ = trained
    for doc in nlp.pipe(texts):
        assert doc._.entangle is not None
        assert len(doc._.entangle.align.char_lengths) == len(doc)


def test_store_output_false_drops_it_after_the_listeners(canine_dir, bert_dir):
    nlp = build(canine_dir, bert_dir, components=("ner", "textcat"))
    nlp.get_pipe("entangle").cfg["store_output"] = False
    nlp.initialize(lambda: examples(nlp))
    doc = nlp("Apple in Paris")
    assert doc._.entangle is None
    assert len(doc.cats) == 3
    nlp.get_pipe("entangle").cfg["store_output"] = True
    assert nlp("Apple in Paris")._.entangle is not None


def test_source_in_a_config(trained, tmp_path):
    nlp, _ = trained
    nlp.to_disk(tmp_path / "pipe")
    config = spacy.util.load_config_from_str(
        f"""
[nlp]
lang = "en"
pipeline = ["entangle", "ner"]

[components]

[components.entangle]
source = "{tmp_path / "pipe"}"

[components.ner]
source = "{tmp_path / "pipe"}"
"""
    )
    other = spacy.util.load_model_from_config(config, auto_fill=True, validate=True)
    assert other.get_pipe("entangle").listening_components == ["ner"]
    doc = other("Apple is buying a U.K. startup")
    assert doc._.entangle.subword is not None


def test_doc_to_bytes_keeps_the_output(trained):
    from spacy.tokens import Doc, DocBin

    nlp, _ = trained
    doc = nlp("Apple in Paris 😀")
    doc2 = Doc(nlp.vocab).from_bytes(doc.to_bytes())
    numpy.testing.assert_array_equal(doc2._.entangle.subword, doc._.entangle.subword)
    numpy.testing.assert_array_equal(doc2._.entangle.align.char_rows, doc._.entangle.align.char_rows)
    db = DocBin(store_user_data=True, docs=[doc])
    (back,) = DocBin().from_bytes(db.to_bytes()).get_docs(nlp.vocab)
    numpy.testing.assert_array_equal(back._.entangle.char, doc._.entangle.char)


def test_long_doc_with_default_windows(trained):
    """Default windows follow the encoders' own limits (here the tiny CANINE's 512
    positions): a 3000-character doc is windowed, not truncated, and does not crash."""
    nlp, _ = trained
    text = "Emoji 😀 and #hashtags in a long noisy doc by @someone. " * 55
    doc = nlp(text)
    data = doc._.entangle
    assert len(data.align.window_rows) >= 2
    assert (data.align.char_lengths >= 1).all() and len(data.align.char_lengths) == len(doc)
    assert len(doc.cats) == 3


def test_more_stock_components_listen(canine_dir, bert_dir):
    """textcat_multilabel (TextCatCls.v1, sigmoid), spancat and morphologizer on
    listeners, unchanged stock components: they train and predict."""
    from _pipelines import listener
    from spacy.training import Example

    nlp = spacy.blank("en")
    nlp.add_pipe("entangle", config={"model": entangle_cfg(canine_dir, bert_dir, n_coattention=1)})
    nlp.add_pipe(
        "textcat_multilabel",
        config={
            "model": {"@architectures": "spacy-entangle.TextCatCls.v1", "side": "char", "exclusive_classes": False}
        },
    )
    nlp.add_pipe(
        "spancat",
        config={
            "spans_key": "sc",
            "model": {
                "@architectures": "spacy.SpanCategorizer.v1",
                "tok2vec": listener("both"),
                "reducer": {"@layers": "spacy.mean_max_reducer.v1", "hidden_size": 16},
                "scorer": {"@layers": "spacy.LinearLogistic.v1"},
            },
        },
    )
    nlp.add_pipe("morphologizer", config={"model": {"@architectures": "spacy.Tagger.v2", "tok2vec": listener("char")}})
    data = [
        ("Bowie sings in Paris", {"a": 1.0, "b": 1.0}, [(0, 5, "PER"), (15, 20, "LOC")]),
        ("so sad 😢 today", {"a": 0.0, "b": 1.0}, [(7, 8, "EMO")]),
    ]
    exs = []
    for text, cats, spans in data:
        doc = nlp.make_doc(text)
        morphs = ["Number=Sing" if t.text[:1].isupper() else "_" for t in doc]
        pos = ["PROPN" if t.text[:1].isupper() else "X" for t in doc]
        exs.append(Example.from_dict(doc, {"cats": cats, "spans": {"sc": spans}, "morphs": morphs, "pos": pos}))
    sgd = nlp.initialize(lambda: exs)
    assert set(nlp.get_pipe("entangle").listening_components) == {"textcat_multilabel", "spancat", "morphologizer"}
    history = [nlp.update(exs, sgd=sgd, drop=0.0) for _ in range(15)]
    for name in ("textcat_multilabel", "spancat", "morphologizer"):
        assert history[-1][name] < history[0][name], name
    doc = nlp("Bowie sings in Paris")
    assert set(doc.cats) == {"a", "b"} and abs(sum(doc.cats.values()) - 1.0) > 1e-3  # independent sigmoids
    assert all(t.morph is not None for t in doc) and "sc" in doc.spans


@pytest.mark.parametrize(
    "key, value, block, allowed",
    [
        ("components.ner.model.tok2vec.side", "chars", "ner.model.tok2vec", ("subword", "char", "both")),
        ("components.entangle.inference", "int4", "entangle", ("fp32", "int8", "bf16")),
        ("components.entangle.doc_tensor_pooling", "max", "entangle", ("first", "mean")),
    ],
)
def test_a_bad_enumerated_setting_is_a_config_error_naming_its_block_and_values(
    canine_dir, bert_dir, key, value, block, allowed
):
    """spaCy's config validation reports it (typed as Literal), not a traceback from inside the code."""
    from confection import ConfigValidationError
    from spacy.util import load_config, load_model_from_config

    from spacy_entangle.configs import config_path

    config = load_config(
        config_path("ner_cpu.cfg"),
        overrides={"paths.char_backbone": str(canine_dir), "paths.subword_backbone": str(bert_dir), key: value},
    )
    with pytest.raises(ConfigValidationError) as err:
        load_model_from_config(config, auto_fill=True, validate=True)
    message = str(err.value)
    assert f"{block} -> {key.rsplit('.', 1)[1]}" in message and repr(value) in message
    assert all(repr(name) in message for name in allowed), message


def test_textcat_cls_side_is_one_side_in_the_config(canine_dir, bert_dir):
    from confection import ConfigValidationError

    nlp = spacy.blank("en")
    nlp.add_pipe("entangle", config={"model": entangle_cfg(canine_dir, bert_dir)})
    with pytest.raises(ConfigValidationError, match="'subword', 'char'"):
        nlp.add_pipe("textcat", config={"model": {"@architectures": "spacy-entangle.TextCatCls.v1", "side": "both"}})


def test_the_inference_literal_lists_the_modes():
    """The setting takes every mode and "auto" (the fast default of a shipped pipeline)."""
    from typing import get_args, get_type_hints

    from spacy_entangle.modeling.inference import INFERENCE_MODES, INFERENCE_SETTINGS
    from spacy_entangle.pipeline.entangle import make_entangle

    assert (
        get_args(get_type_hints(make_entangle)["inference"])
        == INFERENCE_SETTINGS
        == ("auto", "fp32", "int8", "bf16", "onnx", "onnx-mixed", "onnx-int8")
    )
    assert INFERENCE_MODES == INFERENCE_SETTINGS[1:]


def _usage_python_block(heading: str) -> str:
    """The first ```python block under ``heading`` in docs/usage.md, as written."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "usage.md").read_text(encoding="utf8")
    section = text.split(f"\n{heading}\n", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


@pytest.fixture(scope="module")
def trained_pipeline(tmp_path_factory):
    """A stand-in for en_core_web_sm: a trained tok2vec with tagger and ner listening to it."""
    from spacy.training import Example

    nlp = spacy.blank("en")
    nlp.add_pipe("tok2vec")
    listener = {"@architectures": "spacy.Tok2VecListener.v1", "width": 96, "upstream": "tok2vec"}
    nlp.add_pipe("tagger", config={"model": {"@architectures": "spacy.Tagger.v2", "tok2vec": listener}})
    nlp.add_pipe(
        "ner",
        config={
            "model": {
                "@architectures": "spacy.TransitionBasedParser.v2",
                "state_type": "ner",
                "extra_state_tokens": False,
                "hidden_width": 16,
                "maxout_pieces": 2,
                "use_upper": True,
                "tok2vec": listener,
            }
        },
    )
    words = ["Apple", "is", "in", "London"]
    train = [
        Example.from_dict(
            nlp.make_doc(" ".join(words)),
            {"tags": ["NNP", "VBZ", "IN", "NNP"], "entities": [(0, 5, "ORG"), (12, 18, "GPE")]},
        )
    ]
    optimizer = nlp.initialize(lambda: train)
    for _ in range(3):
        nlp.update(train, sgd=optimizer)
    path = tmp_path_factory.mktemp("trained") / "pipeline"
    nlp.to_disk(path)
    return path


def test_usage_doc_adds_entangle_to_a_trained_pipeline_initializing_only_the_new_components(
    trained_pipeline, canine_dir, bert_dir
):
    """The usage page's snippet, run as written (the pipeline and backbone names swapped for the
    local stand-ins): the trained components keep their weights byte for byte."""
    code = _usage_python_block("## Add it to an existing pipeline")
    for name, stand_in in {
        "en_core_web_sm": trained_pipeline,
        "google/canine-s": canine_dir,
        "roberta-base": bert_dir,
    }.items():
        assert f'"{name}"' in code
        code = code.replace(f'"{name}"', repr(str(stand_in)))
    before = spacy.load(trained_pipeline)
    namespace: dict = {}
    exec(compile(code, "docs/usage.md", "exec"), namespace)
    nlp, doc = namespace["nlp"], namespace["doc"]
    assert nlp.pipe_names == ["entangle", *before.pipe_names, "ner_noisy"]
    for name in before.pipe_names:
        assert nlp.get_pipe(name).model.to_bytes() == before.get_pipe(name).model.to_bytes(), name
    assert [t.tag_ for t in doc] == [t.tag_ for t in before(doc.text)]  # the trained tagger ran, unchanged
    assert {"creative-work", "location"} <= set(nlp.get_pipe("ner_noisy").labels)
    # what the snippet avoids: a bare nlp.initialize() starts the trained components again
    bare = spacy.load(trained_pipeline)
    bare.initialize()
    assert bare.get_pipe("tagger").model.to_bytes() != before.get_pipe("tagger").model.to_bytes()


def test_files_saved_with_a_guessed_head_count_still_load(canine_dir, bert_dir):
    """n_heads = null with a width the subword encoder's heads (2) do not divide is refused
    now; files saved before, built with a guessed count (1 for width 33), still load with
    that count and give the same states (the weights do not record the head count)."""
    import srsly
    import torch

    from spacy_entangle.layers import EntangleShim
    from spacy_entangle.layers.settings import EntangleSettings

    with pytest.raises(ValueError, match="n_heads is null"):
        build(canine_dir, bert_dir, components=("ner",), hidden_width=33, n_heads=None).initialize()
    nlp = build(canine_dir, bert_dir, components=("ner",), hidden_width=33, n_heads=1)
    nlp.initialize(lambda: examples(nlp))
    shim = nlp.get_pipe("entangle").model.shims[0]
    saved = srsly.msgpack_loads(shim.to_bytes())
    saved["config"]["n_heads"] = None  # as the files of a guessed count were saved
    loaded = EntangleShim(EntangleSettings.from_cfg(saved["config"])).from_bytes(srsly.msgpack_dumps(saved))
    assert loaded._model.sub_layers[0].cross.attention.num_heads == 1
    ids = (
        torch.tensor([[2, 40, 41, 3]]),
        torch.ones(1, 4, dtype=torch.long),
        torch.tensor([[0xE000, 72, 105, 0xE001]]),
        torch.ones(1, 4, dtype=torch.long),
    )
    for a, b in zip(shim._model.eval()(*ids), loaded._model.eval()(*ids)):
        torch.testing.assert_close(a, b)
