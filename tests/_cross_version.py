"""The two halves of the cross-version round trip (tests/test_cross_version.py), each run by
one venv's python: `save OUT` builds a small pipeline per subword tokenizer kind (tiny offline
backbones, a few updates), saves it and what it predicts; `load OUT` loads those pipelines
(their backbone folders are gone) and writes what they predict now.

    python tests/_cross_version.py save OUT
    python tests/_cross_version.py load OUT
"""

import json
import os
import shutil
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

KINDS = ("bert", "roberta", "generic")
TEXTS = [
    "Apple is buying a U.K. startup 😀 for $1 billion",
    "@john went to Paris!!! http://t.co/x",
    "   ",
    "so sad that Bowie died 😢 #RIP",
]


def _rounded(rows):
    return None if rows is None else [[round(float(x), 6) for x in row] for row in rows]


def _predict(nlp) -> dict:
    import transformers

    out = []
    for doc in nlp.pipe(TEXTS):
        data = doc._.entangle
        out.append(
            {
                "ents": doc.to_json()["ents"],
                "tags": [t.tag_ for t in doc],
                "subword": _rounded(data.subword),
                "char": _rounded(data.char),
            }
        )
    return {"transformers": transformers.__version__, "docs": out}


def save(out: Path) -> None:
    from _pipelines import build, train

    from spacy_entangle.backbone_dirs import make_random_canine, make_random_subword

    for kind in KINDS:
        backbones = out / kind / "backbones"
        char_dir = make_random_canine(
            backbones / "char", layers=1, width=32, heads=2, local_stride=16, hash_buckets=2048, max_chars=2048
        )
        sub_dir = make_random_subword(backbones / "subword", kind=kind, layers=1, width=32, heads=2, vocab_size=300)
        nlp = build(char_dir, sub_dir, components=("ner", "tagger"))
        train(nlp, n_steps=3)
        nlp.to_disk(out / kind / "pipeline")
        shutil.rmtree(backbones)  # spacy.load must not need them
        (out / kind / "saved.json").write_text(json.dumps(_predict(nlp)), encoding="utf8")


def load(out: Path) -> None:
    import spacy

    for kind in KINDS:  # each kind's failure is its own test's (the others still run)
        try:
            nlp = spacy.load(out / kind / "pipeline", config={"components": {"entangle": {"store_output": True}}})
            result = _predict(nlp)
        except Exception as err:  # noqa: BLE001 - reported by the test of that kind
            result = {"error": f"{type(err).__name__}: {err}"}
        (out / kind / "loaded.json").write_text(json.dumps(result), encoding="utf8")


if __name__ == "__main__":
    import torch

    torch.set_num_threads(1)
    command, folder = sys.argv[1], Path(sys.argv[2])
    {"save": save, "load": load}[command](folder)
