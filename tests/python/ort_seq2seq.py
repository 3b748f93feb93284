"""onnxruntime's side of the seq2seq generation tests (test_generate_seq2seq.py,
test_generate_seq2seq_in_place.py): optimum's ORTModelForSeq2SeqLM loop over the split files
(the encoder once, decoder_model for the first step, decoder_with_past_model after it, the
cross-attention keys/values kept from the first step), greedy and transformers 4.36's beam
search."""
import os

import numpy as np
import onnxruntime as ort


class OrtSeq2Seq:
    """optimum's ORTModelForSeq2SeqLM: the encoder once, decoder_model for the first step,
    decoder_with_past_model after it (cross-attention keys/values from the first step)."""

    def __init__(self, folder, encoder_inputs, rows):
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        load = lambda f: ort.InferenceSession(os.path.join(folder, f), so, providers=["CPUExecutionProvider"])
        enc = load("encoder_model.onnx")
        self.first, self.with_past = load("decoder_model.onnx"), load("decoder_with_past_model.onnx")
        (hidden,) = enc.run(None, encoder_inputs)
        mask = np.ones(hidden.shape[:2], np.int64)
        self.hidden, self.mask = np.repeat(hidden, rows, 0), np.repeat(mask, rows, 0)
        self.cache = {}

    def step(self, tokens):
        """tokens [rows, n] -> the last logits [rows, vocab]."""
        session = self.with_past if self.cache else self.first
        feed = {"input_ids": np.array(tokens, np.int64), "encoder_hidden_states": self.hidden,
                "encoder_attention_mask": self.mask}
        feed.update({"past_key_values." + k: v for k, v in self.cache.items()})
        names = {i.name for i in session.get_inputs()}
        outputs = [o.name for o in session.get_outputs()]
        result = dict(zip(outputs, session.run(None, {k: v for k, v in feed.items() if k in names})))
        self.cache.update({n[len("present."):]: v for n, v in result.items() if n.startswith("present.")})
        return result["logits"][:, -1]

    def reorder(self, rows):
        self.cache = {k: v[rows] for k, v in self.cache.items()}


def id_inputs(ids):
    return {"input_ids": ids, "attention_mask": np.ones_like(ids)}


def ort_greedy(folder, encoder_inputs, start, new_tokens):
    model, tokens, out = OrtSeq2Seq(folder, encoder_inputs, 1), [[start]], []
    for _ in range(new_tokens):
        token = int(np.argmax(model.step(tokens)[0]))
        tokens = [[token]]
        out.append(token)
    return out


def log_softmax(x):
    x = x.astype(np.float64) - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def ort_beam_search(folder, ids, start, eos, beams, new_tokens, length_penalty=1.0, encoder_inputs=None):
    """transformers 4.36's beam_search + BeamSearchScorer (batch 1, early_stopping=False);
    the encoder reads `encoder_inputs` when given, else the ids `ids`."""
    model = OrtSeq2Seq(folder, encoder_inputs or id_inputs(ids), beams)
    seqs, scores = [[start] for _ in range(beams)], np.array([0.0] + [-1e9] * (beams - 1))
    finished, worst, max_length = [], 1e9, 1 + new_tokens
    tokens = [[start]] * beams

    def add(sum_logprobs, seq, generated, worst):
        """BeamHypotheses.add; returns the new worst kept score."""
        s = sum_logprobs / generated ** length_penalty
        if len(finished) < beams or s > worst:
            finished.append((s, seq))
            if len(finished) <= beams:
                return min(s, worst)
            ranked = sorted((h[0], i) for i, h in enumerate(finished))
            del finished[ranked[0][1]]
            return ranked[1][0]
        return worst

    while True:
        logp = log_softmax(model.step(tokens)) + scores[:, None]
        vocab = logp.shape[1]
        flat = logp.reshape(-1)
        order = np.argsort(-flat, kind="stable")[:2 * beams]
        cur_len = len(seqs[0]) + 1
        nxt = []
        for rank, f in enumerate(order):
            row, token, score = f // vocab, f % vocab, flat[f]
            if token == eos:
                if rank >= beams:
                    continue
                worst = add(score, seqs[row], cur_len - 1, worst)
            else:
                nxt.append((row, token, score))
            if len(nxt) == beams:
                break
        done = len(finished) >= beams and worst >= flat[order[0]] / (cur_len - 1) ** length_penalty
        seqs = [seqs[r] + [t] for r, t, _ in nxt]
        scores = np.array([s for _, _, s in nxt])
        if done or cur_len >= max_length:
            break
        model.reorder([r for r, _, _ in nxt])
        tokens = [[t] for _, t, _ in nxt]
    if not done:
        for seq, score in zip(seqs, scores):
            worst = add(score, seq, len(seq) - 1, worst)
    best = sorted(finished, key=lambda h: h[0])[-1][1]
    if len(best) < max_length:
        best = best + [eos]
    return best[1:]
