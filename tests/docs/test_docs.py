"""The documentation's shape: README.md is a front page that links every page in docs/, every
relative link of README.md, docs/ and research/README.md resolves to a file, and the reference
pages (README.md, docs/*.md and research/README.md) say what is true now, without dates, commit
hashes or issue numbers: those belong to the recorded measurements (docs/results/) and
CHANGELOG.md. Pure file reads."""

import re
from pathlib import Path
from typing import Iterator, List, Tuple

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
RESEARCH_README = ROOT / "research" / "README.md"  # the research tooling's page (not the product's)
README_MAX_LINES = 250

# [text](target) and ![alt](target), a target up to the first space or ")" (an optional
# "title" after it), and reference definitions ([label]: target)
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s|$)", re.M)
FENCE = re.compile(r"^(```|~~~)")

MONTHS = (
    "January|February|March|April|May|June|July|August|September|October|November|December"
    "|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec"
)
# one alternation, longest form first, so that "27 November 2026" is one finding
DATE = re.compile(
    r"\b(?:19|20)\d\d-\d\d-\d\d\b"  # 2026-11-27
    rf"|\b\d{{1,2}}(?:st|nd|rd|th)? (?:{MONTHS})\.?,? (?:19|20)\d\d\b"  # 27 November 2026
    rf"|\b(?:{MONTHS})\.? \d{{1,2}}(?:st|nd|rd|th)?,? (?:19|20)\d\d\b"  # November 27, 2026
    rf"|\b(?:{MONTHS}) (?:19|20)\d\d\b"  # November 2026
)
ISSUES = [
    re.compile(r"\bissues? #?\d+", re.I),  # issue 31, issue #31, issues 29
    re.compile(r"(?<![\w&#/])#\d{2,}\b"),  # #53 (not an anchor, a colour or an HTML entity)
    re.compile(r"\b(?:PR|pull request) #?\d+", re.I),
]
# a commit hash: 7-40 hex digits holding a digit and a letter, as a whole word; not a colour
# (#abc1234), not part of a longer hex run (a sha256 of 64), not a hex literal (0x...)
HASH = re.compile(r"(?<![#\w])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![\w])")


def pages() -> List[Path]:
    """README.md, CHANGELOG.md, every markdown page under docs/ (the results pages included) and
    research/README.md."""
    return [README, ROOT / "CHANGELOG.md", *sorted(DOCS.rglob("*.md")), RESEARCH_README]


def reference_pages() -> List[Path]:
    """The pages that describe what is true now: README.md, docs/*.md (not docs/results/) and
    research/README.md."""
    return [README, *sorted(DOCS.glob("*.md")), RESEARCH_README]


def prose_and_code(text: str) -> Iterator[Tuple[int, str, bool]]:
    """(line number, line, inside a fenced code block) for each line of a markdown page."""
    fenced = False
    for number, line in enumerate(text.splitlines(), start=1):
        if FENCE.match(line.lstrip()):
            fenced = not fenced
            yield number, line, True
            continue
        yield number, line, fenced


def links(path: Path) -> Iterator[Tuple[int, str]]:
    """(line number, target) of every link of a page outside fenced code blocks."""
    lines = [line if not fenced else "" for _, line, fenced in prose_and_code(path.read_text(encoding="utf8"))]
    text = "\n".join(lines)
    for pattern in (INLINE_LINK, REFERENCE_LINK):
        for match in pattern.finditer(text):
            yield text.count("\n", 0, match.start()) + 1, match.group(1)


def relative_target(target: str) -> str:
    """The file part of a relative link ("" for a pure anchor or an absolute URL)."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("//"):
        return ""  # http(s), mailto, ...
    return target.split("#", 1)[0].split("?", 1)[0]


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_the_pages_exist():
    names = {_name(p) for p in pages()}
    assert {"README.md", "CHANGELOG.md", "docs/results/README.md", "research/README.md"} <= names
    assert len(reference_pages()) > 5


@pytest.mark.parametrize("path", pages(), ids=_name)
def test_every_relative_link_resolves(path):
    broken = []
    for line, target in links(path):
        file_part = relative_target(target)
        if not file_part:
            continue
        if file_part.startswith("/"):
            broken.append(f"{_name(path)}:{line}: {target} (absolute path: use a relative link)")
        elif not (path.parent / file_part).exists():
            broken.append(f"{_name(path)}:{line}: {target}")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_readme_is_a_front_page():
    n_lines = len(README.read_text(encoding="utf8").splitlines())
    assert n_lines <= README_MAX_LINES, f"README.md has {n_lines} lines; move reference material to docs/"


def test_readme_links_every_docs_page():
    linked = {(README.parent / relative_target(t)).resolve() for _, t in links(README) if relative_target(t)}
    missing = [_name(p) for p in sorted(DOCS.glob("*.md")) if p.resolve() not in linked]
    assert not missing, f"pages in docs/ that README.md does not link: {missing}"
    assert (DOCS / "results" / "README.md").resolve() in linked


def _findings(path: Path, name: str) -> List[str]:
    """Each date, issue number and commit hash of a page, as "NAME:LINE: what 'text'"."""
    found = []
    for number, line, fenced in prose_and_code(path.read_text(encoding="utf8")):
        where = f"{name}:{number}"
        found += [f"{where}: date {m.group(0)!r}" for m in DATE.finditer(line)]
        for pattern in ISSUES:
            found += [f"{where}: issue number {m.group(0)!r}" for m in pattern.finditer(line)]
        if not fenced:  # code blocks hold digests, ids and example hex on purpose
            found += [f"{where}: commit hash {m.group(0)!r}" for m in HASH.finditer(line)]
    return found


@pytest.mark.parametrize("path", reference_pages(), ids=_name)
def test_reference_pages_carry_no_dates_issues_or_commits(path):
    found = _findings(path, _name(path))
    assert not found, (
        "reference pages say what is true now; dated measurements go to docs/results/, changes to "
        "CHANGELOG.md:\n" + "\n".join(found)
    )


def package_sources() -> List[Path]:
    """The package's modules and shipped configs: their docstrings and comments say why, not when."""
    package = ROOT / "spacy_entangle"
    return sorted(package.rglob("*.py")) + sorted(package.rglob("*.cfg"))


def test_the_package_carries_no_dates_issues_or_commits():
    found: List[str] = []
    for path in package_sources():
        name = str(path.relative_to(ROOT))
        for number, line in enumerate(path.read_text(encoding="utf8").splitlines(), start=1):
            where = f"{name}:{number}"
            found += [f"{where}: date {m.group(0)!r}" for m in DATE.finditer(line)]
            for pattern in ISSUES:
                found += [f"{where}: issue number {m.group(0)!r}" for m in pattern.finditer(line)]
            found += [f"{where}: commit hash {m.group(0)!r}" for m in HASH.finditer(line)]
    assert not found, "docstrings and comments say why, not which issue or when:\n" + "\n".join(found)


def test_the_checks_catch_what_they_look_for(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "Measured 2026-11-27 at commit 94bc40e (issue 31; see #53), on 27 November 2026.\n"
        "Fine: 0xE000, #results, sha256 " + "ab12" * 16 + ", fp32, 16384, colour #a1b2c3d.\n"
        "```\ngit checkout 94bc40e\n```\n",
        encoding="utf8",
    )
    found = [f.split(": ", 1)[1] for f in _findings(page, "page.md")]
    assert found == [
        "date '2026-11-27'",
        "date '27 November 2026'",
        "issue number 'issue 31'",
        "issue number '#53'",
        "commit hash '94bc40e'",
    ]
    assert relative_target("docs/usage.md#token-vectors") == "docs/usage.md"
    assert relative_target("#why") == "" and relative_target("https://arxiv.org/abs/2311.07853") == ""
    linked = tmp_path / "links.md"
    linked.write_text("[a](usage.md#x) ![b](pic.png) [c](https://x.org) [d](#y)\n```\n[e](no.md)\n```\n")
    assert [t for _, t in links(linked)] == ["usage.md#x", "pic.png", "https://x.org", "#y"]
