"""The speed benchmarks' data and pipelines: the sentences timed (read with the converters'
CoNLL reader or from a .spacy corpus), docs and examples made from them, and the pipelines
timed (the CPU preset built from its config, a trained pipeline once per inference mode)."""

from pathlib import Path
from typing import Any, Dict, Iterator, List, Sequence, Tuple

import spacy
from spacy.language import Language
from spacy.tokens import Doc, DocBin
from spacy.training import Example
from spacy.util import load_config, load_model_from_config

import spacy_entangle  # noqa: F401  (registers the factories and architectures)
from spacy_entangle.converters.conll_ner import read_conll as read_conll_file
from spacy_entangle.modeling.inference import INFERENCE_MODES

REPO = Path(__file__).resolve().parents[2]  # research/benchmarks/ -> the checkout
MODES = INFERENCE_MODES  # the `entangle` component's inference modes, timed side by side
BASELINE = "spacy-transformers"
# (words, spaces) of one doc, and (words, BIO tags) of one sentence
Text = Tuple[List[str], List[bool]]
Sentence = Tuple[List[str], List[str]]


# --------------------------------------------------------------------------- sentences
def read_conll(path: Path, limit: int = 0) -> List[Sentence]:
    """(words, BIO tags) per sentence of a CoNLL file, read as `convert` reads it (an
    orphan I- tag is read as B-, conlleval's reading); limit 0 = all."""
    sentences, _, _ = read_conll_file(path, repair_iob=True)
    if not sentences:
        raise ValueError(f"--data {path}: no sentences (expected WORD<TAB>BIO-TAG lines)")
    sents = [(s.words, s.tags) for s in sentences]
    return sents[:limit] if limit else sents


def read_sentences(path: Path, limit: int = 0) -> List[Sentence]:
    """(words, BIO tags) per sentence of a CoNLL file or a .spacy corpus; limit 0 = all."""
    if path.suffix != ".spacy":
        return read_conll(path, limit)
    from spacy.training import biluo_to_iob
    from spacy.training.iob_utils import doc_to_biluo_tags

    docs = [doc for doc in DocBin().from_disk(path).get_docs(spacy.blank("xx").vocab) if len(doc)]
    if not docs:
        raise ValueError(f"--data {path}: no docs with words")
    docs = docs[:limit] if limit else docs
    return [([t.text for t in doc], biluo_to_iob(doc_to_biluo_tags(doc, missing="O"))) for doc in docs]


def texts_of(sents: Sequence[Sentence]) -> List[Text]:
    return [(words, [True] * len(words)) for words, _ in sents]


def long_texts(sents: Sequence[Sentence], length: int, budget: int) -> List[Text]:
    """Docs of about ``length`` characters, dev sentences joined (cycling through
    them), enough docs for ``budget`` characters in all (at least one)."""
    out: List[Text] = []
    pool = _cycle(sents)
    for _ in range(max(1, round(budget / length))):
        words: List[str] = []
        chars = 0
        while chars < length:
            sent = next(pool)
            words.extend(sent)
            chars += sum(len(w) + 1 for w in sent)
        out.append((words, [True] * len(words)))
    return out


def _cycle(sents: Sequence[Sentence]) -> Iterator[List[str]]:
    while True:
        for words, _ in sents:
            yield words


def n_words(texts: Sequence[Text]) -> int:
    return sum(len(w) for w, _ in texts)


def n_chars(texts: Sequence[Text]) -> int:
    return sum(len(w) + int(s) for words, spaces in texts for w, s in zip(words, spaces))


def make_docs(nlp: Language, texts: Sequence[Text]) -> List[Doc]:
    return [Doc(nlp.vocab, words=w, spaces=s) for w, s in texts]


def ner_examples(nlp: Language, sents: Sequence[Sentence]) -> List[Example]:
    """Examples with the sentences' entities: initialize needs the NER labels."""
    return [Example(Doc(nlp.vocab, words=w), Doc(nlp.vocab, words=w, ents=tags)) for w, tags in sents]


def dev_examples(nlp: Language, path: Path) -> List[Example]:
    """The gold docs of a .spacy file, each with an unannotated copy to predict."""
    gold = DocBin().from_disk(path).get_docs(nlp.vocab)
    return [
        Example(Doc(nlp.vocab, words=[t.text for t in d], spaces=[bool(t.whitespace_) for t in d]), d) for d in gold
    ]


# --------------------------------------------------------------------------- pipelines
def cpu_backbones(char: Path, subword: Path, tmp: Path) -> Tuple[Path, Path]:
    """The CPU preset's backbones: the given dirs, or made offline (project.yml's vars)."""
    from spacy_entangle.backbone_dirs import export_minilm, make_random_canine

    char = char or make_random_canine(tmp / "canine-random", layers=2, width=256, heads=4, seed=0)
    subword = subword or export_minilm(tmp / "minilm")
    return Path(char), Path(subword)


def pipeline_from_config(path: Path, overrides: Dict[str, Any], sents: Sequence[Sentence]) -> Language:
    """A pipeline built from a training config (its model settings as they are),
    initialized on the sentences (labels only: the heads stay untrained)."""
    config = load_config(path, overrides=overrides, interpolate=True)
    nlp = load_model_from_config(config, auto_fill=True, validate=True)
    nlp.initialize(lambda: ner_examples(nlp, sents))
    return nlp


def entangle_name(model_dir: Path) -> str:
    """The name of the pipeline's `entangle` component (set per inference mode)."""
    if not (model_dir / "config.cfg").is_file():
        raise ValueError(f"--model {model_dir} is not a spaCy pipeline directory (no config.cfg)")
    config = load_config(model_dir / "config.cfg", interpolate=False)
    for name, component in config["components"].items():
        if component.get("factory") == "entangle":
            return name
    raise ValueError(f"{model_dir} has no `entangle` component (components: {', '.join(config['components'])})")


def load_modes(model_dir: Path, batch_size: int) -> Tuple[Dict[str, Language], Dict[str, str]]:
    """The pipeline at ``model_dir`` once per inference mode, warmed up (the int8 copy and
    the ONNX graphs are made on the first prediction); modes that cannot run here map to
    their reason."""
    name = entangle_name(model_dir)
    pipes: Dict[str, Language] = {}
    skipped: Dict[str, str] = {}
    for mode in MODES:
        try:  # a mode whose packages are missing (onnx: onnxruntime) is skipped with its reason
            nlp = spacy.load(model_dir, config={"components": {name: {"inference": mode}}})
            warm_up = [Doc(nlp.vocab, words=["Warm", "up", "on", "Paris", "."]) for _ in range(2)]
            list(nlp.pipe(warm_up, batch_size=batch_size))
        except (ValueError, RuntimeError, ImportError) as err:
            if mode == "fp32":
                raise
            skipped[mode] = str(err).splitlines()[0]
            print(f"ℹ inference = {mode!r} cannot run here: {skipped[mode]}")
            continue
        pipes[mode] = nlp
    return pipes, skipped


def main_score(scores: Dict[str, Any]) -> str:
    """The score a task reports first (ents_f for NER, ...)."""
    for key in ("ents_f", "tag_acc", "pos_acc", "cats_score", "dep_las"):
        if isinstance(scores.get(key), float):
            return key
    keys = [k for k, v in scores.items() if isinstance(v, float) and k.endswith(("_f", "_acc", "_score"))]
    if not keys:
        raise ValueError(f"the pipeline reports no score to compare (scores: {', '.join(scores)})")
    return keys[0]
