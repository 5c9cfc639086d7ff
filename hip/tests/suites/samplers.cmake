# Samplers and schedules (issue 48): moss-check samplers runs every sampler x schedule on a toy
# denoiser and on the tiny DiT (host backend, 2 steps here): finite, the DiT calls per step each
# sampler documents, ddim equal to euler bit for bit, every schedule descending to 0. The match
# with the Python reference (k-diffusion, ComfyUI's formulas) is tools/golden/
# test_samplers_reference.py, run by .ci/run's pytest line (it needs torch and k-diffusion).
add_test(NAME samplers_host
         COMMAND moss-check samplers --model ${TINY_MODEL} --golden ${TEST_DATA}/golden_dit.safetensors --steps 2)
