"""onnxruntime's side of the generation tests: the greedy loop optimum's ORTModelForCausalLM runs
over a decoder exported with a KV cache (the prompt in one step, then one token per step, each
step's present.* fed back as past_key_values.*), with transformers' repetition penalty."""
import numpy as np


def penalize(logits, seen, penalty):
    """transformers' RepetitionPenaltyLogitsProcessor (each seen token once)."""
    logits = logits.copy()
    for token in set(seen):
        logits[token] = logits[token] * penalty if logits[token] < 0 else logits[token] / penalty
    return logits


def greedy_with_past(session, prompt, new_tokens, penalty=1.0):
    """The new tokens, and the logits of the prompt's last position."""
    inputs = {i.name: i for i in session.get_inputs()}
    outputs = [o.name for o in session.get_outputs()]
    past = {n: np.zeros((1, i.shape[1], 0, i.shape[3]), np.float32) for n, i in inputs.items()
            if n.startswith("past_key_values.")}
    tokens, cached, out, first_logits = list(prompt), 0, [], None
    for _ in range(new_tokens):
        feed = {"input_ids": np.array([tokens], np.int64),
                "attention_mask": np.ones((1, cached + len(tokens)), np.int64),
                "position_ids": np.arange(cached, cached + len(tokens), dtype=np.int64)[None], **past}
        result = dict(zip(outputs, session.run(None, {k: v for k, v in feed.items() if k in inputs})))
        logits = result["logits"][0, -1]
        if first_logits is None:
            first_logits = logits
        token = int(np.argmax(penalize(logits, list(prompt) + out, penalty)))
        past = {"past_key_values." + n[len("present."):]: v for n, v in result.items() if n.startswith("present.")}
        cached += len(tokens)
        tokens = [token]
        out.append(token)
    return out, first_logits
