"""Training configs composed from parts: one base per preset (parts/bases/) plus one block per
task component (parts/tasks/, with what a preset changes in it in parts/overlays/, or the
preset's own block in parts/replacements/ where its head differs), as spaCy's
`init config` fills one template. The shipped
configs (configs/*.cfg, which the projects read and users copy) are generated from these
parts by `python -m spacy_entangle.configs --write`; a test checks that they are equal.

The merge works on the text, not on a thinc Config, so that the comments explaining a
setting survive: a comment sits right above the key or the [section] it explains. A part's
leading comment block (followed by a blank line) documents the part and is not copied."""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import srsly

PARTS_DIR = Path(__file__).resolve().parent / "parts"


@dataclass
class Entry:
    """One `key = value` line and the comment lines right above it."""

    line: str
    comments: List[str] = field(default_factory=list)


@dataclass
class Section:
    """One [section]: the comments above its header and its entries, in order."""

    name: str
    comments: List[str] = field(default_factory=list)
    entries: Dict[str, Entry] = field(default_factory=dict)


@dataclass
class Part:
    """A parsed config text: its leading comment block and its sections, in order."""

    doc: List[str]
    sections: List[Section]

    def section(self, name: str) -> Optional[Section]:
        return next((s for s in self.sections if s.name == name), None)

    def components(self) -> List[str]:
        """The components this part defines a block for ([components.NAME])."""
        names = [s.name.split(".")[1] for s in self.sections if s.name.startswith("components.")]
        return list(dict.fromkeys(names))


def parse(text: str, where: str = "<text>") -> Part:
    """Split a config text into sections and entries, keeping each comment with what follows
    it. A comment followed by a blank line is refused (it would be lost), except the leading
    block, and so are continuation lines (no shipped value spans lines)."""
    doc: List[str] = []
    sections: List[Section] = []
    pending: List[str] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped:
            if pending and not sections and not doc:
                doc, pending = pending, []
            elif pending:
                raise ValueError(f"{where}:{number}: a comment must sit right above a key or a [section]")
        elif stripped.startswith("#"):
            pending.append(line)
        elif stripped.startswith("["):
            sections.append(Section(stripped[1:-1].strip(), comments=pending))
            pending = []
        elif "=" in stripped and not raw[:1].isspace() and sections:
            key = stripped.split("=", 1)[0].strip()
            sections[-1].entries[key] = Entry(line, comments=pending)
            pending = []
        else:
            raise ValueError(f"{where}:{number}: expected a [section], `key = value` or a comment, got {raw!r}")
    if pending and not sections and not doc:
        doc = pending  # a text of comments only: all leading block
    elif pending:
        raise ValueError(f"{where}: comment lines at the end belong to nothing")
    return Part(doc, sections)


def _shared_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a.split("."), b.split(".")):
        if x != y:
            break
        n += 1
    return n


def _insert_at(sections: List[Section], name: str) -> int:
    """Where a new section goes: after the last section sharing the longest dotted prefix
    with it (a new [components.X] after the last component block, its subsections after it)."""
    best, at = 0, len(sections)
    for i, section in enumerate(sections):
        shared = _shared_prefix(section.name, name)
        if shared and shared >= best:
            best, at = shared, i + 1
    return at


def merge(base: Part, part: Part) -> Part:
    """`part` over `base`, key by key (as thinc's Config.merge): a value or comment given by
    the part wins, new keys are appended, new sections placed beside their relatives."""
    sections = [Section(s.name, list(s.comments), dict(s.entries)) for s in base.sections]
    for new in part.sections:
        target = next((s for s in sections if s.name == new.name), None)
        if target is None:
            sections.insert(_insert_at(sections, new.name), Section(new.name, list(new.comments), dict(new.entries)))
            continue
        target.comments = list(new.comments) or target.comments
        for key, entry in new.entries.items():
            old = target.entries.get(key)
            target.entries[key] = Entry(entry.line, list(entry.comments) or (old.comments if old else []))
    return Part(base.doc, sections)


def render(part: Part, header: Sequence[str] = ()) -> str:
    """The config text: the header comment, then each section (one blank line between)."""
    blocks = ["\n".join(header)] if header else []
    for section in part.sections:
        lines = [*section.comments, f"[{section.name}]"]
        for entry in section.entries.values():
            lines += [*entry.comments, entry.line]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


def read_part(kind: str, name: str) -> Part:
    """parts/KIND/NAME.cfg; NAME may name its own folder: "baseline/ner" in "tasks" is
    parts/baseline/ner.cfg."""
    folder, _, name = name.rpartition("/")
    kind = folder or kind
    path = PARTS_DIR / kind / f"{name}.cfg"
    if not path.is_file():
        known = sorted(p.stem for p in (PARTS_DIR / kind).glob("*.cfg"))
        raise ValueError(f"no config part {kind}/{name}.cfg; the {kind} are: {', '.join(known)}")
    return parse(path.read_text(encoding="utf8"), str(path))


def task_names() -> List[str]:
    """The task blocks of the entangle presets (parts/tasks/NAME.cfg adds the component NAME)."""
    return sorted(p.stem for p in (PARTS_DIR / "tasks").glob("*.cfg"))


def _nlp_section(part: Part, base: str) -> Section:
    """The [nlp] section, whose pipeline the task blocks extend: every base has one."""
    nlp = part.section("nlp")
    if nlp is None:
        raise ValueError(f"the config base {base!r} has no [nlp] section")
    return nlp


def compose(base: str, tasks: Sequence[str], extra: str = "") -> Tuple[Part, List[str]]:
    """A base, the task blocks in order (parts/tasks/TASK.cfg, or the base's own block for
    the task, parts/replacements/BASE.TASK.cfg; each followed by the base's overlay for it,
    parts/overlays/BASE.TASK.cfg, when there is one), then `extra` (a config text whose
    leading comment is the header of the result, and whose values win). [nlp] pipeline gains
    each task's component. Returns the merged part and the header lines."""
    merged = read_part("bases", base)
    pipeline = list(srsly.json_loads(_nlp_section(merged, base).entries["pipeline"].line.split("=", 1)[1]))
    for task in tasks:
        # a preset's own block for the task (parts/replacements/BASE.TASK.cfg: another head,
        # not values to merge), else the task's block of every preset
        own = PARTS_DIR / "replacements" / f"{base}.{task}.cfg"
        block = parse(own.read_text(encoding="utf8"), str(own)) if own.is_file() else read_part("tasks", task)
        clash = [name for name in block.components() if name in pipeline]
        if clash:
            raise ValueError(f"the task blocks add the component {clash[0]!r} twice")
        merged = merge(merged, block)
        overlay = PARTS_DIR / "overlays" / f"{base}.{task}.cfg"
        if overlay.is_file():  # what this preset changes in the task's block
            merged = merge(merged, parse(overlay.read_text(encoding="utf8"), str(overlay)))
        pipeline += block.components()
    nlp = _nlp_section(merged, base)
    nlp.entries["pipeline"] = Entry(f"pipeline = {srsly.json_dumps(pipeline)}", nlp.entries["pipeline"].comments)
    extra_part = parse(extra.strip("\n") + "\n", "<extra>") if extra.strip() else Part([], [])
    return merge(merged, extra_part), extra_part.doc


@dataclass(frozen=True)
class Recipe:
    """How a shipped config is made: a base, its task blocks, and its own text (the header
    comment and the values where it differs from the base and the blocks)."""

    base: str
    tasks: Tuple[str, ...]
    own: str = ""

    def text(self) -> str:
        merged, header = compose(self.base, self.tasks, self.own)
        return render(merged, header)


def generate(recipes: Mapping[str, Recipe]) -> Dict[str, str]:
    """{file name: text} of every shipped config."""
    return {name: recipe.text() for name, recipe in recipes.items()}
