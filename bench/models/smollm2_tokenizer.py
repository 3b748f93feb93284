#!/usr/bin/python3
"""Writes SmolLM2's tokenizer.json and generation_config.json beside smollm2_with_past.onnx, so
octet.Generator / `octet generate --tokenizer` read it like any Hugging Face model folder.

The tokenizer is common.smollm2_tokenizer() (rebuilt from the GGUF's tokens and merges with the
`tokenizers` library); generation_config.json names the GGUF's eos_token_id. Needs `gguf` and
`tokenizers` (Debian's /usr/bin/python3 after torch_env.py has both).

    /usr/bin/python3 bench/models/smollm2_tokenizer.py      # prints the folder
"""
import json
import os

import common


def ensure():
    folder = common.exports_dir("smollm2")
    path = os.path.join(folder, "tokenizer.json")
    config = os.path.join(folder, "generation_config.json")
    if common.up_to_date(path, __file__, os.path.join(common.HERE, "common.py")) and os.path.exists(config):
        return folder
    common.smollm2_tokenizer().save(path)
    from gguf import GGUFReader
    r = GGUFReader(common.real_models.path("smollm2"))
    eos = int(r.fields["tokenizer.ggml.eos_token_id"].contents())
    with open(config, "w") as f:
        json.dump({"eos_token_id": eos}, f)
    common.record_sources(path, __file__, os.path.join(common.HERE, "common.py"))
    return folder


if __name__ == "__main__":
    print(ensure())
