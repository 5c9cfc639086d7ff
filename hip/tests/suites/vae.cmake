# VAE decoder (issue 5): the host backend against the float64 golden decodes of the tiny VAE.
add_test(NAME vae_golden
         COMMAND moss-check vae --model ${TINY_MODEL} --golden ${TEST_DATA}/golden_vae.safetensors)
