"""CharSpec (tokenization/chars.py): padding that fits CANINE's position table and leaves the
real characters' states unchanged."""

import numpy
import pytest
import torch
from transformers import AutoConfig, CanineModel

from spacy_entangle.tokenization import CharSpec


@pytest.mark.issue(12)
def test_padded_length_never_exceeds_the_position_table(canine_dir, canine_128):
    for path in (canine_dir, canine_128):
        config = AutoConfig.from_pretrained(path)
        spec = CharSpec.from_config(config)
        table = min(config.max_position_embeddings, config.num_hash_buckets)
        for n in range(1, spec.max_length + 1):
            assert n + spec.min_tail <= spec.padded_length(n) <= table
            assert spec.padded_length(n) % spec.pad_multiple == 0


@pytest.mark.issue(12)
@pytest.mark.parametrize("which", ["stride128", "stride16"])
def test_minimal_char_padding_gives_the_same_outputs(canine_128, canine_dir, which):
    """Padding to padded_length (the downsampling rate + tail, or a whole block when a
    block of padding only would start in the tail) instead of always to the block
    stride: the real characters' states do not change, whatever further padding a
    batch adds. Every window length across block boundaries is checked."""
    model = CanineModel.from_pretrained(canine_128 if which == "stride128" else canine_dir).eval()
    spec = CharSpec.from_config(model.config)
    rng = numpy.random.default_rng(0)

    def states(ids, length):
        padded = numpy.zeros((1, length), dtype="int64")
        padded[0, : len(ids)] = ids
        mask = (numpy.arange(length) < len(ids)).astype("int64")[None]
        with torch.no_grad():
            out = model(input_ids=torch.from_numpy(padded), attention_mask=torch.from_numpy(mask))
        return out.last_hidden_state[0, : len(ids)]

    saved = 0
    for n in range(3, 2 * spec.block + 20):
        ids = rng.integers(32, 0x1F600, n)
        ids[0], ids[-1] = spec.cls_id, spec.sep_id
        length = spec.padded_length(n)
        saved += -(-(n + spec.min_tail) // spec.block) * spec.block - length
        alone = states(ids, length)
        for extra in (spec.pad_multiple, spec.block + spec.pad_multiple, 3 * spec.block):
            torch.testing.assert_close(states(ids, length + extra), alone, atol=2e-5, rtol=0, msg=f"n={n}")
    if which == "stride128":
        assert saved > 0, "padding to the block stride is what the minimal padding avoids"
