"""`python -m spacy_entangle perturb IN.spacy OUT.spacy --rate R --seed S`: a noisy copy of
a corpus (CharBERT's character attacks, see spacy_entangle.noise), annotations kept."""
from collections import Counter
from pathlib import Path

import typer
from spacy.tokens import DocBin
from spacy.vocab import Vocab
from tqdm import tqdm

from ..noise import ATTACKS, MIN_LENGTH, check_attacks, is_word, perturb_docs
from ._app import app, cli_errors
from ..converters.io import write_docbin_atomic


@app.command("perturb")
def perturb_cli(
    # fmt: off
    input_path: Path = typer.Argument(..., help="Input .spacy corpus (DocBin)", dir_okay=False),
    output_path: Path = typer.Argument(..., help="Output .spacy corpus, the same docs with noisy words", dir_okay=False),
    rate: float = typer.Option(..., "--rate", "-r", help="Probability that a word of 4+ characters is attacked"),
    seed: int = typer.Option(0, "--seed", "-s", help="Random seed (same seed, same output)"),
    attacks: str = typer.Option(",".join(ATTACKS), "--attacks", "-a", help="Comma-separated subset of drop,add,swap,keyboard"),
    # fmt: on
) -> None:
    """Apply character noise to every doc of a .spacy corpus, keeping entities, tags and cats."""
    with cli_errors("perturb", f"{input_path} -> {output_path}"):
        chosen = check_attacks(rate, [a.strip() for a in attacks.split(",") if a.strip()])
        try:
            docbin = DocBin().from_disk(input_path)
        except (OSError, ValueError) as e:
            raise ValueError(f"cannot read {input_path} as a .spacy corpus: {e}") from e
        docs = list(docbin.get_docs(Vocab()))
        counts: Counter = Counter()
        stream = perturb_docs(docs, rate, seed=seed, attacks=chosen, counts=counts)
        new_docs = list(tqdm(stream, total=len(docs), desc="perturb", unit="doc", disable=len(docs) < 2000, leave=False))
        write_docbin_atomic(new_docs, output_path)
    words = sum(is_word(t) for doc in docs for t in doc)
    changed = sum(counts.values())
    per_attack = ", ".join(f"{a} {counts[a]}" for a in chosen)
    share = f" ({100 * changed / words:.1f}%)" if words else ""
    typer.echo(
        f"✔ {input_path} -> {output_path}: {len(docs)} docs, {words} words of {MIN_LENGTH}+ chars, "
        f"{changed} changed{share} [{per_attack}] rate={rate} seed={seed}"
    )
