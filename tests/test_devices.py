"""The one GPU probe (backends/devices.py): nvidia-smi here, and a cluster's workers asked
through the same probe once per client and set of workers."""

from distconv.backends import devices


class _Client:
    """A client's two calls the probe makes, counted."""

    def __init__(self, workers, answers):
        self.workers, self.answers, self.runs = workers, answers, 0

    def scheduler_info(self, n_workers=5):
        assert n_workers == -1  # every worker: distributed 2025.4-2026.6 list 5 unless asked
        return {"workers": {w: {} for w in self.workers}}

    def run(self, func):
        assert func is devices.gpu_here
        self.runs += 1
        return dict(zip(self.workers, self.answers))


def test_workers_are_asked_once_per_client_and_set_of_workers():
    client = _Client(["a", "b"], [True, True])
    assert devices.gpu_blocks(client) and devices.gpu_blocks(client)
    assert client.runs == 1
    client.workers, client.answers = ["a", "b", "c"], [True, True, False]  # a worker joined
    assert not devices.gpu_blocks(client)
    assert client.runs == 2


def test_without_a_client_this_process_is_asked(monkeypatch):
    monkeypatch.setattr(devices, "gpu_count", lambda: 0)
    assert devices.gpu_blocks(None) is False
