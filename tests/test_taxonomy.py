"""Taxonomy presets: the shape `TaxonomyMixture.from_taxonomy` relies on, and validation."""

import dataclasses
from pathlib import Path

import pytest

from relmodel import _taxonomy as taxonomy
from relmodel._taxonomy import Category, TaxonomyError


@pytest.mark.parametrize("name", taxonomy.presets())
def test_presets_load_and_shares_sum_to_one(name):
    tax = taxonomy.load(name)
    assert tax.name == name and tax.version
    assert set(tax.end_states) == set(taxonomy.END_STATES)
    assert set(tax.domains) == set(taxonomy.DOMAINS)
    assert sum(c.share for c in tax.categories) == pytest.approx(1.0)
    assert all(isinstance(c.restart_cost, float) and isinstance(c.queue_wait, float) for c in tax.categories)


def test_meta_preset_shape():
    tax = taxonomy.load("meta-2024")
    assert "meta-2024" in taxonomy.presets() and "slurm-default" in taxonomy.presets()
    assert [f.name for f in dataclasses.fields(Category)] == [
        "name", "domain", "share", "restart_cost", "queue_wait", "description"]
    names = {c.name for c in tax.categories}
    assert {"gpu_memory_ecc", "pcie", "nvlink", "infiniband_link", "filesystem_mount", "driver",
            "nccl_timeout", "host_maintenance"} <= names
    assert tax.category("gpu_memory_ecc").restart_cost == pytest.approx(0.25)  # "15min"
    with pytest.raises(dataclasses.FrozenInstanceError):
        tax.name = "x"
    with pytest.raises(TypeError):
        tax.end_states["FAILED"] = None
    source = Path(tax.source).read_text()
    assert "Kokolis" in source and "ILLUSTRATIVE" in source


def test_infrastructure_rules():
    tax = taxonomy.load("meta-2024")
    assert tax.is_infrastructure("NODE_FAIL") and tax.is_infrastructure("BOOT_FAIL")
    assert tax.is_infrastructure("FAILED", "health_check: gpu_memory_ecc")
    assert tax.is_infrastructure("FAILED", "nvlink")
    assert not tax.is_infrastructure("FAILED", "exit code 1")
    assert not tax.is_infrastructure("FAILED")
    assert not tax.is_infrastructure("COMPLETED", "health_check")  # the rule is for FAILED only
    assert not tax.is_infrastructure("PREEMPTED") and not tax.is_infrastructure("TIMEOUT")
    assert tax.canonical_state("deadline") == "TIMEOUT" and tax.canonical_state("RUNNING") is None


def test_load_by_path_and_same_object(tmp_path):
    tax = taxonomy.load("meta-2024")
    assert taxonomy.load(tax) is tax
    assert taxonomy.load(tax.source).categories == tax.categories


@pytest.mark.parametrize("edit, key, value", [
    (("share = 0.18", "share = 0.5"), "categories.share", "0.5"),
    (('restart_cost = "15min"', 'restart_cost = "15m"'), "categories[0].restart_cost", "15m"),
    # A bare number is refused as the command line and study files refuse it, not read as hours.
    (('restart_cost = "15min"', 'restart_cost = 15'), "categories[0].restart_cost", "has no unit"),
    (('queue_wait = "10min"', 'queue_wait = "10"'), "categories[0].queue_wait", "has no unit"),
    (('domain = "hardware_transient"', 'domain = "cosmic_rays"'), "categories[0].domain", "cosmic_rays"),
    (("[end_states.TIMEOUT]\ninfrastructure = false", "[end_states.TIMEOUT]\ninfrastructure = 0"),
     "end_states.TIMEOUT.infrastructure", "0"),
    (("[end_states.OUT_OF_MEMORY]", "[end_states.OUT_OF_MEMRY]"), "end_states.OUT_OF_MEMRY", ""),
])
def test_validation_errors_name_file_key_and_value(tmp_path, edit, key, value):
    text = Path(taxonomy.load("meta-2024").source).read_text()
    assert edit[0] in text
    path = tmp_path / "bad.toml"
    path.write_text(text.replace(edit[0], edit[1], 1))
    with pytest.raises(TaxonomyError) as info:
        taxonomy.load(path)
    message = str(info.value)
    assert str(path) in message and key in message and value in message


def test_unknown_name_and_bad_toml(tmp_path):
    with pytest.raises(TaxonomyError, match="unknown taxonomy 'nope'"):
        taxonomy.load("nope")
    path = tmp_path / "x.toml"
    path.write_text("name = [")
    with pytest.raises(TaxonomyError, match="not valid TOML"):
        taxonomy.load(path)


# Llama 3 paper, Table 5: unexpected interruptions by root cause.
LLAMA3_INFRASTRUCTURE = ["Faulty GPU", "GPU HBM3 Memory", "Network Switch/Cable", "Host Maintenance",
                         "GPU SRAM Memory", "GPU System Processor", "NIC", "NCCL Watchdog Timeouts",
                         "Silent Data Corruption", "GPU Thermal Interface + Sensor", "SSD", "Power Supply",
                         "Server Chassis", "IO Expansion Board", "CPU", "System Memory"]
LLAMA3_SOFTWARE = ["Software Bug", "Dependency", "Other software"]


@pytest.mark.parametrize("cause", [*LLAMA3_INFRASTRUCTURE, "NCCL timeout", "GPU ECC error", "InfiniBand link down",
                                   "Host maintenance", "nccl_timeout", "health-check failed: xid 79"])
def test_named_infrastructure_causes_are_classed(cause):
    assert taxonomy.load("meta-2024").is_infrastructure("FAILED", cause)


@pytest.mark.parametrize("cause", [*LLAMA3_SOFTWARE, "CUDA out of memory", "nicety", "", "user error: bad config"])
def test_software_and_unknown_causes_are_not_infrastructure(cause):
    assert not taxonomy.load("meta-2024").is_infrastructure("FAILED", cause)


def test_the_run_record_guide_lists_every_phrase_of_the_default_taxonomy():
    guide = " ".join((Path(__file__).parents[1] / "docs/user-guide/run-record.md").read_text().split())
    tax = taxonomy.load("meta-2024")
    for phrase in tax.failed_infrastructure_causes + tuple(c.name.replace("_", " ") for c in tax.categories):
        assert f" {phrase}," in guide or f" {phrase};" in guide or f" {phrase}." in guide, phrase
