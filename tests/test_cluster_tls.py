"""A cluster distconv starts or keeps takes only clients holding the credentials made for it
(TLS): another local user cannot run code on its workers."""

import os
import stat
import time

import pytest

import distconv as dc

CONFIG = {"type": "cpu", "n_workers": 1, "threads_per_worker": 1, "dashboard_address": None}


def _refused(address: str, security=None):
    """A client of ``address`` without the cluster's credentials fails to connect, fast."""
    from distributed import Client

    import gc

    t = time.monotonic()
    with pytest.raises((OSError, TimeoutError, TypeError)):
        Client(address, timeout="5s", security=security).close()
    assert time.monotonic() - t < 5.0
    # the refused client closes as it is collected, taking the lock that a Client starting
    # meanwhile holds (distributed's LoopRunner): collect it now, not inside the next start
    gc.collect()


def _plain(address: str) -> str:
    return "tcp://" + address.split("://", 1)[1]


@pytest.mark.slow
def test_a_started_cluster_takes_only_clients_with_its_credentials():
    from distributed import Client
    from distributed.security import Security

    with dc.cluster(CONFIG, quiet=True) as client:
        address = client.scheduler.address
        assert address.startswith("tls://"), address
        worker = next(iter(client.scheduler_info()["workers"]))
        assert worker.startswith("tls://"), worker
        _refused(_plain(address))  # as a second user's plain Client("tcp://127.0.0.1:PORT")
        _refused(address)  # TLS without any credentials
        _refused(address, Security.temporary())  # credentials made for another cluster
        with Client(address, timeout="5s", security=client.security) as other:
            assert set(other.run(os.getuid).values()) == {os.getuid()}


@pytest.mark.slow
def test_the_configs_own_tls_files_win(tmp_path):
    from distributed import Client
    from distributed.security import Security

    made = Security.temporary()
    files = {}
    for key, attr in (("ca_file", "tls_ca_file"), ("cert", "tls_scheduler_cert"), ("key", "tls_scheduler_key")):
        files[key] = str(tmp_path / f"{key}.pem")
        (tmp_path / f"{key}.pem").write_text(getattr(made, attr))
    with dc.cluster({**CONFIG, "tls": files}, quiet=True) as client:
        address = client.scheduler.address
        assert address.startswith("tls://")
        assert client.security.tls_ca_file == files["ca_file"]
        _refused(_plain(address))
        mine = Security(tls_ca_file=files["ca_file"], tls_client_cert=files["cert"], tls_client_key=files["key"],
                        require_encryption=True)
        with Client(address, timeout="5s", security=mine) as other:
            assert len(other.scheduler_info()["workers"]) == 1


def test_in_process_workers_open_no_socket_to_protect():
    with dc.cluster({**CONFIG, "processes": False}, quiet=True) as client:
        assert client.scheduler.address.startswith("inproc://")


def test_credentials_are_written_for_the_user_alone(tmp_path):
    from distributed.security import Security

    from distconv.session import security

    folder = security.write(Security.temporary(), tmp_path / "state" / "cluster.tls")
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["ca.pem", "cert.pem", "key.pem"]
    assert all(stat.S_IMODE(os.stat(folder / n).st_mode) == 0o600 for n in names)
    (folder / "notes.txt").write_text("the user's")
    security.remove(folder)
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]  # only what it wrote goes


def test_credentials_are_not_written_into_a_link(tmp_path):
    from distributed.security import Security

    from distconv.session import security

    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "cluster.tls").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OSError, match="not a folder of this user's"):
        security.write(Security.temporary(), tmp_path / "cluster.tls")
    assert not any((tmp_path / "elsewhere").iterdir())


@pytest.mark.slow
def test_a_kept_cluster_takes_only_its_own_faces(tmp_path):
    import dask

    from distconv.session import kept

    with dask.config.set({"distconv.cluster-state": str(tmp_path / "state" / "cluster.json")}):
        doc = kept.start(CONFIG)
        try:
            folder = tmp_path / "state" / "cluster.tls"
            assert doc["tls"] == str(folder)
            assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
            for name in ("ca.pem", "cert.pem", "key.pem"):
                assert stat.S_IMODE(os.stat(folder / name).st_mode) == 0o600
            assert doc["address"].startswith("tls://")
            _refused(_plain(doc["address"]))
            _refused(doc["address"])
            # dc.cluster() with the same config joins it with the files; so does `cluster status`
            with dc.cluster(CONFIG, quiet=True) as client:
                assert client.scheduler.address == doc["address"]
                assert set(client.run(os.getuid).values()) == {os.getuid()}
            assert len(kept.status()["workers"]) == 1
        finally:
            kept.stop()
        assert not folder.exists()


def test_a_clusters_own_credentials_are_an_elliptic_curve_key_made_for_it():
    """Made in a fraction of a millisecond (an RSA key took ~0.1 s of the command's start), one
    certificate for every role, different for each cluster."""
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    from distconv.session import security

    a, b = security.temporary(), security.temporary()
    assert isinstance(load_pem_private_key(a.tls_scheduler_key.encode(), None), ec.EllipticCurvePrivateKey)
    assert a.require_encryption and a.tls_ca_file == a.tls_client_cert == a.tls_worker_cert == a.tls_scheduler_cert
    assert x509.load_pem_x509_certificate(a.tls_ca_file.encode()).subject.rfc4514_string() == "CN=dask-internal"
    assert a.tls_scheduler_key != b.tls_scheduler_key
