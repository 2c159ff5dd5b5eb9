from ._app import app
from . import init_backbone, convert  # noqa: F401
__all__ = ["app"]
