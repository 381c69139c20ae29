#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that a model written by `fedrun export-hf` loads in Hugging Face
transformers and computes what fedrun computed: the exported directory's
config.json builds the transformers model class its "architectures" names,
model.safetensors is its state dict (the tied decoder tied back, as
from_pretrained does), BertTokenizer reads vocab.txt and
tokenizer_config.json, and the mean cross-entropy and accuracy over a tsv
file (text<TAB>label, classification) are printed, for comparison with the
fedrun run's own test metrics.

transformers is not part of fedrun: the sources are loaded from a copy
given on the command line, as tools/make_hf_fixtures.py does (see
tests/data/hf/README.md for the copy used).

Usage: /usr/bin/python3 tools/check_export_hf.py TRANSFORMERS_PKG_DIR EXPORTED_DIR TEST.tsv MAX_LEN
"""
import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_hf_fixtures  # noqa: E402 (loads transformers without its __init__)


def read_safetensors(path):
    import torch
    dtypes = {'F32': torch.float32, 'F16': torch.float16, 'BF16': torch.bfloat16,
              'I64': torch.int64, 'F64': torch.float64}
    with open(path, 'rb') as f:
        n = struct.unpack('<Q', f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == '__metadata__':
            continue
        a, b = t['data_offsets']
        out[name] = torch.frombuffer(bytearray(data[a:b]), dtype=dtypes[t['dtype']]).reshape(
            t['shape']).clone()
    return out


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    root, d, tsv, max_len = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    import torch
    mb, md, tb, cb, cd, version = make_hf_fixtures.load_transformers(root)
    with open(os.path.join(d, 'config.json'), encoding='utf-8') as f:
        cfg = json.load(f)
    arch = cfg['architectures'][0]
    config_cls = cb.BertConfig if cfg['model_type'] == 'bert' else cd.DistilBertConfig
    config = config_cls(**{k: v for k, v in cfg.items() if k not in ('architectures',)})
    mod = mb if cfg['model_type'] == 'bert' else md
    model = getattr(mod, arch)(config).eval()
    state = read_safetensors(os.path.join(d, 'model.safetensors'))
    missing, unexpected = model.load_state_dict(state, strict=False)
    # what may be missing: buffers and the tied decoder (tied by the model)
    missing = [k for k in missing if not k.endswith('position_ids')]
    if missing or unexpected:
        sys.exit(f'{d}: missing {missing}, unexpected {unexpected}')
    with open(os.path.join(d, 'tokenizer_config.json'), encoding='utf-8') as f:
        tc = json.load(f)
    tok = tb.BertTokenizer(os.path.join(d, 'vocab.txt'), do_lower_case=tc.get('do_lower_case', True),
                           strip_accents=tc.get('strip_accents'),
                           tokenize_chinese_chars=tc.get('tokenize_chinese_chars', True))
    label2id = {v: int(k) for k, v in cfg['id2label'].items()}
    loss_sum, correct, n = 0.0, 0, 0
    with open(tsv, encoding='utf-8') as f:
        for line in f:
            text, label = line.rstrip('\n').split('\t')
            ids = tok.convert_tokens_to_ids(tok.tokenize(text))[:max_len - 2]
            ids = [tok.cls_token_id] + ids + [tok.sep_token_id]
            with torch.no_grad():
                logits = model(input_ids=torch.tensor([ids])).logits[0].double()
            y = label2id[label]
            loss_sum += float(torch.logsumexp(logits, 0) - logits[y])
            correct += int(int(logits.argmax()) == y)
            n += 1
    print(f'transformers {version}: {arch}, {n} examples: loss {loss_sum / n:.6f} '
          f'accuracy {correct / n:.6f}')


if __name__ == '__main__':
    main()
