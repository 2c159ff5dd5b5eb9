"""The recipe of every shipped config (configs/NAME.cfg): its base, its task blocks and its
own text (the header comment, then the values in which it differs from them). After an edit
here or in parts/: `python -m spacy_entangle.configs --write`."""

from typing import Dict

from .compose import Recipe

SHIPPED: Dict[str, Recipe] = {
    "ner_cpu.cfg": Recipe(
        "entangle_cpu",
        ("ner",),
        """\
# WNUT-17 NER, CPU preset: the recipe of the shipped en_entangle_wnut (project/project.yml's
# ship_variant, `both-mild`): pretrained MiniLM-L6 (subword side) + the char encoder grown
# from it (backbones/grown, see [paths]: no pretrained character encoder is reachable offline),
# NER on both sides, trained with a mild char-noise augmenter (see [corpora.train]) for the
# budget read off its learning curve (total_steps). Train from project/, where `backbones`
# and `pretrain-grown` put the two encoders. The comparison's other char encoders go in with
# --paths.char_backbone (e.g. backbones/canine-masked from `pretrain-chars`), the other sides
# with --components.ner.model.tok2vec.side subword|char, no augmenter with
# --corpora.train.augmenter null.

""",
    ),
    "ner_paper.cfg": Recipe(
        "entangle_paper",
        ("ner",),
        """\
# WNUT-17 NER. Paper preset (GPU + internet): roberta-base + google/canine-s, m = 2 co-attention
# modules, Adam 2e-5 with a linear schedule, up to 50 epochs; spaCy keeps the best
# dev checkpoint as model-best. Train with --gpu-id 0.
""",
    ),
    "tagger_cpu.cfg": Recipe(
        "entangle_cpu",
        ("tagger",),
        """\
# Tweebank v2 UPOS tagging, CPU preset: pretrained MiniLM-L6 (subword side) + a small
# random-initialised CANINE (char side, `backbones/canine-random`: what this task's project
# trains on, made by its `backbones` command, python -m spacy_entangle init-backbone ...).
# A char encoder pretrained by `pretrain-chars` (masked characters, or distilled from the
# MiniLM; the WNUT project's backbones/canine-masked) goes in with --paths.char_backbone.

[paths]
# this task's project makes it (`backbones`); not the CPU base's backbones/grown
char_backbone = "backbones/canine-random"
""",
    ),
    "tagger_paper.cfg": Recipe(
        "entangle_paper",
        ("tagger",),
        """\
# Tweebank v2 UPOS. Paper preset (GPU + internet): roberta-base + google/canine-s, m = 2 co-attention
# modules, Adam 2e-5 with a linear schedule, up to 50 epochs; spaCy keeps the best
# dev checkpoint as model-best. Train with --gpu-id 0.
""",
    ),
    "textcat_cpu.cfg": Recipe(
        "entangle_cpu",
        ("textcat",),
        """\
# TweetEval emotion (4 exclusive labels), CPU preset: the recipe of project/tweeteval
# (`mean-both-mild`), what `init-config --pipeline textcat` writes: pretrained MiniLM-L6
# (subword side) + the char encoder grown from it (backbones/grown, from the WNUT-17 project's
# `pretrain-grown`: no pretrained character encoder is reachable offline), spaCy's mean-pooling
# classifier over both sides of the listener, trained with a mild char-noise augmenter (see
# [corpora.train]). The paper's first-state head on the same preset: textcat_cls_cpu.cfg.
""",
    ),
    "textcat_cls_cpu.cfg": Recipe(
        "entangle_cpu",
        ("tasks/textcat",),
        """\
# TweetEval emotion (4 exclusive labels), CPU preset with the PAPER'S HEAD (TextCatCls.v1: the
# first subword state -> Linear -> tanh -> Linear; side = "char" for the first character
# state), the TweetEval project's paper-parity rows: pretrained MiniLM-L6 (subword side) + a
# small random-initialised CANINE (char side, `backbones/canine-random`: made by that project's
# `backbones` command). The CPU preset's own textcat is textcat_cpu.cfg (mean pooling).

[paths]
# this task's project makes it (`backbones`); not the CPU base's backbones/grown
char_backbone = "backbones/canine-random"
""",
    ),
    "textcat_paper.cfg": Recipe(
        "entangle_paper",
        ("textcat",),
        """\
# TweetEval emotion. Paper preset (GPU + internet): roberta-base + google/canine-s, m = 2 co-attention
# modules, Adam 2e-5 with a linear schedule, up to 50 epochs; spaCy keeps the best
# dev checkpoint as model-best. Train with --gpu-id 0.
""",
    ),
    "spancat_cpu.cfg": Recipe(
        "entangle_cpu",
        ("spancat",),
        """\
# WNUT-17 entities with CONFIDENCE SCORES, CPU preset: the same entangle component as
# ner_cpu.cfg (MiniLM-L6 + the char encoder grown from it, backbones/grown, m = 1), with spaCy's
# `spancat` listening to the subword side instead of the transition-based `ner`: every
# n-gram of 1-5 tokens is scored per label (sigmoid), spans above `threshold` go to
# doc.spans["sc"] with their probability in doc.spans["sc"].attrs["scores"].
# The corpus needs the entities as doc.spans["sc"]: `python -m spacy_entangle convert ...
# --spans-key sc` (the project's `corpus` command writes them).
""",
    ),
    "char_tagger_cpu.cfg": Recipe(
        "entangle_cpu",
        ("char_tagger",),
        """\
# Character-level labelling (char_tagger), CPU preset: the language of every character
# of a post (intraword code-switching, Spanish-Wixarika; project/codeswitch). Pretrained
# MiniLM-L6 (subword side) + a small random-initialised CANINE (char side; a `pretrain-chars`
# encoder goes in with --paths.char_backbone), one co-attention module per side; the char_tagger reads the
# character side (subword-aware character states), one softmax per character.
# Corpora: `python -m spacy_entangle convert-codeswitch` (doc._.char_tags in the DocBins).
# The char-only baseline with the same head: char_tagger_charonly_cpu.cfg.

[paths]
# this task's project makes it (`backbones`); not the CPU base's backbones/grown
char_backbone = "backbones/canine-random"

[nlp]
lang = "es"

[training]
eval_frequency = 100

[training.optimizer.learn_rate]
total_steps = 1000
""",
    ),
    "char_tagger_charonly_cpu.cfg": Recipe(
        "entangle_cpu",
        ("char_tagger",),
        """\
# Char-only BASELINE for char_tagger_cpu.cfg: the same character backbone ALONE (the small
# random-initialised CANINE), the same char_tagger head, corpora, batches, optimizer
# and step budget. n_coattention = 0 and a char-only listener: the entangle component then
# runs CANINE only (the subword encoder and the co-attention never run; see
# EntangleEncoder.forward). hidden_width = the CANINE width (256): no projection layer.
# The subword backbone is still loaded (its tokenizer sizes the windows) and saved, unused.

[paths]
# this task's project makes it (`backbones`); not the CPU base's backbones/grown
char_backbone = "backbones/canine-random"

[nlp]
lang = "es"

[training]
eval_frequency = 100

[training.optimizer.learn_rate]
total_steps = 1000

[components.entangle.model]
n_coattention = 0
hidden_width = 256
n_heads = 4
ffn_width = 512
""",
    ),
    "baseline_ner_cpu.cfg": Recipe(
        "baseline_cpu",
        ("baseline/ner",),
        """\
# WNUT-17 NER baseline, CPU preset: spacy-transformers `transformer` + `ner` on the same
# subword backbone as configs/ner_cpu.cfg (the pretrained MiniLM-L6 exported by the
# project's `backbones` command), with the same NER head, batcher and step budget, so the
# project's `compare` command sets the entanglement model against a plain fine-tuned
# subword encoder. Learning rate 2e-4, not the usual 5e-5: in these few hundred steps 5e-5
# under-trains (WNUT-17 dev after 600 steps: 51.7 F1 at 5e-5, 52.9 at 1e-4, 53.5 at 2e-4).
#
#   python -m spacy train configs/baseline_ner_cpu.cfg --paths.train corpus/train.spacy \\
#       --paths.dev corpus/dev.spacy --paths.subword_backbone backbones/minilm \\
#       --training.optimizer.learn_rate.total_steps 1200 --training.eval_frequency 200
""",
    ),
    "baseline_ner_paper.cfg": Recipe(
        "baseline_paper",
        ("baseline/ner",),
        """\
# WNUT-17 NER baseline, paper preset (GPU + internet): spacy-transformers `transformer` + `ner`
# on roberta-base from the Hugging Face hub, the same NER head and batches as
# configs/ner_paper.cfg, Adam 2e-5 with a linear schedule, up to 50 epochs; spaCy keeps the
# best dev checkpoint as model-best. Train with --gpu-id 0 (needs cupy, e.g. spacy[cuda12x]).
""",
    ),
    "baseline_tagger_cpu.cfg": Recipe(
        "baseline_cpu",
        ("baseline/tagger",),
        """\
# Tweebank v2 UPOS tagging baseline, CPU preset: spacy-transformers `transformer` + `tagger`
# on the same subword backbone as configs/tagger_cpu.cfg (the pretrained MiniLM-L6 exported
# by the project's `backbones` command), with the same tagger head, batcher and step budget,
# so project/tweebank's `compare` sets the entanglement model against a plain fine-tuned
# subword encoder. Learning rate 2e-4, not the usual 5e-5, which under-trains in 250 steps
# (Tweebank dev UPOS: 79.9 at 5e-5, 91.9 at 2e-4). spaCy's tagger
# predicts token.tag_: convert with `convert-conllu --tag upos` (UPOS in tag_).
#
#   python -m spacy train configs/baseline_tagger_cpu.cfg --paths.train corpus/train.spacy \\
#       --paths.dev corpus/dev.spacy --paths.subword_backbone backbones/minilm
""",
    ),
    "baseline_tagger_paper.cfg": Recipe(
        "baseline_paper",
        ("baseline/tagger",),
        """\
# Tweebank v2 UPOS tagging baseline, paper preset (GPU + internet): spacy-transformers
# `transformer` + `tagger` on roberta-base from the Hugging Face hub, the same tagger head and
# batches as configs/tagger_paper.cfg, Adam 2e-5 with a linear schedule, up to 50 epochs;
# spaCy keeps the best dev checkpoint as model-best. Train with --gpu-id 0. Corpus:
# `convert-conllu --tag upos` (spaCy's tagger predicts tag_).
""",
    ),
    "baseline_textcat_cpu.cfg": Recipe(
        "baseline_cpu",
        ("baseline/textcat",),
        """\
# TweetEval emotion (4 exclusive labels) baseline, CPU preset: spacy-transformers
# `transformer` + `textcat` (spacy.TextCatReduce.v1, mean pooling) on the same subword
# backbone as configs/textcat_cpu.cfg (the pretrained MiniLM-L6 exported by the project's
# `backbones` command), with the same batcher and step budget, so project/tweeteval's
# `compare` sets the entanglement model against a plain fine-tuned subword encoder.
# Learning rate 2e-4, not the usual 5e-5, which under-trains in 200 steps (TweetEval
# emotion val macro-F1: 59.8 at 5e-5, 66.5 at 2e-4).
#
#   python -m spacy train configs/baseline_textcat_cpu.cfg --paths.train corpus/train.spacy \\
#       --paths.dev corpus/dev.spacy --paths.subword_backbone backbones/minilm
""",
    ),
    "baseline_textcat_paper.cfg": Recipe(
        "baseline_paper",
        ("baseline/textcat",),
        """\
# TweetEval emotion baseline, paper preset (GPU + internet): spacy-transformers
# `transformer` + `textcat` (spacy.TextCatReduce.v1, mean pooling) on roberta-base from the
# Hugging Face hub, the same batches as configs/textcat_paper.cfg, Adam 2e-5 with a linear
# schedule, up to 50 epochs; spaCy keeps the best dev checkpoint as model-best.
# Train with --gpu-id 0.
""",
    ),
}
