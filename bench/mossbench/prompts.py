"""Prompts of an exact templated token count, made with the model's own tokenizer.json, so
the engine and the PyTorch baselines see the same number of text rows."""
import random

WORDS = ("a photo of an old red lighthouse on a rocky coast at golden hour with soft light and "
         "gentle waves under a clear blue sky seen from the water while seagulls fly over the "
         "green hills behind a small wooden house with white windows and a stone path").split()


def template(prompt):
    """The chat template of docs/model.md section 2 (one user message, generation prompt,
    thinking enabled)."""
    return "<|im_start|>user\n" + prompt.strip() + "<|im_end|>\n<|im_start|>assistant\n<think>\n"


def load_tokenizer(tokenizer_json):
    from tokenizers import Tokenizer
    return Tokenizer.from_file(tokenizer_json)


def templated_ids(tok, prompt):
    return tok.encode(template(prompt), add_special_tokens=False).ids


def prompt_with_tokens(tok, n_tokens, seed=0):
    """A deterministic English prompt whose templated ids number exactly n_tokens. Words are
    added one at a time; a word that would overshoot is replaced by a shorter one."""
    rng = random.Random(seed)
    words = []
    if len(templated_ids(tok, "")) > n_tokens:
        raise ValueError(f"{n_tokens} tokens is shorter than the template itself")
    while True:
        have = len(templated_ids(tok, " ".join(words)))
        if have == n_tokens:
            return " ".join(words)
        for w in [rng.choice(WORDS)] + sorted(WORDS, key=len):
            if len(templated_ids(tok, " ".join(words + [w]))) <= n_tokens:
                words.append(w)
                break
        else:
            raise ValueError(f"cannot reach exactly {n_tokens} tokens (stuck at {have})")
