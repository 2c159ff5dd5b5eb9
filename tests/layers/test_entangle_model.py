"""EntangleModel (layers/entangle_model.py): windows grouped into chunks of similar length, one
backward per batch over every chunk, gradient scaling over several chunks, each doc's own rows."""

import numpy
import pytest
import torch
from _pipelines import build, examples
from spacy.util import fix_random_seed
from thinc.api import SGD
from thinc.shims.pytorch_grad_scaler import PyTorchGradScaler


class CPUGradScaler(PyTorchGradScaler):
    """thinc's scaler refuses CPU tensors; the arithmetic is the same on CPU, so this
    runs the real scale / unscale / update path in a CPU test."""

    def _scale_tensor(self, tensor, scale_per_device, inplace):
        scale = self._scale.to(tensor.device)
        return tensor.mul_(scale) if inplace else tensor * scale


def _entangle_params(nlp):
    model = nlp.get_pipe("entangle").model.shims[0]._model
    return {k: v.detach().clone() for k, v in model.named_parameters()}


@pytest.mark.issue(12)
def test_mixed_precision_scales_gradients_once_over_several_chunks(canine_dir, bert_dir):
    """Docs in separate chunks (max_batch_chars below two windows): with the grad
    scaler on, SGD steps must equal the steps without it."""
    base = build(canine_dir, bert_dir, components=("ner",), max_batch_chars=64)
    base.initialize(lambda: examples(base))
    payload = base.to_bytes()
    results = []
    for scaled in (False, True):
        nlp = build(canine_dir, bert_dir, components=("ner",), max_batch_chars=64)
        nlp.initialize(lambda nlp=nlp: examples(nlp))
        nlp.from_bytes(payload)
        shim = nlp.get_pipe("entangle").model.shims[0]
        if scaled:
            shim._grad_scaler = CPUGradScaler(enabled=True, init_scale=2.0**10)
        before = _entangle_params(nlp)
        fix_random_seed(0)  # the encoders' own dropout is random
        # the ner's output layer starts at zero: its first update sends no gradient back
        for _ in range(3):
            nlp.update(examples(nlp), sgd=SGD(0.1), drop=0.0)
        after = _entangle_params(nlp)
        results.append({k: after[k] - before[k] for k in before})
    plain, scaled = results
    moved = [k for k in plain if plain[k].abs().max() > 0]
    assert moved, "the update must move the entangle weights"
    for k in moved:
        torch.testing.assert_close(scaled[k], plain[k], rtol=1e-3, atol=1e-7, msg=k)


@pytest.mark.issue(12)
def test_a_batch_of_several_chunks_runs_one_backward(canine_dir, bert_dir, monkeypatch):
    nlp = build(canine_dir, bert_dir, components=("ner",), max_batch_chars=64)
    nlp.initialize(lambda: examples(nlp))
    calls = []
    real = torch.autograd.backward
    monkeypatch.setattr(torch.autograd, "backward", lambda *a, **k: (calls.append(1), real(*a, **k)))
    nlp.update(examples(nlp), sgd=SGD(0.01))
    assert len(calls) == 1


@pytest.mark.issue(12)
def test_each_doc_owns_its_rows(canine_dir, bert_dir):
    nlp = build(canine_dir, bert_dir, components=("ner",), side="both", max_batch_chars=100_000)
    nlp.initialize(lambda: examples(nlp))
    docs = list(nlp.pipe(["one short doc", "another short doc with more words", "x"]))
    for doc in docs:
        for side in (doc._.entangle.subword, doc._.entangle.char):
            assert side.base is None, "a view keeps the whole padded chunk alive"


@pytest.mark.issue(12)
@pytest.mark.issue(30)
def test_chunks_group_windows_of_similar_length_and_cut_them_in_order_of_pieces():
    from spacy_entangle.layers.entangle_model import CHUNK_SPREAD, _chunks
    from spacy_entangle.tokenization import WindowInput

    rng = numpy.random.default_rng(0)
    chars = rng.integers(10, 300, 200)
    # a long doc's windows: (almost) the same characters, pieces from a quarter to a half of them
    chars[:100] = rng.integers(500, 512, 100)
    pieces = (chars * rng.uniform(0.25, 0.5, 200)).astype(int) + 2
    windows = [
        WindowInput(0, numpy.zeros(p, dtype="int64"), numpy.zeros(c, dtype="int64")) for p, c in zip(pieces, chars)
    ]
    chunks = _chunks(windows, 4096, lambda n: n)
    assert sorted(i for c in chunks for i in c) == list(range(len(windows)))
    for chunk in chunks:
        assert max(chars[chunk]) <= CHUNK_SPREAD * min(chars[chunk]) + 16
        assert max(chars[chunk]) * len(chunk) <= 4096 or len(chunk) == 1
    # the long doc's windows are cut in order of pieces: its subword side is padded little
    long_chunks = [c for c in chunks if min(chars[c]) >= 500]
    padded = sum(len(c) * max(pieces[c]) for c in long_chunks)
    assert padded <= 1.1 * sum(pieces[:100])
