"""How close a quantized model's outputs are to its float model's, on held-out real inputs.

One definition for the tests, the demo and the benchmarks, so their numbers mean the same:
- cosine per row (a sentence or image embedding), reported as mean and min;
- nearest-neighbour agreement: for each row, is its nearest other row (by cosine) the same
  under both models? This is what a semantic-search user sees change.
"""
import numpy as np


def row_cosines(a, b):
    a = a.reshape(a.shape[0], -1).astype(np.float64)
    b = b.reshape(b.shape[0], -1).astype(np.float64)
    return (a * b).sum(1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-30)


def nearest_neighbours(embeddings):
    x = embeddings.reshape(embeddings.shape[0], -1).astype(np.float64)
    x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-30)
    sim = x @ x.T
    np.fill_diagonal(sim, -np.inf)
    return sim.argmax(axis=1)


def embedding_fidelity(reference, candidate):
    """{"cosine_mean", "cosine_min", "nn_agreement", "rows"} of candidate rows against reference rows."""
    if reference.shape != candidate.shape:
        raise ValueError(f"shapes differ: reference {reference.shape}, candidate {candidate.shape}")
    c = row_cosines(reference, candidate)
    agree = (nearest_neighbours(reference) == nearest_neighbours(candidate)).mean() if len(c) > 1 else 1.0
    return {"cosine_mean": float(c.mean()), "cosine_min": float(c.min()), "nn_agreement": float(agree),
            "rows": int(len(c))}


def max_relative_error(reference, candidate):
    """Largest |difference| over the reference's largest magnitude: a scale-aware closeness."""
    scale = max(float(np.abs(reference).max()), 1e-30)
    return float(np.abs(reference.astype(np.float64) - candidate).max()) / scale
