"""Floating-point operation counts of the three stages, from the model configs (one
multiply-add = 2 FLOPs). They turn measured times into TFLOP/s; they are the model's work,
the same for every implementation, so ours and the baselines are rated on one scale."""


def dit_forward_flops(cfg, n_img, n_text, blocks):
    """One DiT forward over n_img image rows and n_text text rows through `blocks` blocks:
    the block projections and attention, the video embedder and the head. The text embedder
    is left out: it depends on the prompt only (ours runs it once per prompt, not per step)
    and is under 1% of a step at 64 tokens."""
    d, f, c = cfg["dim"], cfg["ffn_dim"], cfg["latent_channels"]
    n = n_img + n_text
    linear = 2 * n * (4 * d * d + d * 2 * f + f * d)
    attention = 4 * n * n * d  # QK^T and PV over all heads
    edges = 2 * n_img * c * d * 2  # video_embedder in, final_linear_video out
    return blocks * (linear + attention) + edges


def dit_step_flops(cfg, height, width, cond_tokens, uncond_tokens, skip_count, cfg_scale):
    """One denoise step: the cond forward through every block, and with guidance the uncond
    forward without the skipped blocks."""
    n_img = (height // 16) * (width // 16)
    blocks = cfg["num_layers"]
    total = dit_forward_flops(cfg, n_img, cond_tokens, blocks)
    if cfg_scale != 1.0:
        total += dit_forward_flops(cfg, n_img, uncond_tokens, blocks - skip_count)
    return total


def text_encoder_flops(text_cfg, layer_params, tokens):
    """Qwen3.5 text model on one prompt: 2 FLOPs per layer parameter per token (the embedding
    is a lookup), plus causal softmax attention in the full-attention layers. The DeltaNet
    recurrence is linear in the tokens and small beside the projections; it is not counted."""
    heads, head_dim = text_cfg["num_attention_heads"], text_cfg["head_dim"]
    full_layers = sum(1 for t in text_cfg.get("layer_types", []) if t == "full_attention")
    causal_attention = 2 * tokens * tokens * heads * head_dim  # half of QK^T + PV
    return 2 * tokens * layer_params + full_layers * causal_attention


def _conv(cin, cout, k, h, w):
    return 2 * cin * cout * k * k * h * w


def vae_decode_flops(vae_cfg, height, width):
    """FLUX.2 small decoder at an image of height x width: post_quant_conv, conv_in, the mid
    block (two resnets and one attention), the up blocks (layers_per_block + 1 resnets each,
    a 3x3 upsampling conv after every block but the last), conv_out. Norms and activations
    are elementwise and not counted."""
    latent = vae_cfg["latent_channels"]
    chans = vae_cfg.get("decoder_block_out_channels") or vae_cfg["block_out_channels"]
    layers = vae_cfg["layers_per_block"]
    h, w = height // 8, width // 8
    total = 0
    if vae_cfg.get("use_post_quant_conv", True):
        total += _conv(latent, latent, 1, h, w)
    top = chans[-1]
    total += _conv(latent, top, 3, h, w)
    resnet = lambda cin, cout, hh, ww: (_conv(cin, cout, 3, hh, ww) + _conv(cout, cout, 3, hh, ww)
                                        + (_conv(cin, cout, 1, hh, ww) if cin != cout else 0))
    total += 2 * resnet(top, top, h, w)
    if vae_cfg.get("mid_block_add_attention", True):
        n = h * w
        total += 2 * n * top * top * 4 + 4 * n * n * top
    prev = top
    rev = list(reversed(chans))
    for i, ch in enumerate(rev):
        for j in range(layers + 1):
            total += resnet(prev if j == 0 else ch, ch, h, w)
        prev = ch
        if i != len(rev) - 1:
            h, w = 2 * h, 2 * w
            total += _conv(ch, ch, 3, h, w)
    total += _conv(chans[0], 3, 3, h, w)
    return total


def matmul_flops(n):
    return 2 * n * n * n
