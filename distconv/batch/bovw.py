"""The bag-of-visual-words workflow: images -> dense patch descriptors -> k-means vocabulary ->
per-image visual-word histograms -> image clusters. Its result (bovw.npz, bovw.json) is
written as one block of the output, as the engine writes its blocks (fencing.block_write)."""

from __future__ import annotations

import io
import json
import time

import numpy as np


def descriptors(img: np.ndarray, patch: int) -> np.ndarray:
    """Dense non-overlapping patch x patch grey patches, each centred and scaled (n, patch^2)."""
    if img.ndim == 3:
        img = img[..., :3].mean(axis=2)
    img = img.astype(np.float32) / 255.0
    h, w = (img.shape[0] // patch) * patch, (img.shape[1] // patch) * patch
    p = img[:h, :w].reshape(h // patch, patch, w // patch, patch).transpose(0, 2, 1, 3).reshape(-1, patch * patch)
    p = p - p.mean(axis=1, keepdims=True)
    return (p / (np.linalg.norm(p, axis=1, keepdims=True) + 1e-3)).astype(np.float32)


def run_bovw(wf, client=None, overwrite=False) -> dict:
    import skimage.data

    from ..engine import fencing, marks, ownership
    from ..engine.location import Location, write_pieces
    from ..ops import kmeans

    t0 = time.perf_counter()
    params = wf.steps[0][1]
    patch = int(params.get("patch", 8))
    k = int(params.get("n_clusters", 32))
    n_img_clusters = int(params.get("image_clusters", 3))
    seed = int(params.get("seed", 0))
    names = wf.input["images"]
    descs = [descriptors(getattr(skimage.data, n)(), patch) for n in names]
    X = np.concatenate(descs)
    groups = np.concatenate([np.full(len(d), i) for i, d in enumerate(descs)])
    if client is not None:
        import dask.array as da

        Xd = da.from_array(X, chunks=(max(1, len(X) // 8), X.shape[1]))
        vocab = kmeans.KMeans(k, seed=seed, max_iter=50).fit(Xd)
        hist = kmeans.bovw_histogram(Xd, vocab.cluster_centers_, groups, n_groups=len(names)).compute()
    else:
        vocab = kmeans.KMeans(k, seed=seed, max_iter=50).fit(X)
        hist = kmeans.bovw_histogram(X, vocab.cluster_centers_, groups, n_groups=len(names))
    freq = hist / np.maximum(hist.sum(axis=1, keepdims=True), 1)
    images = kmeans.KMeans(min(n_img_clusters, len(names)), seed=seed).fit(freq)
    out = str(wf.outputs["path"])
    npz = io.BytesIO()
    np.savez(npz, histograms=hist, vocabulary=vocab.cluster_centers_, image_clusters=images.labels_)
    doc = {"images": names, "descriptors": int(len(X)), "vocabulary": k, "patch": patch,
           "histograms": hist.tolist(), "image_clusters": np.asarray(images.labels_).tolist()}
    claim = ownership.claim(out, overwrite)
    try:
        Location(out).child(marks.BLOCKS).make_dir()
        with fencing.block_write(claim, out, fencing.block_name([(0, len(names))]), "the result") as aside:
            write_pieces(aside(Location(out).child("bovw.npz").path), [npz.getbuffer()])
            write_pieces(aside(Location(out).child("bovw.json").path), [json.dumps(doc, indent=1).encode()])
        fencing.settle(out, claim)
        marks.mark_complete(out, {"workflow": wf.name}, claim)
    except BaseException:
        fencing.stop(claim)
        raise
    groups_text = {}
    for n, c in zip(names, np.asarray(images.labels_).tolist()):
        groups_text.setdefault(c, []).append(n)
    return {"workflow": wf.name, "output": str(out), "seconds": round(time.perf_counter() - t0, 3),
            "text": f"{len(names)} images, {len(X)} descriptors, {k} visual words, image clusters "
                    + "; ".join(", ".join(v) for v in groups_text.values())}
