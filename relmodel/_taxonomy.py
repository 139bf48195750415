"""Failure taxonomies: scheduler end states, failure domains and infrastructure
failure categories, loaded from versioned TOML presets in
``relmodel/data/taxonomy/`` (or from any file with the same layout).

>>> tax = load("meta-2024")
>>> tax.is_infrastructure("NODE_FAIL"), tax.is_infrastructure("FAILED", "health_check: xid 79")
(True, True)
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import re
import stat
import types
from pathlib import Path

try:  # Python >= 3.11
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from ._text import decode_utf8
from ._errors import ParameterError
from ._display import key_value_table
from ._units import short_repr, to_hours_with_unit

PRESETS = Path(__file__).resolve().parent / "data" / "taxonomy"
END_STATES = ("COMPLETED", "FAILED", "NODE_FAIL", "PREEMPTED", "REQUEUED", "TIMEOUT", "CANCELLED", "OUT_OF_MEMORY")
DOMAINS = ("user_code", "system_software", "hardware_transient", "hardware_permanent")
_SHARE_TOLERANCE = 1e-6
MAX_TAXONOMY_FILE_BYTES = 2**20  # a taxonomy is a few kilobytes; a bigger "taxonomy" is the wrong file


def _words(text: str) -> list:
    """A cause's words, lower case: runs of letters and digits."""
    return re.findall(r"[a-z0-9]+", text.lower())


class TaxonomyError(ParameterError):
    """An invalid taxonomy; ``.parameter`` is the file (or "taxonomy"), the message names the key and value."""


@dataclasses.dataclass(frozen=True)
class EndState:
    """A scheduler end state and whether it counts as an infrastructure failure.

    Parameters
    ----------
    name : str
        The state, e.g. ``"NODE_FAIL"``.
    infrastructure : bool
        Whether a job ending so is an infrastructure failure.
    aliases : tuple of str, default ()
        Other spellings that map to it.
    description : str, default ""
        What the state means.
    """

    name: str
    infrastructure: bool
    aliases: tuple[str, ...] = ()
    description: str = ""


@dataclasses.dataclass(frozen=True)
class Category:
    """One kind of infrastructure failure.

    Parameters
    ----------
    name : str
        The category's name.
    domain : str
        Its failure domain (a key of `Taxonomy.domains`).
    share : float
        Its fraction of infrastructure failures (the shares of a taxonomy sum
        to 1).
    restart_cost : float
        Restart after such a failure, in hours.
    queue_wait : float
        Queue wait before that restart, in hours.
    description : str
        What the category covers.
    """

    name: str
    domain: str
    share: float
    restart_cost: float
    queue_wait: float
    description: str


@dataclasses.dataclass(frozen=True)
class Taxonomy:
    """A loaded taxonomy preset (immutable).

    Parameters
    ----------
    name : str
        The taxonomy's name.
    version : str
        Its version.
    description : str
        What it describes.
    end_states : mapping of str to EndState
        State name to `EndState` (read-only).
    domains : mapping of str to str
        Domain name to description (read-only).
    categories : tuple of Category
        The failure categories.
    failed_infrastructure_causes : tuple of str
        Words that make a FAILED job an infrastructure failure when its cause
        contains one (category names count too).
    source : str
        The file it was read from.
    """

    name: str
    version: str
    description: str
    end_states: types.MappingProxyType
    domains: types.MappingProxyType
    categories: tuple[Category, ...]
    failed_infrastructure_causes: tuple[str, ...]
    source: str

    def __repr__(self) -> str:
        return (f"Taxonomy(name={self.name!r}, version={self.version!r}, {len(self.categories)} categories, "
                f"{len(self.end_states)} end states, source={short_repr(self.source, 80)})")

    def _repr_html_(self) -> str:
        rows = [("name", self.name), ("version", self.version), ("description", short_repr(self.description, 160)),
                ("categories", ", ".join(c.name for c in self.categories)),
                ("end states", ", ".join(self.end_states)), ("domains", ", ".join(self.domains)),
                ("source", self.source)]
        return key_value_table("Taxonomy", rows)

    def canonical_state(self, state: str) -> str | None:
        """Return the end state a scheduler state (or its alias) maps to.

        Parameters
        ----------
        state : str
            The scheduler's state.

        Returns
        -------
        str or None
            The canonical state name; None if unknown.
        """
        key = state.strip().upper()
        if key in self.end_states:
            return key
        for end in self.end_states.values():
            if key in end.aliases:
                return end.name
        return None

    def is_infrastructure(self, state: str, cause: str = "") -> bool:
        """Tell whether a job that ended in `state` with recorded `cause` is an infrastructure failure.

        Parameters
        ----------
        state : str
            The job's end state.
        cause : str, default ""
            The recorded cause, if any.

        Returns
        -------
        bool
            True for an infrastructure failure.
        """
        canonical = self.canonical_state(state)
        if canonical is None:
            return False
        if self.end_states[canonical].infrastructure:
            return True
        return canonical == "FAILED" and self.cause_is_infrastructure(cause)

    def cause_is_infrastructure(self, cause: str) -> bool:
        """Tell whether a recorded cause names an infrastructure failure.

        It does when it contains a rule phrase or a category name as whole
        words, in order: case, spaces, underscores, hyphens and punctuation
        between words do not matter ("NCCL timeout" names the category
        ``nccl_timeout``, "Health-check failed" the rule ``health_check``).

        Parameters
        ----------
        cause : str
            The recorded cause.

        Returns
        -------
        bool
            True if the cause names an infrastructure failure.
        """
        text = " " + " ".join(_words(cause or "")) + " "
        return any(f" {phrase} " in text for phrase in self._cause_phrases)

    @functools.cached_property
    def _cause_phrases(self) -> tuple:
        names = (*self.failed_infrastructure_causes, *(c.name for c in self.categories))
        return tuple(dict.fromkeys(" ".join(_words(n)) for n in names if _words(n)))

    def category(self, name: str) -> Category:
        """Return the category named `name`.

        Parameters
        ----------
        name : str
            The category's name.

        Returns
        -------
        Category
            The category.

        Raises
        ------
        KeyError
            If there is no such category.
        """
        for cat in self.categories:
            if cat.name == name:
                return cat
        raise KeyError(f"taxonomy {self.name!r} has no category {name!r}")

    @property
    def shares(self) -> dict:
        """Each category's share, by name."""
        return {c.name: c.share for c in self.categories}


def presets() -> tuple[str, ...]:
    """Return the names of the bundled presets.

    Returns
    -------
    tuple of str
        The preset names.
    """
    return tuple(sorted(p.stem for p in PRESETS.glob("*.toml")))


def load(name_or_path: str | Path | Taxonomy = "meta-2024") -> Taxonomy:
    """Load a taxonomy: a bundled preset name (``"meta-2024"``, ``"slurm-default"``) or a TOML path.

    Parameters
    ----------
    name_or_path : str, pathlib.Path or Taxonomy, default "meta-2024"
        A preset name, a TOML file, or a taxonomy (returned as is).

    Returns
    -------
    Taxonomy
        The taxonomy.

    Raises
    ------
    TaxonomyError
        On an unknown name, an unreadable file or an invalid value (the message
        names the file, the key and the value).
    """
    if isinstance(name_or_path, Taxonomy):
        return name_or_path
    if not isinstance(name_or_path, (str, os.PathLike)) or "\0" in str(name_or_path):
        raise TaxonomyError("taxonomy", f"expected a preset name ({', '.join(presets())}) or the path of a taxonomy "
                                        f"file (got {short_repr(name_or_path)})")
    path = Path(name_or_path)
    if not path.suffix and not path.exists():
        path = PRESETS / f"{name_or_path}.toml"
        if not path.exists():
            raise TaxonomyError("taxonomy", f"unknown taxonomy {short_repr(str(name_or_path))}; "
                                            f"presets: {', '.join(presets())}")
    try:
        text = read_small_text(path, MAX_TAXONOMY_FILE_BYTES)
    except OSError as err:
        raise TaxonomyError(str(path), f"cannot read ({err.strerror or err})") from None
    except ValueError as err:  # too big, not a regular file, not UTF-8
        raise TaxonomyError(str(path), str(err)) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise TaxonomyError(str(path), f"not valid TOML ({err})") from None
    except RecursionError:  # tomllib recurses into nested arrays and tables
        raise TaxonomyError(str(path), "not valid TOML (nested too deeply)") from None
    return _build(data, path)


def read_small_text(path, max_bytes: int) -> str:
    """Return the text (`decode_utf8`, which raises a `ValueError` where it is not UTF-8) of the bytes that
    `read_small_bytes` returns, or refuses."""
    return decode_utf8(read_small_bytes(path, max_bytes))


def read_small_bytes(path, max_bytes: int) -> bytes:
    """Return the bytes of a regular file of at most `max_bytes`.

    Checked with stat before it is opened: a device (/dev/zero), a FIFO or a
    terminal (/dev/stdin) would block or never end, and a huge file would fill
    memory. (A file that grows after the stat is cut off at max_bytes + 1 and refused.)

    Parameters
    ----------
    path : str or pathlib.Path
        The file.
    max_bytes : int
        The largest size accepted.

    Returns
    -------
    bytes
        The file's content.

    Raises
    ------
    ValueError
        If the file is not a regular file or is too large.
    OSError
        If it cannot be read.
    """
    info = os.stat(path)
    if not stat.S_ISREG(info.st_mode):
        kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file (a device, FIFO or socket)"
        raise ValueError(f"{kind}; expected a text file")
    if info.st_size > max_bytes:
        raise ValueError(f"{info.st_size} bytes, over the limit of {max_bytes} for this kind of file")
    with open(path, "rb") as file:
        data = file.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ValueError(f"grew past the limit of {max_bytes} bytes while read")
    return data


def _build(data: dict, path: Path) -> Taxonomy:
    def fail(key, value, why):
        raise TaxonomyError(str(path), f"{key} = {short_repr(value)}: {why}")

    def text(table, key, where, required=True):
        value = table.get(key, "" if not required else None)
        if not isinstance(value, str) or (required and not value.strip()):
            fail(f"{where}{key}", value, "expected a non-empty string")
        return value

    name, version = text(data, "name", ""), str(data.get("version", ""))
    if not version:
        fail("version", data.get("version"), "expected a version")

    states = data.get("end_states")
    if not isinstance(states, dict):
        fail("end_states", states, "expected a table of end states")
    end_states = {}
    for state, spec in states.items():
        where = f"end_states.{state}."
        if state not in END_STATES:
            fail(f"end_states.{state}", spec, f"unknown end state; expected one of {', '.join(END_STATES)}")
        if not isinstance(spec, dict) or not isinstance(spec.get("infrastructure"), bool):
            fail(f"{where}infrastructure", spec.get("infrastructure") if isinstance(spec, dict) else spec,
                 "expected true or false")
        aliases = spec.get("aliases", [])
        if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
            fail(f"{where}aliases", aliases, "expected a list of strings")
        end_states[state] = EndState(state, spec["infrastructure"], tuple(a.upper() for a in aliases),
                                     text(spec, "description", where, required=False))
    missing = [s for s in END_STATES if s not in end_states]
    if missing:
        fail("end_states", sorted(end_states), f"missing {', '.join(missing)}")

    domains = data.get("domains")
    if not isinstance(domains, dict) or set(domains) != set(DOMAINS):
        fail("domains", sorted(domains) if isinstance(domains, dict) else domains,
             f"expected exactly the domains {', '.join(DOMAINS)}")

    rules = data.get("rules", {})
    causes = rules.get("failed_infrastructure_causes", []) if isinstance(rules, dict) else rules
    if not isinstance(causes, list) or not all(isinstance(c, str) for c in causes):
        fail("rules.failed_infrastructure_causes", causes, "expected a list of strings")

    raw = data.get("categories")
    if not isinstance(raw, list) or not raw:
        fail("categories", raw, "expected at least one [[categories]] table")
    categories = []
    for i, spec in enumerate(raw):
        where = f"categories[{i}]."
        if not isinstance(spec, dict):
            fail(f"categories[{i}]", spec, "expected a table")
        cat_name = text(spec, "name", where)
        if spec.get("domain") not in DOMAINS:
            fail(f"{where}domain", spec.get("domain"), f"expected one of {', '.join(DOMAINS)}")
        share = spec.get("share")
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not (0 <= share <= 1):
            fail(f"{where}share", share, "expected a number in [0, 1]")
        hours = {}
        for key in ("restart_cost", "queue_wait"):
            try:
                hours[key] = to_hours_with_unit(spec.get(key), key)
            except ValueError as err:
                fail(f"{where}{key}", spec.get(key), str(err).split(": ", 1)[-1])
            if not math.isfinite(hours[key]) or hours[key] < 0:
                fail(f"{where}{key}", spec.get(key), "expected a finite duration >= 0")
        categories.append(Category(cat_name, spec["domain"], float(share), hours["restart_cost"],
                                   hours["queue_wait"], text(spec, "description", where, required=False)))
    names = [c.name for c in categories]
    if len(set(names)) != len(names):
        fail("categories.name", names, "category names must be distinct")
    total = math.fsum(c.share for c in categories)
    if abs(total - 1.0) > _SHARE_TOLERANCE:
        fail("categories.share", [c.share for c in categories], f"shares must sum to 1 (they sum to {total:.6g})")

    return Taxonomy(name=name, version=version, description=str(data.get("description", "")),
                    end_states=types.MappingProxyType(end_states), domains=types.MappingProxyType(dict(domains)),
                    categories=tuple(categories), failed_infrastructure_causes=tuple(causes), source=str(path))
