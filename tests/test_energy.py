"""Energy over the timed window from NVML's counter (a stand-in NVML module), and the None paths."""

from __future__ import annotations

import sys

import pytest
import torch

from trainers.measure.energy import EnergyWindow, energy_window, joules_per_sample, nvml_energy_reader

UUID = "58e9d7c5-b5a6-4f2b-9c41-0123456789ab"


class FakeNVML:
    """The few pynvml calls energy.py makes: one GPU, its counter set by the test."""

    class NVMLError(Exception):
        pass

    def __init__(self, uuid: str = f"GPU-{UUID}", supports_energy: bool = True):
        self.uuid = uuid
        self.supports_energy = supports_energy
        self.counter_mj = 0

    def nvmlInit(self) -> None:
        pass

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> str:
        if uuid != self.uuid:
            raise self.NVMLError("Not Found")
        return "handle-0"

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: str) -> int:
        assert handle == "handle-0"
        if not self.supports_energy:
            raise self.NVMLError("Not Supported")
        return self.counter_mj


def test_window_energy_is_the_counter_difference_in_joules():
    nvml = FakeNVML()
    nvml.counter_mj = 1_000_000
    window = EnergyWindow(nvml_energy_reader(nvml, UUID))
    window.start()
    nvml.counter_mj = 1_250_500
    assert window.stop() == pytest.approx(250.5)


def test_each_window_counts_from_its_own_start():
    nvml = FakeNVML()
    window = EnergyWindow(nvml_energy_reader(nvml, UUID))
    window.start()
    nvml.counter_mj = 4_000
    assert window.stop() == pytest.approx(4.0)
    window.start()
    nvml.counter_mj = 10_000
    assert window.stop() == pytest.approx(6.0)


def test_the_gpu_is_found_by_the_uuid_cuda_reports_with_nvml_prefix():
    assert nvml_energy_reader(FakeNVML(uuid=f"GPU-{UUID}"), UUID) is not None
    assert nvml_energy_reader(FakeNVML(uuid="GPU-another-gpu"), UUID) is None


def test_no_counter_on_the_gpu_gives_none():
    window = EnergyWindow(nvml_energy_reader(FakeNVML(supports_energy=False), UUID))
    window.start()
    assert window.stop() is None


def test_cpu_ranks_measure_no_energy():
    window = energy_window(torch.device("cpu"))
    window.start()
    assert window.stop() is None


def test_without_pynvml_a_gpu_rank_measures_no_energy(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    window = energy_window(torch.device("cuda", 0))
    window.start()
    assert window.stop() is None


def test_joules_per_sample_sums_ranks_over_timed_samples():
    assert joules_per_sample([100.0, 150.0], 500) == pytest.approx(0.5)


@pytest.mark.parametrize("energy, samples", [([100.0, None], 500), ([], 500), ([100.0], 0)])
def test_joules_per_sample_is_none_without_every_ranks_energy_or_samples(energy, samples):
    assert joules_per_sample(energy, samples) is None
