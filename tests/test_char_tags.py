"""The doc._.char_tags / doc._.char_spans extensions (char_tags.py): stored where spaCy
stores a plain extension, so .spacy corpora written by any version read alike."""

import spacy
from spacy.tokens import Doc, DocBin

from spacy_entangle.char_tags import CHAR_TAGS_KEY, install_extensions

TAGS = ("A", "B", None, "C")


def test_char_tags_key_is_the_one_spacy_gives_a_plain_extension():
    probe = "entangle_probe_tags"
    if not Doc.has_extension(probe):
        Doc.set_extension(probe, default=None)
    doc = spacy.blank("en")("ab c")
    doc._.set(probe, TAGS)
    (key,) = [k for k in doc.user_data if probe in k]
    assert tuple("char_tags" if part == probe else part for part in key) == CHAR_TAGS_KEY


def test_a_docbin_written_with_a_plain_char_tags_extension_reads_back():
    """What convert-codeswitch and a user's own plain `char_tags` extension write: spaCy's
    public Doc.set_extension(default=None) in place of ours while the DocBin is written."""
    nlp = spacy.blank("en")
    Doc.remove_extension("char_tags")
    Doc.set_extension("char_tags", default=None)
    try:
        doc = nlp("ab c")
        doc._.char_tags = list(TAGS)
        data = DocBin(store_user_data=True, docs=[doc]).to_bytes()
    finally:
        Doc.remove_extension("char_tags")
        install_extensions()
    (back,) = DocBin().from_bytes(data).get_docs(nlp.vocab)
    assert back._.char_tags == TAGS
    assert back._.char_spans == [(0, 1, "A"), (1, 2, "B"), (3, 4, "C")]
