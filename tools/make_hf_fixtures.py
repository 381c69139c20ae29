#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Makes the Hugging Face parity fixtures of tests/data/hf/ by running a copy
of the transformers sources (the reference implementation) with PyTorch.

Nothing of transformers is part of fedrun: the sources are read from a
directory given on the command line (a checkout of a transformers release,
its src/transformers/ package directory), loaded without running the
package's __init__.py, with two stub modules for what a local computation
does not use: huggingface_hub (network access) and
transformers.dependency_versions_check (checks of installed versions).  The
modelling and tokenizer code runs unmodified.

Usage (Debian's python3-torch, see tests/data/hf/README.md):
  /usr/bin/python3 tools/make_hf_fixtures.py TRANSFORMERS_PKG_DIR tests/data/hf

Everything is seeded; running it twice writes the same bytes.
"""
import collections
import importlib
import json
import os
import shutil
import struct
import sys
import types
import unicodedata


# ---------------------------------------------------------------- loading

class _Stub:
    def __init__(self, *a, **k):
        pass

    def __call__(self, *a, **k):
        raise RuntimeError('a stub of a network function was called')


def _module(name, path=None, **attrs):
    m = types.ModuleType(name)
    if path is not None:
        m.__path__ = [path]
    for k, v in attrs.items():
        setattr(m, k, v)
    sys.modules[name] = m
    return m


def load_transformers(root):
    """Imports modeling_bert, modeling_distilbert and tokenization_bert from
    the package directory ROOT; returns them and the version string."""
    version = None
    with open(os.path.join(root, '__init__.py'), encoding='utf-8') as f:
        for line in f:
            if line.startswith('__version__'):
                version = line.split('=')[1].strip().strip('"\'')
                break
    if version is None:
        sys.exit(f'{root}: no __version__ in __init__.py')
    hub_names = ['HfFolder', 'Repository', 'create_repo', 'list_repo_files', 'whoami',
                 'model_info']
    _module('huggingface_hub', **{n: _Stub() for n in hub_names})
    _module('transformers', root, __version__=version)
    _module('transformers.dependency_versions_check', dep_version_check=lambda *a, **k: None)
    _module('transformers.models', os.path.join(root, 'models'))
    _module('transformers.models.bert', os.path.join(root, 'models', 'bert'))
    _module('transformers.models.distilbert', os.path.join(root, 'models', 'distilbert'))
    mb = importlib.import_module('transformers.models.bert.modeling_bert')
    md = importlib.import_module('transformers.models.distilbert.modeling_distilbert')
    tb = importlib.import_module('transformers.models.bert.tokenization_bert')
    cb = importlib.import_module('transformers.models.bert.configuration_bert')
    cd = importlib.import_module('transformers.models.distilbert.configuration_distilbert')
    return mb, md, tb, cb, cd, version


# ---------------------------------------------------------------- safetensors

def write_safetensors(path, tensors):
    """Writes TENSORS (name -> torch tensor) in the safetensors format: an
    8-byte little-endian header length, a JSON header (dtype, shape,
    data_offsets, and __metadata__ {"format": "pt"}), padded with spaces to
    a multiple of 8, then the raw little-endian data, in name order."""
    import torch
    names = {torch.float64: 'F64', torch.float32: 'F32', torch.float16: 'F16',
             torch.bfloat16: 'BF16', torch.int64: 'I64'}
    header = {'__metadata__': {'format': 'pt'}}
    blobs = []
    off = 0
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous().cpu()
        if t.dtype == torch.bfloat16:
            raw = t.view(torch.int16).numpy().astype('<i2').tobytes()
        else:
            raw = t.numpy().astype(t.numpy().dtype.newbyteorder('<')).tobytes()
        header[name] = {'dtype': names[t.dtype], 'shape': list(t.shape),
                        'data_offsets': [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header, separators=(',', ':')).encode('utf-8')
    h += b' ' * (-len(h) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


# ---------------------------------------------------------------- vocabularies

SPECIAL = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']

# The models' vocabulary: small, so that the checkpoints stay small.
MODEL_WORDS = (
    'the of and to in a is was he for it with as his on be at by i this had not are but from '
    'or have an they which one you were her all she there would their we him been has when '
    'who will more no if out so said what up its about into than them can only other new '
    'some could time these two may then do first any my now such like our over man me even '
    'most made after also did many'
).split()
MODEL_PIECES = ['##s', '##ed', '##ing', '##ly', '##er', '##e', '.', ',', '!', '?']


def model_vocab():
    v = SPECIAL + MODEL_WORDS + MODEL_PIECES
    assert len(v) == len(set(v))
    return v


# The tokenizer fixtures' vocabulary: a few hundred entries.
TOK_WORDS = (
    'the of and to in a is was he for it with as his on be at by this had not are but from or '
    'have an they which one you were her all she there would their we him been has when who will '
    'hello world un aff able run want wa ##nt ##aff ##able ##ing ##ed ##s ##ly ##er ##est ##ness '
    'token tokens ##izer ##ization word words piece long test very ok '
    'The Hello World He She It This'
).split()
TOK_EXTRA = [
    # accented letters, whole and as continuations
    'café', 'cafe', 'caf', '##é', '##e', 'é', 'e', 'naïve', 'naive', 'na', '##ive', '##ï',
    'résumé', 'resume', 'Ángel', 'angel', 'ángel', 'Über', 'über', 'uber', 'zoë', 'zoe',
    'crème', 'creme', 'brûlée', 'brulee', 'jalapeño', 'jalapeno', 'façade', 'facade',
    'ü', 'ö', 'ä', 'ñ', 'ç', 'å', 'ø', 'æ', 'œ', 'ł', 'đ', 'ð', 'þ',
    '##ü', '##ö', '##ä', '##ñ', '##ç', 'o', '##o', 'u', '##u', 'n', '##n', 'c', '##c',
    # German, Turkish, Greek
    'straße', 'strasse', 'ß', '##ß', 'groß', 'gross', 'i', '##i', 'ı', '##ı', 'i̇', '##̇',
    'istanbul', 'İstanbul', 'ıstanbul', 'i̇stanbul', 'σ', 'ς', 'Σ', 'οδος', 'οδοσ', 'οδός',
    'ΟΔΟΣ', 'Οδός', 'ο', '##δ', '##ο', '##ς', '##σ', '##ό', 'α', 'ω', 'λ', 'λόγος', 'λογος',
    # ligatures and compatibility characters (NFD leaves them: only NFKD splits them)
    'ﬁ', '##ﬁ', 'fi', 'ﬁle', 'file', '##le', 'ﬀ', 'Ⅳ', 'ⅳ', '²', '½', 'ǆ', 'ǅ', 'Ǆ',
    # CJK, Japanese kana, Hangul
    '中', '文', '日', '本', '語', '你', '好', '世', '界', '人', '大', '学', '𠀀', '豈', '丽',
    'の', 'こ', '##ん', 'こん', '##に', '##ち', '##は', 'カ', '##タ', '##カ', '##ナ', '한', '##국',
    '한국', '##어',
    # emoji and symbols
    '😀', '👍', '##🏽', '👍🏽', '❤', '€', '$', '£', '¥', '©', '™', '°', '±', '×', '÷', '→', '∑',
    # punctuation of many scripts
    '.', ',', '!', '?', ';', ':', "'", '"', '(', ')', '[', ']', '{', '}', '<', '>', '-', '_',
    '/', '\\', '|', '@', '#', '%', '^', '&', '*', '+', '=', '~', '`',
    '¡', '¿', '«', '»', '…', '–', '—', '‘', '’', '“', '”', '„', '‹', '›', '·', '•', '§', '¶',
    '、', '。', '「', '」', '『', '』', '（', '）', '！', '？', '，', '：', '；', '・',
    '،', '؟', '।', '॥', '።', '፣', '־', '׳', '״', '﹏', '‿',
    # digits and numbers
    '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '##0', '##1', '##2', '##3', '10', '100',
    '2024', '٣', '३',
    # letters and continuations, so that most words split into pieces
] + [chr(c) for c in range(ord('a'), ord('z') + 1)] \
  + ['##' + chr(c) for c in range(ord('a'), ord('z') + 1)] \
  + [chr(c) for c in range(ord('A'), ord('Z') + 1)]


def tokenizer_vocab():
    seen = set()
    v = []
    for t in SPECIAL + ['[unused0]', '[unused1]'] + TOK_WORDS + TOK_EXTRA:
        if t not in seen:
            seen.add(t)
            v.append(t)
    return v


def write_vocab(path, vocab):
    with open(path, 'w', encoding='utf-8', newline='\n') as f:
        for t in vocab:
            f.write(t + '\n')


# ---------------------------------------------------------------- the models

HIDDEN = 16
LAYERS = 2
HEADS = 4
FFN = 37        # odd on purpose
MAXPOS = 64
LABELS = {'classify': 3, 'tag': 5}


def randomize(named_params, gen, skip=()):
    """Replaces every parameter (weights N(0, 0.2), biases N(0, 0.1),
    LayerNorm weights 1 + N(0, 0.1)) so that no term of the computation is
    trivially zero or one; float32, as the checkpoint stores it."""
    import torch
    with torch.no_grad():
        for name, p in named_params:
            if any(name.startswith(s) for s in skip):
                continue
            r = torch.randn(p.shape, generator=gen, dtype=torch.float32)
            if 'LayerNorm' in name or 'layer_norm' in name:
                if name.endswith('weight'):
                    p.copy_(1 + 0.1 * r)
                else:
                    p.copy_(0.1 * r)
            elif name.endswith('bias'):
                p.copy_(0.1 * r)
            else:
                p.copy_(0.2 * r)


# The tensors transformers (>= 4.31) leaves out of a saved model: the
# position_ids buffer (non-persistent there) and the weights tied to
# another tensor (_tied_weights_keys; save_pretrained drops the tied name
# and keeps the embedding / the head's bias).
TIED = {
    'BertForMaskedLM': ['cls.predictions.decoder.weight', 'cls.predictions.decoder.bias'],
    'DistilBertForMaskedLM': ['vocab_projector.weight'],
}


def saved_state(model, keep_position_ids=False):
    import torch
    sd = model.state_dict()
    cls = type(model).__name__
    ptrs = {}
    for k, v in sd.items():
        ptrs.setdefault(v.data_ptr(), []).append(k)
    for k in TIED.get(cls, []):
        assert len(ptrs[sd[k].data_ptr()]) == 2, (k, ptrs[sd[k].data_ptr()])
        del sd[k]
    for k, v in ptrs.items():
        left = [n for n in v if n in sd]
        assert len(left) == 1, f'{cls}: tensors share storage: {left}'
    out = collections.OrderedDict()
    for k, v in sd.items():
        if k.endswith('position_ids') and not keep_position_ids:
            continue
        out[k] = v if v.dtype == torch.int64 else v.float()
    return out


def save_model_dir(d, model, vocab, keep_position_ids=False, dtype=None):
    import torch
    os.makedirs(d, exist_ok=True)
    cfg = model.config
    cfg.architectures = [type(model).__name__]
    cfg.torch_dtype = 'float32' if dtype is None else str(dtype).split('.')[1]
    cfg.save_pretrained(d)
    sd = saved_state(model, keep_position_ids)
    if dtype is not None:
        sd = collections.OrderedDict((k, v if v.dtype == torch.int64 else v.to(dtype))
                                     for k, v in sd.items())
    write_safetensors(os.path.join(d, 'model.safetensors'), sd)
    write_vocab(os.path.join(d, 'vocab.txt'), vocab)


def batch(tok, with_types):
    """Three rows of different lengths, right-padded with [PAD] (id 0); the
    first row a pair of segments when WITH_TYPES."""
    import torch
    texts = [('he said the man was first.', 'she had been over there!'),
             ('who would have been so?', None),
             ('two new ones', None)]
    rows = []
    types_ = []
    for a, b in texts:
        ids = [tok.cls_token_id] + tok.convert_tokens_to_ids(tok.tokenize(a)) + [tok.sep_token_id]
        tt = [0] * len(ids)
        if b is not None and with_types:
            more = tok.convert_tokens_to_ids(tok.tokenize(b)) + [tok.sep_token_id]
            ids += more
            tt += [1] * len(more)
        rows.append(ids)
        types_.append(tt)
    unk = tok.unk_token_id
    for r in rows:
        assert unk not in r, r
    n = max(len(r) for r in rows)
    ids = torch.zeros(len(rows), n, dtype=torch.int64)
    mask = torch.zeros(len(rows), n, dtype=torch.int64)
    tt = torch.zeros(len(rows), n, dtype=torch.int64)
    for i, r in enumerate(rows):
        ids[i, :len(r)] = torch.tensor(r)
        mask[i, :len(r)] = 1
        tt[i, :len(r)] = torch.tensor(types_[i])
    return ids, mask, tt


def run_arch(out, arch, mods, vocab, tok):
    import torch
    mb, md, tb, cb, cd = mods
    gen = torch.Generator().manual_seed(4100 + (arch == 'distilbert'))
    bert = arch == 'bert'
    if bert:
        def config(**kw):
            return cb.BertConfig(vocab_size=len(vocab), hidden_size=HIDDEN,
                                 num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                                 intermediate_size=FFN, hidden_act='gelu',
                                 max_position_embeddings=MAXPOS, type_vocab_size=2,
                                 layer_norm_eps=1e-12, pad_token_id=0, **kw)
        base_cls, prefix = mb.BertModel, 'bert.'
        heads = {'classify': mb.BertForSequenceClassification,
                 'tag': mb.BertForTokenClassification, 'mlm': mb.BertForMaskedLM}
    else:
        def config(**kw):
            return cd.DistilBertConfig(vocab_size=len(vocab), dim=HIDDEN, n_layers=LAYERS,
                                       n_heads=HEADS, hidden_dim=FFN, activation='gelu',
                                       max_position_embeddings=MAXPOS, pad_token_id=0, **kw)
        base_cls, prefix = md.DistilBertModel, 'distilbert.'
        heads = {'classify': md.DistilBertForSequenceClassification,
                 'tag': md.DistilBertForTokenClassification, 'mlm': md.DistilBertForMaskedLM}

    base = base_cls(config()).eval()
    randomize(base.named_parameters(), gen)
    save_model_dir(os.path.join(out, arch), base, vocab)
    ids, mask, tt = batch(tok, bert)
    exp = collections.OrderedDict()
    exp['input_ids'] = ids
    exp['attention_mask'] = mask
    if bert:
        exp['token_type_ids'] = tt
    kw = {'token_type_ids': tt} if bert else {}
    ref = base_cls(config()).eval()
    ref.load_state_dict(base.state_dict())
    ref.double()
    with torch.no_grad():
        o = ref(input_ids=ids, attention_mask=mask, output_hidden_states=True, **kw)
    assert len(o.hidden_states) == LAYERS + 1
    for i, h in enumerate(o.hidden_states):
        exp[f'hidden_states.{i}'] = h
    exp['last_hidden_state'] = o.last_hidden_state
    assert torch.equal(o.last_hidden_state, o.hidden_states[-1])
    if bert:
        exp['pooler_output'] = o.pooler_output

    for task, cls in heads.items():
        kwc = {'num_labels': LABELS[task]} if task in LABELS else {}
        m = cls(config(**kwc)).eval()
        # the encoder as the base checkpoint has it, as from_pretrained(base)
        # gives it; the head's own tensors random
        enc = getattr(m, prefix[:-1])
        want = enc.state_dict()
        src = {k: v for k, v in base.state_dict().items() if k in want}
        assert set(src) == set(want), set(want) ^ set(src)
        enc.load_state_dict(src)
        randomize(m.named_parameters(), gen, skip=[prefix])
        if task == 'mlm':   # the decoder is the word embedding, tied
            emb = getattr(m, prefix[:-1]).embeddings.word_embeddings.weight
            dec = m.cls.predictions.decoder.weight if bert else m.vocab_projector.weight
            assert dec.data_ptr() == emb.data_ptr()
        save_model_dir(os.path.join(out, f'{arch}-{task}'), m, vocab)
        r = cls(config(**kwc)).eval()
        r.load_state_dict(m.state_dict())
        r.double()
        with torch.no_grad():
            o2 = r(input_ids=ids, attention_mask=mask, output_hidden_states=True, **kw)
        assert torch.equal(o2.hidden_states[-1], o.last_hidden_state), task
        exp[f'{task}.logits'] = o2.logits
    write_safetensors(os.path.join(out, f'{arch}-expected.safetensors'), exp)
    return base, config


def error_fixtures(out, mods, vocab):
    """bad-model-type/: a BERT checkpoint whose config says roberta;
    bad-shape/: a BERT checkpoint with one tensor of the wrong shape."""
    import torch
    mb, md, tb, cb, cd = mods
    gen = torch.Generator().manual_seed(4199)
    cfg = cb.BertConfig(vocab_size=len(vocab), hidden_size=8, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=11, hidden_act='gelu',
                        max_position_embeddings=16, type_vocab_size=2, layer_norm_eps=1e-12,
                        pad_token_id=0)
    m = mb.BertModel(cfg).eval()
    randomize(m.named_parameters(), gen)
    d = os.path.join(out, 'bad-model-type')
    save_model_dir(d, m, vocab)
    with open(os.path.join(d, 'config.json'), encoding='utf-8') as f:
        c = json.load(f)
    c['model_type'] = 'roberta'
    c['architectures'] = ['RobertaModel']
    with open(os.path.join(d, 'config.json'), 'w', encoding='utf-8') as f:
        f.write(json.dumps(c, indent=2, sort_keys=True) + '\n')
    d = os.path.join(out, 'bad-shape')
    save_model_dir(d, m, vocab)
    sd = saved_state(m)
    name = 'encoder.layer.0.intermediate.dense.weight'
    sd[name] = sd[name][:10].clone()          # [10, 8] where the config says [11, 8]
    write_safetensors(os.path.join(d, 'model.safetensors'), sd)


# ---------------------------------------------------------------- tokenizer cases

TOK_SETTINGS = collections.OrderedDict([
    ('uncased', {'do_lower_case': True}),
    ('cased', {'do_lower_case': False}),
    ('lower_keep_accents', {'do_lower_case': True, 'strip_accents': False}),
    ('cased_strip_accents', {'do_lower_case': False, 'strip_accents': True}),
    ('no_chinese_chars', {'do_lower_case': True, 'tokenize_chinese_chars': False}),
])

LONG_A = 'a' * 100
LONG_B = 'b' * 101

TOK_STRINGS = [
    '',
    ' ',
    '   \t\n  ',
    'Hello World',
    'hello, world!',
    'The unaffable runner wanted tokens.',
    'unwanted running',
    # accents, precomposed and combining
    'Café naïve résumé',
    'Cafe\u0301 nai\u0308ve',
    'ÁNGEL Über ZOË crème brûlée jalapeño façade',
    'e\u0301\u0301\u0301 a\u0300 o\u0323\u0302',
    '\u0301 leading combining mark',
    'Ångström Øresund Æsir Œuvre Łódź Đakovo Ðe Þorn',
    # German, Turkish, Greek
    'Straße GROSS groß STRASSE',
    'İstanbul ISTANBUL ıstanbul i\u0307',
    'ΟΔΟΣ Οδός οδός ΣΑΣ Σ ΑΣ. ΑΣ\u00adΑ',
    'λόγος ΛΌΓΟΣ',
    # ligatures and compatibility characters
    'ﬁle ﬀ Ⅳ ⅳ x² ½ ǅ Ǆ',
    # CJK and other East Asian scripts
    '中文日本語',
    'hello中文world',
    '你好，世界！',
    '大学の学生',
    'こんにちは カタカナ',
    '한국어 한국',
    '𠀀 豈 丽 \u3400 \u2a700 \U0002B820 \U0002F800',
    '\u3007 \u30fc \uff21\uff22',
    # emoji and symbols
    '😀👍🏽 ❤\ufe0f I ❤ it',
    '€100 $5 £3 ¥7 © ™ 25°C ±1 2×3 6÷2 → ∑',
    # control and invisible characters
    'a\x00b c\x01d e\x1ff g\x7fh',
    'zero\u200bwidth and\u200cnon\u200djoiner',
    '\ufeffbom at start',
    'soft\u00adhyphen',
    'repl\ufffdacement',
    'private\ue000use unassigned\U000e0080x',
    'bidi\u202emarks\u202c here\u200e',
    # whitespace of every kind
    'tab\there\nnew line\r\ncarriage\rreturn',
    'nbsp\u00a0here',
    'ideographic\u3000space en\u2002em\u2003thin\u2009hair\u200a narrow\u202f ogham\u1680x',
    'line\u2028separator paragraph\u2029separator',
    'vt\x0bff\x0cfs\x1cgs\x1drs\x1eus\x1f nel\x85x',
    # punctuation of many scripts
    '¡Hola! ¿Qué? «quoted» ‹single›',
    '“Curly” ‘quotes’ „German“ — and – dashes…',
    '「日本」『語』（中）！？，：；・、。',
    'مرحبا، كيف؟ नमस्ते। ॥ ሰላም። ፣',
    'a-b_c/d\\e|f@g#h%i^j&k*l+m=n~o`p',
    'a<b>c{d}e[f]g(h)i;j:k\'l"m',
    '$^`~+=<>|',
    '﹏‿ § ¶ • ·',
    # numbers
    '2024 1,000.50 ٣ ३ 0x1F',
    # very long words
    LONG_A,
    LONG_B,
    'x' + LONG_A + ' ok',
    LONG_A + '!',
    'é' * 101,
    'e\u0301' * 60,
    # words nothing matches
    'qqqq zzzz ok',
    'Xyzzy',
    '🦄',
    'ok🦄ok',
]


def tokenizer_cases(out, tb):
    d = os.path.join(out, 'tokenizer')
    os.makedirs(d, exist_ok=True)
    vpath = os.path.join(d, 'vocab.txt')
    write_vocab(vpath, tokenizer_vocab())
    lines = []
    for name, kw in TOK_SETTINGS.items():
        tok = tb.BertTokenizer(vpath, **kw)
        settings = {'do_lower_case': kw['do_lower_case'],
                    'strip_accents': kw.get('strip_accents'),
                    'tokenize_chinese_chars': kw.get('tokenize_chinese_chars', True),
                    'max_input_chars_per_word': tok.wordpiece_tokenizer.max_input_chars_per_word}
        for s in TOK_STRINGS:
            toks = tok.tokenize(s)
            ids = tok.convert_tokens_to_ids(toks)
            assert None not in ids
            lines.append(json.dumps({'setting': name, 'settings': settings, 'input': s,
                                     'tokens': toks, 'ids': ids}, ensure_ascii=True))
    with open(os.path.join(d, 'cases.jsonl'), 'w', encoding='utf-8', newline='\n') as f:
        for line in lines:
            f.write(line + '\n')
    return len(lines)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    root, out = sys.argv[1], sys.argv[2]
    import torch
    torch.manual_seed(41)
    mb, md, tb, cb, cd, version = load_transformers(root)
    mods = (mb, md, tb, cb, cd)
    os.makedirs(out, exist_ok=True)
    vocab = model_vocab()
    vpath = os.path.join(out, 'vocab.txt')
    write_vocab(vpath, vocab)
    tok = tb.BertTokenizer(vpath)
    bert, _ = run_arch(out, 'bert', mods, vocab, tok)
    distil, _ = run_arch(out, 'distilbert', mods, vocab, tok)
    # half-precision copies, old-style with the position_ids buffer (I64)
    save_model_dir(os.path.join(out, 'bert-bf16'), bert, vocab, keep_position_ids=True,
                   dtype=torch.bfloat16)
    save_model_dir(os.path.join(out, 'distilbert-f16'), distil, vocab,
                   keep_position_ids=True, dtype=torch.float16)
    os.remove(vpath)
    error_fixtures(out, mods, vocab)
    n = tokenizer_cases(out, tb)
    print(f'transformers {version}, torch {torch.__version__}, '
          f'unicodedata {unicodedata.unidata_version}, {n} tokenizer cases')


if __name__ == '__main__':
    main()
