"""The registered architectures (architectures.py): TextCatCls.v1's dropout."""

import numpy
import pytest
from _pipelines import build, examples
from thinc.api import set_dropout_rate


@pytest.mark.issue(12)
def test_textcat_cls_dropout_in_training_only(canine_dir, bert_dir):
    nlp = build(canine_dir, bert_dir, components=())
    nlp.add_pipe(
        "textcat",
        config={"model": {"@architectures": "spacy-entangle.TextCatCls.v1", "upstream": "entangle", "dropout": 0.5}},
    )
    nlp.initialize(lambda: examples(nlp))
    doc = nlp.get_pipe("entangle")(nlp.make_doc("Apple is buying a U.K. startup 😀"))
    model = nlp.get_pipe("textcat").model
    output = model.get_ref("output_layer")  # Softmax starts at zero: uniform whatever the input
    output.set_param("W", numpy.random.default_rng(0).normal(size=output.get_param("W").shape).astype("f"))
    predicted = model.predict([doc])
    numpy.testing.assert_array_equal(predicted, model.predict([doc]))  # predict is deterministic
    trained, _ = model.begin_update([doc])
    assert not numpy.allclose(trained, predicted)
    # spaCy's convention: a component's update sets the rate to the training dropout
    set_dropout_rate(model, 0.0)
    numpy.testing.assert_allclose(model.begin_update([doc])[0], predicted, rtol=1e-6)


@pytest.mark.issue(12)
def test_textcat_cls_bad_dropout_is_refused(canine_dir, bert_dir):
    nlp = build(canine_dir, bert_dir, components=())
    with pytest.raises(ValueError, match="dropout"):
        nlp.add_pipe("textcat", config={"model": {"@architectures": "spacy-entangle.TextCatCls.v1", "dropout": 1.0}})
