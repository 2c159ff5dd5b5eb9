"""Small pipelines on the tiny offline backbones, shared by the pipeline tests."""

import random
from typing import List

import spacy
from spacy.language import Language
from spacy.training import Example

TEXTS = [
    ("Apple is buying a U.K. startup 😀 for $1 billion", [(0, 5, "ORG"), (18, 22, "GPE")], "joy"),
    ("@john went to Paris!!! http://t.co/x", [(14, 19, "LOC")], "joy"),
    ("so sad that Bowie died 😢", [(12, 17, "PER")], "sadness"),
    ("I hate Mondays at Google", [(18, 24, "ORG")], "anger"),
]


def entangle_cfg(char_dir, sub_dir, **overrides) -> dict:
    cfg = {
        "@architectures": "spacy-entangle.EntangleModel.v1",
        "char_backbone": str(char_dir),
        "subword_backbone": str(sub_dir),
        "n_coattention": 2,
        "hidden_width": 32,
        "n_heads": 2,
        "ffn_width": 64,
        "dropout": 0.0,
    }
    cfg.update(overrides)
    return cfg


def listener(side="subword", pooling="reduce_first.v1", upstream="entangle") -> dict:
    return {
        "@architectures": "spacy-entangle.EntangleListener.v1",
        "upstream": upstream,
        "side": side,
        "pooling": {"@layers": pooling},
    }


def ner_model(side="subword", **kw) -> dict:
    return {
        "@architectures": "spacy.TransitionBasedParser.v2",
        "state_type": "ner",
        "extra_state_tokens": False,
        "hidden_width": 16,
        "maxout_pieces": 2,
        "use_upper": True,
        "tok2vec": listener(side, **kw),
    }


def build(
    char_dir,
    sub_dir,
    components=("ner", "tagger", "textcat"),
    side="subword",
    frozen=False,
    store_output=True,
    **overrides,
) -> Language:
    """store_output = true (not the default): these tests inspect doc._.entangle."""
    nlp = spacy.blank("en")
    config = {"model": entangle_cfg(char_dir, sub_dir, **overrides), "frozen": frozen, "store_output": store_output}
    nlp.add_pipe("entangle", config=config)
    if "ner" in components:
        nlp.add_pipe("ner", config={"model": ner_model(side)})
    if "tagger" in components:
        nlp.add_pipe("tagger", config={"model": {"@architectures": "spacy.Tagger.v2", "tok2vec": listener("char")}})
    if "textcat" in components:
        nlp.add_pipe(
            "textcat",
            config={
                "model": {"@architectures": "spacy-entangle.TextCatCls.v1", "upstream": "entangle", "side": "subword"}
            },
        )
    return nlp


def examples(nlp: Language) -> List[Example]:
    out = []
    for text, ents, cat in TEXTS:
        doc = nlp.make_doc(text)
        tags = ["X" if t.is_punct else ("N" if t.text[:1].isupper() else "V") for t in doc]
        cats = {c: float(c == cat) for c in ("joy", "sadness", "anger")}
        out.append(Example.from_dict(doc, {"entities": ents, "tags": tags, "cats": cats}))
    return out


def train(nlp: Language, n_steps: int = 20, seed: int = 0, sgd=None) -> List[dict]:
    random.seed(seed)
    exs = examples(nlp)
    if sgd is None:
        sgd = nlp.initialize(lambda: exs)
    history = []
    for _ in range(n_steps):
        history.append(dict(nlp.update(exs, sgd=sgd, drop=0.0)))
    return history


def check_char_backbone_pipeline(char_dir, sub_dir, out) -> None:
    """A pipeline on these backbones (NER and tagger on the char side) trains, predicts the
    same after saving once the backbone folders are deleted (``out``: where it is saved), and
    gives a doc the same char states alone and batched with a long one (padding)."""
    import shutil

    import numpy

    nlp = build(char_dir, sub_dir, components=("ner", "tagger"), side="char")
    losses = train(nlp, n_steps=4)
    assert losses[-1]["tagger"] < losses[0]["tagger"]
    texts = ["hi 👩‍👩‍👧‍👦 ok", "@john went to Paris!!!", "   ", "two  spaces\tand tabs"]
    before = [doc.to_array(["TAG", "ENT_IOB"]) for doc in nlp.pipe(texts)]
    nlp.to_disk(out)
    shutil.rmtree(char_dir)
    shutil.rmtree(sub_dir)
    loaded = spacy.load(out)
    after = [doc.to_array(["TAG", "ENT_IOB"]) for doc in loaded.pipe(texts)]
    assert all(numpy.array_equal(a, b) for a, b in zip(before, after))
    long_text = "a long one, with many words and 😀 emoji " * 10
    alone = loaded.get_pipe("entangle").predict([loaded.make_doc(texts[0])])
    batched = loaded.get_pipe("entangle").predict([loaded.make_doc(texts[0]), loaded.make_doc(long_text)])
    numpy.testing.assert_allclose(alone[0].char, batched[0].char, atol=1e-4)


def save_trained_ner(char_dir, sub_dir, out, n_steps: int = 120) -> Language:
    """An `entangle` + greedy `ner` pipeline trained on TEXTS until it predicts entities
    (about 100 steps on the tiny backbones, a few seconds), saved to ``out``."""
    nlp = build(char_dir, sub_dir, components=("ner",), store_output=False)
    train(nlp, n_steps=n_steps)
    nlp.to_disk(out)
    return nlp
