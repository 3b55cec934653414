"""Who may join a cluster: the TLS credentials of its scheduler and workers.

A cluster distconv starts accepts only clients holding credentials made for it: a command's own
cluster gets fresh ones in memory (its workers are started from this process); a kept cluster's
are also written to files of the user's own (a 0700 folder beside its record, record.py), which
every face that joins it reads. A ``tls:`` mapping in the cluster config (ca_file, cert, key)
wins over both. Protocols that TLS does not cover (ucx, inproc: in-process workers, no socket)
are left as configured.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

FILES = {"tls_ca_file": "ca.pem", "tls_scheduler_cert": "cert.pem", "tls_scheduler_key": "key.pem"}


def of_config(cfg: dict):
    """The Security of ``cfg``'s own ``tls:`` files (client, scheduler and worker alike), or
    None when it names none."""
    tls = cfg.get("tls")
    if not tls:
        return None
    return _one_for_all(tls.get("ca_file"), tls.get("cert"), tls.get("key"))


def _one_for_all(ca, cert, key):
    """A Security of one certificate and key for every role (client, scheduler, worker), TLS
    required."""
    from distributed.security import Security

    return Security(tls_ca_file=ca, tls_client_cert=cert, tls_client_key=key, tls_scheduler_cert=cert,
                    tls_scheduler_key=key, tls_worker_cert=cert, tls_worker_key=key, require_encryption=True)


def for_cluster(cfg: dict):
    """The Security a local cluster of ``cfg`` starts with: the config's own, else credentials
    made for this cluster alone; None where the protocol is not TCP-based (ucx) or the workers
    are threads of this process."""
    own = of_config(cfg)
    if own is not None:
        return own
    if cfg["protocol"] not in ("tcp", "tls") or (cfg["type"] != "cuda" and not cfg["processes"]):
        return None
    return temporary()


def temporary():
    """Credentials made in memory for one cluster: one self-signed certificate for every role,
    as distributed's ``Security.temporary`` makes them, on an elliptic-curve key (its 2048-bit
    RSA key takes ~0.1 s of the command's one core to make, on the way to the cluster)."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "dask-internal")])
    now = datetime.datetime.now(tz=datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("dask-internal")]), critical=False)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=365))
            .sign(key, hashes.SHA256()))
    pem_key = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    pem_cert = cert.public_bytes(serialization.Encoding.PEM).decode()
    return _one_for_all(pem_cert, pem_cert, pem_key)


def protocol(cfg: dict, security) -> str:
    """The protocol a local cluster of ``cfg`` listens on with ``security``."""
    return "tls" if security is not None else cfg["protocol"]


def write(security, folder: Path) -> Path:
    """Write ``security``'s credentials (made in memory) into ``folder``: the folder 0700, the
    files 0600, each written whole under a new name and moved into place. A folder that is
    not a directory of this user's is refused (OSError)."""
    folder = Path(folder)
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise OSError(f"{folder} is not a folder of this user's: the cluster's credentials are not written there")
    os.chmod(folder, 0o700)
    for attr, name in FILES.items():
        tmp = folder / f".{name}.{os.getpid()}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(getattr(security, attr))
        os.replace(tmp, folder / name)
    return folder


def read(folder) -> object:
    """The Security of the credentials ``write`` put in ``folder`` (one certificate for every
    role, as ``Security.temporary`` makes it)."""
    return _one_for_all(*(str(Path(folder) / name) for name in FILES.values()))


def remove(folder):
    """Remove the credential files ``write`` made in ``folder``, and the folder once empty;
    anything else in it stays."""
    folder = Path(folder)
    for name in FILES.values():
        (folder / name).unlink(missing_ok=True)
    try:
        folder.rmdir()
    except OSError:
        pass


def of_record(doc: dict, cfg: dict):
    """The Security that joins the kept cluster of record ``doc`` (record.py) started from
    ``cfg``: the config's own ``tls:``, else the credentials written for it, else None (a
    cluster that has none)."""
    own = of_config(cfg)
    if own is not None:
        return own
    return read(doc["tls"]) if doc.get("tls") else None
