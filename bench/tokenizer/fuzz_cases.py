#!/usr/bin/env python3
"""Random differential cases for the engine's tokenizer: writes a cases file in the format of
hip/tests/data/tokenizer_cases.json with the ids Hugging Face `tokenizers` gives, to be
checked with `moss-check tokenizer --tokenizer FILE --cases OUT`.

The strings stress what the golden files touch lightly: every kind of white space, Unicode
categories L/M/N at their edges (random code points from all planes, unassigned ones
included), NFC compositions (Hangul jamo, combining sequences), contractions in odd cases,
long runs, and added tokens whole, partial and glued to text.

usage: fuzz_cases.py TOKENIZER_JSON OUT_JSON [--n 20000] [--seed 1]
needs: pip install tokenizers
"""
import argparse
import json
import random
import unicodedata

from tokenizers import Tokenizer

SPACES = "\t\n\v\f\r \x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
         "\u2028\u2029\u202f\u205f\u3000\u180e\u200b\u200c\u200d\u2060\ufeff"
POOLS = [
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "0123456789", "²³¹¼½¾٠١٢٣੧௫൬ⅠⅡⅫↂ①②⑴⒈㊀𝟎𝟙🄁",
    "'\"`’‘", ".,;:!?-_()[]{}<>/\\|@#$%^&*+=~", "$€£¥₹", "\r\n", "\n\n\n",
    "àáâãäåæçèéêëìíîïðñòóôõöøùúûüýþÿſßİıǅǈǋK", "ΑΒΓαβγςσΣ", "АБВабвЁё",
    "\u0300\u0301\u0302\u0303\u0308\u0327\u0345\u034f\u0483\u0591\u05c7\u064b\u0670\u093c\u0e31\u1ab0\u20d0\u20e3\ufe0f\ufe20",
    "\u1100\u1161\u11a8\u1112\u1175\uac00\ud55c\uad6d", "क़ऩड़\u0928\u093c\u0915\u093f",
    "的一是不了人我在有他这中大来上国个到说们", "あいうえおアイウエオ", "한국어서울",
    "مرحبا بالعالم", "שלום", "ไทย", "🍎🚀✨❤️👨‍👩‍👧🇨🇳🏳️‍🌈👍🏽", "ＡＢＣ１２３！？", "\U0001d400\U0001d7d8\U00010400",
    "\ue000\U000f0000\u0378\u0380\U0001fffe\U000e0001\U000e0100",
]
WORDS = ["'s", "'S", "'t", "'T", "'re", "'RE", "'Re", "'ve", "'VE", "'m", "'M", "'ll", "'LL", "'lL", "'d", "'D",
         "'ſ", "'K", "don't", "I'M", "it’s", "<|im_start|>", "<|im_end|>", "<think>", "</think>", "<|endoftext|>",
         "<|image_pad|>", "<tool_call>", "<|im_start", "im_end|>", "<<|im_end|>>", "<|im_start|><|im_end|>",
         " <think> ", "\n<|im_start|>\n", "x" * 40, "1" * 30, " " * 17, "\n \n  \n", "\t \r\n \t"]


# Code points normalisation acts on: combining marks and canonically decomposable letters
# (Python's own Unicode tables), plus Hangul jamo that compose into syllables.
NORMALIZATION_ACTIVE = [chr(c) for c in range(0x300, 0x110000)
                        if not 0xD800 <= c <= 0xDFFF and not 0xAC00 <= c <= 0xD7A3
                        and (unicodedata.combining(chr(c)) or (unicodedata.decomposition(chr(c)) or "<").strip()[0] != "<")]
JAMO = [chr(c) for c in list(range(0x1100, 0x1113)) + list(range(0x1161, 0x1176)) + list(range(0x11A8, 0x11C3))]


def random_code_point(rng):
    while True:
        plane = rng.choice([0, 0, 0, 0, 1, 2, 14, 15])
        cp = plane * 0x10000 + rng.randrange(0x10000)
        if not 0xD800 <= cp <= 0xDFFF:
            return chr(cp)


def random_text(rng):
    parts = []
    for _ in range(rng.randint(1, 30)):
        r = rng.random()
        if r < 0.35:
            pool = rng.choice(POOLS)
            parts.append("".join(rng.choice(pool) for _ in range(rng.randint(1, 10))))
        elif r < 0.55:
            parts.append("".join(rng.choice(SPACES) for _ in range(rng.randint(1, 5))))
        elif r < 0.65:
            parts.append(rng.choice(WORDS))
        elif r < 0.75:
            pool = NORMALIZATION_ACTIVE if rng.random() < 0.7 else JAMO
            parts.append("".join(rng.choice(pool) for _ in range(rng.randint(1, 4))))
        else:
            parts.append("".join(random_code_point(rng) for _ in range(rng.randint(1, 4))))
    return "".join(parts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tokenizer")
    ap.add_argument("out")
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    tok = Tokenizer.from_file(a.tokenizer)
    rng = random.Random(a.seed)
    cases = []
    for _ in range(a.n):
        text = random_text(rng)
        cases.append({"text": text, "ids": tok.encode(text, add_special_tokens=False).ids})
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump({"tokenizer": a.tokenizer, "cases": cases}, f, ensure_ascii=False)
    print(f"wrote {len(cases)} cases to {a.out}")


if __name__ == "__main__":
    main()
