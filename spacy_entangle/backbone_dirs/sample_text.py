"""A small, deterministic English + tweet-like corpus: the tiny byte-level BPE of
``make_random_subword(kind="roberta")`` is trained on it, tests read it as text, and the
``onnx-int8`` engine calibrates its activation smoothing on it when smoothing is on (the
same text for every pipeline and every first batch).

It holds emoji (incl. ZWJ sequences and flags), @mentions, #hashtags, URLs, accents and
non-Latin scripts, so the BPE's merges and offsets are exercised on the same kinds of text
the WNUT / TweetEval data contain."""

from typing import Iterator, List

_SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Apple is buying a U.K. startup for $1 billion.",
    "New York Times reports on Google, Microsoft and Amazon.",
    "I'm sooo happy!!! can't wait 4 tmrw lol",
    "Café naïve résumé — déjà vu in São Paulo and Zürich.",
    "Emoji 👩‍👩‍👧‍👦 and flags 🇺🇸 🇬🇧 🇪🇸 and hearts ❤️💔",
    "RT @user: watching Star Wars in London tonight",
    "omg the new iPhone 15 Pro is 🔥🔥🔥",
    "Señora Muñoz visitó Málaga y Córdoba el año pasado.",
    "Москва и Санкт-Петербург — большие города.",
    "東京と大阪は日本の都市です。",
    'He said "no way" (twice) & left at 5:30pm...',
    "Prices: €12.50, £9.99, ¥1200 — cheaper than last year?",
    "Don't @ me, I'm right 😤 #facts",
    "the game was ok i guess... 2-1 final #MUFC",
    "Straße, Größe, Übermaß: German has ß and umlauts.",
    "Ça va? Très bien, merci! À bientôt.",
    "Check out https://example.com/blog/2017/05/post?id=42 now",
    "email me at jane.doe@example.org or call 555-0123",
    "Taylor Swift and Ed Sheeran played Wembley Stadium.",
]
_NAMES = ["john_doe", "MaríaG", "nyc_news", "Dev_Ops42", "zoë", "BBCBreaking", "elonmusk", "_kim_"]
_PLACES = ["Paris", "Bogotá", "Kraków", "Reykjavík", "Lagos", "Mumbai", "Seattle", "Montréal"]
_THINGS = ["coffee", "the new album", "this weather", "Monday", "pizza", "the final", "my cat", "traffic"]
_FEELINGS = ["love", "hate", "can't stand", "miss", "am obsessed with", "don't get", "need", "adore"]
_EMOJI = ["😀", "😂", "😭", "🙏", "👍🏽", "🎉", "🤔", "💯", "✨", "🍕", "⚽", "👨‍💻"]
_TAGS = ["#nlp", "#Monday", "#WorldCup2018", "#café", "#TBT", "#love", "#news", "#100DaysOfCode"]
_URLS = ["https://t.co/xYz123", "http://bit.ly/2abc", "https://www.example.com/a-b_c", "www.news.co.uk"]


def sample_lines() -> List[str]:
    """~350 lines, always the same (no RNG): fixed sentences plus templated tweets."""
    lines = list(_SENTENCES)
    n = len(_NAMES) * len(_PLACES) * len(_THINGS)  # 512 combinations, stepped through
    for i in range(0, n, 2):
        name = _NAMES[i % len(_NAMES)]
        place = _PLACES[(i // len(_NAMES)) % len(_PLACES)]
        thing = _THINGS[(i // (len(_NAMES) * len(_PLACES))) % len(_THINGS)]
        feel = _FEELINGS[(i * 3) % len(_FEELINGS)]
        emo = _EMOJI[i % len(_EMOJI)]
        tag = _TAGS[(i * 5) % len(_TAGS)]
        url = _URLS[i % len(_URLS)]
        form = i % 4
        if form == 0:
            lines.append(f"@{name} I {feel} {thing} in {place} {emo} {tag}")
        elif form == 1:
            lines.append(f"RT @{name}: {thing.capitalize()} in {place} today!! {url}")
        elif form == 2:
            lines.append(f"{place} {tag} {emo}{emo} why do I {feel.split()[-1]} {thing} so much?")
        else:
            lines.append(f"Just landed in {place.upper()}... {thing} first, then @{name} {url} {emo}")
    for i, sentence in enumerate(_SENTENCES):
        lines.append(sentence.lower() + " " + _EMOJI[i % len(_EMOJI)])
        lines.append(f'"{sentence}" — @{_NAMES[i % len(_NAMES)]}')
    return lines


def sample_iter(repeats: int = 2) -> Iterator[str]:
    """The sample ``repeats`` times over (the BPE trainer counts pair frequencies)."""
    for _ in range(repeats):
        yield from sample_lines()
