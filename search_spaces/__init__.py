"""The bundled search spaces: YAML files shipped as this package's data, found with ``importlib.resources``
wherever raysweep is installed (``raysweep.planning.space.SPACES_DIR``)."""
