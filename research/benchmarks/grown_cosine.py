"""The go / no-go figure of a grown char encoder: mean cosine, over the words of
held-out tweets, between the grown encoder's word states and its teacher's (the subword
encoder it grew from) on clean text, and with the student reading the same tweets attacked
(CharBERT's attacks at --noise; the teacher always reads them clean).

The held-out tweets are the pretraining run's own dev split (recomputed from the settings
in OUT/checkpoint/state.json, so never trained on), at most --n of them. Reference rows:
the encoder as grown, before any training (same k, width and seed), and the teacher itself
reading the attacked text (how far the subword encoder's own states move under attack).
Word state: the mean over the word's characters of the middle copied layer's word state
("mid") and of the per-character output ("last"); the teacher's: the mean over its pieces.

    OMP_NUM_THREADS=1 python research/benchmarks/grown_cosine.py project/backbones/grown \\
        ../shared/data/tweets_unlabeled/tweets.txt --n 500 --noise 0.5
"""

import argparse
import json
import os
import time
from pathlib import Path

import torch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("encoder", type=Path, help="a pretrain-chars --init-from output directory")
    parser.add_argument("text", type=Path, nargs="+", help="the text files the run was trained on")
    parser.add_argument("--n", type=int, default=500, help="held-out tweets scored (at most the dev split)")
    parser.add_argument("--noise", type=float, default=0.5, help="attack rate of the noisy rows")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--no-reference", action="store_true", help="skip the as-grown and teacher rows")
    parser.add_argument("--output", type=Path, default=None, help="also write the figures as JSON")
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS") or 0) or torch.get_num_threads())

    from transformers import AutoConfig, AutoModel

    from spacy_entangle.modeling.char_designs import get_design
    from spacy_entangle.noise.attacks import ATTACKS
    from spacy_entangle.pretraining.checkpoint import CHECKPOINT
    from spacy_entangle.pretraining.data import read_texts, split_dev
    from spacy_entangle.pretraining.distill import Teacher
    from spacy_entangle.pretraining.grow import doc_chars, make_pretrainer, new_grown, teacher_layers, word_cosines
    from spacy_entangle.pretraining.settings import PretrainSettings

    state = json.loads((args.encoder / CHECKPOINT / "state.json").read_text(encoding="utf8"))
    settings = PretrainSettings(**state["settings"])
    # the run's own rows (cut to what the copied position table holds), so its own dev split
    docs, _ = read_texts(args.text, doc_chars(settings, AutoConfig.from_pretrained(settings.init_from)))
    train, dev = split_dev(docs, settings.dev_fraction, settings.seed)
    dev = dev[: args.n]
    grown = AutoModel.from_pretrained(args.encoder)
    k = int(grown.config.num_hidden_layers)
    teacher = Teacher(settings.init_from, [-1])
    teacher.layers = teacher_layers(int(teacher.model.config.num_hidden_layers), k)
    models = {"grown (trained)": grown}
    if not args.no_reference:
        models["as grown (step 0)"] = new_grown(
            settings.init_from, settings.grow_k, settings.char_width, settings.seed, settings.grow_design
        )
    rows = {}
    for name, model in models.items():
        student = make_pretrainer(model, mid_layer=teacher.layers[0])
        for kind, rate in (("clean", 0.0), (f"noise {args.noise}", args.noise)):
            start = time.perf_counter()
            rows[(name, kind)] = word_cosines(student, teacher, dev, rate, ATTACKS, args.batch_size)
            rows[(name, kind)]["s"] = round(time.perf_counter() - start, 1)
    if not args.no_reference:
        student = make_pretrainer(grown, mid_layer=teacher.layers[0])
        rows[("teacher reads attacked", f"noise {args.noise}")] = word_cosines(
            student, teacher, dev, args.noise, ATTACKS, args.batch_size, teacher_reads_noise=True
        )
    # stage A's fit: designs with a word-level front end only (a grown CANINE has none)
    has_front_end = get_design(settings.grow_design).stage_a
    types = unseen_type_cosines(grown, teacher, train, dev, args.noise) if has_front_end else None
    print(
        f"held-out tweets: {len(dev)}; teacher {settings.init_from}, layers {teacher.layers} (mid, last); "
        f"threads {torch.get_num_threads()}"
    )
    print(f"| model | text | cos mid (layer {teacher.layers[0]}) | cos last (layer {teacher.layers[1]}) | words |")
    print("|---|---|---:|---:|---:|")
    for (name, kind), figures in rows.items():
        print(f"| {name} | {kind} | {figures['mid_cos']:.3f} | {figures['last_cos']:.3f} | {figures['words']} |")
    if types is not None:
        print(
            f"word types of the held-out tweets never seen in training ({types['types']}): front-end cosine to "
            f"their input-level targets {types['clean_cos']:.3f} clean, {types['noisy_cos']:.3f} attacked at {args.noise}"
        )
    if args.output:
        figures = [{"model": n, "text": t, **f} for (n, t), f in rows.items()] + [{"unseen_types": types}]
        args.output.write_text(json.dumps(figures, indent=2), encoding="utf8")


@torch.no_grad()
def unseen_type_cosines(grown, teacher, train, dev, noise: float):
    """Stage A's fit where it matters: the front end's cosine to the input-level target
    (mean piece embedding) of word types that occur in the held-out tweets only."""
    import random

    from spacy_entangle.noise.attacks import ATTACKS
    from spacy_entangle.pretraining.grow import attack_words, encode_spellings, input_targets, split_words

    width = grown.config.max_word_chars
    seen = {w for words in split_words(train, width) for w in words}
    unseen = sorted({w for words in split_words(dev, width) for w in words} - seen)
    types, targets = input_targets(unseen, teacher)
    grown.eval()
    out = {"types": len(types)}
    if not types:  # every held-out type was seen in training
        return {**out, "clean_cos": float("nan"), "noisy_cos": float("nan")}
    for name, rate in (("clean", 0.0), ("noisy", noise)):
        spellings = attack_words(types, rate, ATTACKS, random.Random(12345))
        ids, mask = encode_spellings(spellings, width)
        cos = torch.nn.functional.cosine_similarity(grown.front_end(ids, mask), targets, dim=-1)
        out[f"{name}_cos"] = round(float(cos.mean()), 4) if len(types) else float("nan")
    return out


if __name__ == "__main__":
    main()
