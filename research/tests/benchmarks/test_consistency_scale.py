"""research/benchmarks/consistency_scale.py on a tiny pipeline: one line per batch with both
gradients, and the weight of equal norms."""

import consistency_scale  # research/benchmarks/consistency_scale.py (setup.cfg: pytest pythonpath)
from _pipelines import build, examples, train
from spacy.tokens import DocBin


def test_prints_both_gradients_per_batch(canine_dir, bert_dir, tmp_path, capsys):
    nlp = build(canine_dir, bert_dir, components=("ner",), side="both", store_output=False)
    # trained a few steps: spaCy's ner hands its tok2vec a zero gradient at initialization
    train(nlp, n_steps=5)
    nlp.to_disk(tmp_path / "pipe")
    DocBin(docs=[eg.reference for eg in examples(nlp)] * 4).to_disk(tmp_path / "train.spacy")
    ratios = consistency_scale.main(
        [str(tmp_path / "pipe"), str(tmp_path / "train.spacy"), "--batches", "2", "--batch-size", "8", "--level", "1"]
    )
    out = capsys.readouterr().out
    assert len(ratios) == 2 and all(r > 0 for r in ratios)
    assert out.count("attacked copies") == 2 and "median over batches" in out
