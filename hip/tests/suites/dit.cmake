# DiT, schedule, noise and sampler (issue 5): the host reference against golden_dit.safetensors
# (both forward rows and every trace < 1e-5 relative L2, every schedule bit-identical, noise
# within 1e-5), and the whole tiny pipeline from the golden conditioning (sampler + DiT + VAE:
# per-step tensors and final latent < 1e-4, 8-bit image at most one level off). Unit tests:
# unit_tests --gtest_filter='Dit*:Schedule*:Noise*:Sampler*'.
add_test(NAME dit_golden
         COMMAND moss-check dit --model ${TINY_MODEL} --golden ${TEST_DATA}/golden_dit.safetensors)
set_tests_properties(dit_golden PROPERTIES TIMEOUT 120 LABELS "golden;dit")
add_test(NAME e2e_golden
         COMMAND moss-check e2e --model ${TINY_MODEL} --golden-dit ${TEST_DATA}/golden_dit.safetensors
                 --golden-te ${TEST_DATA}/golden_text_encoder.safetensors)
set_tests_properties(e2e_golden PROPERTIES TIMEOUT 120 LABELS "golden;e2e")
