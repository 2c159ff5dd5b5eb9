"""Registering this package's model types with transformers' ``AutoConfig`` / ``AutoModel``
on ``import spacy_entangle``, without importing transformers then.

Importing transformers' auto classes costs seconds (spaCy imports this package just to find
its factories), so nothing is imported here: a register call records the classes (as
``"module:name"``) and, if transformers' auto modules are loaded already, registers them at
once; else an import hook registers the config class when ``configuration_auto`` finishes
loading and the model class when ``modeling_auto`` does (``AutoConfig`` and ``AutoModel``
cannot be used before). The config class should live in a module that imports no more than
``transformers.configuration_utils``: transformers' own ``modeling_utils`` imports
``configuration_auto`` halfway through its import, when a model module cannot load yet.
"""

import importlib
import importlib.abc
import importlib.machinery
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

CONFIG_AUTO = "transformers.models.auto.configuration_auto"
MODEL_AUTO = "transformers.models.auto.modeling_auto"

# model_type -> ("module:ConfigClass", "module:ModelClass")
_PENDING: Dict[str, Tuple[str, str]] = {}


def resolve(ref: str) -> Any:
    """The object a ``"module:name"`` reference names."""
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


def register_auto_classes(model_type: str, config_class: str, model_class: str) -> None:
    """Make ``AutoConfig`` / ``AutoModel`` know ``model_type`` as soon as transformers'
    auto classes load (now, if they have). Idempotent."""
    _PENDING[model_type] = (config_class, model_class)
    _install_hook()
    if CONFIG_AUTO in sys.modules:
        _register_configs([model_type])
    if MODEL_AUTO in sys.modules:
        _register_models([model_type])


def _register_configs(types: Sequence[str]) -> None:
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    for model_type in types:
        if model_type not in CONFIG_MAPPING:
            CONFIG_MAPPING.register(model_type, resolve(_PENDING[model_type][0]))


def _register_models(types: Sequence[str]) -> None:
    from transformers.models.auto.modeling_auto import MODEL_MAPPING

    for model_type in types:
        config_ref, model_ref = _PENDING[model_type]
        config_class = resolve(config_ref)
        if config_class not in MODEL_MAPPING:
            MODEL_MAPPING.register(config_class, resolve(model_ref))


class _AfterLoad(importlib.abc.Loader):
    """Runs the real loader, then registers the pending types."""

    def __init__(self, loader: importlib.abc.Loader, name: str) -> None:
        self.loader, self.name = loader, name

    def __getattr__(self, name: str) -> Any:  # get_source, get_code, ...: the real loader's
        if name == "loader":
            raise AttributeError(name)
        return getattr(self.loader, name)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self.loader.exec_module(module)
        types: List[str] = list(_PENDING)
        if self.name == CONFIG_AUTO:
            _register_configs(types)
        else:
            _register_configs(types)  # modeling_auto imports configuration_auto first
            _register_models(types)


class _Finder(importlib.abc.MetaPathFinder):
    """Finds the two auto modules as the other finders do, with ``_AfterLoad`` around their loader."""

    def find_spec(self, name: str, path: Optional[Sequence[str]], target: Any = None) -> Any:
        if name not in (CONFIG_AUTO, MODEL_AUTO):
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _AfterLoad(spec.loader, name)
        return spec


def _install_hook() -> None:
    if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
