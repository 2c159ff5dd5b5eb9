"""skip_init: random fills skipped in the loading thread only, and what they left unfilled."""

import threading

import torch

from spacy_entangle.modeling.skip_init import not_loaded, skipped_random_init


def test_random_fills_are_skipped_and_recorded():
    torch.manual_seed(0)
    before = torch.random.get_rng_state()
    with skipped_random_init() as init:
        layer = torch.nn.Linear(8, 4)
        torch.nn.init.normal_(tensor=layer.weight)  # the keyword form, too
        embedding = torch.nn.Embedding(10, 4)
        embedding.weight.data.normal_(mean=0.0, std=0.02)  # what transformers' _init_weights calls
    assert torch.equal(torch.random.get_rng_state(), before)
    skipped = {t.untyped_storage().data_ptr() for t in init.skipped}
    for tensor in (layer.weight, layer.bias, embedding.weight):
        assert tensor.untyped_storage().data_ptr() in skipped


def test_another_thread_draws_its_weights_meanwhile():
    """The mode is per thread: a layer built in another thread while one thread loads is drawn."""
    inside, done = threading.Event(), threading.Event()

    def load():
        with skipped_random_init():
            inside.set()
            done.wait(10)

    thread = threading.Thread(target=load)
    thread.start()
    inside.wait(10)
    try:
        torch.manual_seed(3)
        built_meanwhile = torch.nn.Linear(16, 16).weight.detach().clone()
    finally:
        done.set()
        thread.join()
    torch.manual_seed(3)
    assert torch.equal(built_meanwhile, torch.nn.Linear(16, 16).weight.detach())


def test_not_loaded_names_what_the_saved_weights_did_not_fill():
    with skipped_random_init() as init:
        model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 2))
        model.register_buffer("noise", torch.empty(3).uniform_(), persistent=False)
    state = {k: torch.ones_like(v) for k, v in model.state_dict().items()}
    model.load_state_dict(state)
    left = not_loaded(init.skipped, model.state_dict().values())
    assert [t.shape for t in left] == [torch.Size([3])]
    assert not_loaded(init.skipped, [*model.state_dict().values(), model.noise]) == []
