#include "frontend/a1111_options.h"

namespace moss {
namespace {

using json = nlohmann::json;

// AUTOMATIC1111's settings and their defaults, from its modules/shared_options.py (v1.6 to 1.10),
// by what they mean for this engine. Names and default values only.

// Options with no meaning for MOSS-Image: saving to disk (the server keeps nothing), the SD1/SDXL
// text encoder (CLIP skip, emphasis, 75-token chunks), hypernetworks, img2img and inpainting, face
// restoration, upscalers, the UI, training, interrogation, other samplers' parameters. Any value
// is accepted and changes nothing.
constexpr const char* kNoMeaning = R"json({
  "samples_save": true, "samples_filename_pattern": "", "save_images_add_number": true,
  "grid_save": true, "grid_format": "png", "grid_extended_filename": false, "grid_only_if_multiple": true,
  "grid_prevent_empty_spots": false, "grid_zip_filename_pattern": "", "n_rows": -1, "font": "",
  "grid_text_active_color": "#000000", "grid_text_inactive_color": "#999999", "grid_background_color": "#ffffff",
  "save_txt": false, "save_images_before_face_restoration": false, "save_images_before_highres_fix": false,
  "save_images_before_color_correction": false, "save_mask": false, "save_mask_composite": false,
  "jpeg_quality": 80, "webp_lossless": false, "export_for_4chan": true, "img_downscale_threshold": 4.0,
  "target_side_length": 4000, "img_max_size_mp": 200, "use_original_name_batch": true,
  "use_upscaler_name_as_suffix": false, "save_selected_only": true, "save_init_img": false, "temp_dir": "",
  "clean_temp_dir_at_start": false, "save_incomplete_images": false,
  "outdir_samples": "", "outdir_txt2img_samples": "outputs/txt2img-images",
  "outdir_img2img_samples": "outputs/img2img-images", "outdir_extras_samples": "outputs/extras-images",
  "outdir_grids": "", "outdir_txt2img_grids": "outputs/txt2img-grids", "outdir_img2img_grids": "outputs/img2img-grids",
  "outdir_save": "log/images", "outdir_init_images": "outputs/init-images",
  "save_to_dirs": true, "grid_save_to_dirs": true, "use_save_to_dirs_for_ui": false,
  "directories_filename_pattern": "[date]", "directories_max_prompt_words": 8,
  "ESRGAN_tile": 192, "ESRGAN_tile_overlap": 8, "realesrgan_enabled_models": ["R-ESRGAN 4x+", "R-ESRGAN 4x+ Anime6B"],
  "upscaler_for_img2img": null,
  "face_restoration": false, "face_restoration_model": "CodeFormer", "code_former_weight": 0.5,
  "face_restoration_unload": false,
  "auto_launch_browser": "Local", "show_warnings": false, "show_gradio_deprecation_warnings": true,
  "memmon_poll_rate": 8, "samples_log_stdout": false, "multiple_tqdm": true, "print_hypernet_extra": false,
  "list_hidden_files": true, "disable_mmap_load_safetensors": false, "hide_ldm_prints": true,
  "api_enable_requests": true, "api_forbid_local_requests": true, "api_useragent": "",
  "unload_models_when_training": false, "pin_memory": false, "save_optimizer_state": false,
  "save_training_settings_to_txt": true, "dataset_filename_word_regex": "", "dataset_filename_join_string": " ",
  "training_image_repeats_per_epoch": 1, "training_write_csv_every": 500, "training_xattention_optimizations": false,
  "training_enable_tensorboard": false, "training_tensorboard_save_images": false,
  "training_tensorboard_flush_every": 120,
  "sd_checkpoints_limit": 1, "sd_checkpoints_keep_in_cpu": true, "sd_checkpoint_cache": 0,
  "enable_quantization": false, "enable_emphasis": true, "enable_batch_seeds": true, "comma_padding_backtrack": 20,
  "CLIP_stop_at_last_layers": 1, "upcast_attn": false, "randn_source": "GPU",
  "sdxl_crop_top": 0, "sdxl_crop_left": 0, "sdxl_refiner_low_aesthetic_score": 2.5,
  "sdxl_refiner_high_aesthetic_score": 6.0,
  "sd_vae_checkpoint_cache": 0, "sd_vae_overrides_per_model_preferences": true, "auto_vae_precision": true,
  "sd_vae_encode_method": "Full",
  "inpainting_mask_weight": 1.0, "initial_noise_multiplier": 1.0, "img2img_extra_noise": 0.0,
  "img2img_color_correction": false, "img2img_fix_steps": false, "img2img_background_color": "#ffffff",
  "img2img_editor_height": 720, "img2img_sketch_default_brush_color": "#ffffff",
  "img2img_inpaint_mask_brush_color": "#ffffff", "img2img_inpaint_sketch_default_brush_color": "#ffffff",
  "return_mask": false, "return_mask_composite": false,
  "cross_attention_optimization": "Automatic", "token_merging_ratio_img2img": 0.0, "pad_cond_uncond": false,
  "persistent_cond_cache": true, "batch_cond_uncond": true,
  "use_old_emphasis_implementation": false, "use_old_karras_scheduler_sigmas": false,
  "no_dpmpp_sde_batch_determinism": false, "use_old_hires_fix_width_height": false,
  "dont_fix_second_order_samplers_schedule": false, "hires_fix_use_firstpass_conds": false,
  "use_old_scheduling": false,
  "interrogate_keep_models_in_memory": false, "interrogate_return_ranks": false, "interrogate_clip_num_beams": 1,
  "interrogate_clip_min_length": 24, "interrogate_clip_max_length": 48, "interrogate_clip_dict_limit": 1500,
  "interrogate_clip_skip_categories": [], "interrogate_deepbooru_score_threshold": 0.5, "deepbooru_sort_alpha": true,
  "deepbooru_use_spaces": true, "deepbooru_escape": true, "deepbooru_filter_tags": "",
  "extra_networks_show_hidden_directories": true, "extra_networks_hidden_models": "When searched",
  "extra_networks_default_multiplier": 1.0, "extra_networks_card_width": 0, "extra_networks_card_height": 0,
  "extra_networks_card_text_scale": 1.0, "extra_networks_card_show_desc": true,
  "extra_networks_add_text_separator": " ", "ui_extra_networks_tab_reorder": "",
  "textual_inversion_print_at_load": false, "textual_inversion_add_hashes_to_infotext": true,
  "sd_hypernetwork": "None",
  "localization": "None", "gradio_theme": "Default", "gradio_themes_cache": true, "gallery_height": "",
  "return_grid": true, "do_not_show_images": false, "send_seed": true, "send_size": true, "js_modal_lightbox": true,
  "js_modal_lightbox_initially_zoomed": true, "js_modal_lightbox_gamepad": false,
  "js_modal_lightbox_gamepad_repeat": 250, "show_progress_in_title": true, "samplers_in_dropdown": true,
  "dimensions_and_batch_together": true, "keyedit_precision_attention": 0.1, "keyedit_precision_extra": 0.05,
  "keyedit_delimiters": ".,\\/!?%^*;:{}=`~()", "keyedit_move": true, "quicksettings_list": ["sd_model_checkpoint"],
  "ui_tab_order": [], "hidden_tabs": [], "ui_reorder_list": [], "hires_fix_show_sampler": false,
  "hires_fix_show_prompts": false, "disable_token_counters": false,
  "add_model_hash_to_info": true, "add_model_name_to_info": true, "add_user_name_to_info": false,
  "add_version_to_infotext": true, "disable_weights_auto_swap": true, "infotext_styles": "Apply if any",
  "show_progressbar": true, "live_previews_enable": true, "live_previews_image_format": "png",
  "show_progress_grid": true, "show_progress_every_n_steps": 10, "show_progress_type": "Approx NN",
  "live_preview_allow_lowvram_full": false, "live_preview_content": "Prompt", "live_preview_refresh_period": 1000,
  "live_preview_fast_interrupt": false,
  "hide_samplers": [], "eta_ddim": 0.0, "eta_ancestral": 1.0, "ddim_discretize": "uniform", "s_tmin": 0.0,
  "s_tmax": 0.0, "s_noise": 1.0, "sigma_min": 0.0, "sigma_max": 0.0, "rho": 0.0, "uni_pc_variant": "bh1",
  "uni_pc_skip_type": "time_uniform", "uni_pc_order": 3, "uni_pc_lower_order_final": true,
  "postprocessing_enable_in_main_ui": [], "postprocessing_operation_order": [], "upscaling_max_images_in_cache": 5,
  "disabled_extensions": [], "disable_all_extensions": "none", "restore_config_state_file": "",
  "sd_checkpoint_hash": ""
})json";

// Options whose other values ask for what this engine does not do (another UNet or VAE, tiling,
// token merging, stochastic sampling, another schedule, another noise): accepted at A1111's
// default, which changes nothing here, and refused otherwise.
constexpr const char* kDefaultOnly = R"json({
  "sd_unet": "Automatic", "tiling": false, "sd_vae": "Automatic", "sd_vae_decode_method": "Full",
  "s_min_uncond": 0.0, "token_merging_ratio": 0.0, "token_merging_ratio_hr": 0.0, "s_churn": 0.0,
  "k_sched_type": "Automatic", "eta_noise_seed_delta": 0, "always_discard_next_to_last_sigma": false
})json";

// Options this engine honours: the model (its own rule, a1111_settings.h), the returned images'
// format and whether they carry their record. Accepted only at the engine's value.
constexpr const char* kEngine = R"json({
  "sd_model_checkpoint": null, "samples_format": "png", "enable_pnginfo": true
})json";

std::vector<A1111Option> build_table() {
  std::vector<A1111Option> table;
  const std::pair<const char*, OptionUse> groups[] = {
      {kNoMeaning, OptionUse::NoMeaning}, {kDefaultOnly, OptionUse::DefaultOnly}, {kEngine, OptionUse::Engine}};
  for (const auto& [text, use] : groups) {
    const json group = json::parse(text);  // kept alive while its items are read
    for (const auto& [name, value] : group.items()) table.push_back({name, value, use});
  }
  return table;
}

}  // namespace

const std::vector<A1111Option>& a1111_options() {
  static const std::vector<A1111Option> table = build_table();
  return table;
}

const A1111Option* find_a1111_option(const std::string& name) {
  for (const A1111Option& o : a1111_options())
    if (o.name == name) return &o;
  return nullptr;
}

}  // namespace moss
