"""Colours for the MeshCat viewer: packed 0xRRGGBB integers and MeshCat materials.

MeshCat (three.js) takes a colour as one integer ``0xRRGGBB``. :func:`rgb2int`
packs 8-bit channels, :data:`colormap` names a few colours, and
:func:`material` wraps a colour into a ``meshcat.geometry.MeshPhongMaterial``
(it needs the ``meshcat`` extra; this module itself does not).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from figaroh._optional import require

INSTALL_HINT = 'pip install "figaroh[meshcat]"  (or: pip install meshcat)'


def require_meshcat() -> ModuleType:
    """The ``meshcat`` module, with ``meshcat.geometry`` (the materials) loaded.

    Raises:
        MissingDependencyError: meshcat is not installed (an ``ImportError``
            naming ``pip install "figaroh[meshcat]"``).
    """
    require("meshcat.geometry", extra="meshcat", purpose="The MeshCat viewer")
    return require("meshcat", extra="meshcat", purpose="The MeshCat viewer")


def rgb2int(r: int, g: int, b: int) -> int:
    """Pack 8-bit channels into MeshCat's colour integer ``0xRRGGBB``.

    ``rgb2int(r, g, b) = r·256² + g·256 + b``.

    Args:
        r: Red channel, integer in [0, 255].
        g: Green channel, integer in [0, 255].
        b: Blue channel, integer in [0, 255].

    Returns:
        The packed colour, e.g. ``rgb2int(255, 0, 0) == 0xFF0000``.

    Raises:
        ValueError: A channel is not an integer in [0, 255] (for components in
            [0, 1], scale them: ``rgb2int(*(round(255 * c) for c in rgb))``).
    """
    channels = []
    for name, value in (("r", r), ("g", g), ("b", b)):
        try:
            integral = not isinstance(value, bool) and float(value).is_integer()
        except (TypeError, ValueError):
            integral = False
        if not integral or not 0 <= value <= 255:
            raise ValueError(
                f"rgb2int: channel {name}={value!r} must be an integer in [0, 255] "
                "(scale [0, 1] components by 255 first)"
            )
        channels.append(int(value))
    return (channels[0] << 16) | (channels[1] << 8) | channels[2]


#: Named colours (``0xRRGGBB``) accepted by :func:`material` and ``materialFromColor``.
colormap: dict[str, int] = {
    "red": 0xFF2222,
    "green": 0x22FF22,
    "blue": 0x2222FF,
    "yellow": 0xFFFF22,
    "white": 0xFFFFFF,
    "black": 0x000000,
    "gray": 0x888888,
    "grey": 0x888888,
    "pink": 0xFF8888,
    "orange": 0xFF8800,
    "purple": 0x8822FF,
    "cyan": 0x22FFFF,
}


def color_value(color: Any) -> int:
    """A colour as ``0xRRGGBB``: an integer, a name of :data:`colormap` or ``"#rrggbb"``.

    Raises:
        ValueError: Unknown name, malformed ``"#rrggbb"`` or integer out of range.
        TypeError: Not an integer or a string.
    """
    if isinstance(color, str):
        key = color.strip().lower()
        if key in colormap:
            return colormap[key]
        if key.startswith("#") and len(key) == 7:
            try:
                return int(key[1:], 16)
            except ValueError:
                pass
        raise ValueError(
            f"Unknown colour {color!r}: use one of {sorted(colormap)}, '#rrggbb' or 0xRRGGBB"
        )
    if isinstance(color, bool) or not isinstance(color, int):
        raise TypeError(f"A colour is an int 0xRRGGBB or a name, got {type(color).__name__}")
    if not 0 <= color <= 0xFFFFFF:
        raise ValueError(f"Colour {color!r} is outside [0, 0xFFFFFF]")
    return int(color)


def material(color: Any, transparent: bool = False):
    """A ``meshcat.geometry.MeshPhongMaterial`` of the given colour.

    Args:
        color: ``0xRRGGBB`` integer, a name of :data:`colormap` or ``"#rrggbb"``.
        transparent: Let the material be rendered transparent (its opacity is
            then set on the returned object, ``mat.opacity``, in [0, 1]).

    Raises:
        ImportError: meshcat is not installed (the message names the extra).
        ValueError: Unknown colour.
    """
    meshcat = require_meshcat()
    mat = meshcat.geometry.MeshPhongMaterial()
    mat.color = color_value(color)
    mat.transparent = bool(transparent)
    return mat


__all__ = ["INSTALL_HINT", "colormap", "color_value", "material", "require_meshcat", "rgb2int"]
