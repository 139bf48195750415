"""The array layout: `layout.py`, its Cython twin's compile-time constants, and
the column tables they describe (the promise in `layout.py`'s docstring)."""

import ast
import re
from pathlib import Path

import numpy as np
import pytest

from relmodel._kernels import _timeline_cy as cy
from relmodel._kernels import layout

CONSTANT = re.compile(r"[A-Z][A-Z0-9_]*")

# Each table: the prefix of its column indices -> the name of its column count.
TABLES = {"P_": "N_PARAMS", "J_": "N_JOB_FIELDS", "S_": "N_STATS", "C_": "N_CAT_STATS", "V_": "N_LEVEL_PARAMS",
          "L_": "N_LEVEL_STATS"}
# Layout constants that are neither a column index nor a column count.
SCALARS = {"N_BINS", "BLOCK_SIZE", "SETTLE_MAX_HAZARD_MILLI"}


def python_layout() -> dict[str, int]:
    """Every UPPER_CASE int of `relmodel._kernels.layout`, read off the module itself."""
    return {name: value for name, value in vars(layout).items()
            if CONSTANT.fullmatch(name) and isinstance(value, int) and not isinstance(value, bool)}


def test_layout_is_not_empty_and_layout_dict_lists_it():
    constants = python_layout()
    assert len(constants) > len(TABLES) + len(SCALARS)
    assert layout.LAYOUT == constants


def test_cython_twin_has_every_python_constant_with_the_same_value():
    twin = cy.LAYOUT
    missing = sorted(set(python_layout()) - set(twin))
    assert not missing, f"_timeline_cy.LAYOUT lacks {missing}"
    differ = {name: (value, twin[name]) for name, value in python_layout().items() if twin[name] != value}
    assert not differ, f"layout.py and _timeline_cy.pyx disagree (python, cython): {differ}"


def test_cython_twin_has_no_constant_the_python_layout_lacks():
    extra = sorted(set(cy.LAYOUT) - set(python_layout()))
    assert not extra, f"_timeline_cy.LAYOUT has constants layout.py lacks: {extra}"


def test_every_constant_belongs_to_a_table_or_is_a_known_scalar():
    constants = set(python_layout())
    counts = set(TABLES.values())
    unknown = sorted(name for name in constants - counts - SCALARS
                     if not any(name.startswith(prefix) for prefix in TABLES))
    assert not unknown, f"constants in no table (add them to TABLES or SCALARS here): {unknown}"
    assert counts <= constants and SCALARS <= constants


@pytest.mark.parametrize("prefix", TABLES)
def test_columns_are_distinct_and_run_from_zero_to_count(prefix):
    constants = python_layout()
    count = constants[TABLES[prefix]]
    columns = {name: value for name, value in constants.items() if name.startswith(prefix)}
    assert len(columns) == count, f"{prefix}* has {len(columns)} columns, {TABLES[prefix]} = {count}"
    assert sorted(columns.values()) == list(range(count)), f"{prefix}* columns: {columns}"


@pytest.mark.parametrize("kernel", ["timeline_numba.py", "failure_sample.py", "rng_numba.py"])
def test_numba_kernels_import_the_layout_rather_than_copy_it(kernel):
    """No module-level assignment to a layout name: the Numba kernels take them from layout.py."""
    tree = ast.parse((Path(layout.__file__).parent / kernel).read_text(encoding="utf-8"))
    assigned = {target.id for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
                for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
                if isinstance(target, ast.Name)}
    copied = sorted(assigned & set(python_layout()))
    assert not copied, f"{kernel} defines layout constants itself: {copied}"


def test_the_twin_restates_no_layout_constant_and_components_follow_the_stats():
    # setup.py writes the twin's constants from layout.LAYOUT (_layout.pxi): the .pyx itself
    # assigns none of them, so there is one declaration to edit.
    pyx = Path(__file__).resolve().parents[1] / "relmodel" / "_kernels" / "_timeline_cy.pyx"
    text = pyx.read_text()
    assert 'include "_layout.pxi"' in text
    restated = [name for name in layout.LAYOUT if re.search(rf"^\s*{name}\s*=", text, flags=re.M)]
    assert not restated
    from relmodel._engine import COMPONENTS

    assert COMPONENTS == ("productive", *layout.COMPONENT_STATS)
    sums = {value for name, value in layout.LAYOUT.items() if name.startswith("S_")}
    columns = list(layout.COMPONENT_STATS.values())
    assert set(columns) <= sums and len(set(columns)) == len(columns)  # block sums, each once


COLUMN_TABLES = {"V_": layout.LEVEL_PARAMS, "J_": layout.JOB_COLUMNS, "C_": layout.CATEGORY_COLUMNS,
                 "L_": layout.LEVEL_COLUMNS}


@pytest.mark.parametrize("prefix", COLUMN_TABLES)
def test_column_records_declare_each_constant_at_its_index(prefix):
    table = COLUMN_TABLES[prefix]
    assert [layout.LAYOUT[column.constant] for column in table] == list(range(len(table)))
    assert layout.LAYOUT[TABLES[prefix]] == len(table)
    assert {c.constant for c in table} == {name for name in layout.LAYOUT if name.startswith(prefix)}
    assert len({c.name for c in table}) == len(table)


def test_labelled_variables_take_the_column_records_units_and_dtypes():
    import relmodel as rm
    from relmodel import _labels as labels

    variables = {**{f"job_{c.name}": c for c in layout.JOB_COLUMNS},
                 **{f"{c.name}_by_category": c for c in layout.CATEGORY_COLUMNS},
                 **{f"job_{c.name}_by_category": c for c in layout.CATEGORY_COLUMNS},
                 **{f"{c.name}_by_level": c for c in layout.LEVEL_COLUMNS},
                 **{f"job_{c.name}_by_level": c for c in layout.LEVEL_COLUMNS}}
    catalogue = {**labels.SIMULATED_BY_CATEGORY, **labels.SIMULATED_BY_LEVEL, **labels.PER_JOB}
    assert {name: catalogue[name].units for name in variables} == {name: c.unit for name, c in variables.items()}
    fast = rm.CheckpointLevel(interval="10min", cost="5s", restart="3min", persist="1min", survives=0.85)
    sc = rm.Scenario(n_gpus=1024, failure_rate=0.05, checkpoint_interval="1h", checkpoint_cost="5min", work="1d",
                     taxonomy=rm.load_taxonomy("meta-2024"), fast_checkpoints=(fast,))
    ds = rm.simulate(sc, n_jobs=50, keep_jobs=True, backend="numba")
    # A job's own columns in their dtype; its sums by category and level stay float64.
    dtypes = {name: "float64" for name in variables if name.startswith("job_")}
    dtypes.update({f"job_{c.name}": c.dtype for c in layout.JOB_COLUMNS})
    assert {name: ds[name].dtype for name in dtypes} == {name: np.dtype(d) for name, d in dtypes.items()}
    assert {name: ds[name].attrs["units"] for name in dtypes} == {name: variables[name].unit for name in dtypes}


def test_a_jobs_outcome_names_the_job_columns_in_their_order():
    from relmodel._kernels.timeline_numba import JobOutcome

    assert JobOutcome._fields == tuple(c.name for c in layout.JOB_COLUMNS)


@pytest.mark.parametrize("entry", ["run_blocks", "run_jobs"])
def test_the_kernels_take_their_scenario_arrays_in_kernel_inputs_order(entry):
    """`Packed.kernel_args` passes `KernelInputs` by position: its names are both kernels' first parameters."""
    import inspect

    from relmodel._engine import KernelInputs
    from relmodel._kernels import timeline_numba

    names = list(KernelInputs._fields)
    for kernel in (getattr(timeline_numba, entry).py_func, getattr(cy, entry)):
        assert list(inspect.signature(kernel).parameters)[:len(names) + 1] == [*names, "seed"]
