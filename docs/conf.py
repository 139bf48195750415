"""Sphinx configuration for the relmodel documentation.

Build (CI runs exactly this; warnings are errors)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html
"""

import os
import sys
from pathlib import Path

# Numba compiles on import of some modules: keep its cache out of the source tree
# (before relmodel is imported; an outer NUMBA_CACHE_DIR wins).
os.environ.setdefault("NUMBA_CACHE_DIR", str(Path(__file__).parent / "_build" / "numba_cache"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import relmodel  # noqa: E402
from relmodel.record import TRAINER_FORMATS  # noqa: E402


def _write_trainer_formats():
    """The trainer-logs guide's per-format sections, from each reader's own description (one source)."""
    sections = []
    for fmt in TRAINER_FORMATS.values():
        sections += [f"### {fmt.title} (`{fmt.name}`)", "", f"**Reads:** {fmt.reads}.", "",
                     f"**Cannot know:** {fmt.cannot}", ""]
    out = Path(__file__).resolve().parent / "_generated" / "trainer-formats.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text("\n".join(sections), encoding="utf-8")


_write_trainer_formats()

project = "relmodel"
author = "relmodel contributors"
copyright = "relmodel contributors"
release = relmodel.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "sphinx_click",
    "sphinx_gallery.gen_gallery",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
# No smart quotes: they turned "--gpus" in the command help into an en dash, and a
# command copied from the page then failed (.ci/run checks the built page).
smartquotes = False
exclude_patterns = ["_build", "_generated", "auto_examples/*.ipynb", "auto_examples/*.py", "auto_examples/*.zip"]
html_theme = "alabaster"
html_theme_options = {"description": "Reliability of large ML training runs", "fixed_sidebar": True}
html_static_path = []

# -- autodoc / autosummary ---------------------------------------------------
# undoc-members: a public object without a docstring is still listed, so numpydoc's
# GL08 check (below) fails the build for it.
autodoc_default_options = {
    "members": True, "undoc-members": True, "member-order": "bysource", "show-inheritance": True,
}
autodoc_typehints = "none"  # the numpydoc Parameters/Returns sections carry the types
autosummary_generate = False  # the API pages are written by hand; nothing is generated

# -- numpydoc ----------------------------------------------------------------
numpydoc_show_class_members = False  # autodoc :members: lists them; avoids duplicate stubs
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True

# Validation: every docstring autodoc renders is checked; a failure is a warning,
# and `-W` makes it an error. "all" minus the checks that are style preferences
# rather than structure:
#   ES01 (extended summary), EX01 (Examples), SA01 (See Also): optional sections;
#   SS05 (summary in the infinitive): "Returns ..." and "The ..." summaries read fine;
#   SS06 (summary on one line): many summaries are a full sentence;
#   GL01/GL02 (where the quotes sit): layout, not content;
#   PR08/PR09/RT04/RT05 (capital letter, final period of each description):
#   descriptions are often a short phrase ("hours", "failures per node-day");
#   RT02 (a named return value): numpydoc allows "name : type" for one value.
# What stays enforced: a docstring on every public object (GL08), a summary
# (SS01-SS04), every parameter documented, known, in order, with a type and a
# description (PR01-PR07, PR10), a Returns section with a description for
# anything that returns (RT01, RT03), Yields for generators (YD01), known
# sections in order (GL03, GL05-GL07, GL09, GL10), See Also entries (SA02-SA04).
numpydoc_validation_checks = {
    "all", "ES01", "EX01", "SA01", "SS05", "SS06", "GL01", "GL02",
    "PR08", "PR09", "RT02", "RT04", "RT05",
}
numpydoc_validation_exclude = {
    # Dunder methods are not API.
    r"\.__\w+__$",
    # Catalogues held in dicts: the validator would read dict's own docstring; the API
    # pages describe each (``.. data::``).
    r"^relmodel\.(pipeline\.(MODEL_PRESETS|GPUS)|elastic\.(FITTED|ROOFLINE)_MODELS|record\.TRAINER_FORMATS)$",
    # A hypothesis @composite strategy: its generated wrapper has no source code for
    # numpydoc to inspect (validation would crash); its docstring is still rendered.
    r"^relmodel\.testing\.strategies\.failed_workers$",
    # Job is a slotted dataclass (a million of them in a trace): its fields show as slot
    # members without docstrings of their own; the class's Parameters section documents them.
    r"^relmodel\.elastic\.Job\.(model|work|batch|gpus|(min|max)_(local_)?batch|(min|max)_gpus|submit_time|job_id|noise_scale)$",
}

# -- sphinx-gallery ----------------------------------------------------------
# The examples are command-line scripts; the gallery runs each in its quick mode
# (`--quick --out FOLDER`, seconds each) and shows the figures it writes. They
# draw on matplotlib `Figure` objects, not pyplot, so the scraper collects the
# PNG files from the example's output folder instead of open pyplot figures.
_GALLERY_OUT = Path(__file__).parent / "_build" / "gallery_out"


def _example_argv(gallery_conf, script_vars):
    out = _GALLERY_OUT / Path(script_vars["src_file"]).stem
    out.mkdir(parents=True, exist_ok=True)
    return ["--quick", "--out", str(out)]


def _written_figures(block, block_vars, gallery_conf):
    import shutil

    from sphinx_gallery.scrapers import figure_rst

    out = _GALLERY_OUT / Path(block_vars["src_file"]).stem
    shown = block_vars.setdefault("relmodel_shown", set())
    images = []
    for png in sorted(out.glob("*.png")):
        if png.name in shown:
            continue
        shown.add(png.name)
        target = next(block_vars["image_path_iterator"])
        shutil.copyfile(png, target)
        images.append(target)
    return figure_rst(images, gallery_conf["src_dir"])


# Functions in the config cannot be pickled into Sphinx's environment cache, which
# only means a changed conf.py rebuilds everything.
suppress_warnings = ["config.cache"]

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"\.py$",  # run every example (quick mode)
    "reset_argv": _example_argv,
    "image_scrapers": (_written_figures,),
    "download_all_examples": False,
    "min_reported_time": 0,
    "write_computation_times": False,
}

# -- MyST (the pages by topic) ----------------------------------------------
myst_heading_anchors = 3
