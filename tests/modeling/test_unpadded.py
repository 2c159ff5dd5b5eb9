"""BERT-family encoders packed at prediction (modeling/unpadded.py): the states of the
Hugging Face forward at every real position, whatever the padding; the encoder's own
forward wherever packing does not apply."""

import pytest
import torch
from transformers import AutoModel

from spacy_entangle.modeling.unpadded import encode, packable


def _batch(lengths, vocab: int, pad_id: int):
    """Rows of random ids of these lengths, padded with pad_id to the longest + 2."""
    width = max(lengths) + 2
    gen = torch.Generator().manual_seed(0)
    ids = torch.full((len(lengths), width), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for row, n in enumerate(lengths):
        ids[row, :n] = torch.randint(pad_id + 1, vocab, (n,), generator=gen)
        mask[row, :n] = 1
    return ids, mask


@pytest.mark.parametrize("kind", ["bert_dir", "roberta_dir"])
def test_packed_states_equal_the_hugging_face_forward_at_real_positions(kind, request):
    encoder = AutoModel.from_pretrained(request.getfixturevalue(kind)).eval()
    pad = int(encoder.config.pad_token_id or 0)
    ids, mask = _batch([9, 3, 14, 2], encoder.config.vocab_size, pad)
    real = mask.bool()
    assert packable(encoder)
    with torch.inference_mode():
        expected = encoder(input_ids=ids, attention_mask=mask).last_hidden_state
        got = encode(encoder, mask, input_ids=ids)
        embeds = encoder.get_input_embeddings()(ids)
        expected_embeds = encoder(inputs_embeds=embeds, attention_mask=mask).last_hidden_state
        got_embeds = encode(encoder, mask, inputs_embeds=embeds)
    assert got.shape == expected.shape
    assert torch.allclose(got[real], expected[real], atol=1e-5)
    assert not got[~real].any()  # padding: zeros, never read
    assert torch.allclose(got_embeds[real], expected_embeds[real], atol=1e-5)


def test_training_runs_the_encoders_own_forward(bert_dir):
    encoder = AutoModel.from_pretrained(bert_dir).train()
    assert not packable(encoder)
    ids, mask = _batch([5, 2], encoder.config.vocab_size, 0)
    torch.manual_seed(0)
    got = encode(encoder, mask, input_ids=ids)
    torch.manual_seed(0)
    expected = encoder(input_ids=ids, attention_mask=mask).last_hidden_state
    assert torch.equal(got, expected)  # dropout and all, padded positions included
