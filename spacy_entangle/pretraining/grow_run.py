"""The pretraining run of a grown encoder: PretrainRun's budget, log, checkpoints and exact
resume, with grow.py's two stages in place of the masked objectives. Stage A draws word
types from ``np_rng`` (saved in the checkpoint) and leaves the text plan alone; stage B
walks the text plan, so a resume in either stage continues exactly. What the design changes
(the encoder, its pretrainer, whether it has stage A) is its registered ``CharDesign``.

Data-parallel (distributed.py): every process draws a step's word types and attacks, or its
documents' noise, for the whole global batch and trains on its own share; stage A's shares
are equal (the type batch divides), stage B's loss is scaled by the share of the words."""

from typing import Any, Dict, Iterator, List, Tuple

import torch
from transformers import PreTrainedModel

from ..modeling.char_designs import design_of, get_design
from .data import make_batch
from .distill import Teacher, TeacherError
from .grow import (
    GrownPretrainer,
    WordTypes,
    attack_words,
    doc_chars,
    encode_spellings,
    new_grown,
    teacher_layers,
    word_cosines,
)
from .loop import PretrainRun


class GrownRun(PretrainRun):
    """``config`` is the subword encoder grown from (settings.init_from), which is the
    teacher too."""

    model: GrownPretrainer
    teacher: Teacher

    def _doc_chars(self) -> int:
        """Rows no longer than the copied position table holds words (doc_chars)."""
        from transformers import AutoConfig

        try:
            subword_config = AutoConfig.from_pretrained(self.config)
        except Exception as err:  # re-raised with the option named
            raise TeacherError(f"--init-from {self.config!r} is not a loadable Hugging Face encoder: {err}") from err
        return doc_chars(self.settings, subword_config)

    def _make_teacher(self) -> Teacher:
        settings = self.settings
        probe = Teacher(self.config, [-1], str(self.device))
        k = settings.grow_k or int(probe.model.config.num_hidden_layers)
        probe.layers = teacher_layers(int(probe.model.config.num_hidden_layers), k)
        if settings.unfreeze_top > k:
            raise ValueError(f"--unfreeze-top {settings.unfreeze_top} is more than the {k} copied layers (--k {k})")
        self.k = k
        return probe

    def _make_model(self, encoder: PreTrainedModel) -> GrownPretrainer:
        design = get_design(self.settings.grow_design)
        found = design_of(encoder.config)
        if found is None or found.name != design.name:
            kind = f"a grown {found.name!r}" if found else f"a {encoder.config.model_type!r}"
            raise ValueError(f"the checkpoint's encoder is {kind} model, not a grown {design.name!r} one (--design)")
        if int(encoder.config.num_hidden_layers) != self.k:
            raise ValueError(
                f"the checkpoint's encoder has {encoder.config.num_hidden_layers} copied layers, --k {self.k}"
            )
        if design.stage_a:
            self.types = WordTypes(self.train_docs, self.teacher, encoder.config.max_word_chars)
            self.types.targets = self.types.targets.to(self.device)
        model = design.make_pretrainer(encoder, self.teacher.layers[0])
        for param in model.copied_parameters():
            param.requires_grad_(False)
        return model

    def _top_layers(self) -> List[torch.nn.Parameter]:
        """The copied parameters that unfreeze late (the top ``unfreeze_top`` layers)."""
        n = self.settings.unfreeze_top
        if not n:
            return []
        layers = self.model.copied_layers()
        if n > len(layers):
            raise ValueError(f"--unfreeze-top {n} is more than the {len(layers)} copied layers")
        return [p for layer in layers[len(layers) - n :] for p in layer.parameters()]

    def _param_groups(self) -> List[Dict[str, Any]]:
        top = {id(p) for p in self._top_layers()}
        copied = {id(p) for p in self.model.copied_parameters()}
        new = [p for p in self.model.parameters() if id(p) not in copied]
        groups: List[Dict[str, Any]] = [{"params": new}]
        if top:
            groups.append(
                {
                    "params": [p for p in self.model.parameters() if id(p) in top],
                    "lr": self.settings.lr * self.settings.copied_lr_scale,
                }
            )
        return groups

    def _new_encoder(self) -> PreTrainedModel:
        settings = self.settings
        encoder = new_grown(self.config, settings.grow_k, settings.char_width, settings.seed, settings.grow_design)
        assert isinstance(encoder, PreTrainedModel)
        return encoder

    def update_next(self, plan: Iterator[List[int]]) -> Tuple[Dict[str, torch.Tensor], int]:
        settings = self.settings
        unfreeze = settings.unfreeze_top and self.step >= settings.unfreeze_step
        for param in self._top_layers():
            param.requires_grad_(bool(unfreeze))
        stand_in = False
        if self.step < settings.type_steps:
            picked = self.types.sample(settings.type_batch, self.np_rng)
            words = attack_words(
                [self.types.types[i] for i in picked], settings.noise_rate, settings.attacks, self.py_rng
            )
            keep, _ = self.parallel.rows(len(picked))  # equal shares: the type batch divides (pretrain.py)
            if keep is not None:
                picked, words = picked[keep], words[keep]
            ids, mask = encode_spellings(words, self.model.encoder.config.max_word_chars)
            targets = self.types.targets[torch.from_numpy(picked).to(self.device)]
            result = self.parallel.module(self.model)("type", ids.to(self.device), mask.to(self.device), targets)
            loss, n_chars = result["loss"], int(mask.sum())
        else:
            doc_ids = next(plan)
            keep, stand_in = self.parallel.rows(len(doc_ids))
            batch = make_batch(
                [self.train_docs[i] for i in doc_ids],
                self.vocab,
                self.np_rng,
                self.py_rng,
                0.0,
                settings.noise_rate,
                settings.attacks,
                pad_multiple=1,
                keep=keep,
            )
            targets, found = self.teacher.word_states(batch.clean_texts, batch.clean_spans)
            arrays = (batch.input_ids, batch.attention_mask, batch.word_ids)
            ids, mask, word_ids = (torch.from_numpy(a).to(self.device) for a in arrays)
            result = self.parallel.module(self.model)(
                "text", ids, mask, word_ids, targets.to(self.device), found.to(self.device)
            )
            loss, n_chars = result["loss"], batch.n_chars
            scales = self.parallel.scales({"words": float(found.sum())}, stand_in)
            if scales is not None:
                loss = loss * scales["words"]
        params = [p for p in self.model.parameters() if p.requires_grad]
        return self.optimize(loss, params, stand_in, result, n_chars)

    def evaluate(self) -> Dict[str, float]:
        """Cosine to the teacher's word states on the held-out docs, clean and attacked."""
        if not self.dev_docs:
            return {}
        settings = self.settings
        out: Dict[str, float] = {}
        for name, rate in (("clean", 0.0), ("noisy", settings.noise_rate)):
            cos = word_cosines(
                self.model, self.teacher, self.dev_docs, rate, settings.attacks, settings.batch_size, str(self.device)
            )
            out.update({f"dev_{name}_{k}": v for k, v in cos.items() if k != "words"})
        return out
