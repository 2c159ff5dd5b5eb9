"""Convert the Spanish-Wixarika intraword code-switching annotation
(pywirrarika/wixarikacorpora ``cswixes/mixed_annotated.txt``) to ``.spacy`` corpora for
the ``char_tagger``: one Doc per post, one label per character in ``doc._.char_tags``.

Input format (UTF-8, one word per line)::

    POST_ID<TAB>TOKEN<TAB>LABEL[<TAB>?]      a word; `|` in TOKEN marks morpheme boundaries
    - PIECE LABEL                            after a word labelled MIXED: one line per piece

- `|` marks are removed: they are not part of the text.
- A word's characters all get the word's label (ES, WIX, OTHER, ES.SLANG, NE.ES, ?, ...).
  Empty fields between TOKEN and LABEL are skipped; a trailing `?` field (the
  annotator's doubt) is counted and otherwise ignored. Labels are kept verbatim.
- A MIXED word's characters get the label of their piece (so do the characters of a
  word with piece lines but another label: the pieces win, with a warning). Pieces
  are matched to the word (both without `|`) by the first rule that applies:
    1. exact: the pieces spell the word (case-insensitively): piece i covers its own
       characters;
    2. segments: as many pieces as `|`-segments in the word (the piece texts hold
       typos, e.g. `ne|kwe|ramate` / `remate`): piece i labels segment i;
    3. fuzzy: difflib's alignment of the pieces' letters to the word's letters; a
       character left unmatched takes its nearest matched neighbour's piece.
  A MIXED word without piece lines, or a piece line without a label, leaves those
  characters unlabelled (None: no loss, not scored); --strict makes these and piece
  lines after a word not labelled MIXED an error.
- Lines sharing a post id form one post (in file order, even when not adjacent).
  The words are joined by single spaces; the spaces are unlabelled (None). Each word
  is one spaCy token, and its ``token.tag_`` is the word's label (MIXED for mixed
  words), so a word-level ``tagger`` can train on the same corpus.

Split (deterministic, by post id): posts are stratified by whether they contain a
MIXED word; in each stratum they are ordered by sha256("SEED:POST_ID"), the first
round(n * test_frac) go to test, the next round(n * dev_frac) to dev, the rest to train.
The ids of each split are written to OUT_DIR/splits.json.

    python -m spacy_entangle convert-codeswitch mixed_annotated.txt corpus --dev-frac 0.2 --test-frac 0.2
"""

import difflib
import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Union

from spacy.tokens import Doc
from spacy.vocab import Vocab

from ..char_tags import install_extensions
from .io import FormatError, get_vocab, read_lines, write_bytes_atomic, write_docbin_atomic

MIXED = "MIXED"
UNSURE = "?"
SPLITS = ("train", "dev", "test")


class CodeswitchFormatError(FormatError):
    """Malformed input; ``str()`` reads ``FILE:LINE: message`` (LINE is 1-based)."""


@dataclass
class Piece:
    text: str  # `|` removed
    label: Optional[str]
    line: int


@dataclass
class Word:
    raw: str  # as written, with `|`
    label: str
    line: int
    pieces: List[Piece] = field(default_factory=list)

    @property
    def text(self) -> str:
        return self.raw.replace("|", "")

    @property
    def is_mixed(self) -> bool:
        """Labelled MIXED, or followed by piece lines (whose labels then win)."""
        return self.label == MIXED or bool(self.pieces)


@dataclass
class Post:
    post_id: int
    words: List[Word] = field(default_factory=list)

    @property
    def has_mixed(self) -> bool:
        return any(w.is_mixed for w in self.words)


@dataclass
class CodeswitchStats:
    posts: int = 0
    words: int = 0
    mixed_words: int = 0
    chars: Counter = field(default_factory=Counter)  # labelled characters per label
    unlabelled_chars: int = 0  # non-space characters left without a label
    alignment: Counter = field(default_factory=Counter)  # MIXED words per matching rule
    unsure_marks: int = 0
    split_posts: Dict[str, int] = field(default_factory=dict)
    split_mixed: Dict[str, int] = field(default_factory=dict)
    warnings: List[str] = field(default_factory=list)

    def summary(self) -> str:
        labels = ", ".join(f"{k} {v}" for k, v in self.chars.most_common())
        rules = ", ".join(f"{k} {v}" for k, v in sorted(self.alignment.items()))
        splits = ", ".join(
            f"{name} {self.split_posts.get(name, 0)} ({self.split_mixed.get(name, 0)} MIXED words)" for name in SPLITS
        )
        return (
            f"{self.posts} posts, {self.words} words ({self.mixed_words} MIXED: {rules or 'none'}), "
            f"{sum(self.chars.values())} labelled characters ({labels}); "
            f"{self.unlabelled_chars} unlabelled; {self.unsure_marks} '?' marks. Split: {splits}"
        )


# -- reading ---------------------------------------------------------------------------------


def read_codeswitch(
    path: Union[str, Path], *, strict: bool = False, stats: Optional[CodeswitchStats] = None
) -> List[Post]:
    """The posts of the file, in order of first appearance. Raises
    CodeswitchFormatError (file + 1-based line) on malformed input."""
    path = Path(path)
    stats = stats if stats is not None else CodeswitchStats()
    posts: Dict[int, Post] = {}
    last_pid: Optional[int] = None
    current: Optional[Word] = None
    for lineno, line in read_lines(path, CodeswitchFormatError):
        if not line.strip():
            continue
        if line.startswith("-"):
            current = _read_piece(path, lineno, line, current, strict)
            continue
        current = None
        fields = line.split("\t")
        if len(fields) < 3:
            raise CodeswitchFormatError(path, lineno, f"expected POST_ID<TAB>TOKEN<TAB>LABEL, got {line!r}")
        post_id, token = fields[0].strip(), fields[1].strip()
        rest = [x.strip() for x in fields[2:] if x.strip()]
        if not post_id.isdigit():
            raise CodeswitchFormatError(path, lineno, f"post id {fields[0]!r} is not a number")
        if not token.replace("|", ""):
            raise CodeswitchFormatError(path, lineno, f"empty token {fields[1]!r}")
        if not rest:
            raise CodeswitchFormatError(path, lineno, f"no label for the token {token!r}")
        label, extra = rest[0], rest[1:]
        for x in extra:
            if x == UNSURE:
                stats.unsure_marks += 1
            elif strict:
                raise CodeswitchFormatError(path, lineno, f"unexpected field {x!r} after the label")
            else:
                stats.warnings.append(f"{path}:{lineno}: extra field {x!r} after the label ignored")
        pid = int(post_id)
        post = posts.get(pid)
        if post is None:
            post = posts[pid] = Post(pid)
        elif last_pid != pid:
            stats.warnings.append(
                f"{path}:{lineno}: post {pid} continues after other posts; its words are joined in file order"
            )
        current = Word(token, label, lineno)
        post.words.append(current)
        last_pid = pid
    if not posts:
        raise CodeswitchFormatError(path, None, "no words found (empty output)")
    for post in posts.values():
        for word in post.words:
            if word.label == MIXED and not word.pieces:
                if strict:
                    raise CodeswitchFormatError(path, word.line, f"MIXED word {word.raw!r} has no piece lines")
                stats.warnings.append(
                    f"{path}:{word.line}: MIXED word {word.raw!r} has no piece lines: its characters are left unlabelled"
                )
            if word.pieces and word.label != MIXED:
                stats.warnings.append(
                    f"{path}:{word.line}: the word {word.raw!r} is labelled {word.label} but has piece lines: "
                    "the pieces' labels are used"
                )
            for piece in word.pieces:
                if piece.label is None:
                    stats.warnings.append(
                        f"{path}:{piece.line}: the piece {piece.text!r} has no label: its characters are left unlabelled"
                    )
    return list(posts.values())


def _read_piece(path: Path, lineno: int, line: str, word: Optional[Word], strict: bool) -> Word:
    if word is None:
        raise CodeswitchFormatError(
            path, lineno, f"piece line {line!r} before any word (pieces must follow a word labelled MIXED)"
        )
    fields = line[1:].split()
    if not fields:
        raise CodeswitchFormatError(path, lineno, "empty piece line (expected '- PIECE LABEL')")
    if len(fields) > 2:
        raise CodeswitchFormatError(path, lineno, f"expected '- PIECE LABEL', got {line!r}")
    text = fields[0].replace("|", "")
    if not text:
        raise CodeswitchFormatError(path, lineno, f"empty piece in {line!r}")
    label = fields[1] if len(fields) == 2 else None
    if label is None and strict:
        raise CodeswitchFormatError(path, lineno, f"piece {fields[0]!r} has no label")
    if word.label != MIXED and not word.pieces and strict:
        raise CodeswitchFormatError(
            path, lineno, f"piece line after the word {word.raw!r} labelled {word.label} (not MIXED)"
        )
    word.pieces.append(Piece(text, label, lineno))
    return word


# -- labels per character -----------------------------------------------------------------------


def mixed_char_labels(raw: str, pieces: Sequence[Tuple[str, Optional[str]]]) -> Tuple[List[Optional[str]], str]:
    """One label per character of ``raw`` without `|`, from the MIXED word's pieces
    (text, label); and the rule used: "exact", "segments" or "fuzzy"."""
    text = raw.replace("|", "")
    texts = [t.replace("|", "") for t, _ in pieces]
    labels = [lab for _, lab in pieces]
    joined = "".join(texts)
    owner = [i for i, t in enumerate(texts) for _ in t]
    if len(joined) == len(text) and all(a.lower() == b.lower() for a, b in zip(joined, text)):
        return [labels[i] for i in owner], "exact"
    segments = [s for s in raw.split("|") if s]
    if len(segments) == len(pieces):
        return [lab for s, lab in zip(segments, labels) for _ in s], "segments"
    matcher = difflib.SequenceMatcher(None, joined.lower(), text.lower(), autojunk=False)
    got: List[Optional[int]] = [None] * len(text)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op in ("equal", "replace"):
            for j in range(j1, j2):
                got[j] = owner[min(i1 + (j - j1), i2 - 1)]
    known = {j: g for j, g in enumerate(got) if g is not None}
    if not known:
        return [None] * len(text), "fuzzy"
    return [labels[_nearest_owner(known, j)] for j in range(len(text))], "fuzzy"


def _nearest_owner(known: Dict[int, int], j: int) -> int:
    """The piece that owns character j, or else the owner of the nearest character with one
    (the earlier on a tie)."""
    if j in known:
        return known[j]
    return known[min(known, key=lambda k: (abs(k - j), k))]


def word_char_labels(word: Word, stats: Optional[CodeswitchStats] = None) -> List[Optional[str]]:
    """One label per character of the word's text (see the module docstring)."""
    text = word.text
    if word.pieces:
        labels, rule = mixed_char_labels(word.raw, [(p.text, p.label) for p in word.pieces])
        if stats is not None:
            stats.alignment[rule] += 1
    elif word.label == MIXED:
        labels = [None] * len(text)
    else:
        labels = [word.label] * len(text)
    return [None if c.isspace() else lab for c, lab in zip(text, labels)]


def post_to_doc(post: Post, vocab: Vocab, *, word_tags: bool = True, stats: Optional[CodeswitchStats] = None) -> Doc:
    """One Doc: the words (without `|`) joined by single spaces; doc._.char_tags."""
    install_extensions()
    words = [w.text for w in post.words]
    spaces = [True] * (len(words) - 1) + [False]
    doc = Doc(vocab, words=words, spaces=spaces)
    tags: List[Optional[str]] = []
    for i, (word, token) in enumerate(zip(post.words, doc)):
        labels = word_char_labels(word, stats)
        tags.extend(labels)
        if spaces[i]:
            tags.append(None)
        if word_tags:
            token.tag_ = MIXED if word.is_mixed else word.label
        if stats is not None:
            stats.words += 1
            stats.mixed_words += word.is_mixed
            stats.chars.update(lab for lab in labels if lab is not None)
            stats.unlabelled_chars += sum(lab is None and not c.isspace() for lab, c in zip(labels, word.text))
    assert len(tags) == len(doc.text)
    doc._.char_tags = tags
    return doc


# -- split --------------------------------------------------------------------------------------


def split_posts(posts: Sequence[Post], dev_frac: float, test_frac: float, seed: int = 0) -> Dict[str, List[Post]]:
    """Deterministic split by post id, stratified by 'has a MIXED word' (module docstring).
    Each split keeps the file order."""
    if dev_frac < 0 or test_frac < 0 or dev_frac + test_frac >= 1:
        raise ValueError(
            f"need dev_frac >= 0, test_frac >= 0 and dev_frac + test_frac < 1 (got {dev_frac}, {test_frac})"
        )
    order = {id(p): i for i, p in enumerate(posts)}
    out: Dict[str, List[Post]] = {name: [] for name in SPLITS}
    for stratum in (True, False):
        group = [p for p in posts if p.has_mixed == stratum]
        group.sort(key=lambda p: hashlib.sha256(f"{seed}:{p.post_id}".encode()).hexdigest())
        n_test = int(round(len(group) * test_frac))
        n_dev = int(round(len(group) * dev_frac))
        out["test"].extend(group[:n_test])
        out["dev"].extend(group[n_test : n_test + n_dev])
        out["train"].extend(group[n_test + n_dev :])
    for name in SPLITS:
        out[name].sort(key=lambda p: order[id(p)])
    return out


# -- the command ----------------------------------------------------------------------------------


def convert_codeswitch(
    input_path: Union[str, Path],
    output_dir: Union[str, Path],
    *,
    dev_frac: float = 0.2,
    test_frac: float = 0.2,
    seed: int = 0,
    lang: str = "es",
    strict: bool = False,
    word_tags: bool = True,
) -> CodeswitchStats:
    """Write OUT_DIR/{train,dev,test}.spacy (DocBins with user data: doc._.char_tags)
    and OUT_DIR/splits.json; a split with no post is not written (and an earlier run's
    file of that split is removed, so the folder always matches splits.json). Returns
    the stats."""
    input_path, output_dir = Path(input_path), Path(output_dir)
    stats = CodeswitchStats()
    vocab = get_vocab(lang)
    posts = read_codeswitch(input_path, strict=strict, stats=stats)
    splits = split_posts(posts, dev_frac, test_frac, seed)  # validate before writing anything
    docs = {
        name: [post_to_doc(p, vocab, word_tags=word_tags, stats=stats) for p in group] for name, group in splits.items()
    }
    stats.posts = len(posts)
    output_dir.mkdir(parents=True, exist_ok=True)
    for name in SPLITS:
        stats.split_posts[name] = len(splits[name])
        stats.split_mixed[name] = sum(w.is_mixed for p in splits[name] for w in p.words)
        path = output_dir / f"{name}.spacy"
        if docs[name]:
            write_docbin_atomic(docs[name], path, store_user_data=True)
        elif path.exists():
            # a split this run does not make: an earlier run's file would hold posts
            # that are now in another split
            path.unlink()
            stats.warnings.append(f"removed {path} from an earlier run: this run has no {name} split")
    meta = {
        "source": str(input_path),
        "sha256": hashlib.sha256(input_path.read_bytes()).hexdigest(),
        "rule": "stratified by has-MIXED-word; per stratum sorted by sha256('SEED:POST_ID'): "
        "first round(n*test_frac) test, next round(n*dev_frac) dev, rest train",
        "seed": seed,
        "dev_frac": dev_frac,
        "test_frac": test_frac,
        **{name: [p.post_id for p in splits[name]] for name in SPLITS},
    }
    body = ",\n".join(f" {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in meta.items())
    write_bytes_atomic(("{\n" + body + "\n}\n").encode("utf8"), output_dir / "splits.json")
    return stats
