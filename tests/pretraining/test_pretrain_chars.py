"""`pretrain-chars`: the objectives' targets, the loop (loss falls, seeds, exact resume), the
output directory as a char_backbone, and bad or awkward input. Real CANINE, real torch;
canine-tiny (1 layer, 64 wide) on a few hundred short lines keeps each run to seconds."""

import json
import random
from pathlib import Path

import numpy
import pytest
import torch
from _cli import cli
from _pipelines import build, train
from transformers import AutoModel, CanineModel

from spacy_entangle import canine
from spacy_entangle.backbone_dirs import RANDOM_NOTE, sample_lines
from spacy_entangle.pretraining import PretrainSettings, pretrain_chars
from spacy_entangle.pretraining.card import PRETRAINED_NOTE
from spacy_entangle.pretraining.checkpoint import LOG_NAME
from spacy_entangle.pretraining.data import (
    EOW_CLASS,
    IGNORE,
    CharVocab,
    PretrainDataError,
    chunk_text,
    make_batch,
    mask_spans,
    noisy_example,
    read_texts,
)
from spacy_entangle.pretraining.encoders import new_encoder
from spacy_entangle.pretraining.model import CharPretrainer


@pytest.fixture(scope="module")
def text_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("text") / "sample.txt"
    path.write_text("\n".join(sample_lines()) + "\n", encoding="utf8")
    return path


def tiny(**kw) -> PretrainSettings:
    base = dict(max_steps=6, batch_size=8, lr=3e-3, warmup_steps=0, log_every=1, checkpoint_every=100, noise_rate=0.2)
    base.update(kw)
    return PretrainSettings(**base)


def weights(path):
    return {k: v.clone() for k, v in AutoModel.from_pretrained(path).state_dict().items()}


def same(a, b) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def log(path):
    return [json.loads(line) for line in (path / LOG_NAME).read_text(encoding="utf8").splitlines()]


# ----------------------------------------------------------------------------- targets
def test_masked_spans_hide_about_the_rate():
    rng = numpy.random.default_rng(0)
    shares = [mask_spans(400, rng, 0.15).mean() for _ in range(20)]
    assert 0.12 <= numpy.mean(shares) <= 0.16
    assert mask_spans(0, rng, 0.15).sum() == 0
    assert mask_spans(3, rng, 0.15).sum() >= 1  # short text: still one target


def test_batch_targets_are_the_clean_characters():
    vocab = CharVocab.build(["the quick brown fox jumps over the lazy dog"], 64)
    texts = ["the quick brown fox jumps over the lazy dog", "a b c"]
    batch = make_batch(texts, vocab, numpy.random.default_rng(1), random.Random(1), mask_rate=0.3, noise_rate=0.0)
    assert batch.input_ids.shape[1] % 4 == 0
    for row, text in enumerate(texts):
        n = len(text)
        assert batch.attention_mask[row].sum() == n + 2  # [CLS] text [SEP]
        scored = batch.mlm_targets[row] != IGNORE
        assert scored.any() and not scored[0] and not scored[n + 1 :].any()
        for pos in numpy.flatnonzero(scored):
            assert batch.mlm_targets[row, pos] == vocab.index.get(ord(text[pos - 1]), 0)
        hidden = batch.input_ids[row] == canine.MASK
        assert (scored | ~hidden).all()  # MASK only where a target is
    assert (batch.noisy_targets == IGNORE).all()  # noise off


def test_noisy_targets_spell_the_original_word():
    rng = random.Random(3)
    noisy, changed = noisy_example("Reconstruct these words please", rng, rate=1.0)
    assert changed and noisy != "Reconstruct these words please"
    for start, width, original in changed:
        assert noisy[start : start + width] != original and len(original) >= 4
    vocab = CharVocab.build(["Reconstruct these words please abcdefghijklmnopqrstuvwxyz"], 128)
    batch = make_batch(
        ["Reconstruct these words please"],
        vocab,
        numpy.random.default_rng(0),
        random.Random(3),
        mask_rate=0.15,
        noise_rate=1.0,
    )
    targets, mlm = batch.noisy_targets[0], batch.mlm_targets[0]
    for start, width, original in changed:
        for j in range(width):
            want = vocab.index[ord(original[j])] if j < len(original) else EOW_CLASS
            assert targets[1 + start + j] == want
    assert not ((targets != IGNORE) & (mlm != IGNORE)).any()  # attacked words are not masked


def test_chunking_keeps_every_character():
    words = " ".join(f"word{i}" for i in range(2000))
    pieces = list(chunk_text(words, 256))
    assert all(0 < len(p) <= 256 for p in pieces)
    assert " ".join(pieces) == words
    blob = "x" * 1000  # no space to cut at
    assert "".join(chunk_text(blob, 256)) == blob


# ----------------------------------------------------------------------------- the loop
def test_loss_falls_and_output_is_a_char_backbone(text_file, bert_dir, tmp_path):
    out = tmp_path / "chars"
    result = cli(
        "pretrain-chars",
        str(text_file),
        str(out),
        "--config",
        "canine-tiny",
        "--max-steps",
        "40",
        "--batch-size",
        "16",
        "--lr",
        "3e-3",
        "--warmup-steps",
        "0",
        "--log-every",
        "5",
        "--noise-rate",
        "0.2",
        "--checkpoint-every",
        "20",
    )
    assert result.returncode == 0, result.output
    entries = log(out)
    assert [e["step"] for e in entries] == list(range(5, 45, 5))
    first, last = entries[0], entries[-1]
    assert last["mlm_loss"] < 0.8 * first["mlm_loss"], entries
    assert last["noisy_loss"] < first["noisy_loss"], entries
    assert "dev_mlm_loss" in entries[3] and "dev_mlm_loss" in last  # held-out figures at checkpoints
    # a plain Hugging Face directory, labelled as pretrained (not the random stand-in)
    model = AutoModel.from_pretrained(out)
    assert isinstance(model, CanineModel)
    assert model.config.spacy_entangle_note.startswith(PRETRAINED_NOTE)
    assert model.config.spacy_entangle_note != RANDOM_NOTE
    assert "pretrained by spacy-entangle" in (out / "README.md").read_text(encoding="utf8")
    # ... that EntangleModel.v1 takes as its char_backbone: a pipeline trains on it
    nlp = build(out, bert_dir, components=("ner",), side="char")
    losses = train(nlp, n_steps=3)
    assert all(numpy.isfinite(h["ner"]) for h in losses)
    doc = nlp("Apple opened a store in Paris")
    assert len(doc) == 6


def test_same_seed_same_weights_other_seed_differs(text_file, tmp_path):
    for name, seed in (("a", 0), ("b", 0), ("c", 1)):
        pretrain_chars([text_file], tmp_path / name, tiny(seed=seed), config="canine-tiny", progress=False)
    assert same(weights(tmp_path / "a"), weights(tmp_path / "b"))
    assert not same(weights(tmp_path / "a"), weights(tmp_path / "c"))


def test_resume_continues_exactly(text_file, tmp_path):
    straight, split = tmp_path / "straight", tmp_path / "split"
    pretrain_chars([text_file], straight, tiny(max_steps=6, decay_steps=6), config="canine-tiny", progress=False)
    pretrain_chars([text_file], split, tiny(max_steps=3, decay_steps=6), config="canine-tiny", progress=False)
    with pytest.raises(ValueError, match="--resume"):
        pretrain_chars([text_file], split, tiny(max_steps=6, decay_steps=6), config="canine-tiny", progress=False)
    pretrain_chars(
        [text_file], split, tiny(max_steps=6, decay_steps=6), config="canine-tiny", resume=True, progress=False
    )
    assert same(weights(straight), weights(split))
    assert [e["step"] for e in log(split)] == [1, 2, 3, 4, 5, 6]
    assert [e["mlm_loss"] for e in log(split)] == [e["mlm_loss"] for e in log(straight)]
    # resuming needs the same batches: a changed setting is refused, with its name
    with pytest.raises(ValueError, match="--batch-size"):
        pretrain_chars([text_file], split, tiny(max_steps=8, batch_size=4), resume=True, progress=False)


def test_continue_from_an_existing_canine(text_file, canine_dir, tmp_path):
    out = tmp_path / "continued"
    pretrain_chars([text_file], out, tiny(max_steps=2), config=str(canine_dir), progress=False)
    assert AutoModel.from_pretrained(out).config.hidden_size == AutoModel.from_pretrained(canine_dir).config.hidden_size


# ----------------------------------------------------------------------------- input
def test_blank_and_very_long_lines(tmp_path):
    path = tmp_path / "mixed.txt"
    long_line = " ".join(f"token{i}" for i in range(3000))
    path.write_text("\ufeff\n   \nshort line\n\n" + long_line + "\n" + "y" * 700 + "\n", encoding="utf8")
    docs, stats = read_texts([path], max_chars=256)
    assert stats["blank_lines"] == 3 and stats["lines"] == 3 and stats["long_lines"] == 2
    assert docs[0] == "short line" and all(len(d) <= 256 for d in docs)
    assert "".join(docs).replace(" ", "") == ("short line" + long_line + "y" * 700).replace(" ", "")
    out = tmp_path / "out"
    pretrain_chars([path], out, tiny(max_steps=2, max_chars=256), config="canine-tiny", progress=False)
    assert (out / "model.safetensors").exists()


@pytest.mark.parametrize(
    "content,args,message",
    [
        ("\n  \n\n", [], "no text"),
        ("some text here\n", ["--config", "bert"], "neither a preset"),
        ("some text here\n", ["--max-steps", "0"], "budget"),
        ("some text here\n", ["--mask-rate", "0"], "nothing to learn"),
        ("some text here\n", ["--attacks", "smash", "--noise-rate", "0.1"], "attacks"),
        ("some text here\n", ["--width", "60"], "divisible by 8"),
    ],
)
def test_bad_input_is_a_clear_error(content, args, message, tmp_path):
    path = tmp_path / "in.txt"
    path.write_text(content, encoding="utf8")
    budget = [] if "--max-steps" in args else ["--max-steps", "1"]
    result = cli("pretrain-chars", str(path), str(tmp_path / "o"), "--config", "canine-tiny", *budget, *args)
    assert result.returncode == 1, result.output
    assert message in result.output and "Traceback" not in result.output


def test_missing_file_and_missing_out(tmp_path):
    result = cli("pretrain-chars", str(tmp_path / "nope.txt"), str(tmp_path / "o"), "--max-steps", "1")
    assert result.returncode == 1 and "not a file" in result.output
    result = cli("pretrain-chars", str(tmp_path / "only-one-path"))
    assert result.returncode == 1 and "OUT" in result.output


def test_non_canine_directory_is_refused(text_file, bert_dir, tmp_path):
    with pytest.raises(ValueError, match="CANINE"):
        pretrain_chars([text_file], tmp_path / "o", tiny(max_steps=1), config=str(bert_dir), progress=False)
    with pytest.raises(PretrainDataError):
        read_texts([text_file.parent], 100)


# ----------------------------------------------------------------------------- distillation
from spacy_entangle.pretraining.data import word_spans  # noqa: E402
from spacy_entangle.pretraining.distill import Teacher, align_words  # noqa: E402

TWEET = "I ❤️ NYC 🗽 http://t.co/AbC12 #tbt @user Reconstructing everything, tonight!!"


def distil(**kw) -> PretrainSettings:
    """Distillation alone (no masked or reconstruction loss): the student reads noisy text."""
    base = dict(mask_rate=0.0, noise_rate=0.3, noisy_weight=0.0, distill_weight=1.0)
    base.update(kw)
    return tiny(**base)


def test_noisy_student_words_map_to_clean_teacher_words():
    """Word i of the attacked text (what the student reads) is word i of the clean text (what
    the teacher reads), with emoji, a URL, a hashtag, a mention and words whose length changed."""
    vocab = CharVocab.build([TWEET], 64)
    for seed in range(5):
        batch = make_batch(
            [TWEET, "short one"],
            vocab,
            numpy.random.default_rng(seed),
            random.Random(seed),
            mask_rate=0.0,
            noise_rate=1.0,
        )
        clean = TWEET.split()
        assert [TWEET[s:e] for s, e in batch.clean_spans[0]] == clean
        noisy = "".join(chr(c) for c in batch.input_ids[0, 1 : 1 + batch.attention_mask[0].sum() - 2])
        noisy_words = noisy.split()
        assert len(noisy_words) == len(clean)
        for k, word in enumerate(noisy_words):  # the characters numbered k spell noisy word k
            chars = "".join(chr(c) for c in batch.input_ids[0][batch.word_ids[0] == k])
            assert chars == word
        assert (batch.word_ids[1][batch.word_ids[1] >= 0] >= len(clean)).all()  # numbered across the batch
        if seed == 0:
            lengths = [(len(a), len(b)) for a, b in zip(clean, noisy_words) if a != b]
            assert any(a != b for a, b in lengths), "no attack changed a word's length"
        assert noisy_words[1] == "❤️" and noisy_words[3] == "🗽"  # too short to attack: kept
    assert batch.word_ids[0, 0] == -1 and (batch.word_ids[0][batch.input_ids[0] == ord(" ")] == -1).all()


def test_teacher_pieces_align_to_words(bert_dir):
    teacher = Teacher(str(bert_dir), [-1])
    spans = word_spans(TWEET)
    enc = teacher.tokenizer(TWEET, return_offsets_mapping=True)
    pieces = align_words(enc["offset_mapping"], spans)
    for (start, end), mine in zip(spans, pieces):
        assert mine, TWEET[start:end]  # every word, emoji and URL included, has a piece
        for p in mine:
            s, e = enc["offset_mapping"][p]
            assert start <= s < e <= end, (TWEET[start:end], TWEET[s:e])
    hashtag = spans[TWEET.split().index("#tbt")]
    assert "".join(TWEET[slice(*enc["offset_mapping"][p])] for p in pieces[spans.index(hashtag)]) == "#tbt"
    targets, found = teacher.word_states([TWEET, "a b"], [spans, word_spans("a b")])
    assert targets.shape == (len(spans) + 2, 1, 32) and found.all()
    teacher.max_length = 6  # words past the teacher's limit are not scored
    _, found = teacher.word_states([TWEET], [spans])
    assert found[:3].all() and not found[-1]


def test_distillation_loss_falls_and_output_plugs_in(text_file, bert_dir, tmp_path):
    out = tmp_path / "distilled"
    result = cli(
        "pretrain-chars",
        str(text_file),
        str(out),
        "--config",
        "canine-tiny",
        "--max-steps",
        "30",
        "--batch-size",
        "16",
        "--lr",
        "3e-3",
        "--warmup-steps",
        "0",
        "--log-every",
        "5",
        "--checkpoint-every",
        "15",
        "--mask-rate",
        "0",
        "--noise-rate",
        "0.3",
        "--noisy-weight",
        "0",
        "--teacher",
        str(bert_dir),
        "--teacher-layers",
        "0,-1",
    )
    assert result.returncode == 0, result.output
    entries = log(out)
    assert all("mlm_loss" not in e and "noisy_loss" not in e for e in entries)  # distillation alone
    assert entries[-1]["distill_loss"] < 0.8 * entries[0]["distill_loss"], entries
    assert "dev_distill_loss" in entries[-1]
    model = AutoModel.from_pretrained(out)
    assert isinstance(model, CanineModel)
    record = model.config.spacy_entangle_pretraining
    assert record["steps"] == 30 and record["stopped_by"] == "max_steps" and record["teacher"] == str(bert_dir)
    assert "distillation" in model.config.spacy_entangle_note
    nlp = build(out, bert_dir, components=("ner",), side="char")
    assert all(numpy.isfinite(h["ner"]) for h in train(nlp, n_steps=2))


def test_distilled_resume_is_exact_and_safe_to_load(text_file, bert_dir, tmp_path):
    straight, split = tmp_path / "straight", tmp_path / "split"
    settings = dict(max_steps=6, decay_steps=6, teacher=str(bert_dir), mask_rate=0.15)
    pretrain_chars([text_file], straight, distil(**settings), config="canine-tiny", progress=False)
    pretrain_chars([text_file], split, distil(**dict(settings, max_steps=3)), config="canine-tiny", progress=False)
    state = torch.load(split / "checkpoint" / "training_state.pt", weights_only=True)
    assert any(k.startswith("distill.") for k in state["heads"])  # the distillation head resumes too
    pretrain_chars([text_file], split, distil(**settings), config="canine-tiny", resume=True, progress=False)
    assert same(weights(straight), weights(split))
    assert [e["distill_loss"] for e in log(split)] == [e["distill_loss"] for e in log(straight)]
    with pytest.raises(ValueError, match="--teacher-layers"):
        pretrain_chars(
            [text_file], split, distil(**dict(settings, max_steps=8, teacher_layers=[0])), resume=True, progress=False
        )


class _Payload:
    """Unpickling this runs code: what a tampered checkpoint could do under weights_only=False."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_resume_never_unpickles_code(text_file, tmp_path):
    """The training state is read with torch.load(weights_only=True)."""
    out = tmp_path / "o"
    pretrain_chars([text_file], out, tiny(max_steps=2), config="canine-tiny", progress=False)
    path = out / "checkpoint" / "training_state.pt"
    state = torch.load(path, weights_only=True)  # what the loop writes is plain data
    marker = tmp_path / "code-ran"
    torch.save({**state, "extra": _Payload(marker)}, path)
    with pytest.raises(ValueError, match="weights_only"):
        pretrain_chars([text_file], out, tiny(max_steps=4), config="canine-tiny", resume=True, progress=False)
    assert not marker.exists()


def test_time_cap_is_loud_and_recorded(text_file, tmp_path):
    out = tmp_path / "capped"
    result = cli(
        "pretrain-chars",
        str(text_file),
        str(out),
        "--config",
        "canine-tiny",
        "--max-steps",
        "100000",
        "--max-minutes",
        "0.0001",
        "--batch-size",
        "4",
    )
    assert result.returncode == 0, result.output
    assert "STOPPED BY THE TIME CAP" in result.output
    record = AutoModel.from_pretrained(out).config.spacy_entangle_pretraining
    assert record["stopped_by"] == "max_minutes" and 0 < record["steps"] < record["planned_steps"] == 100000
    assert "Stopped by the time cap" in (out / "README.md").read_text(encoding="utf8")


@pytest.mark.parametrize(
    "args,message",
    [
        (["--teacher", "/no/such/teacher"], "not a loadable"),
        (["--teacher", "BERT", "--teacher-layers", "x"], "comma-separated"),
        (["--teacher", "BERT", "--teacher-layers", "5"], "hidden states 0..1"),
        (["--teacher", "CANINE"], "CANINE model"),
        (["--mask-rate", "0", "--noisy-weight", "0", "--noise-rate", "0.2"], "nothing to learn"),
        (["--teacher", "BERT", "--distill-weight", "-1"], "distill_weight"),
    ],
)
def test_bad_teacher_is_a_clear_error(args, message, text_file, bert_dir, canine_dir, tmp_path):
    args = [{"BERT": str(bert_dir), "CANINE": str(canine_dir)}.get(a, a) for a in args]
    result = cli(
        "pretrain-chars", str(text_file), str(tmp_path / "o"), "--config", "canine-tiny", "--max-steps", "1", *args
    )
    assert result.returncode == 1, result.output
    assert message in result.output and "Traceback" not in result.output


def test_distillation_targets_without_word_ids_are_a_clear_error():
    model = CharPretrainer(new_encoder("canine-tiny", 0), 8, distill=(16, 1))
    ids = torch.tensor([[0xE000, ord("a"), ord("b"), 0xE001]])
    unscored = torch.full_like(ids, IGNORE)
    with pytest.raises(ValueError, match="word_ids and word_found"):
        model(ids, torch.ones_like(ids), unscored, unscored, word_targets=torch.zeros((1, 1, 16)))


# ----------------------------------------------------------------------------- grown (--init-from)
def grow(teacher, **kw) -> PretrainSettings:
    base = dict(
        max_steps=8,
        stage_a_steps=4,
        batch_size=8,
        lr=3e-3,
        warmup_steps=0,
        log_every=1,
        checkpoint_every=100,
        noise_rate=0.3,
        init_from=str(teacher),
        char_width=32,
        type_batch=64,
        dev_fraction=0.05,
    )
    base.update(kw)
    return PretrainSettings(**base)


def test_grown_front_end_loss_falls_and_copied_layers_stay_the_teachers(text_file, bert_dir, tmp_path):
    out = tmp_path / "grown"
    entry = pretrain_chars([text_file], out, grow(bert_dir, max_steps=14, stage_a_steps=10), progress=False)
    entries = log(out)
    type_losses = [e["type_loss"] for e in entries if "type_loss" in e]
    assert len(type_losses) == 10 and type_losses[-1] < 0.8 * type_losses[0]
    assert [e["step"] for e in entries if "last_loss" in e] == [11, 12, 13, 14]  # then stage B
    assert entry["dev_clean_last_cos"] > 0 and "dev_noisy_mid_cos" in entry
    grown = AutoModel.from_pretrained(out)
    assert grown.config.model_type == "entangle-grown"
    teacher = AutoModel.from_pretrained(bert_dir).state_dict()
    assert all(torch.equal(v, teacher[k]) for k, v in grown.words.state_dict().items() if k.startswith("encoder."))
    record = grown.config.spacy_entangle_pretraining
    assert record["steps"] == 14 and record["teacher"] == str(bert_dir)
    nlp = build(out, bert_dir, components=("ner",), side="char")
    assert all(numpy.isfinite(h["ner"]) for h in train(nlp, n_steps=2))


def test_grown_resume_continues_exactly_across_the_stages(text_file, bert_dir, tmp_path):
    straight, split = tmp_path / "straight", tmp_path / "split"
    pretrain_chars([text_file], straight, grow(bert_dir), progress=False)
    pretrain_chars([text_file], split, grow(bert_dir, max_steps=2, decay_steps=8), progress=False)
    pretrain_chars([text_file], split, grow(bert_dir, max_steps=6, decay_steps=8), resume=True, progress=False)
    pretrain_chars([text_file], split, grow(bert_dir), resume=True, progress=False)
    assert same(weights(straight), weights(split))
    for key in ("type_loss", "last_loss"):
        assert [e.get(key) for e in log(split)] == [e.get(key) for e in log(straight)]
    with pytest.raises(ValueError, match="--char-width"):
        pretrain_chars([text_file], split, grow(bert_dir, max_steps=9, char_width=64), resume=True, progress=False)


def test_grown_resume_with_late_unfreezing_continues_exactly(text_file, bert_dir, tmp_path):
    """The top layers unfreeze at --unfreeze-from of the decay horizon (as stage A ends), so
    a run resumed with a growing --max-steps unfreezes where an uninterrupted one does; a
    changed --unfreeze-top (other optimizer groups) is refused by name."""
    straight, split = tmp_path / "straight", tmp_path / "split"
    plan = dict(decay_steps=8, stage_a_steps=2, unfreeze_top=1, unfreeze_from=0.75)  # unfreezes at step 6
    pretrain_chars([text_file], straight, grow(bert_dir, **plan), progress=False)
    with pytest.warns(UserWarning, match="unfreeze at step 6 .* not before --max-steps 5, so they stay frozen"):
        pretrain_chars([text_file], split, grow(bert_dir, **{**plan, "max_steps": 5}), progress=False)
    with pytest.raises(ValueError, match="--unfreeze-top differs from the checkpoint's"):
        pretrain_chars([text_file], split, grow(bert_dir, **{**plan, "unfreeze_top": 0}), resume=True, progress=False)
    pretrain_chars([text_file], split, grow(bert_dir, **plan), resume=True, progress=False)
    assert same(weights(straight), weights(split))
    teacher = AutoModel.from_pretrained(bert_dir).state_dict()
    name = "encoder.layer.0.output.dense.weight"
    assert not torch.equal(AutoModel.from_pretrained(split).words.state_dict()[name], teacher[name])


@pytest.mark.parametrize("design", ["word", "canine"])
def test_grown_rows_fit_the_copied_position_table(design, bert_dir, tmp_path):
    """Lines where every character is a word (CJK, punctuation) longer than the copied
    position table (512) are cut to rows it holds, as the pipeline's windows are: training
    and the dev cosines run (they crashed: "expanded size of the tensor (514)")."""
    text = tmp_path / "long.txt"
    text.write_text("\n".join(sample_lines()[:40] + ["東京" * 300, "!?" * 300, "a," * 300]) + "\n", encoding="utf8")
    settings = grow(bert_dir, max_steps=2, stage_a_steps=None, max_chars=600, batch_size=64, grow_design=design)
    out = tmp_path / design
    entry = pretrain_chars([text], out, settings, progress=False)
    assert entry["step"] == 2 and numpy.isfinite(entry["last_loss"])
    from spacy_entangle.pretraining.distill import Teacher
    from spacy_entangle.pretraining.grow import doc_chars, make_pretrainer, teacher_layers, word_cosines

    config = AutoModel.from_pretrained(bert_dir).config
    assert doc_chars(settings, config) == (510 if design == "word" else 600)
    long_rows, _ = read_texts([text], doc_chars(settings, config))
    teacher = Teacher(str(bert_dir))
    teacher.layers = teacher_layers(1, 1)
    student = make_pretrainer(AutoModel.from_pretrained(out), teacher.layers[0])
    cosines = word_cosines(student, teacher, [row for row in long_rows if len(row) > 500], 0.3, ["swap"])
    assert cosines["words"] > 0 and -1 <= cosines["last_cos"] <= 1


def test_grown_unfreezes_the_top_layers_late(text_file, bert_dir, tmp_path):
    out = tmp_path / "unfrozen"
    pretrain_chars(
        [text_file],
        out,
        grow(bert_dir, max_steps=4, stage_a_steps=2, unfreeze_top=1, unfreeze_from=0.5),
        progress=False,
    )
    teacher = AutoModel.from_pretrained(bert_dir).state_dict()
    words = AutoModel.from_pretrained(out).words.state_dict()
    assert not torch.equal(words["encoder.layer.0.output.dense.weight"], teacher["encoder.layer.0.output.dense.weight"])
    assert torch.equal(words["embeddings.position_embeddings.weight"], teacher["embeddings.position_embeddings.weight"])
    objective = AutoModel.from_pretrained(out).config.spacy_entangle_pretraining["objectives"][0]
    assert "top 1 train from step 2" in objective


def test_grown_canine_distils_with_its_copied_stack_frozen(text_file, bert_dir, tmp_path):
    """--design canine (design (a)): stage B only; the distillation loss falls, the copied
    deep stack stays the teacher's, and the result is a plain CANINE that plugs in."""
    out = tmp_path / "grown-canine"
    entry = pretrain_chars(
        [text_file], out, grow(bert_dir, max_steps=10, stage_a_steps=None, grow_design="canine"), progress=False
    )
    entries = log(out)
    assert all("type_loss" not in e for e in entries) and [e["step"] for e in entries] == list(range(1, 11))
    losses = [e["last_loss"] + e["mid_loss"] for e in entries]
    assert losses[-1] < 0.9 * losses[0]
    assert entry["dev_clean_mid_cos"] > 0 and "dev_noisy_last_cos" in entry
    grown = AutoModel.from_pretrained(out)
    assert grown.config.model_type == "canine" and grown.config.grown_from == str(bert_dir)
    teacher = AutoModel.from_pretrained(bert_dir).encoder.layer.state_dict()
    assert same(grown.encoder.layer.state_dict(), teacher)
    assert "a CANINE whose deep stack is grown from" in grown.config.spacy_entangle_pretraining["objectives"][0]
    nlp = build(out, bert_dir, components=("ner",), side="char")
    assert all(numpy.isfinite(h["ner"]) for h in train(nlp, n_steps=2))


@pytest.mark.parametrize(
    "args,message",
    [
        (["--design", "canine", "--stage-a-steps", "3"], "has no stage A"),
        (["--design", "molecules"], "--design must be one of word, canine"),
        (["--k", "5"], "--k must be 1..1"),
        (["--teacher", "CANINE"], "leave --teacher out"),
        (["--stage-a-steps", "-1"], "--stage-a-steps must be"),
        (["--max-steps", "0", "--max-minutes", "1"], "needs --max-steps"),
        (["--init-from", "/no/such/encoder"], "not a loadable"),
        (["--unfreeze-top", "2"], "--unfreeze-top 2 is more than the 1 copied layers"),
        (["--design", "canine", "--unfreeze-top", "2"], "--unfreeze-top 2 is more than the 1 copied layers"),
    ],
)
def test_grown_bad_settings_are_clear_errors(args, message, text_file, bert_dir, canine_dir, tmp_path):
    args = [{"BERT": str(bert_dir), "CANINE": str(canine_dir)}.get(a, a) for a in args]
    base = ["--init-from", str(bert_dir), "--max-steps", "2"]
    result = cli("pretrain-chars", str(text_file), str(tmp_path / "o"), *base, *args)
    assert result.returncode == 1, result.output
    assert message in result.output and "Traceback" not in result.output


def test_grown_word_types_sampled_by_sqrt_frequency_with_mean_piece_targets(bert_dir):
    from spacy_entangle.pretraining.distill import Teacher
    from spacy_entangle.pretraining.grow import WordTypes, encode_spellings, input_targets, split_words

    assert split_words(["Hi, @you!", ""], 24) == [["Hi", ",", "@", "you", "!"], []]
    teacher = Teacher(str(bert_dir))
    none, no_targets = input_targets([], teacher)  # no word types (all seen before): empty, no crash
    assert none == [] and no_targets.shape == (0, 32) and encode_spellings([], 24)[0].shape == (0, 1)
    types = WordTypes(["the the the the cat", "the the the the unbelievably"], teacher, 24)
    probs = dict(zip(types.types, types.probs))
    assert probs["the"] / probs["cat"] == pytest.approx(8**0.5)
    pieces = teacher.tokenizer("unbelievably", add_special_tokens=False)["input_ids"]
    table = teacher.model.get_input_embeddings().weight.detach()
    assert len(pieces) > 1
    assert torch.allclose(types.targets[types.types.index("unbelievably")], table[pieces].mean(0), atol=1e-6)


def test_the_options_are_the_settings_fields_with_their_defaults():
    """`pretrain-chars`' setting options come from PretrainSettings (names, help, defaults), not
    a restated list: each field made with `option` is offered once, and an option given on the
    command line reaches the setting of that name (--design and --k included)."""
    from dataclasses import MISSING, fields

    import typer.main

    from spacy_entangle.cli import app

    command = typer.main.get_command(app).commands["pretrain-chars"]  # type: ignore[attr-defined]
    offered = {param.name: param for param in command.params}
    settings = [f for f in fields(PretrainSettings) if "help" in f.metadata]
    assert len(settings) >= 25
    assert {f.name for f in settings} <= set(offered)
    assert "weight_decay" not in offered and "dev_fraction" not in offered  # config-file settings only
    for f in settings:
        param = offered[f.name]
        assert param.default is None, f.name  # not given: the setting keeps its own default
        assert f.metadata["help"] in param.help
        if f.default not in (None, MISSING) and f.metadata["shown"] is None:
            assert f"(default: {f.default})" in param.help, f.name
    assert "--design" in offered["grow_design"].opts and "--k" in offered["grow_k"].opts
    assert "-s" in offered["seed"].opts
