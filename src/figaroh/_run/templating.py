"""Page templates of the reports: one jinja2 environment over the package's ``templates`` folder.

The markup of every report page lives in ``figaroh/_run/templates/*.html.j2``
(package data); the Python modules build the data (section records, rows,
chart payloads) and render a template or one of its macros. The environment
escapes every value by default (``autoescape``); only fragments that figaroh
built from escaped parts (a rendered macro, the package's own CSS and
JavaScript) are passed as :class:`markupsafe.Markup` (:func:`trusted`).

jinja2 and markupsafe are imported by the first render, not by ``import figaroh…``.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Callable

from figaroh._run.values import _finite_or_none

__all__ = ["environment", "format_number", "macro", "render", "trusted"]

#: Folder of the templates in a regular (unzipped) installation.
_TEMPLATES = Path(__file__).resolve().parent / "templates"


def format_number(value: Any, spec: str = ".4g") -> str:
    """A number formatted with ``spec``; ``—`` for None/NaN/non-numbers, ``∞``/``-∞`` kept.

    Args:
        value: Anything.
        spec: :func:`format` specification (``".4g"``, ``"+.3f"``, …).

    Returns:
        The text (not escaped: the template escapes it).
    """
    f = _finite_or_none(value)
    if f is None:
        if isinstance(value, float) and value in (float("inf"), float("-inf")):
            return "∞" if value > 0 else "-∞"
        return "—"
    return format(f, spec)


@functools.lru_cache(maxsize=1)
def environment() -> Any:
    """The shared :class:`jinja2.Environment` (autoescaping, strict undefined names).

    Filters: ``num(spec=".4g")`` (:func:`format_number`).
    """
    import jinja2

    loader: Any = (
        jinja2.FileSystemLoader(str(_TEMPLATES))
        if _TEMPLATES.is_dir()
        else jinja2.PackageLoader("figaroh._run", "templates")
    )
    env = jinja2.Environment(
        loader=loader,
        autoescape=jinja2.select_autoescape(
            enabled_extensions=("html", "j2"), default_for_string=True, default=True
        ),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        auto_reload=False,
    )
    env.filters["num"] = format_number
    return env


def render(template: str, **context: Any) -> str:
    """Render ``templates/<template>`` with ``context`` (values escaped unless Markup).

    Args:
        template: File name inside the ``templates`` folder (``"page.html.j2"``).
        **context: The template's variables.

    Returns:
        The rendered text.
    """
    return environment().get_template(template).render(**context)


def trusted(text: str) -> Any:
    """``text`` as :class:`markupsafe.Markup`: markup figaroh built from escaped parts.

    Use it only for the package's own assets (CSS, JavaScript) and for
    fragments rendered by a template; never for a value read from a run.
    """
    from markupsafe import Markup

    return Markup(text)


def macro(template: str, name: str) -> Callable[..., Any]:
    """Macro ``name`` of ``templates/<template>``, callable from Python.

    Args:
        template: File name inside the ``templates`` folder.
        name: Macro name.

    Returns:
        A function returning the macro's markup (:class:`markupsafe.Markup`).
    """
    return getattr(environment().get_template(template).module, name)
