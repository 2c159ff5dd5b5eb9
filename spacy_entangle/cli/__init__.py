from ._app import app
from . import init_backbone, convert, perturb  # noqa: F401
__all__ = ["app"]
